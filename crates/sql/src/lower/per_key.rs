//! `PerKey`: the one operator of the SQL operators that keep a state per key and turn each
//! input change into output changes (the group aggregate, the rank).
//!
//! The rule written once here: the rows arrive partitioned by key; the key's state lives in
//! a keyed table the runtime snapshots, restores and redistributes by key group (declared
//! under the step's name); a step that leaves a key without state removes it from the table;
//! the changes a step appends go out in order, stamped with the input's timestamp.
//!
//! With Flink's mini-batch (`table.exec.mini-batch.*`) the input is held back instead: each
//! change is appended to its key's bundle, and the bundles are applied when `size` records
//! have come, when `allow-latency` of processing time has passed, or at the end of the input.
//! A key's bundle is applied at once ([`KeyedChanges::apply_bundle`]) and sends its net change
//! since the last time (`-U` of the row it had, `+U` of the one it has; nothing if it came back
//! to the same): an aggregate updated by every record then reads its state, and computes and
//! sends its result, once per key and batch instead of once per record, as Flink's
//! `MiniBatchGroupAggFunction`. The bundles are state of their own, checkpointed with the
//! keys' state, so a restore applies them as the run would have.

use std::time::Duration;

use hummer_operators::{Batch, Collector, Operator, OperatorContext};
use hummer_state::declared::DeclaredState;
use hummer_state::key_groups::subtask_of_key;
use hummer_state::keyed_table::KeyedTable;
use hummer_types::error::Result;
use hummer_types::{Data, ProcessingTimeService, Timestamp};

use crate::changelog::{Change, RowKind};
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

    /// Applies a key's bundle of changes, in order, and appends the net change of the key's
    /// output rows to `out` (see [`net_changes`]). By default each change is applied in turn;
    /// a step that can fold a bundle more cheaply (reading its result once) overrides it.
    fn apply_bundle(
        &self,
        state: &mut Option<Self::State>,
        bundle: Vec<Change>,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let mut changes = Vec::new();
        for change in bundle {
            self.apply(state, change, &mut changes)?;
        }
        net_changes(changes, out);
        Ok(())
    }
}

/// Appends the net effect of `changes` to `out`: each row with how many times it was added
/// less how many times it was retracted; retractions first, as `-U` where a row is also added
/// (`-D` where not), then additions, as `+U` where a row was also retracted (`+I` where not).
pub fn net_changes(changes: Vec<Change>, out: &mut Vec<Change>) {
    let mut net: Vec<(Row, i64)> = Vec::new();
    for change in changes {
        let sign = if change.kind.retracts() { -1 } else { 1 };
        match net.iter().position(|(row, _)| *row == change.row) {
            Some(i) => {
                net[i].1 += sign;
                if net[i].1 == 0 {
                    net.swap_remove(i);
                }
            }
            None => net.push((change.row, sign)),
        }
    }
    let retracts = net.iter().any(|(_, n)| *n < 0);
    let adds = net.iter().any(|(_, n)| *n > 0);
    let (retract_kind, add_kind) = match (retracts, adds) {
        (true, true) => (RowKind::UpdateBefore, RowKind::UpdateAfter),
        _ => (RowKind::Delete, RowKind::Insert),
    };
    for (row, n) in &net {
        for _ in 0..(-n).max(0) {
            out.push(Change {
                kind: retract_kind,
                row: row.clone(),
            });
        }
    }
    for (row, n) in net {
        for _ in 1..n {
            out.push(Change {
                kind: add_kind,
                row: row.clone(),
            });
        }
        if n > 0 {
            out.push(Change {
                kind: add_kind,
                row,
            });
        }
    }
}

/// Flink's mini-batch settings (`table.exec.mini-batch.size` and `.allow-latency`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniBatch {
    /// Records after which the held-back changes go out.
    pub size: usize,
    /// Processing time after which they go out.
    pub latency: Duration,
}

/// The operator of a [`KeyedChanges`].
pub struct PerKey<S: KeyedChanges> {
    step: S,
    states: KeyedTable<Row, S::State>,
    changes: Vec<Change>,
    held: Option<HeldBack>,
    /// The key and row this subtask sends at the end of the input if the key has no state
    /// (see [`PerKey::showing_when_empty`]).
    when_empty: Option<(Row, Row)>,
}

/// The input a mini-batch holds back (see the module documentation).
struct HeldBack {
    settings: MiniBatch,
    time: ProcessingTimeService,
    /// Records since the bundles were last applied.
    records: usize,
    /// Per key, the changes that came since then, in order.
    bundles: KeyedTable<Row, Vec<Change>>,
}

impl HeldBack {
    /// Adds `change` to its key's bundle; true when the batch is full.
    fn hold(&mut self, key: Row, change: Change) -> bool {
        self.bundles.update(key, |_, bundle| {
            bundle.get_or_insert_with(Vec::new).push(change)
        });
        self.records += 1;
        self.records >= self.settings.size
    }

    fn next_deadline(&self) {
        let latency = i64::try_from(self.settings.latency.as_millis()).unwrap_or(i64::MAX);
        self.time
            .request_at(self.time.now().saturating_add(latency.max(1)));
    }
}

/// Applies every key's bundle to its state and sends what changed, without timestamps.
fn release<S: KeyedChanges>(
    step: &S,
    states: &mut KeyedTable<Row, S::State>,
    held: &mut HeldBack,
    changes: &mut Vec<Change>,
    out: &mut Collector<'_, Change>,
) -> Result<()> {
    out.clear_timestamp();
    for (key, bundle) in held.bundles.drain() {
        states.update(key, |_, state| step.apply_bundle(state, bundle, changes))?;
        for c in changes.drain(..) {
            out.collect(c);
        }
    }
    held.records = 0;
    Ok(())
}

impl<S: KeyedChanges> PerKey<S> {
    /// The operator of `step`, with no keys yet.
    pub fn new(step: S) -> Self {
        PerKey {
            step,
            states: KeyedTable::default(),
            changes: Vec::new(),
            held: None,
            when_empty: None,
        }
    }

    /// Sends `row` at the end of the input if no row came for `key`: a global aggregate's
    /// result over no rows in batch mode (`COUNT(*)` 0, `SUM` NULL), or an empty grouping
    /// set's, where Flink's batch aggregate gives one row. Only the subtask that owns the key
    /// sends it.
    pub fn showing_when_empty(mut self, empty: Option<(Row, Row)>, ctx: &OperatorContext) -> Self {
        self.when_empty = empty.filter(|(key, _)| {
            subtask_of_key(key, ctx.max_parallelism, ctx.parallelism) == ctx.subtask
        });
        self
    }

    /// Applies the held-back bundles, with a mini-batch.
    fn release(&mut self, out: &mut Collector<'_, Change>) -> Result<()> {
        let PerKey {
            step,
            states,
            changes,
            held,
            ..
        } = self;
        match held {
            Some(held) => release(step, states, held, changes, out),
            None => Ok(()),
        }
    }

    /// The operator of `step` whose changes go out in mini-batches, `time` telling when
    /// `settings.latency` has passed (`None`: each change at once, as [`PerKey::new`]).
    pub fn batched(step: S, settings: Option<MiniBatch>, time: ProcessingTimeService) -> Self {
        let mut operator = PerKey::new(step);
        operator.held = settings.map(|settings| {
            let held = HeldBack {
                settings,
                time,
                records: 0,
                bundles: KeyedTable::default(),
            };
            held.next_deadline();
            held
        });
        operator
    }
}

impl<S: KeyedChanges> Operator for PerKey<S> {
    type In = (Change,);
    type Out = Change;

    fn process(&mut self, batch: Batch<'_, Change>, out: &mut Collector<'_, Change>) -> Result<()> {
        if self.held.is_none() {
            return batch.for_each(out, |change, out| {
                let PerKey {
                    step,
                    states,
                    changes,
                    ..
                } = &mut *self;
                let key = step.key(&change.row);
                states.update(key, |_, state| step.apply(state, change, changes))?;
                for c in changes.drain(..) {
                    out.collect(c);
                }
                Ok(())
            });
        }
        for (change, _) in batch.drain() {
            let key = self.step.key(&change.row);
            if self
                .held
                .as_mut()
                .is_some_and(|held| held.hold(key, change))
            {
                self.release(out)?;
            }
        }
        Ok(())
    }

    fn on_processing_time(&mut self, _: Timestamp, out: &mut Collector<'_, Change>) -> Result<()> {
        self.release(out)?;
        if let Some(held) = &self.held {
            held.next_deadline();
        }
        Ok(())
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, Change>) -> Result<()> {
        self.release(out)?;
        if let Some((key, row)) = self.when_empty.take()
            && self.states.get(&key).is_none()
        {
            out.clear_timestamp();
            out.collect(Change::insert(row));
        }
        Ok(())
    }

    fn state(&mut self) -> DeclaredState<'_> {
        let state = DeclaredState::new().table(S::TABLE, &mut self.states);
        match &mut self.held {
            Some(held) => state.table("held-back input", &mut held.bundles),
            None => state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn replayed(changes: &[Change]) -> BTreeMap<i64, i64> {
        let mut table = BTreeMap::new();
        for c in changes {
            let Value::BigInt(v) = c.row[0] else {
                unreachable!("rows of one BIGINT")
            };
            *table.entry(v).or_insert(0) += if c.kind.retracts() { -1 } else { 1 };
        }
        table.retain(|_, n| *n != 0);
        table
    }

    proptest! {
        /// The net change of a bundle replays to what the bundle replays to, retracts before
        /// it adds, and says `-U`/`+U` exactly when it does both (else `-D`, `+I`).
        #[test]
        fn net_changes_replay_as_the_changes(
            ops in proptest::collection::vec((0i64..4, any::<bool>()), 0..30),
        ) {
            let changes: Vec<Change> = ops
                .iter()
                .map(|&(v, retract)| Change {
                    kind: if retract { RowKind::Delete } else { RowKind::Insert },
                    row: vec![Value::BigInt(v)],
                })
                .collect();
            let mut out = Vec::new();
            net_changes(changes.clone(), &mut out);
            prop_assert_eq!(replayed(&out), replayed(&changes));
            let first_add = out.iter().position(|c| !c.kind.retracts()).unwrap_or(out.len());
            prop_assert!(out[first_add..].iter().all(|c| !c.kind.retracts()));
            let both = first_add > 0 && first_add < out.len();
            for c in &out {
                let expected = match (c.kind.retracts(), both) {
                    (true, true) => RowKind::UpdateBefore,
                    (true, false) => RowKind::Delete,
                    (false, true) => RowKind::UpdateAfter,
                    (false, false) => RowKind::Insert,
                };
                prop_assert_eq!(c.kind, expected);
            }
        }
    }
}
