//! `process` on a keyed stream: a user function with a [`ValueState`] per key.

use std::marker::PhantomData;

use crate::error::Result;
use crate::state::ValueState;
use crate::state::declared::DeclaredState;
use crate::state::keyed_table::KeyedTable;
use crate::types::{Key, KeySelector};
use crate::{Batch, Collector, Operator};

/// Calls the user function for every record with the state of the record's key.
///
/// State lives in this subtask for the keys routed to it (by key group); a key whose state is
/// cleared is removed from the table.
pub struct KeyedProcess<T, K, S, O, KS, F> {
    key_of: KS,
    f: F,
    state: KeyedTable<K, S>,
    _types: PhantomData<fn(T) -> O>,
}

impl<T, K: Key, S, O, KS, F> KeyedProcess<T, K, S, O, KS, F> {
    /// Wraps the key selector and the user function.
    pub fn new(key_of: KS, f: F) -> Self {
        KeyedProcess {
            key_of,
            f,
            state: KeyedTable::default(),
            _types: PhantomData,
        }
    }
}

impl<T, K, S, O, KS, F> Operator for KeyedProcess<T, K, S, O, KS, F>
where
    T: 'static,
    K: Key,
    S: crate::types::Data,
    O: 'static,
    KS: KeySelector<T, K>,
    F: FnMut(&K, T, &mut ValueState<'_, S>, &mut Collector<'_, O>) + Send + 'static,
{
    type In = (T,);
    type Out = O;

    fn process(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, O>) -> Result<()> {
        batch.for_each(out, |record, out| {
            let key = (self.key_of)(&record);
            let f = &mut self.f;
            self.state.update(key, |key, slot| {
                f(key, record, &mut ValueState::new(slot), out)
            });
            Ok(())
        })
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new().table("value per key", &mut self.state)
    }
}
