//! `process` on a keyed stream: a user function with a [`ValueState`] per key.

use std::collections::HashMap;
use std::marker::PhantomData;

use crate::error::Result;
use crate::state::ValueState;
use crate::types::Key;
use crate::{Batch, Collector, Operator};

/// Calls the user function for every record with the state of the record's key.
///
/// State lives in this subtask for the keys routed to it (by key group); a key whose state is
/// cleared is removed from the table.
pub struct KeyedProcess<T, K, S, O, KS, F> {
    key_of: KS,
    f: F,
    state: HashMap<K, S, foldhash::fast::RandomState>,
    snapshot_buffer: crate::state::snapshot::SnapshotBuffer,
    _types: PhantomData<fn(T) -> O>,
}

impl<T, K: Key, S, O, KS, F> KeyedProcess<T, K, S, O, KS, F> {
    /// Wraps the key selector and the user function.
    pub fn new(key_of: KS, f: F) -> Self {
        KeyedProcess {
            key_of,
            f,
            state: HashMap::default(),
            snapshot_buffer: Default::default(),
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
    KS: Fn(&T) -> K + Send + 'static,
    F: FnMut(&K, T, &mut ValueState<'_, S>, &mut Collector<'_, O>) + Send + 'static,
{
    type In = (T,);
    type Out = O;

    fn process_batch(&mut self, batch: Batch<'_, T>, out: &mut Collector<'_, O>) -> Result<()> {
        batch.for_each(out, |record, out| {
            let key = (self.key_of)(&record);
            let mut slot = self.state.remove(&key);
            (self.f)(&key, record, &mut ValueState::new(&mut slot), out);
            if let Some(value) = slot {
                self.state.insert(key, value);
            }
            Ok(())
        })
    }

    fn snapshot_state(
        &mut self,
        _checkpoint: crate::types::CheckpointId,
        max_parallelism: usize,
    ) -> Result<Option<Vec<u8>>> {
        let state = &self.state;
        self.snapshot_buffer
            .write(|out| {
                crate::state::snapshot::append_snapshot(
                    out,
                    state.iter(),
                    max_parallelism,
                    crate::types::MIN_WATERMARK,
                )
            })
            .map(Some)
    }

    fn restore_state(&mut self, snapshot: &[u8], key_groups: std::ops::Range<usize>) -> Result<()> {
        let state = &mut self.state;
        crate::state::snapshot::read_snapshot(
            snapshot,
            key_groups,
            "keyed process state",
            |k, v| {
                state.insert(k, v);
            },
        )
    }
}
