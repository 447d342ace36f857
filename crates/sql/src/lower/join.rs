//! `Join`: a regular equi-join (inner, left, right or full outer) of two changelogs, as
//! Flink's streaming join runs it.
//!
//! Both inputs arrive keyed by the join key, which the `Calc` before each side appends to its
//! rows (the last `key` columns). Per key the operator keeps both sides' rows with their
//! multiplicity, in a keyed table the runtime checkpoints and redistributes by key group. A
//! change on one side is joined with every row the other side holds for its key and emitted
//! with the change's kind (an insert joins as inserts, a retraction retracts the joined rows
//! it made), so the output is a changelog of the join of the two tables, append-only when
//! both inputs are and the join is inner.
//!
//! An outer join also keeps the rows of a preserved side that have no match: such a row is
//! emitted padded with `NULL`s while the other side has no row for its key, its padded form
//! retracted when the first match arrives, and emitted padded again when the last match is
//! retracted. With a condition besides the equalities (`ON a.k = b.k AND a.x > b.y`), a
//! match is a row of the other side with the same key for which the condition holds on the
//! joined row, and each row's padding follows its own matches (Flink's outer join with a
//! non-equi condition).

use hummer_operators::{Collector, Operator, TwoInputBatch};
use hummer_state::declared::DeclaredState;
use hummer_state::keyed_table::KeyedTable;
use serde::{Deserialize, Serialize};

use crate::changelog::{Change, RowKind};
use crate::expr::Expr;
use crate::value::{Row, Value};

/// The rows of one key on both sides, each with its multiplicity.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JoinSides {
    /// The first input's rows.
    pub left: Vec<(Row, i64)>,
    /// The second input's rows.
    pub right: Vec<(Row, i64)>,
}

/// Which rows without a match a join keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// None.
    Inner,
    /// The left input's.
    Left,
    /// The right input's.
    Right,
    /// Both inputs'.
    Full,
}

impl JoinKind {
    /// Whether rows of the left (`left`) or right input are kept without a match.
    fn preserves(self, left: bool) -> bool {
        match self {
            JoinKind::Inner => false,
            JoinKind::Left => left,
            JoinKind::Right => !left,
            JoinKind::Full => true,
        }
    }

    /// Whether the left (`left`) or right input's columns are padded with `NULL`s where the
    /// other side's rows have no match.
    pub fn preserves_padding_of(self, left: bool) -> bool {
        self.preserves(!left)
    }

    /// Flink's name of the join type, for plans.
    pub fn name(self) -> &'static str {
        match self {
            JoinKind::Inner => "InnerJoin",
            JoinKind::Left => "LeftOuterJoin",
            JoinKind::Right => "RightOuterJoin",
            JoinKind::Full => "FullOuterJoin",
        }
    }
}

/// The operator: rows of the left input have `left_width` columns then the key, the right
/// input's `right_width` then the key.
pub struct RegularJoin {
    kind: JoinKind,
    left_width: usize,
    right_width: usize,
    /// What a pair of rows with equal keys must also meet to match (on the joined row).
    condition: Option<Expr>,
    keys: KeyedTable<Row, JoinSides>,
}

impl RegularJoin {
    /// A join of rows `left_width` and `right_width` columns wide (before their keys).
    pub fn new(kind: JoinKind, left_width: usize, right_width: usize) -> Self {
        RegularJoin {
            kind,
            left_width,
            right_width,
            condition: None,
            keys: KeyedTable::default(),
        }
    }

    /// The join whose pairs match only where `condition` (on the joined row, left columns
    /// then right) is `TRUE`.
    pub fn with_condition(mut self, condition: Expr) -> Self {
        self.condition = Some(condition);
        self
    }
}

/// Whether `condition` holds on `row` (only `TRUE` does; an error or `NULL` does not).
fn holds(condition: &Expr, row: &[Value]) -> bool {
    matches!(condition.eval(row), Ok(Value::Boolean(true)))
}

/// The rows a side holds, counting multiplicity.
fn count(rows: &[(Row, i64)]) -> i64 {
    rows.iter().map(|(_, n)| n).sum()
}

/// Adds `row` to `rows` (`sign` +1) or takes one of it away (-1).
fn account(rows: &mut Vec<(Row, i64)>, row: &Row, sign: i64) {
    match rows.iter().position(|(r, _)| r == row) {
        Some(i) => {
            rows[i].1 += sign;
            if rows[i].1 <= 0 {
                rows.swap_remove(i);
            }
        }
        // A retraction of a row never added (it was filtered upstream): nothing to undo.
        None if sign < 0 => {}
        None => rows.push((row.clone(), sign)),
    }
}

impl RegularJoin {
    /// Applies `change` of one side (`from_left`) and emits its joins with the other side.
    fn apply(&mut self, change: Change, from_left: bool, out: &mut Collector<'_, Change>) {
        let (width, other_width) = if from_left {
            (self.left_width, self.right_width)
        } else {
            (self.right_width, self.left_width)
        };
        let (mine_kept, theirs_kept) = (
            self.kind.preserves(from_left),
            self.kind.preserves(!from_left),
        );
        let Change { kind, mut row } = change;
        let key = row.split_off(width);
        let sign = if kind.retracts() { -1 } else { 1 };
        // `mine` joined with `other` (None: padded with NULLs), in the left-right order.
        let joined = |mine: &Row, other: Option<&Row>| -> Row {
            let other: Row = other
                .cloned()
                .unwrap_or_else(|| vec![Value::Null; other_width]);
            if from_left {
                [mine.as_slice(), other.as_slice()].concat()
            } else {
                [other.as_slice(), mine.as_slice()].concat()
            }
        };
        // A row of the other side padded with NULLs where this side's columns go.
        let theirs_padded = |other: &Row| -> Row {
            let nulls = vec![Value::Null; width];
            if from_left {
                [nulls.as_slice(), other.as_slice()].concat()
            } else {
                [other.as_slice(), nulls.as_slice()].concat()
            }
        };
        if let Some(condition) = &self.condition {
            let condition = condition.clone();
            return self.apply_conditional(&condition, kind, row, key, from_left, out);
        }
        self.keys.update(key, |_, slot| {
            let sides = slot.get_or_insert_with(JoinSides::default);
            let (mine, theirs) = if from_left {
                (&mut sides.left, &sides.right)
            } else {
                (&mut sides.right, &sides.left)
            };
            let mine_before = count(mine);
            if theirs.is_empty() {
                // No match: a preserved side's row goes out padded.
                if mine_kept {
                    out.collect(Change {
                        kind,
                        row: joined(&row, None),
                    });
                }
            } else {
                // The other side's unmatched rows had gone out padded: an insert that gives
                // them their first match retracts those first.
                if theirs_kept && sign > 0 && mine_before == 0 {
                    for (other, n) in theirs.iter() {
                        for _ in 0..*n {
                            out.collect(Change {
                                kind: RowKind::Delete,
                                row: theirs_padded(other),
                            });
                        }
                    }
                }
                for (other, n) in theirs.iter() {
                    for _ in 0..*n {
                        out.collect(Change {
                            kind,
                            row: joined(&row, Some(other)),
                        });
                    }
                }
            }
            account(mine, &row, sign);
            // A retraction that took the other side's last match: they go out padded again.
            if theirs_kept && sign < 0 && mine_before > 0 && mine.is_empty() {
                for (other, n) in theirs.iter() {
                    for _ in 0..*n {
                        out.collect(Change::insert(theirs_padded(other)));
                    }
                }
            }
            // A key without rows on either side leaves the table.
            if sides.left.is_empty() && sides.right.is_empty() {
                *slot = None;
            }
        });
    }
}

impl RegularJoin {
    /// [`RegularJoin::apply`] with a condition besides the key: the matches of a row are
    /// the other side's rows of its key for which the condition holds, and each preserved
    /// row is padded exactly while it has none.
    fn apply_conditional(
        &mut self,
        condition: &Expr,
        kind: RowKind,
        row: Row,
        key: Row,
        from_left: bool,
        out: &mut Collector<'_, Change>,
    ) {
        let (width, other_width) = if from_left {
            (self.left_width, self.right_width)
        } else {
            (self.right_width, self.left_width)
        };
        let (mine_kept, theirs_kept) = (
            self.kind.preserves(from_left),
            self.kind.preserves(!from_left),
        );
        let sign = if kind.retracts() { -1 } else { 1 };
        // `mine` and `other` (None: NULLs) in the left-right order.
        let joined = |mine: Option<&Row>, other: Option<&Row>, mine_is_left: bool| -> Row {
            let (l, r, lw, rw) = if mine_is_left {
                (mine, other, width, other_width)
            } else {
                (other, mine, other_width, width)
            };
            let mut out = Vec::with_capacity(lw + rw);
            match l {
                Some(l) => out.extend_from_slice(l),
                None => out.resize(lw, Value::Null),
            }
            match r {
                Some(r) => out.extend_from_slice(r),
                None => out.resize(lw + rw, Value::Null),
            }
            out
        };
        let matches = |a: &Row, b: &Row| holds(condition, &joined(Some(a), Some(b), from_left));
        self.keys.update(key, |_, slot| {
            let sides = slot.get_or_insert_with(JoinSides::default);
            let (mine, theirs) = if from_left {
                (&mut sides.left, &sides.right)
            } else {
                (&mut sides.right, &sides.left)
            };
            // How many of `mine` match `other`, counting multiplicity.
            let matched_by = |mine: &Vec<(Row, i64)>, other: &Row| -> i64 {
                mine.iter()
                    .filter(|(m, _)| matches(m, other))
                    .map(|(_, n)| n)
                    .sum()
            };
            let partners: Vec<(Row, i64, i64)> = theirs
                .iter()
                .filter(|(other, _)| matches(&row, other))
                .map(|(other, n)| (other.clone(), *n, matched_by(mine, other)))
                .collect();
            if partners.is_empty() {
                if mine_kept {
                    out.collect(Change {
                        kind,
                        row: joined(Some(&row), None, from_left),
                    });
                }
            } else {
                for (other, n, before) in &partners {
                    // Its first match: its padded form goes.
                    if theirs_kept && sign > 0 && *before == 0 {
                        for _ in 0..*n {
                            out.collect(Change {
                                kind: RowKind::Delete,
                                row: joined(None, Some(other), from_left),
                            });
                        }
                    }
                    for _ in 0..*n {
                        out.collect(Change {
                            kind,
                            row: joined(Some(&row), Some(other), from_left),
                        });
                    }
                }
            }
            account(mine, &row, sign);
            if theirs_kept && sign < 0 {
                // Its last match went: it goes out padded again.
                for (other, n, _) in &partners {
                    if matched_by(mine, other) == 0 {
                        for _ in 0..*n {
                            out.collect(Change::insert(joined(None, Some(other), from_left)));
                        }
                    }
                }
            }
            if sides.left.is_empty() && sides.right.is_empty() {
                *slot = None;
            }
        });
    }
}

impl Operator for RegularJoin {
    type In = (Change, Change);
    type Out = Change;

    fn process_batch(
        &mut self,
        batch: TwoInputBatch<'_, Change, Change>,
        out: &mut Collector<'_, Change>,
    ) -> hummer_types::error::Result<()> {
        match batch {
            TwoInputBatch::First(batch) => batch.for_each(out, |c, out| {
                self.apply(c, true, out);
                Ok(())
            }),
            TwoInputBatch::Second(batch) => batch.for_each(out, |c, out| {
                self.apply(c, false, out);
                Ok(())
            }),
        }
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new().table("rows per key", &mut self.keys)
    }
}
