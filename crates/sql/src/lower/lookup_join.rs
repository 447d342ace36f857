//! `LookupJoin`: a processing-time temporal join with a bounded table (`JOIN t FOR SYSTEM_TIME
//! AS OF left.proctime ON ..`), as Flink's lookup join runs it against a lookup source.
//!
//! Each subtask reads the table whole when it starts and indexes its rows by the join key
//! (the right-hand sides of the `ON`'s equalities). A left row, with its key values appended
//! by the `Calc` before it, is joined with every table row of its key that the join's other
//! conditions hold for; an inner join drops a row without such a match, a left join emits it
//! padded with `NULL`s. The operator keeps no state of its own: a restored subtask reads the
//! table again, and the left rows' changelog kinds pass through, so the result is append-only
//! when the left input is.

use std::collections::HashMap;

use hummer_operators::{Batch, Collector, Operator};
use hummer_types::error::Result;

use super::Calc;
use crate::changelog::Change;
use crate::value::{Row, Value};

/// The table's rows by key; a key with a `NULL` in it matches nothing (SQL's equality).
pub type LookupTable = HashMap<Row, Vec<Row>>;

/// Indexes `rows` by the values `key` computes of them (its projection is the key).
pub fn index(rows: Vec<Row>, key: &Calc) -> Result<LookupTable> {
    let mut table = LookupTable::new();
    for row in rows {
        let Some(k) = key.apply(&row)? else {
            continue;
        };
        if k.iter().any(|v| matches!(v, Value::Null)) {
            continue;
        }
        table.entry(k).or_default().push(row);
    }
    Ok(table)
}

/// The operator: left rows are `left_width` columns then the key; output rows are the left
/// columns then the table's `right_width`.
pub struct LookupJoin {
    /// The table, by key.
    pub table: LookupTable,
    /// Columns of a left row before its key.
    pub left_width: usize,
    /// Columns of a table row.
    pub right_width: usize,
    /// Whether a left row without a match is emitted padded (a `LEFT JOIN`).
    pub keep_unmatched: bool,
    /// The `ON`'s conditions other than the key's equalities, over the joined row.
    pub residual: Option<Calc>,
}

impl LookupJoin {
    /// Emits the joins of one left change.
    fn join(&self, change: Change, out: &mut Collector<'_, Change>) -> Result<()> {
        let Change { kind, mut row } = change;
        let key = row.split_off(self.left_width);
        let matches = if key.iter().any(|v| matches!(v, Value::Null)) {
            None
        } else {
            self.table.get(&key)
        };
        let mut matched = false;
        for right in matches.into_iter().flatten() {
            let mut joined = Vec::with_capacity(self.left_width + self.right_width);
            joined.extend_from_slice(&row);
            joined.extend_from_slice(right);
            if let Some(residual) = &self.residual
                && residual.apply(&joined)?.is_none()
            {
                continue;
            }
            matched = true;
            out.collect(Change { kind, row: joined });
        }
        if !matched && self.keep_unmatched {
            row.resize(self.left_width + self.right_width, Value::Null);
            out.collect(Change { kind, row });
        }
        Ok(())
    }
}

impl Operator for LookupJoin {
    type In = (Change,);
    type Out = Change;

    fn process(&mut self, batch: Batch<'_, Change>, out: &mut Collector<'_, Change>) -> Result<()> {
        batch.for_each(out, |change, out| self.join(change, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::lower::calc::Named;

    fn column(i: usize) -> Named {
        Named {
            expr: Expr::Column(i),
            text: format!("${i}"),
        }
    }

    #[test]
    fn rows_are_indexed_by_key_and_null_keys_are_left_out() {
        let rows = vec![
            vec![Value::BigInt(1), Value::String("a".into())],
            vec![Value::Null, Value::String("b".into())],
            vec![Value::BigInt(1), Value::String("c".into())],
        ];
        let key = Calc::new(None, vec![column(0)]);
        let table = index(rows, &key).unwrap();
        assert_eq!(table.len(), 1);
        assert_eq!(table[&vec![Value::BigInt(1)]].len(), 2);
    }
}
