//! q9, winning bids: every auction's columns followed by its winning bid's (`auction, bidder,
//! price, dateTime, extra`), when the auction closes.

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Bid};
use crate::nexmark::queries::winning_bids::winning_bids;

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    winning_bids(env, input).map(|(a, b): (Auction, Bid)| {
        let mut line = format!("{},", a.id);
        format::string(&mut line, &a.item_name);
        line.push(',');
        format::string(&mut line, &a.description);
        line.push_str(&format!(",{},{},", a.initial_bid, a.reserve));
        format::timestamp(&mut line, a.date_time);
        line.push(',');
        format::timestamp(&mut line, a.expires);
        line.push_str(&format!(",{},{},", a.seller, a.category));
        format::string(&mut line, &a.extra);
        line.push_str(&format!(",{},{},{},", b.auction, b.bidder, b.price));
        format::timestamp(&mut line, b.date_time);
        line.push(',');
        format::string(&mut line, &b.extra);
        line
    })
}
