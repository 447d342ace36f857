//! A map per key, as handed to `process_map` functions.

use std::collections::HashMap;
use std::hash::Hash;

/// The map state of one key (Flink's `MapState`). An emptied map is removed from the
/// operator's state.
///
/// ```
/// use hummer::state::MapState;
/// let mut slot = None;
/// let mut map = MapState::new(&mut slot);
/// map.put("clicks", 2u64);
/// *map.entry_or_insert("clicks", 0) += 1;
/// assert_eq!(map.get(&"clicks"), Some(&3));
/// assert_eq!(map.remove(&"clicks"), Some(3));
/// assert!(slot.is_none());
/// ```
pub struct MapState<'a, MK, MV> {
    slot: &'a mut Option<HashMap<MK, MV>>,
}

impl<'a, MK: Hash + Eq, MV> MapState<'a, MK, MV> {
    /// Wraps a state slot.
    pub fn new(slot: &'a mut Option<HashMap<MK, MV>>) -> Self {
        MapState { slot }
    }

    /// The value under `key`.
    pub fn get(&self, key: &MK) -> Option<&MV> {
        self.slot.as_ref()?.get(key)
    }

    /// Whether `key` has a value.
    pub fn contains(&self, key: &MK) -> bool {
        self.get(key).is_some()
    }

    /// Sets the value under `key`; returns the previous one.
    pub fn put(&mut self, key: MK, value: MV) -> Option<MV> {
        self.slot
            .get_or_insert_with(HashMap::new)
            .insert(key, value)
    }

    /// The value under `key`, inserted as `default` if absent.
    pub fn entry_or_insert(&mut self, key: MK, default: MV) -> &mut MV {
        self.slot
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert(default)
    }

    /// Removes the value under `key`.
    pub fn remove(&mut self, key: &MK) -> Option<MV> {
        let map = self.slot.as_mut()?;
        let removed = map.remove(key);
        if map.is_empty() {
            *self.slot = None;
        }
        removed
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&MK, &MV)> {
        self.slot.iter().flat_map(|m| m.iter())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.slot.as_ref().map_or(0, HashMap::len)
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        *self.slot = None;
    }
}
