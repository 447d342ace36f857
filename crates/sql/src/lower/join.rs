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
//! retracted. A key with a `NULL` in it matches nothing (`NULL = NULL` is not true).
//!
//! With a condition besides the equalities (`ON a.k = b.k AND a.x > b.y`), a
//! match is a row of the other side with the same key for which the condition holds on the
//! joined row, and each row's padding follows its own matches (Flink's outer join with a
//! non-equi condition).

use hummer_operators::{Collector, EitherBatch, Operator};
use hummer_state::declared::DeclaredState;
use hummer_state::keyed_table::KeyedTable;
use hummer_types::error::Result;
use serde::{Deserialize, Serialize};

use crate::changelog::{Change, RowKind};
use crate::expr::{Compiled, Expr};
use crate::lower::multiset::Multiset;
use crate::value::{Row, Value};

/// The rows of one key on both sides, each with its multiplicity.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JoinSides {
    /// The first input's rows.
    pub left: Multiset,
    /// The second input's rows.
    pub right: Multiset,
}

impl JoinSides {
    /// True when neither side holds a row: the key leaves the table.
    pub fn is_empty(&self) -> bool {
        self.left.is_empty() && self.right.is_empty()
    }
}

/// A joined row: the left row's columns then the right's, `NULL`s for a side that is `None`
/// (`widths` columns each): the one layout of every join's output.
pub fn joined_row(
    left: Option<&[Value]>,
    right: Option<&[Value]>,
    (left_width, right_width): (usize, usize),
) -> Row {
    let mut row = Vec::with_capacity(left_width + right_width);
    match left {
        Some(l) => row.extend_from_slice(l),
        None => row.resize(left_width, Value::Null),
    }
    match right {
        Some(r) => row.extend_from_slice(r),
        None => row.resize(left_width + right_width, Value::Null),
    }
    row
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
    condition: Option<Compiled>,
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
        self.condition = Some(Compiled::new(&condition));
        self
    }
}

/// Whether `condition` holds on `row` (only `TRUE` does; an error or `NULL` does not).
fn holds(condition: &Compiled, row: &[Value]) -> bool {
    matches!(condition.holds(row), Ok(true))
}

/// One change as the join sees it: what it does, which input it came from, the widths of
/// its side's (`mine`) and the other side's rows, and which sides keep unmatched rows.
struct Step {
    kind: RowKind,
    /// +1 for a row added, -1 for one retracted.
    sign: i64,
    from_left: bool,
    width: usize,
    other_width: usize,
    mine_kept: bool,
    theirs_kept: bool,
}

impl Step {
    /// `mine` and `other` (each `None`: `NULL`s) as one row, in the left-right order.
    fn joined(&self, mine: Option<&Row>, other: Option<&Row>) -> Row {
        let (mine, other) = (mine.map(Vec::as_slice), other.map(Vec::as_slice));
        if self.from_left {
            joined_row(mine, other, (self.width, self.other_width))
        } else {
            joined_row(other, mine, (self.other_width, self.width))
        }
    }

    /// Emits `other` (`n` times) padded with `NULL`s where this side's columns go.
    fn padded(&self, kind: RowKind, other: &Row, n: i64, out: &mut Collector<'_, Change>) {
        for _ in 0..n {
            out.collect(Change {
                kind,
                row: self.joined(None, Some(other)),
            });
        }
    }

    /// Emits `row` joined with `other` (`n` times), or padded alone if `other` is `None`.
    fn pairs(&self, row: &Row, other: Option<&Row>, n: i64, out: &mut Collector<'_, Change>) {
        for _ in 0..n {
            out.collect(Change {
                kind: self.kind,
                row: self.joined(Some(row), other),
            });
        }
    }

    /// The change of `row` against the rows of its key when every pair of them matches
    /// (an equi-join): the padding of the other side follows this side's row count.
    fn equi(
        &self,
        row: Row,
        mine: &mut Multiset,
        theirs: &Multiset,
        out: &mut Collector<'_, Change>,
    ) {
        let mine_before = mine.total();
        if theirs.is_empty() {
            // No match: a preserved side's row goes out padded.
            if self.mine_kept {
                self.pairs(&row, None, 1, out);
            }
        } else {
            // The other side's unmatched rows had gone out padded: an insert that gives
            // them their first match retracts those first.
            if self.theirs_kept && self.sign > 0 && mine_before == 0 {
                for (other, n) in theirs.iter() {
                    self.padded(RowKind::Delete, other, n, out);
                }
            }
            for (other, n) in theirs.iter() {
                self.pairs(&row, Some(other), n, out);
            }
        }
        mine.add(row, self.sign);
        // A retraction that took the other side's last match: they go out padded again.
        if self.theirs_kept && self.sign < 0 && mine_before > 0 && mine.is_empty() {
            for (other, n) in theirs.iter() {
                self.padded(RowKind::Insert, other, n, out);
            }
        }
    }

    /// The change of `row` when a pair matches only where `condition` holds on it: a row's
    /// partners are the other side's rows for which it does, and each preserved row is
    /// padded exactly while it has none.
    fn conditional(
        &self,
        condition: &Compiled,
        row: Row,
        mine: &mut Multiset,
        theirs: &Multiset,
        out: &mut Collector<'_, Change>,
    ) {
        let matches = |a: &Row, b: &Row| holds(condition, &self.joined(Some(a), Some(b)));
        // How many of `mine` match `other`, counting multiplicity.
        let matched_by = |mine: &Multiset, other: &Row| -> i64 {
            mine.iter()
                .filter(|(m, _)| matches(m, other))
                .map(|(_, n)| n)
                .sum()
        };
        let partners: Vec<(&Row, i64, i64)> = theirs
            .iter()
            .filter(|(other, _)| matches(&row, other))
            .map(|(other, n)| (other, n, matched_by(mine, other)))
            .collect();
        if partners.is_empty() && self.mine_kept {
            self.pairs(&row, None, 1, out);
        }
        for &(other, n, before) in &partners {
            // Its first match: its padded form goes.
            if self.theirs_kept && self.sign > 0 && before == 0 {
                self.padded(RowKind::Delete, other, n, out);
            }
            self.pairs(&row, Some(other), n, out);
        }
        mine.add(row, self.sign);
        if self.theirs_kept && self.sign < 0 {
            // Its last match went: it goes out padded again.
            for &(other, n, _) in &partners {
                if matched_by(mine, other) == 0 {
                    self.padded(RowKind::Insert, other, n, out);
                }
            }
        }
    }
}

/// Whether a join key matches nothing: it holds a `NULL` (`NULL = NULL` is not true). The
/// one rule of regular and interval joins.
pub fn matches_nothing(key: &[Value]) -> bool {
    key.iter().any(Value::is_null)
}

impl RegularJoin {
    /// Applies `change` of one side (`from_left`) and emits its joins with the other side.
    fn apply(&mut self, change: Change, from_left: bool, out: &mut Collector<'_, Change>) {
        let Change { kind, mut row } = change;
        let (width, other_width) = if from_left {
            (self.left_width, self.right_width)
        } else {
            (self.right_width, self.left_width)
        };
        let step = Step {
            kind,
            sign: if kind.retracts() { -1 } else { 1 },
            from_left,
            width,
            other_width,
            mine_kept: self.kind.preserves(from_left),
            theirs_kept: self.kind.preserves(!from_left),
        };
        let key = row.split_off(width);
        // Not kept; a preserved side's row goes out padded (and its retraction likewise).
        if matches_nothing(&key) {
            if step.mine_kept {
                step.pairs(&row, None, 1, out);
            }
            return;
        }
        let condition = &self.condition;
        self.keys.update(key, |_, slot| {
            let sides = slot.get_or_insert_with(JoinSides::default);
            let (mine, theirs) = if from_left {
                (&mut sides.left, &sides.right)
            } else {
                (&mut sides.right, &sides.left)
            };
            match condition {
                None => step.equi(row, mine, theirs, out),
                Some(condition) => step.conditional(condition, row, mine, theirs, out),
            }
            // A key without rows on either side leaves the table.
            if sides.is_empty() {
                *slot = None;
            }
        });
    }
}

/// A join that takes its two inputs' changes one at a time (the regular and the semi join):
/// run as an operator by [`ChangeJoin`].
pub trait ApplyChange: Send + 'static {
    /// Applies one change of the left (`from_left`) or right input, emitting what it makes.
    fn apply(&mut self, change: Change, from_left: bool, out: &mut Collector<'_, Change>);

    /// The join's rows per key.
    fn rows_per_key(&mut self) -> &mut KeyedTable<Row, JoinSides>;
}

/// The operator of an [`ApplyChange`] join: the one dispatch of both inputs' batches, and
/// the one declaration of the rows it keeps per key.
pub struct ChangeJoin<J>(pub J);

impl<J: ApplyChange> Operator for ChangeJoin<J> {
    type In = (Change, Change);
    type Out = Change;

    fn process(
        &mut self,
        batch: EitherBatch<'_, Change, Change>,
        out: &mut Collector<'_, Change>,
    ) -> Result<()> {
        let (batch, from_left) = batch.with_side();
        batch.for_each(out, |c, out| {
            self.0.apply(c, from_left, out);
            Ok(())
        })
    }

    fn state(&mut self) -> DeclaredState<'_> {
        DeclaredState::new().table("rows per key", self.0.rows_per_key())
    }
}

impl ApplyChange for RegularJoin {
    fn apply(&mut self, change: Change, from_left: bool, out: &mut Collector<'_, Change>) {
        RegularJoin::apply(self, change, from_left, out);
    }

    fn rows_per_key(&mut self) -> &mut KeyedTable<Row, JoinSides> {
        &mut self.keys
    }
}
