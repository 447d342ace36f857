//! q11, user sessions: per bidder, sessions closed by 10 s without a bid (a bid at most 10 s
//! after the previous one extends the session): `bidder, bid_count, start, end` with end =
//! last bid + 10 s.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     B.bidder,
//!     count(*) as bid_count,
//!     SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) as starttime,
//!     SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) as endtime
//! FROM bid B
//! GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
//! ```

use std::time::Duration;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::operators::window::{CountAggregate, EventTimeSessionWindows, WindowResult};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS)
        .key_by(|b: &Bid| b.bidder)
        .window(EventTimeSessionWindows::with_gap(Duration::from_secs(10)))
        .aggregate(CountAggregate)
        .name("Bids per session")
        .map(|c: WindowResult<u64, u64>| format::count_in_window(c.key, c.value, &c.window))
}
