//! `SetAll`: `INTERSECT ALL` and `EXCEPT ALL`, each distinct row as many times as the bag
//! operation gives it: `min(l, r)` for `INTERSECT ALL`, `max(l - r, 0)` for `EXCEPT ALL`,
//! where `l` and `r` are the row's counts on the left and right (SQL's rules, Flink's too).
//!
//! The rows of both sides come as one stream keyed by the row (`NULL` equal to `NULL`), each
//! with a `BOOLEAN` after its columns that is `TRUE` on the left. Per row it keeps both
//! counts; a change sends the difference of the row's output count: inserts where it grew,
//! deletes where it shrank (an `EXCEPT ALL` row leaves when the right side gets one).

use hummer_types::error::Result;

use super::per_key::KeyedChanges;
use crate::changelog::{Change, RowKind};
use crate::value::{Row, Value};

/// The bag operation over rows of `width` columns.
#[derive(Clone, Debug)]
pub struct SetAll {
    /// The rows' columns (before the side flag).
    pub width: usize,
    /// `EXCEPT ALL`; else `INTERSECT ALL`.
    pub except: bool,
}

impl SetAll {
    /// How many times a row counted `left` and `right` times is in the result.
    fn output(&self, left: i64, right: i64) -> i64 {
        if self.except {
            (left - right).max(0)
        } else {
            left.min(right).max(0)
        }
    }
}

impl KeyedChanges for SetAll {
    type State = (i64, i64);
    const TABLE: &'static str = "row-counts";

    fn key(&self, row: &[Value]) -> Row {
        row[..self.width].to_vec()
    }

    fn apply(
        &self,
        state: &mut Option<(i64, i64)>,
        change: Change,
        out: &mut Vec<Change>,
    ) -> Result<()> {
        let from_left = matches!(change.row.get(self.width), Some(Value::Boolean(true)));
        let sign = if change.kind.retracts() { -1 } else { 1 };
        let (left, right) = state.unwrap_or((0, 0));
        let before = self.output(left, right);
        let (left, right) = if from_left {
            (left + sign, right)
        } else {
            (left, right + sign)
        };
        let after = self.output(left, right);
        *state = (left != 0 || right != 0).then_some((left, right));
        let mut row = change.row;
        row.truncate(self.width);
        for _ in after..before {
            out.push(Change {
                kind: RowKind::Delete,
                row: row.clone(),
            });
        }
        for _ in before..after {
            out.push(Change::insert(row.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The changes, replayed, give the bag operation of the two sides' rows so far
        /// (brute force: counts per row), after every change.
        #[test]
        fn the_replayed_changes_are_the_bag_operation(
            rows in proptest::collection::vec((0i64..4, any::<bool>()), 0..60),
            except in any::<bool>(),
        ) {
            let op = SetAll { width: 1, except };
            let mut states: BTreeMap<Row, Option<(i64, i64)>> = BTreeMap::new();
            let mut counts: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
            let mut table: BTreeMap<i64, i64> = BTreeMap::new();
            for (v, left) in rows {
                let change = Change::insert(vec![Value::BigInt(v), Value::Boolean(left)]);
                let c = counts.entry(v).or_default();
                if left { c.0 += 1 } else { c.1 += 1 }
                let mut out = Vec::new();
                op.apply(states.entry(vec![Value::BigInt(v)]).or_default(), change, &mut out).unwrap();
                for c in out {
                    let Value::BigInt(x) = c.row[0] else { unreachable!() };
                    *table.entry(x).or_default() += if c.kind.retracts() { -1 } else { 1 };
                }
                table.retain(|_, n| *n != 0);
                let expected: BTreeMap<i64, i64> = counts
                    .iter()
                    .map(|(v, (l, r))| (*v, if except { (l - r).max(0) } else { *l.min(r) }))
                    .filter(|(_, n)| *n > 0)
                    .collect();
                prop_assert_eq!(&table, &expected);
            }
        }
    }
}
