//! q16, channel statistics per day: per channel and day, the latest time of day (`HH:mm`),
//! then bids, distinct bidders and distinct auctions, in all and per price rank.

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
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
        .bids_with(env, BidColumns::NUMBERS.with_channel())
        .key_by(|b: &Bid| b.channel.clone())
        .window(TumblingEventTimeWindows::of(DAY))
        .trigger(ResultTrigger(emit))
        .aggregate(CountDistinct)
        .map(|(channel, w, counts): (String, TimeWindow, DayCounts)| {
            let mut line = String::new();
            format::string(&mut line, &channel);
            line.push(',');
            format::day(&mut line, w.start);
            line.push(',');
            format::hour_minute(&mut line, counts.latest);
            line.push(',');
            line.push_str(&counts.columns());
            ((channel, w.start), vec![line])
        });
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
