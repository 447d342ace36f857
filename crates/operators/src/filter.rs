//! `filter`: keeps the records a predicate accepts.

use std::marker::PhantomData;

use crate::error::Result;
use crate::types::Timestamp;
use crate::{Collector, OneInputOperator};

/// Keeps the records for which the predicate returns true.
pub struct Filter<T, F> {
    predicate: F,
    _types: PhantomData<fn(T)>,
}

impl<T, F> Filter<T, F> {
    /// Wraps the user predicate.
    pub fn new(predicate: F) -> Self {
        Filter {
            predicate,
            _types: PhantomData,
        }
    }
}

impl<T: 'static, F> OneInputOperator for Filter<T, F>
where
    F: FnMut(&T) -> bool + Send + 'static,
{
    type In = T;
    type Out = T;

    #[inline]
    fn process_batch(&mut self, batch: &mut Vec<T>, out: &mut Collector<'_, T>) -> Result<()> {
        for record in batch.drain(..) {
            if (self.predicate)(&record) {
                out.collect(record);
            }
        }
        Ok(())
    }

    #[inline]
    fn process_stamped_batch(
        &mut self,
        batch: &mut Vec<T>,
        timestamps: &mut Vec<Timestamp>,
        out: &mut Collector<'_, T>,
    ) -> Result<()> {
        for (record, t) in batch.drain(..).zip(timestamps.drain(..)) {
            if (self.predicate)(&record) {
                out.collect_with_timestamp(record, t);
            }
        }
        Ok(())
    }
}
