//! q0, pass-through: `SELECT auction, bidder, price, dateTime, extra FROM bid`.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT auction, bidder, price, `dateTime`, extra FROM bid;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS.with_extra())
        .map(|b: Bid| {
            let mut line = String::with_capacity(64 + b.extra.len());
            line.push_str(&format!("{},{},{},", b.auction, b.bidder, b.price));
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            line
        })
}
