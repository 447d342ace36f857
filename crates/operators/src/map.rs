//! `map`: one output record per input record.

use std::marker::PhantomData;

use crate::error::Result;
use crate::{Batch, Collector, Operator};

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

impl<I: 'static, O: 'static, F> Operator for Map<I, O, F>
where
    F: FnMut(I) -> O + Send + 'static,
{
    type In = (I,);
    type Out = O;

    #[inline]
    fn process(&mut self, batch: Batch<'_, I>, out: &mut Collector<'_, O>) -> Result<()> {
        batch.for_each(out, |record, out| {
            out.collect((self.f)(record));
            Ok(())
        })
    }
}
