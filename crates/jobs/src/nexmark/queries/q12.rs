//! q12, processing-time windows: per bidder, the bids the job processed in each tumbling
//! 10 s window of processing time (the task's clock, not the events' time): `bidder,
//! bid_count, start, end`.
//!
//! The result depends on when the job ran, so it has no reference answer: with a frozen
//! clock (`StreamExecutionEnvironment::set_clock`) every bid falls in one window.
//!
//! The SQL upstream (a processing-time window, so the benchmark does not compare it):
//!
//! ```sql
//! CREATE VIEW B AS SELECT *, PROCTIME() as p_time FROM bid;
//!
//! SELECT
//!     bidder,
//!     count(*) as bid_count,
//!     window_start AS starttime,
//!     window_end AS endtime
//! FROM TABLE(
//!         TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
//! GROUP BY bidder, window_start, window_end;
//! ```

use std::time::Duration;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::operators::window::{CountAggregate, TumblingProcessingTimeWindows, WindowResult};

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
        .map(|c: WindowResult<u64, u64>| format::count_in_window(c.key, c.value, &c.window))
}
