//! q22, get URL directories: `auction, bidder, price, channel` and the 4th, 5th and 6th
//! `/`-separated parts of the URL (empty where the URL has fewer).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     auction, bidder, price, channel,
//!     SPLIT_INDEX(url, '/', 3) as dir1,
//!     SPLIT_INDEX(url, '/', 4) as dir2,
//!     SPLIT_INDEX(url, '/', 5) as dir3 FROM bid;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS.with_channel().with_url())
        .map(|b: Bid| {
            let mut line = format!("{},{},{},", b.auction, b.bidder, b.price);
            format::string(&mut line, &b.channel);
            let mut parts = b.url.split('/').skip(3);
            for _ in 0..3 {
                line.push(',');
                format::string(&mut line, parts.next().unwrap_or(""));
            }
            line
        })
}
