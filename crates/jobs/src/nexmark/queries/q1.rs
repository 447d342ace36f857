//! q1, currency conversion: `SELECT auction, bidder, 0.908 * price as price, dateTime, extra
//! FROM bid`; the price is DECIMAL(23, 3), printed with three decimals.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     auction,
//!     bidder,
//!     0.908 * price as price,
//!     `dateTime`,
//!     extra
//! FROM bid;
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
            line.push_str(&format!("{},{},", b.auction, b.bidder));
            format::decimal3(&mut line, b.price as i128 * 908);
            line.push(',');
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            line
        })
}
