//! q15, bidding statistics per day: the day, then bids, distinct bidders and distinct
//! auctions, in all and per price rank (< 10,000; < 1,000,000; the rest).

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::queries::daily::{CountDistinct, Counts, DAY};
use crate::operators::window::{TimeWindow, TumblingEventTimeWindows};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids(env)
        .window_all(TumblingEventTimeWindows::of(DAY))
        .aggregate(CountDistinct)
        .map(|(w, counts): (TimeWindow, Counts)| {
            let mut line = String::new();
            format::day(&mut line, w.start);
            line.push(',');
            line.push_str(&counts.columns());
            line
        })
}
