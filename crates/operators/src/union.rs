//! `union`: merges streams of one type; the records pass unchanged.

use std::marker::PhantomData;

use crate::error::Result;
use crate::{Collector, OneInputOperator};

/// Forwards every record of every input. A union node has several input edges, so it always
/// heads a chain; the operators after it are fused to it.
pub struct Union<T> {
    _types: PhantomData<fn(T)>,
}

impl<T> Default for Union<T> {
    fn default() -> Self {
        Union {
            _types: PhantomData,
        }
    }
}

impl<T: 'static> OneInputOperator for Union<T> {
    type In = T;
    type Out = T;

    #[inline]
    fn process_batch(&mut self, batch: &mut Vec<T>, out: &mut Collector<'_, T>) -> Result<()> {
        out.collect_all(batch.drain(..));
        Ok(())
    }

    #[inline]
    fn process_stamped_batch(
        &mut self,
        batch: &mut Vec<T>,
        timestamps: &mut Vec<crate::types::Timestamp>,
        out: &mut Collector<'_, T>,
    ) -> Result<()> {
        for (record, t) in batch.drain(..).zip(timestamps.drain(..)) {
            out.collect_with_timestamp(record, t);
        }
        Ok(())
    }
}
