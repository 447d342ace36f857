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

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

const TOP: usize = 10;

/// Bytes of one rank in [`TopBids`]: price, time and bidder (8 each), then where its row
/// starts among the rows, its length and where its `extra` starts in it (4 each).
const RANK: usize = 36;

/// One bid of a top ten: the fields it is ordered by and where its row lies among the top
/// ten's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rank {
    price: u64,
    date_time: i64,
    bidder: u64,
    /// The row's first byte, from the first row's.
    at: u32,
    len: u32,
    /// Where the row's last column, `extra`, starts, from the row's first byte.
    extra_at: u32,
}

impl Rank {
    /// The rank encoded at the start of `b` (the caller has checked that [`RANK`] bytes are
    /// there).
    fn read(b: &[u8]) -> Rank {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or_default());
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or_default());
        Rank {
            price: u64_at(0),
            date_time: u64_at(8) as i64,
            bidder: u64_at(16),
            at: u32_at(24),
            len: u32_at(28),
            extra_at: u32_at(32),
        }
    }

    fn bytes(&self) -> [u8; RANK] {
        let mut b = [0u8; RANK];
        b[0..8].copy_from_slice(&self.price.to_le_bytes());
        b[8..16].copy_from_slice(&self.date_time.to_le_bytes());
        b[16..24].copy_from_slice(&self.bidder.to_le_bytes());
        b[24..28].copy_from_slice(&self.at.to_le_bytes());
        b[28..32].copy_from_slice(&self.len.to_le_bytes());
        b[32..36].copy_from_slice(&self.extra_at.to_le_bytes());
        b
    }

    /// Whether this rank is ahead of a bid of `key` (the query's order but `extra`) whose
    /// `extra` is `extra`, or level with it; `extra_of` gives this rank's, read only on a tie.
    fn at_or_ahead_of<'a>(
        &self,
        key: (std::cmp::Reverse<u64>, i64, u64),
        extra: &str,
        extra_of: impl FnOnce(&Rank) -> Cow<'a, str>,
    ) -> bool {
        match (std::cmp::Reverse(self.price), self.date_time, self.bidder).cmp(&key) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => *extra_of(self) <= *extra,
        }
    }
}

/// An auction's ten first bids by the query's order (the highest price first; ties to the
/// earlier, then the lower bidder, then the smaller extra as it was, not as its row quotes
/// it), in one allocation: the number of ranks, the ranks best first, then their formatted
/// rows side by side (no gaps: a row pushed out of the ten is cut out). At 100 M events the
/// final table holds some 44 M bids; a checkpoint copies each auction in one piece, one
/// cache miss away from the window that holds it, instead of chasing a pointer per bid (or
/// one to the ranks and one to the rows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TopBids {
    data: Vec<u8>,
}

impl TopBids {
    /// How many bids it ranks.
    fn len(&self) -> usize {
        self.data.first().map_or(0, |n| *n as usize)
    }

    fn rank(&self, i: usize) -> Rank {
        Rank::read(&self.data[1 + i * RANK..])
    }

    fn ranks(&self) -> impl Iterator<Item = Rank> + '_ {
        (0..self.len()).map(|i| self.rank(i))
    }

    /// Where the rows start.
    fn rows_at(&self) -> usize {
        1 + self.len() * RANK
    }

    /// The row of `rank`.
    fn row(&self, rank: &Rank) -> &str {
        let at = self.rows_at() + rank.at as usize;
        (self.data.get(at..at + rank.len as usize))
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// The `extra` of `rank`, as it was.
    fn extra(&self, rank: &Rank) -> Cow<'_, str> {
        let at = self.rows_at() + rank.at as usize;
        let extra = (self
            .data
            .get(at + rank.extra_at as usize..at + rank.len as usize))
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or("");
        format::unquote(extra)
    }

    /// Whether a bid of `price` at `date_time` cannot enter: the ten are full and the last
    /// is ahead of it on price and time alone (most bids, decided before any formatting).
    fn shut_out(&self, price: u64, date_time: i64) -> bool {
        self.len() == TOP && {
            let last = self.rank(TOP - 1);
            (std::cmp::Reverse(price), date_time) > (std::cmp::Reverse(last.price), last.date_time)
        }
    }

    /// Offers a bid whose row is `row` (its `extra` from `extra_at`): it enters if it is
    /// among the ten first, pushing out the last of a full ten. (A bid [`TopBids::shut_out`]
    /// is refused here too; callers ask that first to spare formatting its row.)
    fn offer_row(&mut self, price: u64, date_time: i64, bidder: u64, row: &str, extra_at: u32) {
        let key = (std::cmp::Reverse(price), date_time, bidder);
        let extra = extra_of(row, extra_at);
        let ahead = |top: &TopBids, r: &Rank| r.at_or_ahead_of(key, &extra, |r| top.extra(r));
        let n = self.len();
        if n == TOP && ahead(self, &self.rank(TOP - 1)) {
            return;
        }
        let place = (0..n)
            .position(|i| !ahead(self, &self.rank(i)))
            .unwrap_or(n);
        if n == TOP {
            self.remove_last();
        }
        let n = self.len();
        let rows_len = self.data.len().saturating_sub(self.rows_at());
        let rank = Rank {
            price,
            date_time,
            bidder,
            at: rows_len as u32,
            len: row.len() as u32,
            extra_at,
        };
        // Exactly the room the bid takes: the top ten of a finished auction stays as long as
        // the job does.
        if self.data.is_empty() {
            self.data.reserve_exact(1 + RANK + row.len());
            self.data.push(0);
        } else {
            self.data.reserve_exact(RANK + row.len());
        }
        let at = 1 + place * RANK;
        self.data.splice(at..at, rank.bytes());
        self.data.extend_from_slice(row.as_bytes());
        self.data[0] = (n + 1) as u8;
    }

    /// Removes the last rank and cuts its row out, moving the rows after it.
    fn remove_last(&mut self) {
        let n = self.len();
        let out = self.rank(n - 1);
        let at = self.rows_at() + out.at as usize;
        self.data.drain(at..at + out.len as usize);
        for i in 0..n - 1 {
            let mut r = self.rank(i);
            if r.at > out.at {
                r.at -= out.len;
                self.data[1 + i * RANK..1 + (i + 1) * RANK].copy_from_slice(&r.bytes());
            }
        }
        self.data.drain(1 + (n - 1) * RANK..1 + n * RANK);
        self.data[0] = (n - 1) as u8;
    }

    /// The ranked rows, best first.
    fn rows(&self) -> impl Iterator<Item = &str> + '_ {
        self.ranks().map(|r| self.row(&r))
    }

    /// Why its bytes are not a top ten's layout, if they are not: at most ten ranks, each row within
    /// the rows, the rows packed without gaps or overlaps and valid text.
    fn check(&self) -> std::result::Result<(), String> {
        let (top, data) = (self, &self.data);
        let n = top.len();
        if data.is_empty() {
            return Ok(());
        }
        if n > TOP || data.len() < top.rows_at() {
            return Err(format!("{n} ranks in {} bytes", data.len()));
        }
        if let Some(r) = top.ranks().find(|r| r.extra_at > r.len) {
            return Err(format!("rank {r:?} has its extra past its row"));
        }
        let mut spans: Vec<(u32, u32)> = top.ranks().map(|r| (r.at, r.len)).collect();
        spans.sort_unstable();
        let mut end = 0u64;
        for (at, len) in spans {
            if u64::from(at) != end {
                return Err(format!("a row at {at} where one should start at {end}"));
            }
            end += u64::from(len);
        }
        if end as usize != data.len() - top.rows_at() {
            return Err("rows left over".into());
        }
        if top.ranks().any(|r| top.row(&r).len() != r.len as usize) {
            return Err("a row is not text".into());
        }
        Ok(())
    }
}

impl Serialize for TopBids {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.data)
    }
}

impl<'de> Deserialize<'de> for TopBids {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let top = TopBids {
            data: serde_bytes::ByteBuf::deserialize(d)?.into_vec(),
        };
        top.check()
            .map_err(|e| serde::de::Error::custom(format!("a q19 top ten: {e}")))?;
        Ok(top)
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
        for r in b.ranks() {
            a.offer_row(r.price, r.date_time, r.bidder, b.row(&r), r.extra_at);
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
                let mut lines = Vec::with_capacity(top.len());
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
            let packed: usize = top.ranks().map(|r| r.len as usize).sum();
            prop_assert_eq!(packed, top.data.len().saturating_sub(top.rows_at()));
            prop_assert_eq!(top.check(), Ok(()));
            let merged = TopTen.merge(top_of(&left), top_of(&right));
            let merged_rows: Vec<String> = merged.rows().map(String::from).collect();
            prop_assert_eq!(&merged_rows, &rows);
            let bytes = postcard::to_allocvec(&top).unwrap();
            prop_assert_eq!(postcard::from_bytes::<TopBids>(&bytes).unwrap(), top);
        }
    }

    proptest! {
        /// Whatever a top ten's bytes are damaged into, reading them back either refuses them
        /// or gives a top ten whose every row can be read (never a panic).
        #[test]
        fn damaged_bytes_are_refused_or_read_whole(
            bids in bids(), at in any::<prop::sample::Index>(), byte in any::<u8>()
        ) {
            let top = top_of(&bids);
            let mut bytes = postcard::to_allocvec(&top).unwrap();
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            if let Ok(read) = postcard::from_bytes::<TopBids>(&bytes) {
                prop_assert_eq!(read.check(), Ok(()));
                prop_assert!(read.rows().count() <= TOP);
            }
        }
    }

    #[test]
    fn a_top_ten_with_rows_that_overlap_is_refused() {
        let mut top = top_of(&[
            Bid {
                auction: 7,
                bidder: 1,
                price: 5,
                channel: "c".into(),
                url: "u".into(),
                date_time: 1,
                extra: "x".into(),
            },
            Bid {
                auction: 7,
                bidder: 2,
                price: 4,
                channel: "c".into(),
                url: "u".into(),
                date_time: 1,
                extra: "y".into(),
            },
        ]);
        assert_eq!(top.check(), Ok(()));
        let mut second = top.rank(1);
        second.at = 0;
        top.data[1 + RANK..1 + 2 * RANK].copy_from_slice(&second.bytes());
        let bytes = postcard::to_allocvec(&top).unwrap();
        let err = postcard::from_bytes::<TopBids>(&bytes).unwrap_err();
        assert!(matches!(err, postcard::Error::SerdeDeCustom), "{err:?}");
        let mut many = top_of(&[]);
        many.data = vec![11];
        assert!(many.check().is_err(), "eleven ranks");
    }
}
