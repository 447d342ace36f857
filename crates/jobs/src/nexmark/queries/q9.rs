//! q9, winning bids: every auction's columns followed by its winning bid's (`auction, bidder,
//! price, dateTime, extra`), when the auction closes.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     id, itemName, description, initialBid, reserve, `dateTime`, expires, seller, category,
//!         extra,
//!     auction, bidder, price, bid_dateTime, bid_extra
//! FROM (
//!    SELECT A.*, B.auction, B.bidder, B.price, B.`dateTime` AS bid_dateTime, B.extra AS bid_extra,
//!      ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rownum
//!    FROM auction A, bid B
//!    WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
//! )
//! WHERE rownum <= 1;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Bid};
use crate::nexmark::queries::winning_bids::winning_bids;

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    winning_bids(env, input).map(|(a, b): (Auction, Bid)| {
        let mut line = format!("{},", a.id);
        format::append_auction_columns(&mut line, &a);
        line.push_str(&format!(",{},{},{},", b.auction, b.bidder, b.price));
        format::timestamp(&mut line, b.date_time);
        line.push(',');
        format::string(&mut line, &b.extra);
        line
    })
}
