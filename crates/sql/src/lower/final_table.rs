//! `FinalTable`: a changelog applied to a table whose rows go out once, at the end of the
//! input, as inserts: the result of a statement in batch mode, where Flink's batch operators
//! give each result row once instead of updating it.
//!
//! The table is a count per distinct row (an insert adds one, a retraction takes one away;
//! a row whose count reaches zero is gone). At the end of the input each row goes out as many
//! times as it is counted, in no particular order, or sorted by the columns from `sort_from`
//! on (`ORDER BY`), the first `offset` skipped and at most `fetch` kept (`LIMIT`/`OFFSET`).
//! Sorted or limited, it runs in one subtask (its rows keyed by an empty key); otherwise the
//! rows are keyed by themselves, so a row and its retraction meet in one subtask.
//!
//! It holds the whole result until the end, which batch mode allows: its input is bounded,
//! and no checkpoint is taken in batch mode, so it declares no state.

use std::cmp::Ordering;
use std::collections::HashMap;

use hummer_operators::{Batch, Collector, Operator};
use hummer_types::error::Result;

use super::sort_order::{SortOrder, compare_keys};
use crate::changelog::Change;
use crate::value::{Row, Value};

/// The final table of a changelog, emitted at the end of the input.
#[derive(Clone, Debug)]
pub struct FinalTable {
    /// The first column to sort by: the columns from it on are the sort key (none: unsorted).
    pub sort_from: usize,
    /// Per sort column: its order.
    pub orders: Vec<SortOrder>,
    /// Rows skipped at the start (`OFFSET`).
    pub offset: usize,
    /// Rows kept at most (`LIMIT`; `None`: all).
    pub fetch: Option<usize>,
    /// Each row with its count.
    rows: HashMap<Row, i64>,
}

impl FinalTable {
    /// The final table of a changelog, sorted by the columns from `sort_from` on (in `orders`
    /// per column, none: unsorted), then `offset` rows skipped and `fetch` kept.
    pub fn new(
        sort_from: usize,
        orders: Vec<SortOrder>,
        offset: usize,
        fetch: Option<usize>,
    ) -> Self {
        FinalTable {
            sort_from,
            orders,
            offset,
            fetch,
            rows: HashMap::new(),
        }
    }

    /// Whether it must see the whole result in one place: sorted or limited.
    pub fn is_global(&self) -> bool {
        !self.orders.is_empty() || self.offset > 0 || self.fetch.is_some()
    }

    fn compare(&self, a: &[Value], b: &[Value]) -> Ordering {
        compare_keys(&a[self.sort_from..], &b[self.sort_from..], &self.orders)
    }

    /// Applies one change to the table.
    pub fn apply(&mut self, change: Change) {
        use std::collections::hash_map::Entry;
        let sign = if change.kind.retracts() { -1 } else { 1 };
        match self.rows.entry(change.row) {
            Entry::Occupied(mut row) => {
                *row.get_mut() += sign;
                if *row.get() == 0 {
                    row.remove();
                }
            }
            // A retraction that comes before its row (from the other input of a join) counts
            // -1 until the row comes.
            Entry::Vacant(row) => {
                row.insert(sign);
            }
        }
    }

    /// The table's rows, each as often as it is counted, sorted, skipped and limited; the
    /// table is left empty.
    pub fn take_rows(&mut self) -> Vec<Row> {
        let mut rows: Vec<Row> = Vec::new();
        for (row, n) in self.rows.drain() {
            for _ in 1..n {
                rows.push(row.clone());
            }
            if n > 0 {
                rows.push(row);
            }
        }
        if !self.orders.is_empty() {
            rows.sort_by(|a, b| self.compare(a, b));
        }
        let fetch = self.fetch.unwrap_or(usize::MAX);
        rows.into_iter().skip(self.offset).take(fetch).collect()
    }
}

impl Operator for FinalTable {
    type In = (Change,);
    type Out = Change;

    fn process(&mut self, batch: Batch<'_, Change>, _: &mut Collector<'_, Change>) -> Result<()> {
        for (change, _) in batch.drain() {
            self.apply(change);
        }
        Ok(())
    }

    fn end_of_input(&mut self, out: &mut Collector<'_, Change>) -> Result<()> {
        out.clear_timestamp();
        for row in self.take_rows() {
            out.collect(Change::insert(row));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::changelog::RowKind;
    use proptest::prelude::*;

    fn change(kind: RowKind, k: i64, v: Option<i64>) -> Change {
        Change {
            kind,
            row: vec![Value::BigInt(k), v.map_or(Value::Null, Value::BigInt)],
        }
    }

    proptest! {
        /// The rows of the final table are those of the changelog replayed in order
        /// (brute force: a list of rows, a retraction removing one equal row), sorted by the
        /// sort column with NULLs first ascending, then skipped and limited.
        #[test]
        fn the_final_table_is_the_replayed_changelog(
            // Rows are added, and some later retracted (a changelog only retracts what it
            // added: each retraction names an earlier insert).
            inserts in proptest::collection::vec((0i64..4, proptest::option::of(0i64..5)), 0..40),
            retract in proptest::collection::vec(any::<bool>(), 40),
            descending in any::<bool>(),
            sorted in any::<bool>(),
            offset in 0usize..4,
            fetch in proptest::option::of(0usize..6),
        ) {
            let mut changes = Vec::new();
            let mut table: Vec<Row> = Vec::new();
            for (i, (k, v)) in inserts.iter().enumerate() {
                changes.push(change(RowKind::Insert, *k, *v));
                table.push(change(RowKind::Insert, *k, *v).row);
                if retract[i] && i % 3 == 0 {
                    changes.push(change(RowKind::UpdateBefore, *k, *v));
                    let at = table.iter().position(|r| *r == change(RowKind::Insert, *k, *v).row);
                    table.remove(at.unwrap_or_default());
                }
            }
            let mut op = if sorted {
                FinalTable::new(1, vec![SortOrder::new(descending, None)], offset, fetch)
            } else {
                FinalTable::new(0, vec![], 0, None)
            };
            for c in changes {
                op.apply(c);
            }
            let got = op.take_rows();
            if sorted {
                // Stable sort of the brute-force table by the value; the engine's ties are
                // in any order, so compare the sort column, and the rows as multisets.
                table.sort_by(|a, b| if descending { b[1].cmp(&a[1]) } else { a[1].cmp(&b[1]) });
                let expected: Vec<Row> = table
                    .into_iter()
                    .skip(offset)
                    .take(fetch.unwrap_or(usize::MAX))
                    .collect();
                let column = |rows: &[Row]| rows.iter().map(|r| r[1].clone()).collect::<Vec<_>>();
                prop_assert_eq!(column(&got), column(&expected));
            } else {
                let mut got = got;
                got.sort();
                table.sort();
                prop_assert_eq!(got, table);
            }
        }
    }
}
