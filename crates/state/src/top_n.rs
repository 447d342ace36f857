//! A bounded top-N of one key's entries (Flink's `ROW_NUMBER() .. WHERE rn <= N`), packed in
//! one allocation: a state type for operators that keep the first N entries per key.
//!
//! Large top-N state is many small tops: Nexmark q19 keeps ten bids for each of millions of
//! auctions, for as long as the job runs. A `Vec` of entries with a `String` each costs a
//! pointer chase per entry in every checkpoint and most of its memory in allocator headers.
//! A [`TopN`] is one byte vector instead: the number of entries, each entry's rank (the
//! fixed-width fields it is ordered by, as its [`Ranking`] writes them) and where its row
//! lies, then the rows side by side without gaps. A snapshot copies it in one piece, and a
//! restore checks the layout before anything reads it.

use std::cmp::Ordering;
use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

/// How a [`TopN`] orders its entries, and how an entry's rank is laid out.
pub trait Ranking {
    /// The fixed-width fields of an entry: what it is ordered by, and whatever else of it
    /// has a fixed width.
    type Rank: Copy + fmt::Debug;
    /// How many entries are kept (at most 255).
    const N: usize;
    /// Bytes of an encoded rank.
    const RANK_BYTES: usize;
    /// Writes `rank` into `out` ([`Ranking::RANK_BYTES`] long).
    fn write(rank: &Self::Rank, out: &mut [u8]);
    /// Reads a rank from `b` ([`Ranking::RANK_BYTES`] long).
    fn read(b: &[u8]) -> Self::Rank;
    /// Orders two entries by their ranks alone, the first kept first (`Less`); `Equal`
    /// leaves it to [`Ranking::cmp_rows`].
    fn cmp_ranks(a: &Self::Rank, b: &Self::Rank) -> Ordering;
    /// Orders two entries whose ranks are level, by their rows. Default: level (the entry
    /// that came first stays ahead).
    fn cmp_rows(a: (&Self::Rank, &[u8]), b: (&Self::Rank, &[u8])) -> Ordering {
        let _ = (a, b);
        Ordering::Equal
    }
    /// Why a rank and a row read back from a snapshot do not belong together, if they do
    /// not. Default: they do.
    fn check(rank: &Self::Rank, row: &[u8]) -> Result<(), String> {
        let _ = (rank, row);
        Ok(())
    }
}

/// Bytes of an entry's place among the rows: where its row starts (from the first row's
/// first byte) and its length, 4 each.
const SPAN: usize = 8;

/// The first [`Ranking::N`] entries offered, by their ranking, each a rank and a row.
///
/// ```
/// use std::cmp::Ordering;
/// use hummer::state::{Ranking, TopN};
///
/// /// The two highest scores; ties to the smaller row.
/// struct TwoHighest;
/// impl Ranking for TwoHighest {
///     type Rank = u32;
///     const N: usize = 2;
///     const RANK_BYTES: usize = 4;
///     fn write(rank: &u32, out: &mut [u8]) { out.copy_from_slice(&rank.to_le_bytes()) }
///     fn read(b: &[u8]) -> u32 { u32::from_le_bytes([b[0], b[1], b[2], b[3]]) }
///     fn cmp_ranks(a: &u32, b: &u32) -> Ordering { b.cmp(a) }
///     fn cmp_rows(a: (&u32, &[u8]), b: (&u32, &[u8])) -> Ordering { a.1.cmp(b.1) }
/// }
///
/// let mut top = TopN::<TwoHighest>::default();
/// for (score, name) in [(5, "e"), (9, "n"), (7, "s"), (9, "a")] {
///     top.offer(score, name.as_bytes());
/// }
/// let rows: Vec<_> = top.iter().map(|(score, row)| (score, row.to_vec())).collect();
/// assert_eq!(rows, [(9, b"a".to_vec()), (9, b"n".to_vec())]);
/// assert!(top.shut_out(&8), "a score of 8 cannot enter");
/// ```
pub struct TopN<R: Ranking> {
    data: Vec<u8>,
    _ranking: PhantomData<fn() -> R>,
}

impl<R: Ranking> TopN<R> {
    const ENTRY: usize = R::RANK_BYTES + SPAN;

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.data.first().map_or(0, |n| *n as usize)
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entry_at(i: usize) -> usize {
        1 + i * Self::ENTRY
    }

    fn rank(&self, i: usize) -> R::Rank {
        let at = Self::entry_at(i);
        R::read(&self.data[at..at + R::RANK_BYTES])
    }

    /// Where the row of entry `i` starts among the rows, and its length.
    fn span(&self, i: usize) -> (u32, u32) {
        let at = Self::entry_at(i) + R::RANK_BYTES;
        let u32_at = |j: usize| {
            let b = &self.data[at + j..at + j + 4];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        };
        (u32_at(0), u32_at(4))
    }

    fn set_span(&mut self, i: usize, (at, len): (u32, u32)) {
        let e = Self::entry_at(i) + R::RANK_BYTES;
        self.data[e..e + 4].copy_from_slice(&at.to_le_bytes());
        self.data[e + 4..e + 8].copy_from_slice(&len.to_le_bytes());
    }

    /// Where the rows start.
    fn rows_at(&self) -> usize {
        Self::entry_at(self.len())
    }

    fn row(&self, i: usize) -> &[u8] {
        let (at, len) = self.span(i);
        let start = self.rows_at() + at as usize;
        self.data.get(start..start + len as usize).unwrap_or(&[])
    }

    /// The entries, first first: each its rank and its row.
    pub fn iter(&self) -> impl Iterator<Item = (R::Rank, &[u8])> + '_ {
        (0..self.len()).map(|i| (self.rank(i), self.row(i)))
    }

    /// Whether an entry of `rank` cannot enter whatever its row: the top is full and its
    /// last entry is ahead on rank alone. (Asked before an entry's row is made, to spare
    /// making the rows of most entries offered.)
    pub fn shut_out(&self, rank: &R::Rank) -> bool {
        self.len() == R::N && R::cmp_ranks(&self.rank(R::N - 1), rank) == Ordering::Less
    }

    /// Whether entry `i` stays ahead of an entry of `rank` and `row` (or level with it).
    fn stays_ahead(&self, i: usize, rank: &R::Rank, row: &[u8]) -> bool {
        let mine = self.rank(i);
        match R::cmp_ranks(&mine, rank) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => R::cmp_rows((&mine, self.row(i)), (rank, row)) != Ordering::Greater,
        }
    }

    /// Offers an entry: it enters if it is among the first N, pushing out the last of a
    /// full top. Returns whether it entered.
    pub fn offer(&mut self, rank: R::Rank, row: &[u8]) -> bool {
        let n = self.len();
        if n == R::N && self.stays_ahead(n - 1, &rank, row) {
            return false;
        }
        let place = (0..n)
            .position(|i| !self.stays_ahead(i, &rank, row))
            .unwrap_or(n);
        if n == R::N {
            self.remove_last();
        }
        let n = self.len();
        let rows_len = self.data.len().saturating_sub(self.rows_at());
        // Exactly the room the entry takes: a top of a key that is done stays as long as
        // the job does.
        if self.data.is_empty() {
            self.data.reserve_exact(1 + Self::ENTRY + row.len());
            self.data.push(0);
        } else {
            self.data.reserve_exact(Self::ENTRY + row.len());
        }
        let at = Self::entry_at(place);
        self.data
            .splice(at..at, std::iter::repeat_n(0u8, Self::ENTRY));
        R::write(&rank, &mut self.data[at..at + R::RANK_BYTES]);
        self.set_span(place, (rows_len as u32, row.len() as u32));
        self.data.extend_from_slice(row);
        self.data[0] = (n + 1) as u8;
        true
    }

    /// Offers every entry of `other`.
    pub fn merge(&mut self, other: &TopN<R>) {
        for (rank, row) in other.iter() {
            self.offer(rank, row);
        }
    }

    /// Removes the last entry and cuts its row out, moving the rows after it.
    fn remove_last(&mut self) {
        let n = self.len();
        let (out_at, out_len) = self.span(n - 1);
        let start = self.rows_at() + out_at as usize;
        self.data.drain(start..start + out_len as usize);
        for i in 0..n - 1 {
            let (at, len) = self.span(i);
            if at > out_at {
                self.set_span(i, (at - out_len, len));
            }
        }
        let last = Self::entry_at(n - 1);
        self.data.drain(last..last + Self::ENTRY);
        self.data[0] = (n - 1) as u8;
    }

    /// Why its bytes are not a top's layout, if they are not: at most N entries, each row
    /// within the rows, the rows packed without gaps or overlaps, and each rank and row
    /// accepted by [`Ranking::check`].
    fn check(&self) -> Result<(), String> {
        let n = self.len();
        if self.data.is_empty() {
            return Ok(());
        }
        if n > R::N || self.data.len() < self.rows_at() {
            return Err(format!("{n} entries in {} bytes", self.data.len()));
        }
        let mut spans: Vec<(u32, u32)> = (0..n).map(|i| self.span(i)).collect();
        spans.sort_unstable();
        let mut end = 0u64;
        for (at, len) in spans {
            if u64::from(at) != end {
                return Err(format!("a row at {at} where one should start at {end}"));
            }
            end += u64::from(len);
        }
        if end != (self.data.len() - self.rows_at()) as u64 {
            return Err("rows left over".into());
        }
        (0..n).try_for_each(|i| R::check(&self.rank(i), self.row(i)))
    }
}

impl<R: Ranking> Default for TopN<R> {
    fn default() -> Self {
        TopN {
            data: Vec::new(),
            _ranking: PhantomData,
        }
    }
}

impl<R: Ranking> Clone for TopN<R> {
    fn clone(&self) -> Self {
        TopN {
            data: self.data.clone(),
            _ranking: PhantomData,
        }
    }
}

impl<R: Ranking> PartialEq for TopN<R> {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl<R: Ranking> Eq for TopN<R> {}

impl<R: Ranking> fmt::Debug for TopN<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<R: Ranking> Serialize for TopN<R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.data)
    }
}

impl<'de, R: Ranking> Deserialize<'de> for TopN<R> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let top = TopN {
            data: serde_bytes::ByteBuf::deserialize(d)?.into_vec(),
            _ranking: PhantomData,
        };
        top.check()
            .map_err(|e| serde::de::Error::custom(format!("a top-{} state: {e}", R::N)))?;
        Ok(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The three lowest scores; ties to the smaller row, then the earlier.
    struct ThreeLowest;

    impl Ranking for ThreeLowest {
        type Rank = u8;
        const N: usize = 3;
        const RANK_BYTES: usize = 1;
        fn write(rank: &u8, out: &mut [u8]) {
            out[0] = *rank;
        }
        fn read(b: &[u8]) -> u8 {
            b[0]
        }
        fn cmp_ranks(a: &u8, b: &u8) -> Ordering {
            a.cmp(b)
        }
        fn cmp_rows(a: (&u8, &[u8]), b: (&u8, &[u8])) -> Ordering {
            a.1.cmp(b.1)
        }
        fn check(_: &u8, row: &[u8]) -> Result<(), String> {
            std::str::from_utf8(row)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    }

    type Top = TopN<ThreeLowest>;

    fn entries() -> impl Strategy<Value = Vec<(u8, String)>> {
        proptest::collection::vec((0u8..5, "[ab]{0,3}"), 0..30)
    }

    fn top_of(entries: &[(u8, String)]) -> Top {
        let mut top = Top::default();
        for (score, row) in entries {
            if !top.shut_out(score) {
                top.offer(*score, row.as_bytes());
            }
        }
        top
    }

    fn contents(top: &Top) -> Vec<(u8, String)> {
        let text = |r: &[u8]| String::from_utf8(r.to_vec()).unwrap();
        top.iter().map(|(s, r)| (s, text(r))).collect()
    }

    proptest! {
        /// The top is the first N of every entry sorted (a stable sort: among full ties
        /// the earlier first), its rows packed; a merge of two tops equals the top of both;
        /// its encoding reads back equal.
        #[test]
        fn a_top_is_the_first_n_of_all_sorted(left in entries(), right in entries()) {
            let both: Vec<_> = left.iter().chain(&right).cloned().collect();
            let mut sorted = both.clone();
            sorted.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            sorted.truncate(ThreeLowest::N);
            let top = top_of(&both);
            prop_assert_eq!(contents(&top), sorted.clone());
            prop_assert_eq!(top.check(), Ok(()));
            let mut merged = top_of(&left);
            merged.merge(&top_of(&right));
            prop_assert_eq!(contents(&merged), sorted);
            let bytes = postcard::to_allocvec(&top).unwrap();
            prop_assert_eq!(postcard::from_bytes::<Top>(&bytes).unwrap(), top);
        }

        /// Whatever its bytes are damaged into, a top read back is refused or has every row
        /// readable (never a panic).
        #[test]
        fn damaged_bytes_are_refused_or_read_whole(
            entries in entries(), at in any::<prop::sample::Index>(), byte in any::<u8>()
        ) {
            let mut bytes = postcard::to_allocvec(&top_of(&entries)).unwrap();
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            if let Ok(read) = postcard::from_bytes::<Top>(&bytes) {
                prop_assert_eq!(read.check(), Ok(()));
                prop_assert!(read.iter().count() <= ThreeLowest::N);
            }
        }
    }

    #[test]
    fn a_top_with_rows_that_overlap_or_too_many_entries_is_refused() {
        let mut top = top_of(&[(1, "x".into()), (2, "yy".into())]);
        assert_eq!(top.check(), Ok(()));
        top.set_span(1, (0, 2));
        let bytes = postcard::to_allocvec(&top).unwrap();
        let err = postcard::from_bytes::<Top>(&bytes).unwrap_err();
        assert!(matches!(err, postcard::Error::SerdeDeCustom), "{err:?}");
        let many = Top {
            data: vec![4],
            ..Top::default()
        };
        assert!(many.check().is_err(), "four entries of three");
    }
}
