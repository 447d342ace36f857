//! `WindowRank`: a Top-N per window (Flink's window Top-N and window deduplication), for a
//! `ROW_NUMBER() OVER (PARTITION BY window_start, window_end, .. ORDER BY ..)` over the rows of
//! an event-time window table function or window aggregation.
//!
//! Unlike the [`rank`](super::rank) of an unbounded table, it emits nothing until its
//! window ends: per partition (which holds one window) it keeps the first `limit` rows in
//! order, and when the watermark passes the window's end it emits them with their row numbers
//! as inserts and forgets the partition. Its result is append-only, so a sink that takes only
//! inserts takes it. A row whose window has already been emitted is late and dropped, as in
//! Flink.

use hummer_operators::keyed_process_function::KeyedProcessFunction;

use super::RowContext;
use hummer_types::Timestamp;

use super::rank::{RankSpec, Ranked};
use crate::changelog::Change;
use crate::value::Row;

/// A Top-N per window: the rank, and where the window's end is in the partition key.
#[derive(Clone, Debug)]
pub struct WindowRank {
    /// The rank of each partition (an append-only input: only the first `limit` are kept).
    pub spec: RankSpec,
    /// The index of `window_end` among the partition key's columns.
    pub end_in_key: usize,
}

impl KeyedProcessFunction<Row, Change> for WindowRank {
    type State = Ranked;
    type Out = Change;

    fn process_element(&mut self, change: Change, ctx: &mut RowContext<'_, '_, Ranked>) {
        let Some(end) = ctx.key()[self.end_in_key].time_millis() else {
            return;
        };
        let last: Timestamp = end - 1;
        if last <= ctx.current_watermark() {
            return;
        }
        let ranked = ctx.state().get_or_insert_with(Ranked::default);
        self.spec.keep(ranked, change.row);
        ctx.timer_service().register_event_time_timer(last);
    }

    fn on_timer(&mut self, _: Timestamp, ctx: &mut RowContext<'_, '_, Ranked>) {
        let Some(ranked) = ctx.state().slot().take() else {
            return;
        };
        for (i, (_, row)) in ranked.rows.iter().enumerate() {
            ctx.collect(Change::insert(self.spec.numbered(row, i + 1)));
        }
    }
}
