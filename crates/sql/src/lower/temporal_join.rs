//! `TemporalJoin`: an event-time temporal join (`JOIN versioned FOR SYSTEM_TIME AS OF
//! left.rowtime ON left.k = versioned.pk`), as Flink's `TemporalRowTimeJoinOperator` runs it.
//!
//! The right side is a versioned table: per primary key, rows that each hold from their own
//! rowtime until the next one of the key (a `-D` ends a key's version; a `-U` is the old row of
//! an update, whose `+U` is the new version, and is not needed). A left row at time `t` joins
//! the version of its key that holds at `t`: the latest right row with a rowtime at or before
//! `t`. Because a version may still come for a time the watermark has not passed, left rows
//! wait in state until the watermark (the minimum of both inputs, which arrive as one keyed
//! stream) passes their time; then they are joined in time order and emitted, and the versions
//! no later left row can need are dropped: every one older than the version that holds at the
//! watermark. The result is append-only and keeps the left rows' rowtime.
//!
//! Both inputs come as one stream: each row starts with a `BOOLEAN` that says whether it is a
//! left row, then the join key's values, then its own columns.

use std::collections::BTreeMap;

use hummer_operators::keyed_process_function::KeyedProcessFunction;

use super::RowContext;
use hummer_types::Timestamp;
use serde::{Deserialize, Serialize};

use super::Calc;
use crate::changelog::{Change, RowKind};
use crate::value::{Row, Value};

/// The join: where the columns are and what it keeps.
#[derive(Clone, Debug)]
pub struct TemporalJoin {
    /// How many key columns follow a row's side flag.
    pub keys: usize,
    /// Columns of a left row.
    pub left_width: usize,
    /// Columns of a right row.
    pub right_width: usize,
    /// The left rows' rowtime column (among their own columns).
    pub left_time: usize,
    /// The right rows' rowtime column (among their own columns).
    pub right_time: usize,
    /// Whether a left row without a version is emitted padded (a `LEFT JOIN`).
    pub keep_unmatched: bool,
    /// The `ON`'s conditions other than the key's equalities, over the joined row.
    pub residual: Option<Calc>,
}

/// One key's state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TemporalState {
    /// Left rows waiting for the watermark, by time.
    left: BTreeMap<Timestamp, Vec<Row>>,
    /// The key's versions by time (`None`: the key was deleted then).
    versions: BTreeMap<Timestamp, Option<Row>>,
}

impl TemporalJoin {
    /// The joined row of `left` and the version `right`, if the residual conditions hold (a
    /// condition that fails on the row, a division by zero, does not hold: a keyed process
    /// function has no error to return).
    fn joined(&self, left: &Row, right: &Row) -> Option<Row> {
        let mut row = Vec::with_capacity(self.left_width + self.right_width);
        row.extend_from_slice(left);
        row.extend_from_slice(right);
        match &self.residual {
            Some(residual) => residual.apply(&row).ok().flatten().map(|_| row),
            None => Some(row),
        }
    }
}

/// The version of `versions` that holds at `t`: the latest at or before it, unless a delete.
fn version_at(versions: &BTreeMap<Timestamp, Option<Row>>, t: Timestamp) -> Option<&Row> {
    versions
        .range(..=t)
        .next_back()
        .and_then(|(_, v)| v.as_ref())
}

impl KeyedProcessFunction<Row, Change> for TemporalJoin {
    type State = TemporalState;
    type Out = Change;

    fn process_element(&mut self, change: Change, ctx: &mut RowContext<'_, '_, TemporalState>) {
        let is_left = matches!(change.row.first(), Some(Value::Boolean(true)));
        let own = change.row[1 + self.keys..].to_vec();
        let time_column = if is_left {
            self.left_time
        } else {
            self.right_time
        };
        // A row without a time has no place in time: Flink drops such rows too.
        let Some(t) = own.get(time_column).and_then(Value::time_millis) else {
            return;
        };
        let state = ctx.state().get_or_insert_with(TemporalState::default);
        if is_left {
            if change.kind.retracts() {
                return;
            }
            state.left.entry(t).or_default().push(own);
        } else {
            match change.kind {
                RowKind::Insert | RowKind::UpdateAfter => {
                    state.versions.insert(t, Some(own));
                }
                RowKind::Delete => {
                    state.versions.insert(t, None);
                }
                RowKind::UpdateBefore => return,
            }
        }
        // Joined or cleaned up when the watermark passes the row's time.
        ctx.timer_service().register_event_time_timer(t);
    }

    fn on_timer(&mut self, watermark: Timestamp, ctx: &mut RowContext<'_, '_, TemporalState>) {
        let Some(mut state) = ctx.state().slot().take() else {
            return;
        };
        let later = match watermark.checked_add(1) {
            Some(next) => state.left.split_off(&next),
            None => BTreeMap::new(),
        };
        let due = std::mem::replace(&mut state.left, later);
        for (t, rows) in due {
            let version = version_at(&state.versions, t);
            for left in rows {
                match version.and_then(|right| self.joined(&left, right)) {
                    Some(row) => ctx.collect(Change::insert(row)),
                    None if self.keep_unmatched => {
                        let mut row = left;
                        row.resize(self.left_width + self.right_width, Value::Null);
                        ctx.collect(Change::insert(row));
                    }
                    None => {}
                }
            }
        }
        // Versions older than the one that holds at the watermark serve no later left row.
        if let Some((&current, _)) = state.versions.range(..=watermark).next_back() {
            state.versions = state.versions.split_off(&current);
            if state.versions.get(&current).is_some_and(Option::is_none) {
                state.versions.remove(&current);
            }
        }
        if !state.left.is_empty() || !state.versions.is_empty() {
            ctx.state().update(state);
        }
    }
}
