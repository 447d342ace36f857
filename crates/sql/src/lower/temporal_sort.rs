//! `TemporalSort`: the rows of a stream in event-time order (`ORDER BY rowtime [, more]`
//! without `LIMIT`), as Flink's streaming `Sort` on a time attribute runs: each row waits
//! until the watermark passes its time, then the rows of one time go out ordered by the
//! further sort columns (ties in arrival order). A row at or below the watermark when it
//! comes is late and dropped, as in Flink. The result is append-only and keeps its rowtime.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use hummer_operators::keyed_process_function::KeyedProcessFunction;

use super::RowContext;
use hummer_types::Timestamp;

use super::sort_order::SortOrder;
use crate::changelog::Change;
use crate::value::Row;

/// Sorts rows by the time in column `time`, then by the columns `then` in their orders.
#[derive(Clone, Debug)]
pub struct TemporalSort {
    /// The rowtime column.
    pub time: usize,
    /// The further sort columns, each with its order.
    pub then: Vec<(usize, SortOrder)>,
}

/// The rows waiting for the watermark, by time.
pub type Pending = BTreeMap<Timestamp, Vec<Row>>;

impl TemporalSort {
    fn compare(&self, a: &Row, b: &Row) -> Ordering {
        self.then
            .iter()
            .map(|(c, order)| order.compare(&a[*c], &b[*c]))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

impl KeyedProcessFunction<Row, Change> for TemporalSort {
    type State = Pending;
    type Out = Change;

    fn process_element(&mut self, change: Change, ctx: &mut RowContext<'_, '_, Pending>) {
        let Some(time) = change.row[self.time].time_millis() else {
            return;
        };
        if time <= ctx.current_watermark() {
            return;
        }
        ctx.state()
            .get_or_insert_with(Pending::default)
            .entry(time)
            .or_default()
            .push(change.row);
        ctx.timer_service().register_event_time_timer(time);
    }

    fn on_timer(&mut self, time: Timestamp, ctx: &mut RowContext<'_, '_, Pending>) {
        let Some(pending) = ctx.state().slot().as_mut() else {
            return;
        };
        let Some(mut rows) = pending.remove(&time) else {
            return;
        };
        if pending.is_empty() {
            ctx.state().clear();
        }
        rows.sort_by(|a, b| self.compare(a, b));
        for row in rows {
            ctx.collect(Change::insert(row));
        }
    }
}
