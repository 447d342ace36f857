//! `Join`: a regular inner equi-join of two changelogs, as Flink's streaming join runs it.
//!
//! Both inputs arrive keyed by the join key, which the `Calc` before each side appends to its
//! rows (the last `key` columns). Per key the operator keeps both sides' rows with their
//! multiplicity, in a keyed table the runtime checkpoints and redistributes by key group. A
//! change on one side is joined with every row the other side holds for its key and emitted
//! with the change's kind (an insert joins as inserts, a retraction retracts the joined rows
//! it made), so the output is a changelog of the join of the two tables, append-only when
//! both inputs are.

use hummer_operators::{Collector, Operator, TwoInputBatch};
use hummer_state::declared::DeclaredState;
use hummer_state::keyed_table::KeyedTable;
use serde::{Deserialize, Serialize};

use crate::changelog::Change;
use crate::value::Row;

/// The rows of one key on both sides, each with its multiplicity.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JoinSides {
    /// The first input's rows.
    pub left: Vec<(Row, i64)>,
    /// The second input's rows.
    pub right: Vec<(Row, i64)>,
}

/// The operator: rows of the left input have `left_width` columns then the key, the right
/// input's `right_width` then the key.
pub struct RegularJoin {
    left_width: usize,
    right_width: usize,
    keys: KeyedTable<Row, JoinSides>,
}

impl RegularJoin {
    /// A join of rows `left_width` and `right_width` columns wide (before their keys).
    pub fn new(left_width: usize, right_width: usize) -> Self {
        RegularJoin {
            left_width,
            right_width,
            keys: KeyedTable::default(),
        }
    }
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
        let width = if from_left {
            self.left_width
        } else {
            self.right_width
        };
        let Change { kind, mut row } = change;
        let key = row.split_off(width);
        let sign = if kind.retracts() { -1 } else { 1 };
        self.keys.update(key, |_, slot| {
            let sides = slot.get_or_insert_with(JoinSides::default);
            let (mine, theirs) = if from_left {
                (&mut sides.left, &sides.right)
            } else {
                (&mut sides.right, &sides.left)
            };
            for (other, n) in theirs {
                for _ in 0..*n {
                    let joined = if from_left {
                        [row.as_slice(), other.as_slice()].concat()
                    } else {
                        [other.as_slice(), row.as_slice()].concat()
                    };
                    out.collect(Change { kind, row: joined });
                }
            }
            account(mine, &row, sign);
            // A key without rows on either side leaves the table.
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
