//! `Rank`: `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)` filtered to the first `limit`
//! rows of each partition (Top-N, and deduplication with `limit` 1), as Flink's rank
//! operators run it.
//!
//! Its input rows are the query's columns, then the partition key's values, then the sort
//! key's (computed by the `Calc` before it). Per partition it keeps the rows in order (ties
//! keep their arrival order: an earlier row ranks first, but for a keep-last deduplication a
//! later one); with an append-only input only the
//! first `limit`, since no row below them can rise. Each change re-ranks the partition and
//! emits the difference of its first `limit` rows, with their row numbers: `-U`/`+U` for a
//! rank whose row changed, `+I` for a rank newly filled, `-D` for one emptied; applied in
//! order, the changes give the ranked table.

use hummer_types::error::Result;
use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::per_key::KeyedChanges;
use super::sort_order::{SortOrder, compare_keys};
use crate::changelog::{Change, RowKind};
use crate::value::{Row, Value};

/// What a rank keeps and how it orders.
#[derive(Clone, Debug)]
pub struct RankSpec {
    /// How many leading input columns are the query's.
    pub width: usize,
    /// How many columns after them are the partition key.
    pub partition: usize,
    /// Per sort column (after the partition key): its order.
    pub orders: Vec<SortOrder>,
    /// The first rows kept per partition.
    pub limit: usize,
    /// Where the row number goes among the output columns.
    pub number_at: usize,
    /// The input retracts rows: every row is kept, not only the first `limit`.
    pub keep_all: bool,
    /// Of rows whose sort keys tie, the later ranks first (Flink's keep-last deduplication:
    /// the newest row by a time attribute, `ORDER BY ts DESC` with `rn = 1`); otherwise the
    /// earlier does.
    pub later_first: bool,
}

/// One partition's rows in rank order: each as its sort key and its columns.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Ranked {
    /// Sort key and row, best first.
    pub rows: Vec<(Row, Row)>,
}

impl RankSpec {
    fn compare(&self, a: &[Value], b: &[Value]) -> Ordering {
        compare_keys(a, b, &self.orders)
    }

    /// Where a row with sort key `sort` goes among `rows`: after the rows that rank before it
    /// and, as ties rank, before or after those it ties with.
    fn place(&self, rows: &[(Row, Row)], sort: &[Value]) -> usize {
        rows.partition_point(|(s, _)| match self.compare(s, sort) {
            Ordering::Less => true,
            Ordering::Equal => !self.later_first,
            Ordering::Greater => false,
        })
    }

    /// The output row of `row` at rank `number` (from 1).
    pub fn numbered(&self, row: &Row, number: usize) -> Row {
        let mut out = row.clone();
        out.insert(self.number_at, Value::BigInt(number as i64));
        out
    }

    /// Keeps `row` (of an append-only input) among the first `limit` of a partition's rows,
    /// if it is one of them, with nothing emitted (a window Top-N emits when its window ends).
    pub fn keep(&self, ranked: &mut Ranked, mut row: Row) {
        let mut sort = row.split_off(self.width);
        let sort = sort.split_off(self.partition);
        let at = self.place(&ranked.rows, &sort);
        if at < self.limit {
            ranked.rows.insert(at, (sort, row));
            ranked.rows.truncate(self.limit);
        }
    }

    /// Applies one change to a partition's rows and appends the changes of its first
    /// `limit` to `out`.
    pub fn apply(&self, ranked: &mut Ranked, change: Change, out: &mut Vec<Change>) {
        let Change { kind, mut row } = change;
        let mut sort = row.split_off(self.width);
        let sort = sort.split_off(self.partition);
        // Only the ranks from the changed place on can change: they are compared before and
        // after; a change below the first `limit` changes none of them.
        let visible = |rows: &Vec<(Row, Row)>, from: usize| -> Vec<Row> {
            rows.iter()
                .take(self.limit)
                .skip(from)
                .map(|(_, r)| r.clone())
                .collect()
        };
        let from;
        let before;
        if kind.retracts() {
            // Of equal rows the earliest goes: the first kept, or the last where later rows
            // rank first.
            let equal = |(s, r): &(Row, Row)| *s == sort && *r == row;
            let found = if self.later_first {
                ranked.rows.iter().rposition(equal)
            } else {
                ranked.rows.iter().position(equal)
            };
            let Some(i) = found else {
                // Never kept (below the first `limit` of an append-only input).
                return;
            };
            (from, before) = (i, visible(&ranked.rows, i));
            ranked.rows.remove(i);
        } else {
            let at = self.place(&ranked.rows, &sort);
            if at >= self.limit && !self.keep_all {
                return;
            }
            (from, before) = (at, visible(&ranked.rows, at));
            ranked.rows.insert(at, (sort, row));
            if !self.keep_all {
                ranked.rows.truncate(self.limit);
            }
        }
        if from >= self.limit {
            return;
        }
        let after = ranked
            .rows
            .iter()
            .take(self.limit)
            .skip(from)
            .map(|(_, r)| r);
        let mut before = before.iter();
        let mut after = after.peekable();
        for number in from + 1..=self.limit {
            match (before.next(), after.next()) {
                (Some(b), Some(a)) if b == a => {}
                (Some(b), Some(a)) => {
                    out.push(Change {
                        kind: RowKind::UpdateBefore,
                        row: self.numbered(b, number),
                    });
                    out.push(Change {
                        kind: RowKind::UpdateAfter,
                        row: self.numbered(a, number),
                    });
                }
                (None, Some(a)) => out.push(Change::insert(self.numbered(a, number))),
                (Some(b), None) => out.push(Change {
                    kind: RowKind::Delete,
                    row: self.numbered(b, number),
                }),
                (None, None) => break,
            }
        }
    }
}

impl KeyedChanges for RankSpec {
    type State = Ranked;
    const TABLE: &'static str = "ranked rows per partition";

    fn key(&self, row: &[Value]) -> Row {
        row[self.width..self.width + self.partition].to_vec()
    }

    fn apply(
        &self,
        state: &mut Option<Ranked>,
        change: Change,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let ranked = state.get_or_insert_with(Ranked::default);
        RankSpec::apply(self, ranked, change, out);
        if ranked.rows.is_empty() {
            *state = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// Inserts and retractions of (value, payload) rows in one partition, ranked by
        /// value descending, first 3: the applied changelog is always the brute-force top 3
        /// (ties by arrival), with row numbers; keeping only the top 3 of an append-only
        /// input gives the same.
        #[test]
        fn the_changelog_is_the_brute_force_top_n(
            ops in proptest::collection::vec((0i64..6, 0i64..4, any::<bool>()), 0..80),
            append_only in any::<bool>(),
            later_first in any::<bool>(),
        ) {
            let spec = RankSpec {
                width: 2,
                partition: 0,
                orders: vec![SortOrder::new(true, None)],
                limit: 3,
                number_at: 2,
                keep_all: !append_only,
                later_first,
            };
            let mut ranked = Ranked::default();
            let mut held: Vec<(i64, i64)> = Vec::new(); // in arrival order
            let mut table: HashMap<Row, i64> = HashMap::new();
            for (value, payload, retract) in ops {
                let row = vec![Value::BigInt(value), Value::BigInt(payload), Value::BigInt(value)];
                let kind = match held.iter().position(|&h| h == (value, payload)) {
                    Some(i) if retract && !append_only => { held.remove(i); RowKind::Delete }
                    _ => { held.push((value, payload)); RowKind::Insert }
                };
                let mut out = Vec::new();
                spec.apply(&mut ranked, Change { kind, row }, &mut out);
                for c in out {
                    *table.entry(c.row).or_default() += if c.kind.retracts() { -1 } else { 1 };
                }
                table.retain(|_, n| *n != 0);
                // Ties by arrival, or the latest first.
                let mut sorted: Vec<(usize, (i64, i64))> = held.iter().copied().enumerate().collect();
                sorted.sort_by_key(|(i, h)| (std::cmp::Reverse(h.0), if later_first { usize::MAX - i } else { *i }));
                let sorted: Vec<(i64, i64)> = sorted.into_iter().map(|(_, h)| h).collect();
                let expected: HashMap<Row, i64> = sorted.iter().take(3).enumerate().map(|(i, (v, p))| {
                    (vec![Value::BigInt(*v), Value::BigInt(*p), Value::BigInt(i as i64 + 1)], 1)
                }).collect();
                prop_assert_eq!(&table, &expected);
            }
        }
    }
}

/// Deduplication that keeps each partition's first row in processing time (`ROW_NUMBER()
/// OVER (PARTITION BY .. ORDER BY proctime ASC) = 1` over an append-only input), as Flink's
/// `ProcTimeDeduplicateKeepFirstRowFunction`: the first row of a key goes out (row number 1)
/// and every later one is dropped, so the result is append-only.
#[derive(Clone, Debug)]
pub struct KeepFirst {
    /// What the rows look like (the row number's place, the query's columns).
    pub spec: RankSpec,
}

impl hummer_operators::keyed_process_function::KeyedProcessFunction<Row, Change> for KeepFirst {
    /// Whether the key's first row has gone out.
    type State = bool;
    type Out = Change;

    fn process_element(
        &mut self,
        mut change: Change,
        ctx: &mut hummer_operators::keyed_process_function::ProcessContext<
            '_,
            '_,
            Row,
            bool,
            Change,
        >,
    ) {
        let seen = ctx.state().get_or_insert_with(|| false);
        if *seen {
            return;
        }
        *seen = true;
        change.row.truncate(self.spec.width);
        ctx.collect(Change::insert(self.spec.numbered(&change.row, 1)));
    }
}
