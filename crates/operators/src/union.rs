//! `union`: merges streams of one type; the records pass unchanged.

use std::marker::PhantomData;

use crate::error::Result;
use crate::{Batch, Collector, Operator};

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

impl<T: 'static> Operator for Union<T> {
    type In = (T,);
    type Out = T;

    #[inline]
    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, T>) -> Result<()> {
        batch.for_each(out, |record, out| {
            out.collect(record);
            Ok(())
        })
    }
}
