//! q19, auction top-k: per auction its ten highest bids (ties: earlier, then lower bidder,
//! then smaller extra) with their rank 1-10. The final table, once the input has ended; or
//! its update stream (see `updates`).

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::model::Bid;
use crate::jobs::nexmark::queries::updates::{Emit, ResultTrigger, emit_rows};
use crate::operators::Collector;
use crate::operators::window::{AggregateFunction, GlobalWindows, TimeWindow};

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

const TOP: usize = 10;

/// One bid of a top ten: the fields it is ordered by and where its row lies in the top ten's
/// [`TopBids::rows`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Rank {
    price: u64,
    date_time: i64,
    bidder: u64,
    /// The row's first byte in `rows`.
    at: u32,
    len: u32,
    /// Where the row's last column, `extra`, starts, from the row's first byte.
    extra_at: u32,
}

/// An auction's ten first bids by the query's order, best first, with their formatted rows
/// side by side in one string (no gaps: a row pushed out of the ten is cut out of it). Two
/// allocations per auction instead of one per bid: at 100 M events the final table holds
/// some 44 M bids, and a checkpoint copies each auction's rows in one piece instead of
/// chasing ten pointers to wherever each row was allocated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct TopBids {
    ranks: Vec<Rank>,
    rows: String,
}

/// The query's order: the highest price first; ties to the earlier, then the lower bidder,
/// then the smaller extra (as it was, not as its row quotes it).
type Order<'a> = (std::cmp::Reverse<u64>, i64, u64, Cow<'a, str>);

impl TopBids {
    /// The row of `rank`.
    fn row(&self, rank: &Rank) -> &str {
        let at = rank.at as usize;
        self.rows.get(at..at + rank.len as usize).unwrap_or("")
    }

    fn order<'a>(&'a self, rank: &Rank) -> Order<'a> {
        let row = self.row(rank);
        (
            std::cmp::Reverse(rank.price),
            rank.date_time,
            rank.bidder,
            extra_of(row, rank.extra_at),
        )
    }

    /// Whether a bid of `price` at `date_time` cannot enter: the ten are full and the last
    /// is ahead of it on price and time alone (most bids, decided before any formatting).
    fn shut_out(&self, price: u64, date_time: i64) -> bool {
        self.ranks.len() == TOP
            && self.ranks.last().is_some_and(|last| {
                (std::cmp::Reverse(price), date_time)
                    > (std::cmp::Reverse(last.price), last.date_time)
            })
    }

    /// Offers a bid whose row is `row` (its `extra` from `extra_at`): it enters if it is
    /// among the ten first, pushing out the last of a full ten. (A bid [`TopBids::shut_out`]
    /// is refused here too; callers ask that first to spare formatting its row.)
    fn offer_row(&mut self, price: u64, date_time: i64, bidder: u64, row: &str, extra_at: u32) {
        let new: Order<'_> = (
            std::cmp::Reverse(price),
            date_time,
            bidder,
            extra_of(row, extra_at),
        );
        if self.ranks.len() == TOP
            && self
                .ranks
                .last()
                .is_some_and(|last| new >= self.order(last))
        {
            return;
        }
        let place = self.ranks.partition_point(|r| self.order(r) <= new);
        if self.ranks.len() == TOP {
            // Room first: growing past ten would double the vector's capacity for good.
            if let Some(out) = self.ranks.pop() {
                self.cut(&out);
            }
        } else if self.ranks.capacity() == 0 {
            self.ranks.reserve_exact(TOP);
        }
        // Exactly the room the row takes: the rows of a finished auction stay as long as the
        // job does.
        self.rows.reserve_exact(row.len());
        let rank = Rank {
            price,
            date_time,
            bidder,
            at: self.rows.len() as u32,
            len: row.len() as u32,
            extra_at,
        };
        self.rows.push_str(row);
        self.ranks.insert(place, rank);
    }

    /// Cuts the row of `out` (no longer ranked) out of `rows`, moving the rows after it.
    fn cut(&mut self, out: &Rank) {
        let (at, len) = (out.at as usize, out.len as usize);
        self.rows.replace_range(at..at + len, "");
        for r in &mut self.ranks {
            if r.at > out.at {
                r.at -= out.len;
            }
        }
    }

    /// The ranked rows, best first.
    fn rows(&self) -> impl Iterator<Item = &str> + '_ {
        self.ranks.iter().map(|r| self.row(r))
    }
}

/// The `extra` of a row whose last column starts at `extra_at`.
fn extra_of(row: &str, extra_at: u32) -> Cow<'_, str> {
    format::unquote(row.get(extra_at as usize..).unwrap_or(""))
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
        if top.shut_out(b.price, b.date_time) {
            return;
        }
        ROW.with_borrow_mut(|row| {
            row.clear();
            let extra_at = format::append_bid_row(row, b) as u32;
            top.offer_row(b.price, b.date_time, b.bidder, row, extra_at);
        });
    }
    fn get_result(&self, top: &TopBids) -> TopBids {
        top.clone()
    }
    fn merge(&self, mut a: TopBids, b: TopBids) -> TopBids {
        for r in &b.ranks {
            a.offer_row(r.price, r.date_time, r.bidder, b.row(r), r.extra_at);
        }
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
                let mut lines = Vec::with_capacity(top.ranks.len());
                for (rank, row) in top.rows().enumerate() {
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
            let key = |x: &Bid| (std::cmp::Reverse(x.price), x.date_time, x.bidder);
            key(a).cmp(&key(b)).then_with(|| a.extra.cmp(&b.extra))
        });
        sorted.iter().take(TOP).map(format::bid_row).collect()
    }

    fn top_of(bids: &[Bid]) -> TopBids {
        let mut top = TopTen.create_accumulator();
        for b in bids {
            TopTen.add(b, &mut top);
        }
        top
    }

    proptest! {
        /// The top ten is the first ten of all bids sorted (rows equal, ties by extra as it
        /// was, whatever its quoting), its rows lie side by side without gaps, and merging
        /// two tops equals one top of both inputs; a snapshot's encoding reads back equal.
        #[test]
        fn top_ten_equals_the_sorted_first_ten(left in bids(), right in bids()) {
            let both: Vec<Bid> = left.iter().chain(&right).cloned().collect();
            let top = top_of(&both);
            let rows: Vec<String> = top.rows().map(String::from).collect();
            // Equal rows may stand for different tied bids only if the rows are equal too.
            prop_assert_eq!(&rows, &reference(&both));
            let packed: usize = top.ranks.iter().map(|r| r.len as usize).sum();
            prop_assert_eq!(packed, top.rows.len());
            let merged = TopTen.merge(top_of(&left), top_of(&right));
            let merged_rows: Vec<String> = merged.rows().map(String::from).collect();
            prop_assert_eq!(&merged_rows, &rows);
            let bytes = postcard::to_allocvec(&top).unwrap();
            prop_assert_eq!(postcard::from_bytes::<TopBids>(&bytes).unwrap(), top);
        }
    }
}
