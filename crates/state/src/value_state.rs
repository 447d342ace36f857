//! A single value per key, as handed to keyed process functions.

/// The state of one key, seen from inside a keyed process function (Flink's `ValueState`).
///
/// The handle is valid for one call: the operator looks up the slot of the current record's key
/// before calling the function and stores what is left in it afterwards. A cleared slot is
/// dropped from the operator's state.
///
/// ```
/// use hummer::state::ValueState;
/// let mut slot = None;
/// let mut state = ValueState::new(&mut slot);
/// assert_eq!(state.value(), None);
/// state.update(3u64);
/// *state.get_or_insert_with(|| 0) += 1;
/// assert_eq!(state.value(), Some(&4));
/// state.clear();
/// assert!(slot.is_none());
/// ```
pub struct ValueState<'a, S> {
    slot: &'a mut Option<S>,
}

impl<'a, S> ValueState<'a, S> {
    /// Wraps a state slot.
    pub fn new(slot: &'a mut Option<S>) -> Self {
        ValueState { slot }
    }

    /// The current value, if any.
    pub fn value(&self) -> Option<&S> {
        self.slot.as_ref()
    }

    /// Replaces the value.
    pub fn update(&mut self, value: S) {
        *self.slot = Some(value);
    }

    /// The value, created with `init` if absent.
    pub fn get_or_insert_with(&mut self, init: impl FnOnce() -> S) -> &mut S {
        self.slot.get_or_insert_with(init)
    }

    /// Removes the value.
    pub fn clear(&mut self) {
        *self.slot = None;
    }

    /// The slot itself (for the list and map views built on it).
    pub fn slot(&mut self) -> &mut Option<S> {
        self.slot
    }
}
