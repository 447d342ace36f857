//! `flat_map`: any number of output records per input record.

use std::marker::PhantomData;

use crate::error::Result;
use crate::{Batch, Collector, Operator};

/// Applies a function returning an iterator to every record and emits what it yields.
///
/// The iterator is consumed directly into the output batch, so a function that yields owned,
/// allocation-free items (such as [`crate::jobs::wordcount::Words`]) costs no allocation per
/// output record.
pub struct FlatMap<I, It, F> {
    f: F,
    _types: PhantomData<fn(I) -> It>,
}

impl<I, It, F> FlatMap<I, It, F> {
    /// Wraps the user function.
    pub fn new(f: F) -> Self {
        FlatMap {
            f,
            _types: PhantomData,
        }
    }
}

impl<I: 'static, It, F> Operator for FlatMap<I, It, F>
where
    It: IntoIterator + 'static,
    F: FnMut(I) -> It + Send + 'static,
{
    type In = (I,);
    type Out = It::Item;

    #[inline]
    fn process(&mut self, batch: Batch<'_, I>, out: &mut Collector<'_, It::Item>) -> Result<()> {
        batch.for_each(out, |record, out| {
            // `for_each` lets the iterator drive (internal iteration), which is faster than
            // pulling with `next` for iterators that implement `fold`.
            (self.f)(record)
                .into_iter()
                .for_each(|item| out.collect(item));
            Ok(())
        })
    }
}
