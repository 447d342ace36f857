//! q20, expand bid with auction: every bid joined with its auction when the auction's
//! category is 10: the bid's columns, then the auction's (`itemName, description, initialBid,
//! reserve, dateTime, expires, seller, category, extra`).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     auction, bidder, price, channel, url, B.`dateTime`, B.extra,
//!     itemName, description, initialBid, reserve, A.`dateTime`, expires, seller, category, A.extra
//! FROM
//!     bid AS B INNER JOIN auction AS A on B.auction = A.id
//! WHERE A.category = 10;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Bid};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    // An auction's id is its primary key: a bid is kept only until its auction arrives.
    // Auctions of other categories come as a bare id, so their bids are dropped rather than
    // kept waiting for an auction that passed the filter.
    let auctions = input
        .auctions(env)
        .map(|a: Auction| (a.id, (a.category == 10).then_some(a)))
        .key_by(|a: &(u64, Option<Auction>)| a.0);
    input
        .bids(env)
        .key_by(|b: &Bid| b.auction)
        .join_with_unique(&auctions, |_: &u64, b: &Bid, a: &(u64, Option<Auction>)| {
            let a = a.1.as_ref()?;
            let mut line = format::bid_row(b);
            line.push(',');
            format::append_auction_columns(&mut line, a);
            Some(line)
        })
        .flat_map(|line: Option<String>| line)
}
