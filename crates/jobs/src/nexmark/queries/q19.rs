//! q19, auction top-k: per auction its ten highest bids (ties: earlier, then lower bidder,
//! then smaller extra) with their rank 1-10. The final table, once the input has ended; or
//! its update stream (see `updates`).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT * FROM
//! (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid)
//! WHERE rank_number <= 10;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::Bid;
use crate::nexmark::queries::updates::{Emit, ResultTrigger, emit_rows};
use crate::operators::Collector;
use crate::operators::window::{AggregateFunction, GlobalWindows, TimeWindow};

use crate::state::{Ranking, TopN};

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};

/// A bid's rank in its auction's top ten: the fields it is ordered by, and where its row's
/// last column, `extra`, starts (the last tie-break).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BidRank {
    price: u64,
    date_time: i64,
    bidder: u64,
    extra_at: u32,
}

/// The query's order, ten bids deep: the highest price first; ties to the earlier, then the
/// lower bidder, then the smaller extra as it was (not as its row quotes it).
struct ByPrice;

impl Ranking for ByPrice {
    type Rank = BidRank;
    const N: usize = 10;
    const RANK_BYTES: usize = 28;

    fn write(r: &BidRank, out: &mut [u8]) {
        out[0..8].copy_from_slice(&r.price.to_le_bytes());
        out[8..16].copy_from_slice(&r.date_time.to_le_bytes());
        out[16..24].copy_from_slice(&r.bidder.to_le_bytes());
        out[24..28].copy_from_slice(&r.extra_at.to_le_bytes());
    }

    fn read(b: &[u8]) -> BidRank {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        BidRank {
            price: u64_at(0),
            date_time: u64_at(8) as i64,
            bidder: u64_at(16),
            extra_at: u32::from_le_bytes(b[24..28].try_into().unwrap_or_default()),
        }
    }

    fn cmp_ranks(a: &BidRank, b: &BidRank) -> Ordering {
        let order = |r: &BidRank| (Reverse(r.price), r.date_time, r.bidder);
        order(a).cmp(&order(b))
    }

    fn cmp_rows(a: (&BidRank, &[u8]), b: (&BidRank, &[u8])) -> Ordering {
        extra_of(a.0, a.1).cmp(&extra_of(b.0, b.1))
    }

    fn check(rank: &BidRank, row: &[u8]) -> Result<(), String> {
        if rank.extra_at as usize > row.len() {
            return Err(format!("rank {rank:?} has its extra past its row"));
        }
        std::str::from_utf8(row)
            .map(|_| ())
            .map_err(|_| "a row is not text".into())
    }
}

/// An auction's top ten, packed in one allocation: at 100 M events the final table holds
/// some 44 M bids, and a checkpoint copies each auction in one piece (see [`TopN`]).
type TopBids = TopN<ByPrice>;

/// The `extra` of a bid's row, as it was.
fn extra_of<'a>(rank: &BidRank, row: &'a [u8]) -> Cow<'a, str> {
    let extra = (row.get(rank.extra_at as usize..)).and_then(|b| std::str::from_utf8(b).ok());
    format::unquote(extra.unwrap_or(""))
}

thread_local! {
    /// The row of the bid being offered, formatted here before it is known to enter (a
    /// buffer reused, so that a bid costs no allocation of its own).
    static ROW: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Keeps the ten first bids by the query's order.
#[derive(Clone, Copy)]
struct TopTen;

impl AggregateFunction<Bid> for TopTen {
    type Acc = TopBids;
    type Out = TopBids;
    fn create_accumulator(&self) -> TopBids {
        TopBids::default()
    }
    fn add(&self, b: &Bid, top: &mut TopBids) {
        let rank = BidRank {
            price: b.price,
            date_time: b.date_time,
            bidder: b.bidder,
            extra_at: 0,
        };
        // Most bids are decided here, before their row is formatted.
        if top.shut_out(&rank) {
            return;
        }
        ROW.with_borrow_mut(|row| {
            row.clear();
            let extra_at = format::append_bid_row(row, b) as u32;
            top.offer(BidRank { extra_at, ..rank }, row.as_bytes());
        });
    }
    fn get_result(&self, top: &TopBids) -> TopBids {
        top.clone()
    }
    fn merge(&self, mut a: TopBids, b: TopBids) -> TopBids {
        a.merge(&b);
        a
    }
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let rows = input
        .bids(env)
        .key_by(|b: &Bid| b.auction)
        .window(GlobalWindows::create())
        .trigger(ResultTrigger(emit))
        .aggregate_with(
            TopTen,
            |auction: &u64,
             _: &TimeWindow,
             top: TopBids,
             out: &mut Collector<'_, (u64, Vec<String>)>| {
                let mut lines = Vec::with_capacity(top.len());
                for (rank, (_, row)) in top.iter().enumerate() {
                    // Rows are text: a top ten is checked so when it is restored.
                    let row = std::str::from_utf8(row).unwrap_or_default();
                    let mut line = String::with_capacity(row.len() + 3);
                    line.push_str(row);
                    line.push(',');
                    line.push_str(itoa::Buffer::new().format(rank + 1));
                    lines.push(line);
                }
                out.collect((*auction, lines));
            },
        );
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bids with few distinct prices, times and bidders (so that ties are common) and extras
    /// that need quoting now and then.
    fn bids() -> impl Strategy<Value = Vec<Bid>> {
        let bid = (0u64..6, 0i64..4, 0u64..3, "[ab,\"]{0,3}", "[a-z]{0,12}").prop_map(
            |(price, date_time, bidder, extra, url)| Bid {
                auction: 7,
                bidder,
                price,
                channel: "ch".into(),
                url,
                date_time,
                extra,
            },
        );
        proptest::collection::vec(bid, 0..40)
    }

    /// The ten first rows by the query's order, by sorting every bid.
    fn reference(bids: &[Bid]) -> Vec<String> {
        let mut sorted = bids.to_vec();
        sorted.sort_by(|a, b| {
            let key = |x: &Bid| (Reverse(x.price), x.date_time, x.bidder);
            key(a).cmp(&key(b)).then_with(|| a.extra.cmp(&b.extra))
        });
        sorted
            .iter()
            .take(ByPrice::N)
            .map(format::bid_row)
            .collect()
    }

    fn top_of(bids: &[Bid]) -> TopBids {
        let mut top = TopTen.create_accumulator();
        for b in bids {
            TopTen.add(b, &mut top);
        }
        top
    }

    fn rows(top: &TopBids) -> Vec<String> {
        let text = |row: &[u8]| String::from_utf8(row.to_vec()).unwrap();
        top.iter().map(|(_, row)| text(row)).collect()
    }

    proptest! {
        /// The top ten is the first ten of all bids sorted (rows equal, ties by extra as it
        /// was, whatever its quoting), and merging two tops equals one top of both inputs;
        /// a snapshot's encoding reads back equal.
        #[test]
        fn top_ten_equals_the_sorted_first_ten(left in bids(), right in bids()) {
            let both: Vec<Bid> = left.iter().chain(&right).cloned().collect();
            let top = top_of(&both);
            // Equal rows may stand for different tied bids only if the rows are equal too.
            prop_assert_eq!(&rows(&top), &reference(&both));
            let merged = TopTen.merge(top_of(&left), top_of(&right));
            prop_assert_eq!(&rows(&merged), &rows(&top));
            let bytes = postcard::to_allocvec(&top).unwrap();
            prop_assert_eq!(postcard::from_bytes::<TopBids>(&bytes).unwrap(), top);
        }
    }

    #[test]
    fn a_rank_whose_extra_lies_past_its_row_is_refused() {
        let mut top = TopBids::default();
        let rank = BidRank {
            price: 1,
            date_time: 2,
            bidder: 3,
            extra_at: 9,
        };
        top.offer(rank, b"1,2,3,x");
        let bytes = postcard::to_allocvec(&top).unwrap();
        let err = postcard::from_bytes::<TopBids>(&bytes).unwrap_err();
        assert!(matches!(err, postcard::Error::SerdeDeCustom), "{err:?}");
    }
}
