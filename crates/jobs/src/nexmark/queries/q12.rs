//! q12, processing-time windows: per bidder, the bids the job processed in each tumbling
//! 10 s window of processing time (the task's clock, not the events' time): `bidder,
//! bid_count, start, end`.
//!
//! The result depends on when the job ran, so it has no reference answer: with a frozen
//! clock (`StreamExecutionEnvironment::set_clock`) every bid falls in one window.

use std::time::Duration;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::operators::window::{CountAggregate, TimeWindow, TumblingProcessingTimeWindows};

/// The window size.
pub const WINDOW: Duration = Duration::from_secs(10);

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS)
        .key_by(|b: &Bid| b.bidder)
        .window(TumblingProcessingTimeWindows::of(WINDOW))
        .aggregate(CountAggregate)
        .name("Bids per bidder and processing-time window")
        .map(|(bidder, w, n): (u64, TimeWindow, u64)| format::count_in_window(bidder, n, &w))
}
