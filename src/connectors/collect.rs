//! `collect()`: records gathered in memory and returned in the `JobResult`. For tests and
//! small results.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::error::{HummerError, Result};
use crate::graph::stream_graph::NodeId;
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};

/// Refers to the records of one `collect()` sink in a [`crate::api::JobResult`].
pub struct CollectHandle<T> {
    pub(crate) node: NodeId,
    _types: PhantomData<fn() -> T>,
}

impl<T> CollectHandle<T> {
    pub(crate) fn new(node: NodeId) -> Self {
        CollectHandle {
            node,
            _types: PhantomData,
        }
    }
}

/// The shared buffer all subtasks of a collect sink append to.
pub(crate) type CollectBuffer<T> = Arc<Mutex<Vec<T>>>;

/// Moves the collected records out, type-erased, when the job ends.
pub(crate) trait CollectSlot {
    fn take(&self) -> Box<dyn Any + Send>;
}

impl<T: Send + 'static> CollectSlot for Mutex<Vec<T>> {
    fn take(&self) -> Box<dyn Any + Send> {
        let records = match self.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        Box::new(records)
    }
}

/// The sink behind `collect()`.
pub(crate) struct CollectSink<T> {
    pub(crate) buffer: CollectBuffer<T>,
}

struct CollectWriter<T> {
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
            .map_err(|_| HummerError::Internal("collect buffer poisoned".into()))?
            .append(batch);
        Ok(())
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}
