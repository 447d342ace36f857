//! In-memory sources: `from_collection` and `from_iter`. Bounded, not parallel.

use std::sync::{Arc, Mutex};

use crate::error::{HummerError, Result, internal};
use crate::{Source, SourceContext, SourceReader, SourceStatus};

/// Emits the elements of a vector (cloned, so the job can run more than once).
pub struct CollectionSource<T> {
    items: Arc<Vec<T>>,
}

impl<T> CollectionSource<T> {
    /// A source over `items`.
    pub fn new(items: Vec<T>) -> Self {
        CollectionSource {
            items: Arc::new(items),
        }
    }
}

struct CollectionReader<T> {
    items: Arc<Vec<T>>,
    next: usize,
}

impl<T: Clone + Send + Sync + 'static> Source<T> for CollectionSource<T> {
    fn is_replayable(&self) -> bool {
        true
    }

    fn name(&self) -> String {
        "Collection Source".into()
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn max_parallelism(&self) -> Option<usize> {
        Some(1)
    }
    fn create_reader(&self, _ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        Ok(Box::new(CollectionReader {
            items: self.items.clone(),
            next: 0,
        }))
    }
}

impl<T: Clone + Send + Sync> SourceReader<T> for CollectionReader<T> {
    fn snapshot_position(&self) -> Option<Vec<u8>> {
        postcard::to_stdvec(&(self.next as u64)).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let next: u64 =
            crate::state::snapshot::decode_checkpointed("a collection source", position)?;
        self.next = (next as usize).min(self.items.len());
        Ok(())
    }

    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        let end = (self.next + max).min(self.items.len());
        out.extend_from_slice(&self.items[self.next..end]);
        self.next = end;
        Ok(if end == self.items.len() {
            SourceStatus::Finished
        } else {
            SourceStatus::MoreAvailable
        })
    }
}

type BoxedIter<T> = Box<dyn Iterator<Item = T> + Send>;

/// Emits the items of an iterator; it can be read by one execution only.
pub struct IteratorSource<T> {
    iter: Mutex<Option<BoxedIter<T>>>,
}

impl<T> IteratorSource<T> {
    /// A source over `iter`.
    pub fn new(iter: impl Iterator<Item = T> + Send + 'static) -> Self {
        IteratorSource {
            iter: Mutex::new(Some(Box::new(iter))),
        }
    }
}

struct IteratorReader<T> {
    iter: BoxedIter<T>,
}

impl<T: Send + 'static> Source<T> for IteratorSource<T> {
    fn name(&self) -> String {
        "Iterator Source".into()
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn max_parallelism(&self) -> Option<usize> {
        Some(1)
    }
    fn create_reader(&self, _ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        let iter = self
            .iter
            .lock()
            .map_err(|_| internal!("iterator source lock poisoned"))?
            .take()
            .ok_or_else(|| HummerError::BadInput {
                input: "from_iter".into(),
                reason: "the iterator was consumed by an earlier execution; \
                         use from_collection for a source that can run again"
                    .into(),
            })?;
        Ok(Box::new(IteratorReader { iter }))
    }
}

impl<T: Send> SourceReader<T> for IteratorReader<T> {
    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        for _ in 0..max {
            match self.iter.next() {
                Some(item) => out.push(item),
                None => return Ok(SourceStatus::Finished),
            }
        }
        Ok(SourceStatus::MoreAvailable)
    }
}
