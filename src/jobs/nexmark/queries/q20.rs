//! q20, expand bid with auction: every bid joined with its auction when the auction's
//! category is 10: the bid's columns, then the auction's (`itemName, description, initialBid,
//! reserve, dateTime, expires, seller, category, extra`).

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::model::{Auction, Bid};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    let auctions = input
        .auctions(env)
        .filter(|a: &Auction| a.category == 10)
        .key_by(|a: &Auction| a.id);
    input
        .bids(env)
        .key_by(|b: &Bid| b.auction)
        .join(&auctions, |_: &u64, b: &Bid, a: &Auction| {
            let mut line = format!("{},{},{},", b.auction, b.bidder, b.price);
            format::string(&mut line, &b.channel);
            line.push(',');
            format::string(&mut line, &b.url);
            line.push(',');
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            line.push(',');
            format::string(&mut line, &a.item_name);
            line.push(',');
            format::string(&mut line, &a.description);
            line.push_str(&format!(",{},{},", a.initial_bid, a.reserve));
            format::timestamp(&mut line, a.date_time);
            line.push(',');
            format::timestamp(&mut line, a.expires);
            line.push_str(&format!(",{},{},", a.seller, a.category));
            format::string(&mut line, &a.extra);
            line
        })
}
