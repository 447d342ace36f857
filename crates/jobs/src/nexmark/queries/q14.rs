//! q14, calculation: bids with `1,000,000 < 0.908 * price < 50,000,000`, with the converted
//! price (DECIMAL(23, 3)), the time of day as `dayTime` (08-18 h), `nightTime` (<= 06 or
//! >= 20 h) or `otherTime`, and `count_char(extra, 'c')`.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';
//!
//! SELECT
//!     auction,
//!     bidder,
//!     0.908 * price as price,
//!     CASE
//!         WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
//!         WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
//!         ELSE 'otherTime'
//!     END AS bidTimeType,
//!     `dateTime`,
//!     extra,
//!     count_char(extra, 'c') AS c_counts
//! FROM bid
//! WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS.with_extra())
        .filter(|b: &Bid| {
            let thousandths = b.price as i128 * 908;
            thousandths > 1_000_000_000 && thousandths < 50_000_000_000
        })
        .map(|b: Bid| {
            let mut line = format!("{},{},", b.auction, b.bidder);
            format::decimal3(&mut line, b.price as i128 * 908);
            let hour = format::hour(b.date_time);
            line.push_str(match hour {
                8..=18 => ",dayTime,",
                h if h <= 6 || h >= 20 => ",nightTime,",
                _ => ",otherTime,",
            });
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            let c_count = b.extra.bytes().filter(|c| *c == b'c').count();
            line.push_str(&format!(",{c_count}"));
            line
        })
}
