//! `PerKey`: the one operator of the SQL operators that keep a state per key and turn each
//! input change into output changes (the group aggregate, the rank).
//!
//! The rule written once here: the rows arrive partitioned by key; the key's state lives in
//! a keyed table the runtime snapshots, restores and redistributes by key group (declared
//! under the step's name); a step that leaves a key without state removes it from the table;
//! the changes a step appends go out in order, stamped with the input's timestamp.

use hummer_operators::{Batch, Collector, Operator};
use hummer_state::declared::DeclaredState;
use hummer_state::keyed_table::KeyedTable;
use hummer_types::Data;
use hummer_types::error::Result;

use crate::changelog::Change;
use crate::value::{Row, Value};

/// What an operator does per key: its state, and how a change updates it.
pub trait KeyedChanges: Send + 'static {
    /// The state of one key (checkpointed).
    type State: Data;
    /// The name of its state table, in checkpoints and errors.
    const TABLE: &'static str;
    /// The key of a row.
    fn key(&self, row: &[Value]) -> Row;
    /// Applies `change` to its key's `state` (`None`: none yet; left `None`: the key is
    /// gone) and appends the output changes to `out`.
    fn apply(
        &self,
        state: &mut Option<Self::State>,
        change: Change,
        out: &mut Vec<Change>,
    ) -> Result<()>;
}

/// The operator of a [`KeyedChanges`].
pub struct PerKey<S: KeyedChanges> {
    step: S,
    states: KeyedTable<Row, S::State>,
    changes: Vec<Change>,
}

impl<S: KeyedChanges> PerKey<S> {
    /// The operator of `step`, with no keys yet.
    pub fn new(step: S) -> Self {
        PerKey {
            step,
            states: KeyedTable::default(),
            changes: Vec::new(),
        }
    }
}

impl<S: KeyedChanges> Operator for PerKey<S> {
    type In = (Change,);
    type Out = Change;

    fn process_batch(
        &mut self,
        batch: Batch<'_, Change>,
        out: &mut Collector<'_, Change>,
    ) -> Result<()> {
        let PerKey {
            step,
            states,
            changes,
        } = self;
        batch.for_each(out, |change, out| {
            let key = step.key(&change.row);
            states.update(key, |_, state| step.apply(state, change, changes))?;
            for c in changes.drain(..) {
                out.collect(c);
            }
            Ok(())
        })
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new().table(S::TABLE, &mut self.states)
    }
}
