//! q16, channel statistics per day: per channel and day, the latest time of day (`HH:mm`),
//! then bids, distinct bidders and distinct auctions, in all and per price rank.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     channel,
//!     DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//!     max(DATE_FORMAT(`dateTime`, 'HH:mm')) as `minute`,
//!     count(*) AS total_bids,
//!     count(*) filter (where price < 10000) AS rank1_bids,
//!     count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//!     count(*) filter (where price >= 1000000) AS rank3_bids,
//!     count(distinct bidder) AS total_bidders,
//!     count(distinct bidder) filter (where price < 10000) AS rank1_bidders,
//!     count(distinct bidder) filter (where price >= 10000 and price < 1000000) AS rank2_bidders,
//!     count(distinct bidder) filter (where price >= 1000000) AS rank3_bidders,
//!     count(distinct auction) AS total_auctions,
//!     count(distinct auction) filter (where price < 10000) AS rank1_auctions,
//!     count(distinct auction) filter (where price >= 10000 and price < 1000000) AS rank2_auctions,
//!     count(distinct auction) filter (where price >= 1000000) AS rank3_auctions
//! FROM bid
//! GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
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
    let bids = input.bids_with(env, BidColumns::NUMBERS.with_channel());
    let rows = per_day(
        &bids.key_by(|b: &Bid| b.channel.clone()),
        emit,
        CountDistinct,
    )
    .map(
        |WindowResult {
             key: channel,
             window: w,
             value: counts,
         }: WindowResult<String, DayCounts>| {
            let mut line = String::new();
            format::string(&mut line, &channel);
            line.push(',');
            format::day(&mut line, w.start);
            line.push(',');
            format::hour_minute(&mut line, counts.latest);
            line.push(',');
            line.push_str(&counts.columns());
            ((channel, w.start), vec![line])
        },
    );
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
