//! q10, log to file system: `SELECT auction, bidder, price, dateTime, extra,
//! DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm') FROM bid` (the
//! harness writes `dt` and `hm` as the last two columns instead of partitions).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'),
//!     DATE_FORMAT(`dateTime`, 'HH:mm')
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
            let mut line = format!("{},{},{},", b.auction, b.bidder, b.price);
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            line.push(',');
            format::day(&mut line, b.date_time);
            line.push(',');
            format::hour_minute(&mut line, b.date_time);
            line
        })
}
