//! q15, bidding statistics per day: the day, then bids, distinct bidders and distinct
//! auctions, in all and per price rank (< 10,000; < 1,000,000; the rest).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!      DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//!      count(*) AS total_bids,
//!      count(*) filter (where price < 10000) AS rank1_bids,
//!      count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//!      count(*) filter (where price >= 1000000) AS rank3_bids,
//!      count(distinct bidder) AS total_bidders,
//!      count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//!      count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//!      count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//!      count(distinct auction) AS total_auctions,
//!      count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//!      count(distinct auction) filter (where price >= 10000 and price < 1000000)
//!          AS rank2_auctions,
//!      count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//! FROM bid
//! GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::nexmark::queries::daily::{CountDistinct, DayCounts, per_day};
use crate::nexmark::queries::updates::{Emit, emit_rows};
use crate::operators::window::WindowResult;

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let bids = input.bids_with(env, BidColumns::NUMBERS);
    // One day's window for the whole stream, on one subtask (as `window_all`), and the rows
    // after it too: a rebalance there would reorder a day's updates.
    let rows = per_day(&bids.key_by(|_: &Bid| ()), emit, CountDistinct)
        .set_parallelism(1)
        .map(
            |WindowResult {
                 window: w,
                 value: counts,
                 ..
             }: WindowResult<(), DayCounts>| {
                let mut line = String::new();
                format::day(&mut line, w.start);
                line.push(',');
                line.push_str(&counts.columns());
                (w.start, vec![line])
            },
        )
        .set_parallelism(1);
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
