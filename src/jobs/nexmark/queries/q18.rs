//! q18, find last bid: per bidder and auction, the bid with the latest time (ties: the
//! highest price, then the smallest extra). The final table, once the input has ended.

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::model::Bid;
use crate::jobs::nexmark::queries::final_table::BestPerKey;

/// Whether `a` is later than `b` by the query's order.
fn later(a: &Bid, b: &Bid) -> bool {
    (a.date_time, a.price, std::cmp::Reverse(&a.extra))
        > (b.date_time, b.price, std::cmp::Reverse(&b.extra))
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids(env)
        .key_by(|b: &Bid| (b.bidder, b.auction))
        .transform("Last bid per bidder and auction", |_| {
            Ok(BestPerKey::new(|b: &Bid| (b.bidder, b.auction), later))
        })
        .map(|b: Bid| {
            let mut line = format!("{},{},{},", b.auction, b.bidder, b.price);
            format::string(&mut line, &b.channel);
            line.push(',');
            format::string(&mut line, &b.url);
            line.push(',');
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            line
        })
}
