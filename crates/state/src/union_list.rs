//! Operator state that belongs to no key: a list each subtask keeps, which a restore hands
//! whole to every subtask of the new run (Flink's union list state), so that each decides
//! what of it is its own (a sink's transactions, a source's splits).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::declared::{Redistribution, SnapshotAt, StateTable, TablePiece};
use crate::disk_tier::ColdPart;
use crate::error::Result;
use crate::snapshot::append_snapshot;
use crate::snapshot::incremental::ChangeSummary;

/// A list of operator state, restored as the union of every old subtask's list.
///
/// ```
/// use hummer::state::UnionList;
/// use hummer::state::declared::DeclaredState;
/// use hummer::state::snapshot::SnapshotBuffer;
///
/// let snapshot = |items: Vec<u32>| {
///     let mut list = UnionList::from(items);
///     let mut buffer = SnapshotBuffer::default();
///     DeclaredState::new().table("offsets", &mut list)
///         .snapshot(1, 128, &mut buffer).unwrap().unwrap()
/// };
/// let (a, b) = (snapshot(vec![1, 2]), snapshot(vec![3]));
/// // Restored at any parallelism, with any key groups, a subtask sees every item.
/// let mut restored = UnionList::<u32>::default();
/// let mut state = DeclaredState::new().table("offsets", &mut restored);
/// state.restore(&a, 0..1, "subtask 0").unwrap();
/// state.restore(&b, 0..1, "subtask 1").unwrap();
/// drop(state);
/// assert_eq!(restored.items(), &[1, 2, 3]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnionList<T> {
    items: Vec<T>,
}

impl<T> Default for UnionList<T> {
    fn default() -> Self {
        UnionList { items: Vec::new() }
    }
}

impl<T> From<Vec<T>> for UnionList<T> {
    fn from(items: Vec<T>) -> Self {
        UnionList { items }
    }
}

impl<T> UnionList<T> {
    /// The items, in the order they were added (after a restore: old subtask by subtask).
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// The items, to change.
    pub fn items_mut(&mut self) -> &mut Vec<T> {
        &mut self.items
    }
}

impl<T: Serialize + DeserializeOwned> StateTable for UnionList<T> {
    fn change_summary(&mut self) -> Option<ChangeSummary> {
        None
    }

    fn append_snapshot(&mut self, out: &mut Vec<u8>, at: &SnapshotAt) -> Result<Option<ColdPart>> {
        let entries = self.items.iter().map(|item| (&(), item));
        append_snapshot(out, entries, at.max_parallelism, at.watermark)?;
        Ok(None)
    }

    fn restore(&mut self, piece: &TablePiece<'_>) -> Result<()> {
        let items = &mut self.items;
        piece
            .table
            .entries(&piece.key_groups, &piece.what, |(), item| items.push(item))
    }

    fn redistribution(&self) -> Redistribution {
        Redistribution::Union
    }
}
