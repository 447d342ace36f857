//! q17, auction statistics per day: per auction and day, bids in all and per price rank, then
//! min, max, average (integer, truncated) and sum of the prices.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!      auction,
//!      DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') as `day`,
//!      count(*) AS total_bids,
//!      count(*) filter (where price < 10000) AS rank1_bids,
//!      count(*) filter (where price >= 10000 and price < 1000000) AS rank2_bids,
//!      count(*) filter (where price >= 1000000) AS rank3_bids,
//!      min(price) AS min_price,
//!      max(price) AS max_price,
//!      avg(price) AS avg_price,
//!      sum(price) AS sum_price
//! FROM bid
//! GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');
//! ```

use serde::{Deserialize, Serialize};

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::nexmark::queries::daily::{per_day, rank};
use crate::nexmark::queries::updates::{Emit, emit_rows};
use crate::operators::window::{AggregateFunction, WindowResult};

/// Bids per rank, and price min / max / sum.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct AuctionDay {
    bids: [u64; 4],
    min: Option<u64>,
    max: u64,
    sum: u64,
}

#[derive(Clone, Copy)]
struct Stats;

impl AggregateFunction<Bid> for Stats {
    type Acc = AuctionDay;
    type Out = AuctionDay;
    fn create_accumulator(&self) -> AuctionDay {
        AuctionDay::default()
    }
    fn add(&self, b: &Bid, acc: &mut AuctionDay) {
        acc.bids[0] += 1;
        acc.bids[1 + rank(b.price)] += 1;
        acc.min = Some(acc.min.map_or(b.price, |m| m.min(b.price)));
        acc.max = acc.max.max(b.price);
        acc.sum += b.price;
    }
    fn get_result(&self, acc: &AuctionDay) -> AuctionDay {
        acc.clone()
    }
    fn merge(&self, mut a: AuctionDay, b: AuctionDay) -> AuctionDay {
        for i in 0..4 {
            a.bids[i] += b.bids[i];
        }
        a.min = match (a.min, b.min) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        a.max = a.max.max(b.max);
        a.sum += b.sum;
        a
    }
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let bids = input.bids_with(env, BidColumns::NUMBERS);
    let rows = per_day(&bids.key_by(|b: &Bid| b.auction), emit, Stats).map(
        |WindowResult {
             key: auction,
             window: w,
             value: s,
         }: WindowResult<u64, AuctionDay>| {
            let mut line = format!("{auction},");
            format::day(&mut line, w.start);
            let avg = s.sum / s.bids[0].max(1);
            line.push_str(&format!(
                ",{},{},{},{},{},{},{avg},{}",
                s.bids[0],
                s.bids[1],
                s.bids[2],
                s.bids[3],
                s.min.unwrap_or(0),
                s.max,
                s.sum
            ));
            ((auction, w.start), vec![line])
        },
    );
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
