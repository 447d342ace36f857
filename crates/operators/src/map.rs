//! `map`: one output record per input record.

use std::marker::PhantomData;

use crate::error::Result;
use crate::types::Timestamp;
use crate::{Collector, OneInputOperator};

/// Applies a function to every record.
pub struct Map<I, O, F> {
    f: F,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, F> Map<I, O, F> {
    /// Wraps the user function.
    pub fn new(f: F) -> Self {
        Map {
            f,
            _types: PhantomData,
        }
    }
}

impl<I: 'static, O: 'static, F> OneInputOperator for Map<I, O, F>
where
    F: FnMut(I) -> O + Send + 'static,
{
    type In = I;
    type Out = O;

    #[inline]
    fn process_batch(&mut self, batch: &mut Vec<I>, out: &mut Collector<'_, O>) -> Result<()> {
        for record in batch.drain(..) {
            out.collect((self.f)(record));
        }
        Ok(())
    }

    #[inline]
    fn process_stamped_batch(
        &mut self,
        batch: &mut Vec<I>,
        timestamps: &mut Vec<Timestamp>,
        out: &mut Collector<'_, O>,
    ) -> Result<()> {
        for (record, t) in batch.drain(..).zip(timestamps.drain(..)) {
            out.collect_with_timestamp((self.f)(record), t);
        }
        Ok(())
    }
}
