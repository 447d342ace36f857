//! A list of values per key, as handed to `process_list` functions.

/// The list state of one key (Flink's `ListState`). An emptied list is removed from the
/// operator's state, like a cleared [`crate::ValueState`].
///
/// ```
/// use hummer::state::ListState;
/// let mut slot = None;
/// let mut list = ListState::new(&mut slot);
/// assert!(list.get().is_empty());
/// list.add(1u32);
/// list.add_all([2, 3]);
/// assert_eq!(list.get(), &[1, 2, 3]);
/// list.update(vec![]);
/// assert!(slot.is_none());
/// ```
pub struct ListState<'a, E> {
    slot: &'a mut Option<Vec<E>>,
}

impl<'a, E> ListState<'a, E> {
    /// Wraps a state slot.
    pub fn new(slot: &'a mut Option<Vec<E>>) -> Self {
        ListState { slot }
    }

    /// The values, oldest first (empty if none).
    pub fn get(&self) -> &[E] {
        self.slot.as_deref().unwrap_or(&[])
    }

    /// Appends a value.
    pub fn add(&mut self, value: E) {
        self.slot.get_or_insert_with(Vec::new).push(value);
    }

    /// Appends values.
    pub fn add_all(&mut self, values: impl IntoIterator<Item = E>) {
        let list = self.slot.get_or_insert_with(Vec::new);
        list.extend(values);
        if list.is_empty() {
            *self.slot = None;
        }
    }

    /// Replaces the values.
    pub fn update(&mut self, values: Vec<E>) {
        *self.slot = (!values.is_empty()).then_some(values);
    }

    /// Takes the values out, leaving the state empty.
    pub fn take(&mut self) -> Vec<E> {
        self.slot.take().unwrap_or_default()
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        *self.slot = None;
    }
}
