//! `PerKey`: the one operator of the SQL operators that keep a state per key and turn each
//! input change into output changes (the group aggregate, the rank).
//!
//! The rule written once here: the rows arrive partitioned by key; the key's state lives in
//! a keyed table the runtime snapshots, restores and redistributes by key group (declared
//! under the step's name); a step that leaves a key without state removes it from the table;
//! the changes a step appends go out in order, stamped with the input's timestamp.
//!
//! With Flink's mini-batch (`table.exec.mini-batch.*`) a step's output is held back: each
//! change still updates its key's state at once, but what the key's result became is sent
//! only when `size` records have come, when `allow-latency` of processing time has passed,
//! or at the end of the input, and then as its net change since the last time (`-U` of the
//! row it had, `+U` of the one it has; nothing if it came back to the same). An aggregate
//! updated by every record then sends one update per key and batch instead of one per
//! record, as Flink's `MiniBatchGroupAggFunction`. The held-back changes are state of their
//! own, checkpointed with the keys' state, so a restore sends them as the run would have.

use std::time::Duration;

use hummer_operators::{Batch, Collector, Operator, TimeDomain};
use hummer_state::declared::DeclaredState;
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
}

/// The changes a mini-batch holds back (see the module documentation).
struct HeldBack {
    settings: MiniBatch,
    time: ProcessingTimeService,
    /// Records since the changes last went out.
    records: usize,
    /// Per key, the net change of its output rows since then: each row with how many times
    /// it was added (positive) or retracted (negative).
    net: KeyedTable<Row, Vec<(Row, i64)>>,
}

impl HeldBack {
    fn next_deadline(&self) {
        let latency = i64::try_from(self.settings.latency.as_millis()).unwrap_or(i64::MAX);
        self.time
            .request_at(self.time.now().saturating_add(latency.max(1)));
    }

    /// Adds `changes` of `key` to what is held back.
    fn hold(&mut self, key: Row, changes: &mut Vec<Change>) {
        self.net.update(key, |_, slot| {
            let net = slot.get_or_insert_with(Vec::new);
            for change in changes.drain(..) {
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
            if net.is_empty() {
                *slot = None;
            }
        });
    }

    /// Sends every key's net change: retractions first, as `-U` where the key also has a new
    /// row (`-D` where not), then additions, as `+U` where it had a row (`+I` where not).
    fn release(&mut self, out: &mut Collector<'_, Change>) {
        out.clear_timestamp();
        for (_, net) in self.net.drain() {
            let retracts = net.iter().any(|(_, n)| *n < 0);
            let adds = net.iter().any(|(_, n)| *n > 0);
            for (row, n) in &net {
                if *n < 0 {
                    let kind = if adds {
                        RowKind::UpdateBefore
                    } else {
                        RowKind::Delete
                    };
                    for _ in 0..-n {
                        out.collect(Change {
                            kind,
                            row: row.clone(),
                        });
                    }
                }
            }
            for (row, n) in net {
                let kind = if retracts {
                    RowKind::UpdateAfter
                } else {
                    RowKind::Insert
                };
                for _ in 1..n {
                    out.collect(Change {
                        kind,
                        row: row.clone(),
                    });
                }
                if n > 0 {
                    out.collect(Change { kind, row });
                }
            }
        }
        self.records = 0;
    }
}

impl<S: KeyedChanges> PerKey<S> {
    /// The operator of `step`, with no keys yet.
    pub fn new(step: S) -> Self {
        PerKey {
            step,
            states: KeyedTable::default(),
            changes: Vec::new(),
            held: None,
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
                net: KeyedTable::default(),
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

    fn process_batch(
        &mut self,
        batch: Batch<'_, Change>,
        out: &mut Collector<'_, Change>,
    ) -> Result<()> {
        let PerKey {
            step,
            states,
            changes,
            held,
        } = self;
        let Some(held) = held else {
            return batch.for_each(out, |change, out| {
                let key = step.key(&change.row);
                states.update(key, |_, state| step.apply(state, change, changes))?;
                for c in changes.drain(..) {
                    out.collect(c);
                }
                Ok(())
            });
        };
        for (change, _) in batch.drain() {
            let key = step.key(&change.row);
            states.update(key.clone(), |_, state| step.apply(state, change, changes))?;
            if !changes.is_empty() {
                held.hold(key, changes);
            }
            held.records += 1;
            if held.records >= held.settings.size {
                held.release(out);
            }
        }
        Ok(())
    }

    fn on_time(
        &mut self,
        domain: TimeDomain,
        _: Timestamp,
        out: &mut Collector<'_, Change>,
    ) -> Result<()> {
        if let (TimeDomain::ProcessingTime, Some(held)) = (domain, &mut self.held) {
            held.release(out);
            held.next_deadline();
        }
        Ok(())
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, Change>) -> Result<()> {
        if let Some(held) = &mut self.held {
            held.release(out);
        }
        Ok(())
    }

    fn state(&mut self) -> DeclaredState<'_> {
        let state = DeclaredState::new().table(S::TABLE, &mut self.states);
        match &mut self.held {
            Some(held) => state.table("held-back changes", &mut held.net),
            None => state,
        }
    }
}
