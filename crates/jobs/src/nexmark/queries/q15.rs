//! q15, bidding statistics per day: the day, then bids, distinct bidders and distinct
//! auctions, in all and per price rank (< 10,000; < 1,000,000; the rest).

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::BidColumns;
use crate::nexmark::queries::daily::{CountDistinct, DAY, DayCounts};
use crate::nexmark::queries::updates::{Emit, ResultTrigger, emit_rows};
use crate::operators::window::{TimeWindow, TumblingEventTimeWindows};

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let rows = input
        .bids_with(env, BidColumns::NUMBERS)
        .window_all(TumblingEventTimeWindows::of(DAY))
        .trigger(ResultTrigger(emit))
        .aggregate(CountDistinct)
        .map(|(w, counts): (TimeWindow, DayCounts)| {
            let mut line = String::new();
            format::day(&mut line, w.start);
            line.push(',');
            line.push_str(&counts.columns());
            (w.start, vec![line])
        })
        // On the window's one subtask: a rebalance here would reorder a day's updates.
        .set_parallelism(1);
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
