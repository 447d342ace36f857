//! `SemiJoin`: the rows of the left input that have (a semi join) or have not (an anti join)
//! a matching row on the right, as Flink runs `IN`, `EXISTS`, `NOT IN` and `NOT EXISTS`
//! subqueries in a stream.
//!
//! Both inputs arrive keyed by the join key, the last `key` columns of their rows. Per key the
//! operator keeps both sides' rows with their multiplicity. A left change is emitted, with its
//! kind, when its row passes (it has a match, for a semi join; none, for an anti join). A
//! right change that gives a left row its first match, or takes its last, emits that row or
//! retracts it: a semi join of append-only inputs stays append-only, an anti join retracts.
//! A left row whose key holds a `NULL` matches nothing (`NULL = NULL` is not true).
//!
//! With a condition besides the equalities (a correlated subquery's `b.x > a.y`), a match is a
//! right row of the same key for which the condition holds on the left row joined with it.

use hummer_operators::Collector;
use hummer_state::keyed_table::KeyedTable;

use crate::changelog::{Change, RowKind};
use crate::expr::{Compiled, Expr};
use crate::lower::join::{ApplyChange, JoinSides, joined_row, matches_nothing};
use crate::lower::multiset::Multiset;
use crate::value::Row;

/// The operator: rows of the left input have `left_width` columns then the key, the right
/// input's `right_width` then the key; the output is the left rows without their key.
pub struct SemiJoin {
    /// Whether the left rows pass without a match (`NOT IN`, `NOT EXISTS`).
    anti: bool,
    left_width: usize,
    right_width: usize,
    /// What a pair of rows with equal keys must also meet to match (on the left row then the
    /// right row).
    condition: Option<Compiled>,
    keys: KeyedTable<Row, JoinSides>,
    /// Keys holding `NULL` match as equal ones (set operations), not never.
    null_safe: bool,
}

impl SemiJoin {
    /// A semi join (`anti` false) or anti join of rows `left_width` and `right_width` columns
    /// wide (before their keys), whose pairs match only where `condition` (on the left row's
    /// columns then the right row's), if any, is `TRUE`.
    pub fn new(anti: bool, widths: (usize, usize), condition: Option<&Expr>) -> Self {
        SemiJoin {
            anti,
            left_width: widths.0,
            right_width: widths.1,
            condition: condition.map(Compiled::new),
            keys: KeyedTable::default(),
            null_safe: false,
        }
    }

    /// The join whose keys match where they are equal, `NULL`s included (`INTERSECT`,
    /// `EXCEPT`: `IS NOT DISTINCT FROM` on every column).
    pub fn null_safe(mut self) -> Self {
        self.null_safe = true;
        self
    }

    /// Whether the right row `right` matches the left row `left`.
    fn pair(condition: Option<&Compiled>, left: &Row, right: &Row) -> bool {
        let Some(condition) = condition else {
            return true;
        };
        let joined = joined_row(Some(left), Some(right), (left.len(), right.len()));
        matches!(condition.holds(&joined), Ok(true))
    }

    /// How many of the rows in `right` (counting multiplicity) match `left`.
    fn matches(condition: Option<&Compiled>, left: &Row, right: &Multiset) -> i64 {
        match condition {
            None => right.total(),
            Some(_) => right
                .iter()
                .filter(|(r, _)| Self::pair(condition, left, r))
                .map(|(_, n)| n)
                .sum(),
        }
    }

    /// Whether a left row with `matches` matching right rows passes: the one rule of both
    /// inputs.
    fn passes(anti: bool, matches: i64) -> bool {
        (matches > 0) != anti
    }

    fn left(&mut self, change: Change, out: &mut Collector<'_, Change>) {
        let Change { kind, mut row } = change;
        let key = row.split_off(self.left_width);
        if !self.null_safe && matches_nothing(&key) {
            if Self::passes(self.anti, 0) {
                out.collect(Change { kind, row });
            }
            return;
        }
        let sign = if kind.retracts() { -1 } else { 1 };
        let (anti, condition) = (self.anti, self.condition.as_ref());
        self.keys.update(key, |_, slot| {
            let sides = slot.get_or_insert_with(JoinSides::default);
            let matches = Self::matches(condition, &row, &sides.right);
            if Self::passes(anti, matches) {
                out.collect(Change {
                    kind,
                    row: row.clone(),
                });
            }
            sides.left.add(row, sign);
            if sides.is_empty() {
                *slot = None;
            }
        });
    }

    fn right(&mut self, change: Change, out: &mut Collector<'_, Change>) {
        let Change { kind, mut row } = change;
        let key = row.split_off(self.right_width);
        if !self.null_safe && matches_nothing(&key) {
            return;
        }
        let sign = if kind.retracts() { -1 } else { 1 };
        let (anti, condition) = (self.anti, self.condition.as_ref());
        self.keys.update(key, |_, slot| {
            let sides = slot.get_or_insert_with(JoinSides::default);
            let total = sides.right.total();
            let probe = condition.map(|_| row.clone());
            sides.right.add(row, sign);
            // Rows added (+1), taken (-1), or none (a retraction of a row never added).
            let delta = sides.right.total() - total;
            // Without a condition every left row matches every right row, so only a first
            // or last one changes what passes; with one, only the left rows it matches.
            let unchanged = delta == 0
                || (condition.is_none()
                    && Self::passes(anti, total) == Self::passes(anti, total + delta));
            if !unchanged {
                for (l, n) in sides.left.iter() {
                    if let Some(probe) = &probe
                        && !Self::pair(condition, l, probe)
                    {
                        continue;
                    }
                    let after = Self::matches(condition, l, &sides.right);
                    let before = after - delta;
                    let kind = match (Self::passes(anti, before), Self::passes(anti, after)) {
                        (false, true) => RowKind::Insert,
                        (true, false) => RowKind::Delete,
                        _ => continue,
                    };
                    for _ in 0..n {
                        out.collect(Change {
                            kind,
                            row: l.clone(),
                        });
                    }
                }
            }
            if sides.is_empty() {
                *slot = None;
            }
        });
    }
}

impl ApplyChange for SemiJoin {
    fn apply(&mut self, change: Change, from_left: bool, out: &mut Collector<'_, Change>) {
        if from_left {
            self.left(change, out);
        } else {
            self.right(change, out);
        }
    }

    fn rows_per_key(&mut self) -> &mut KeyedTable<Row, JoinSides> {
        &mut self.keys
    }
}
