//! q18, find last bid: per bidder and auction, the bid with the latest time (ties: the
//! highest price, then the smallest extra). The final table, once the input has ended; or
//! its update stream (see `updates`).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT auction, bidder, price, channel, url, `dateTime`, extra
//!  FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC)
//!      AS rank_number
//!        FROM bid)
//!  WHERE rank_number <= 1;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::Bid;
use crate::nexmark::queries::final_table::BestPerKey;
use crate::nexmark::queries::updates::{Emit, emit_rows};

use serde::{Deserialize, Serialize};

/// A bid's place in the query's order: the latest first; ties to the highest price, then the
/// smallest extra.
fn order(date_time: i64, price: u64, extra: &str) -> (i64, u64, std::cmp::Reverse<&str>) {
    (date_time, price, std::cmp::Reverse(extra))
}

/// Whether `a` is later than `b` by the query's order.
fn later(a: &Bid, b: &Bid) -> bool {
    order(a.date_time, a.price, &a.extra) > order(b.date_time, b.price, &b.extra)
}

/// A bid as the final table keeps it: its numbers, and its three strings side by side in one
/// allocation instead of three (tens of millions of bids stay in the table to the end, and a
/// checkpoint copies each one's strings from one place instead of three).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct KeptBid {
    auction: u64,
    bidder: u64,
    price: u64,
    date_time: i64,
    /// Where `url` starts in `strings`, after `channel`.
    url_at: u32,
    /// Where `extra` starts in `strings`, after `url`.
    extra_at: u32,
    strings: Box<str>,
}

impl KeptBid {
    fn new(b: Bid) -> KeptBid {
        let mut strings = String::with_capacity(b.channel.len() + b.url.len() + b.extra.len());
        strings.push_str(&b.channel);
        strings.push_str(&b.url);
        strings.push_str(&b.extra);
        KeptBid {
            auction: b.auction,
            bidder: b.bidder,
            price: b.price,
            date_time: b.date_time,
            url_at: b.channel.len() as u32,
            extra_at: (b.channel.len() + b.url.len()) as u32,
            strings: strings.into_boxed_str(),
        }
    }

    /// `channel`, `url` and `extra`.
    fn strings(&self) -> (&str, &str, &str) {
        let (url_at, extra_at) = (self.url_at as usize, self.extra_at as usize);
        let s = &self.strings;
        (
            s.get(..url_at).unwrap_or(""),
            s.get(url_at..extra_at).unwrap_or(""),
            self.extra(),
        )
    }

    fn extra(&self) -> &str {
        self.strings.get(self.extra_at as usize..).unwrap_or("")
    }

    /// Whether `b` is later than this bid by the query's order (asked for every bid of a
    /// kept key: only `extra` is sliced).
    fn overtaken_by(&self, b: &Bid) -> bool {
        order(b.date_time, b.price, &b.extra) > order(self.date_time, self.price, self.extra())
    }

    /// The bid's row ([`format::bid_row`]).
    fn row(&self) -> String {
        let (channel, url, extra) = self.strings();
        let mut line = String::with_capacity(64 + self.strings.len());
        format::append_bid_fields(
            &mut line,
            &format::BidFields {
                auction: self.auction,
                bidder: self.bidder,
                price: self.price,
                channel,
                url,
                date_time: self.date_time,
                extra,
            },
        );
        line
    }
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let bids = input.bids(env).key_by(|b: &Bid| (b.bidder, b.auction));
    match emit {
        Emit::FinalTable => bids
            .transform("Last bid per bidder and auction", |_| {
                Ok(BestPerKey::new(
                    |b: &Bid| (b.bidder, b.auction),
                    KeptBid::new,
                    |b: &Bid, kept: &KeptBid| kept.overtaken_by(b),
                ))
            })
            .map(|kept: KeptBid| kept.row()),
        Emit::Updates => {
            let rows = bids
                .reduce(|kept: Bid, b: Bid| if later(&b, &kept) { b } else { kept })
                .name("Last bid per bidder and auction")
                .map(|b: Bid| ((b.bidder, b.auction), vec![format::bid_row(&b)]));
            emit_rows(&rows, emit)
        }
    }
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A kept bid gives back the bid's row and compares with other bids as the bid does.
        #[test]
        fn a_kept_bid_is_the_bid(
            a in ("[a-c,]{0,4}", "[a-z\"]{0,9}", "[ab]{0,3}", 0u64..3, 0i64..3),
            b in ("[a-c]{0,4}", "[a-z]{0,9}", "[ab]{0,3}", 0u64..3, 0i64..3),
        ) {
            let bid = |(channel, url, extra, price, date_time): (String, String, String, u64, i64)| Bid {
                auction: 3, bidder: 4, price, channel, url, date_time, extra,
            };
            let (a, b) = (bid(a), bid(b));
            let kept = KeptBid::new(a.clone());
            prop_assert_eq!(kept.row(), format::bid_row(&a));
            prop_assert_eq!(kept.overtaken_by(&b), later(&b, &a));
        }
    }
}
