//! q5, hot items: per sliding window (10 s, every 2 s) the auctions with the most bids (all of
//! them when several tie): `auction, num`.
//!
//! Bids are counted per auction and window; the counts of one window (each carries the
//! window's last timestamp) meet in a 2 s tumbling window keyed by the window's start, which
//! holds exactly that window's counts, and the largest ones are emitted.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT AuctionBids.auction, AuctionBids.num
//!  FROM (
//!    SELECT
//!      auction,
//!      count(*) AS num,
//!      window_start AS starttime,
//!      window_end AS endtime
//!      FROM TABLE(
//!              HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
//!      GROUP BY auction, window_start, window_end
//!  ) AS AuctionBids
//!  JOIN (
//!    SELECT
//!      max(CountBids.num) AS maxn,
//!      CountBids.starttime,
//!      CountBids.endtime
//!    FROM (
//!      SELECT
//!        count(*) AS num,
//!        window_start AS starttime,
//!        window_end AS endtime
//!      FROM TABLE(
//!                 HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND,
//!                     INTERVAL '10' SECOND))
//!      GROUP BY auction, window_start, window_end
//!      ) AS CountBids
//!    GROUP BY CountBids.starttime, CountBids.endtime
//!  ) AS MaxBids
//!  ON AuctionBids.starttime = MaxBids.starttime AND
//!     AuctionBids.endtime = MaxBids.endtime AND
//!     AuctionBids.num >= MaxBids.maxn;
//! ```

use std::time::Duration;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::operators::Collector;
use crate::operators::window::{
    CountAggregate, SlidingEventTimeWindows, TimeWindow, TumblingEventTimeWindows, WindowResult,
};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS)
        .key_by(|b: &Bid| b.auction)
        .window(SlidingEventTimeWindows::of(
            Duration::from_secs(10),
            Duration::from_secs(2),
        ))
        .aggregate(CountAggregate)
        .name("Bids per auction and window")
        .key_by(|c: &WindowResult<u64, u64>| c.window.start)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(2)))
        .process(
            |_: &i64,
             _: &TimeWindow,
             counts: &[WindowResult<u64, u64>],
             out: &mut Collector<'_, String>| {
                let max = counts.iter().map(|c| c.value).max().unwrap_or(0);
                for c in counts.iter().filter(|c| c.value == max) {
                    out.collect(format!("{},{}", c.key, c.value));
                }
            },
        )
        .name("Hottest auctions per window")
}
