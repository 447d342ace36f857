//! `OverAggregate`: aggregates over a window of rows per row (`SUM(x) OVER (PARTITION BY k
//! ORDER BY rowtime RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW)`), as Flink's
//! over aggregations run them.
//!
//! Its input rows are the query's columns, then the partition key's, then the aggregates'
//! arguments (computed by the `Calc` before it); each output row is an input row's query
//! columns followed by the aggregates over its frame. In event time a row waits until the
//! watermark passes its time, so the rows of a partition are aggregated in time order
//! whatever order they came in; a row at or below the watermark when it comes is late and
//! dropped, as in Flink. In processing time a row is aggregated when it comes. The result is
//! append-only.
//!
//! Frames: `ROWS BETWEEN n PRECEDING AND CURRENT ROW` (the row and the `n` before it, in
//! order), `RANGE BETWEEN t PRECEDING AND CURRENT ROW` (every row with a time in
//! `[time - t, time]`: rows of one time are aggregated together, and all see the same
//! result), and either `UNBOUNDED PRECEDING` (every row so far).

use hummer_types::error::Result;
use std::collections::{BTreeMap, VecDeque};

use hummer_operators::keyed_process_function::KeyedProcessFunction;

use super::RowContext;
use hummer_types::Timestamp;
use serde::{Deserialize, Serialize};

use super::group_aggregate::{GroupAggregate, GroupState};
use crate::changelog::Change;
use crate::value::{Row, Value};

/// Which rows before the current one are in its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// `ROWS BETWEEN n PRECEDING AND CURRENT ROW` (`None`: `UNBOUNDED`).
    Rows(Option<u64>),
    /// `RANGE BETWEEN t PRECEDING AND CURRENT ROW`, `t` in milliseconds (`None`: `UNBOUNDED`).
    Range(Option<i64>),
}

/// An over aggregation: where its columns are and what it computes.
#[derive(Clone, Debug)]
pub struct OverAggregate {
    /// How many leading input columns are the query's (kept in the output).
    pub width: usize,
    /// The aggregates, with their arguments' input columns.
    pub aggregate: GroupAggregate,
    /// The frame.
    pub frame: Frame,
    /// The input column of the time the rows are ordered by.
    pub time: usize,
    /// Ordered by processing time (aggregated when they come), not event time.
    pub processing_time: bool,
}

/// One partition's state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct OverState {
    /// Rows waiting for the watermark, by time (event time only).
    pending: BTreeMap<Timestamp, Vec<Row>>,
    /// The rows in the current frame with their times, oldest first (bounded frames only).
    frame: VecDeque<(Timestamp, Row)>,
    /// The aggregates over the frame.
    accumulated: Option<GroupState>,
}

impl OverAggregate {
    /// Aggregates `rows` (all of time `time`, in arrival order) into `state` and emits each
    /// with its frame's results.
    fn aggregate(
        &self,
        state: &mut OverState,
        time: Timestamp,
        rows: Vec<Row>,
        emit: &mut dyn FnMut(Row),
    ) -> Result<()> {
        let OverState {
            frame, accumulated, ..
        } = state;
        let acc = accumulated.get_or_insert_with(|| self.aggregate.new_state());
        let output = |row: &Row, results: Vec<Value>| -> Row {
            let mut out = Vec::with_capacity(self.width + results.len());
            out.extend_from_slice(&row[..self.width]);
            out.extend(results);
            out
        };
        match self.frame {
            Frame::Range(preceding) => {
                if let Some(p) = preceding {
                    while let Some((t, _)) = frame.front()
                        && *t < time - p
                    {
                        if let Some((_, old)) = frame.pop_front() {
                            self.aggregate.fold(acc, &old, -1)?;
                        }
                    }
                }
                for row in &rows {
                    self.aggregate.fold(acc, row, 1)?;
                }
                let results = self.aggregate.results(acc)?;
                for row in rows {
                    emit(output(&row, results.clone()));
                    if preceding.is_some() {
                        frame.push_back((time, row));
                    }
                }
            }
            Frame::Rows(preceding) => {
                for row in rows {
                    self.aggregate.fold(acc, &row, 1)?;
                    if let Some(n) = preceding {
                        frame.push_back((time, row.clone()));
                        // The row and the `n` before it.
                        if frame.len() as u64 > n + 1
                            && let Some((_, old)) = frame.pop_front()
                        {
                            self.aggregate.fold(acc, &old, -1)?;
                        }
                    }
                    let results = self.aggregate.results(acc)?;
                    emit(output(&row, results));
                }
            }
        }
        Ok(())
    }
}

impl KeyedProcessFunction<Row, Change> for OverAggregate {
    type State = OverState;
    type Out = Change;

    fn process_element(&mut self, change: Change, ctx: &mut RowContext<'_, '_, OverState>) {
        if self.processing_time {
            let now = ctx.timer_service().current_processing_time();
            let state = ctx.state().get_or_insert_with(OverState::default);
            let mut emitted = Vec::new();
            // An aggregate that fails (an overflow) drops its row, as a Calc drops a row
            // whose expression fails (the error is in the row's values, not the job's).
            let _ = self.aggregate(state, now, vec![change.row], &mut |r| emitted.push(r));
            for row in emitted {
                ctx.collect(Change::insert(row));
            }
            return;
        }
        let Some(time) = change.row[self.time].time_millis() else {
            return;
        };
        if time <= ctx.current_watermark() {
            return;
        }
        let state = ctx.state().get_or_insert_with(OverState::default);
        state.pending.entry(time).or_default().push(change.row);
        ctx.timer_service().register_event_time_timer(time);
    }

    fn on_timer(&mut self, time: Timestamp, ctx: &mut RowContext<'_, '_, OverState>) {
        let Some(state) = ctx.state().slot().as_mut() else {
            return;
        };
        let Some(rows) = state.pending.remove(&time) else {
            return;
        };
        let mut emitted = Vec::new();
        let _ = self.aggregate(state, time, rows, &mut |r| emitted.push(r));
        for row in emitted {
            ctx.collect(Change::insert(row));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::group_aggregate::{AggCall, AggKind};
    use crate::types::SqlType;
    use proptest::prelude::*;

    fn over(frame: Frame) -> OverAggregate {
        let call = |kind| AggCall {
            kind,
            arg: Some(1),
            distinct: false,
            filter: None,
            ty: SqlType::BigInt,
            parameter: None,
        };
        OverAggregate {
            width: 2,
            aggregate: GroupAggregate::new(
                0,
                vec![call(AggKind::Sum), call(AggKind::Max), call(AggKind::Count)],
                false,
            ),
            frame,
            time: 0,
            processing_time: false,
        }
    }

    proptest! {
        /// Rows (time, value) in time order, grouped by time as the timers give them: each
        /// row's SUM, MAX and COUNT are those of the brute-force frame.
        #[test]
        fn each_row_gets_its_frames_aggregates(
            mut rows in proptest::collection::vec((0i64..20, -5i64..5), 0..40),
            rows_frame in any::<bool>(),
            bound in proptest::option::of(0i64..5),
        ) {
            rows.sort_by_key(|r| r.0); // stable: arrival order within a time
            let frame = if rows_frame { Frame::Rows(bound.map(|b| b as u64)) } else { Frame::Range(bound) };
            let op = over(frame);
            let mut state = OverState::default();
            let mut got = Vec::new();
            let mut i = 0;
            while i < rows.len() {
                let t = rows[i].0;
                let same: Vec<Row> = rows[i..].iter().take_while(|r| r.0 == t)
                    .map(|r| vec![Value::Timestamp(r.0), Value::BigInt(r.1)]).collect();
                i += same.len();
                op.aggregate(&mut state, t, same, &mut |r| got.push(r)).unwrap();
            }
            let expected: Vec<Row> = rows.iter().enumerate().map(|(j, &(t, v))| {
                let in_frame: Vec<i64> = rows.iter().enumerate().filter(|(k, r)| match frame {
                    Frame::Rows(None) => *k <= j,
                    Frame::Rows(Some(n)) => *k <= j && j - *k <= n as usize,
                    Frame::Range(None) => r.0 <= t,
                    Frame::Range(Some(p)) => r.0 <= t && r.0 >= t - p,
                }).map(|(_, r)| r.1).collect();
                vec![
                    Value::Timestamp(t),
                    Value::BigInt(v),
                    Value::BigInt(in_frame.iter().sum()),
                    Value::BigInt(*in_frame.iter().max().unwrap()),
                    Value::BigInt(in_frame.len() as i64),
                ]
            }).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
