//! `collect()`: records gathered in memory and returned in the `JobResult`. For tests and
//! small results. `collect_latest()` keeps only the last record each subtask received: the
//! current value of a continuously updated result (a streaming aggregate) in constant memory.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::error::{Result, internal};
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};
use crate::types::Data;
use crate::types::NodeId;

/// Refers to the records of one `collect()` sink in a [`crate::api::JobResult`].
pub struct CollectHandle<T> {
    /// The sink node whose records this handle refers to.
    pub node: NodeId,
    _types: PhantomData<fn() -> T>,
}

impl<T> CollectHandle<T> {
    /// A handle to the records of the sink node `node`.
    pub fn new(node: NodeId) -> Self {
        CollectHandle {
            node,
            _types: PhantomData,
        }
    }
}

/// The shared buffer all subtasks of a collect sink append to.
pub type CollectBuffer<T> = Arc<Mutex<Vec<T>>>;

/// Moves the collected records out, type-erased, when the job ends; in cluster mode, carries
/// them from the workers to the client encoded.
pub trait CollectSlot {
    /// Takes the records as a `Box<Vec<T>>`.
    fn take(&self) -> Box<dyn Any + Send>;
    /// Takes the records, postcard-encoded (in a worker).
    fn take_encoded(&self) -> Result<Vec<u8>>;
    /// Appends encoded records (in the client).
    fn append_encoded(&self, bytes: &[u8]) -> Result<()>;
}

fn take_all<T>(slot: &Mutex<Vec<T>>) -> Vec<T> {
    match slot.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    }
}

impl<T: Data> CollectSlot for Mutex<Vec<T>> {
    fn take(&self) -> Box<dyn Any + Send> {
        Box::new(take_all(self))
    }

    fn take_encoded(&self) -> Result<Vec<u8>> {
        postcard::to_stdvec(&take_all(self))
            .map_err(|e| internal!("cannot encode collected records: {e}"))
    }

    fn append_encoded(&self, bytes: &[u8]) -> Result<()> {
        let mut records: Vec<T> = postcard::from_bytes(bytes)
            .map_err(|e| internal!("cannot decode collected records: {e}"))?;
        self.lock()
            .map_err(|_| internal!("collect buffer poisoned"))?
            .append(&mut records);
        Ok(())
    }
}

/// The sink behind `collect()`.
pub struct CollectSink<T> {
    /// Where the sink's subtasks put the records they receive.
    pub buffer: CollectBuffer<T>,
}

/// The writer of one subtask of a [`CollectSink`].
pub struct CollectWriter<T> {
    buffer: CollectBuffer<T>,
}

impl<T: Send + 'static> Sink<T> for CollectSink<T> {
    fn name(&self) -> String {
        "Collect".into()
    }
    fn create_writer(&self, _ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        Ok(Box::new(CollectWriter {
            buffer: self.buffer.clone(),
        }))
    }
}

impl<T: Send> SinkWriter<T> for CollectWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        self.buffer
            .lock()
            .map_err(|_| internal!("collect buffer poisoned"))?
            .append(batch);
        Ok(())
    }
}

/// The latest record of every subtask of a `collect_latest()` sink.
pub struct LatestSlot<T> {
    latest: Mutex<std::collections::BTreeMap<usize, T>>,
}

impl<T> Default for LatestSlot<T> {
    fn default() -> Self {
        LatestSlot {
            latest: Mutex::new(std::collections::BTreeMap::new()),
        }
    }
}

impl<T: Data> LatestSlot<T> {
    /// Takes every record the slot holds, leaving it empty.
    pub fn take_all(&self) -> Vec<T> {
        match self.latest.lock() {
            Ok(mut m) => std::mem::take(&mut *m).into_values().collect(),
            Err(p) => std::mem::take(&mut *p.into_inner()).into_values().collect(),
        }
    }
}

impl<T: Data> CollectSlot for LatestSlot<T> {
    fn take(&self) -> Box<dyn Any + Send> {
        Box::new(self.take_all())
    }

    fn take_encoded(&self) -> Result<Vec<u8>> {
        postcard::to_stdvec(&self.take_all())
            .map_err(|e| internal!("cannot encode collected records: {e}"))
    }

    fn append_encoded(&self, bytes: &[u8]) -> Result<()> {
        let records: Vec<T> = postcard::from_bytes(bytes)
            .map_err(|e| internal!("cannot decode collected records: {e}"))?;
        let mut m = self
            .latest
            .lock()
            .map_err(|_| internal!("collect buffer poisoned"))?;
        // Records from the workers: keys only need to be distinct.
        for r in records {
            let key = m.len();
            m.insert(key, r);
        }
        Ok(())
    }
}

/// The sink behind `collect_latest()`.
pub struct LatestSink<T> {
    /// The slot the sink's subtasks write into.
    pub slot: Arc<LatestSlot<T>>,
}

/// The writer of one subtask of a [`LatestSink`].
pub struct LatestWriter<T> {
    slot: Arc<LatestSlot<T>>,
    subtask: usize,
}

impl<T: Data> Sink<T> for LatestSink<T> {
    fn name(&self) -> String {
        "Collect Latest".into()
    }
    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        Ok(Box::new(LatestWriter {
            slot: self.slot.clone(),
            subtask: ctx.subtask,
        }))
    }
}

impl<T: Data> SinkWriter<T> for LatestWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        if let Some(last) = batch.pop() {
            self.slot
                .latest
                .lock()
                .map_err(|_| internal!("collect buffer poisoned"))?
                .insert(self.subtask, last);
        }
        batch.clear();
        Ok(())
    }
}
