//! `filter`: keeps the records a predicate accepts.

use std::marker::PhantomData;

use crate::error::Result;
use crate::{Batch, Collector, Operator};

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

impl<T: 'static, F> Operator for Filter<T, F>
where
    F: FnMut(&T) -> bool + Send + 'static,
{
    type In = (T,);
    type Out = T;

    #[inline]
    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, T>) -> Result<()> {
        batch.for_each(out, |record, out| {
            if (self.predicate)(&record) {
                out.collect(record);
            }
            Ok(())
        })
    }
}
