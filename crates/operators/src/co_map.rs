//! `co_map` / `co_flat_map` on connected streams: one function per input, one output type.

use std::marker::PhantomData;

use crate::error::Result;
use crate::{Collector, EitherBatch, Operator};

/// The input and iterator types of a [`CoFlatMap`], as a zero-sized marker.
type Signature<I1, I2, It1, It2> = PhantomData<fn(I1, I2) -> (It1, It2)>;

/// Applies `f1` to the first input's records and `f2` to the second's; each returns an
/// iterator of outputs (`co_map` wraps its functions to return one item).
pub struct CoFlatMap<I1, I2, It1, It2, F1, F2> {
    f1: F1,
    f2: F2,
    _types: Signature<I1, I2, It1, It2>,
}

impl<I1, I2, It1, It2, F1, F2> CoFlatMap<I1, I2, It1, It2, F1, F2> {
    /// Wraps the two user functions.
    pub fn new(f1: F1, f2: F2) -> Self {
        CoFlatMap {
            f1,
            f2,
            _types: PhantomData,
        }
    }
}

impl<I1, I2, It1, It2, F1, F2> Operator for CoFlatMap<I1, I2, It1, It2, F1, F2>
where
    I1: 'static,
    I2: 'static,
    It1: IntoIterator + 'static,
    It2: IntoIterator<Item = It1::Item> + 'static,
    F1: FnMut(I1) -> It1 + Send + 'static,
    F2: FnMut(I2) -> It2 + Send + 'static,
{
    type In = (I1, I2);
    type Out = It1::Item;

    fn process(
        &mut self,
        batch: EitherBatch<'_, I1, I2>,
        out: &mut Collector<'_, It1::Item>,
    ) -> Result<()> {
        match batch {
            EitherBatch::First(batch) => batch.for_each(out, |record, out| {
                out.collect_all((self.f1)(record));
                Ok(())
            }),
            EitherBatch::Second(batch) => batch.for_each(out, |record, out| {
                out.collect_all((self.f2)(record));
                Ok(())
            }),
        }
    }
}
