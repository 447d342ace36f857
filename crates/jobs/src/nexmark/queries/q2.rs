//! q2, selection: `SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0`.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS)
        .filter(|b: &Bid| b.auction.is_multiple_of(123))
        .map(|b: Bid| format!("{},{}", b.auction, b.price))
}
