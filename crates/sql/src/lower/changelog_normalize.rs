//! `ChangelogNormalize`: an upsert stream (each row the new value of its key, or a delete of
//! the key) turned into a changelog whose retractions carry the rows they retract, as Flink
//! plans after an `upsert-kafka` source.
//!
//! Per key it keeps the last row: an upsert of a key without one is `+I`; of a key with one,
//! `-U` of the old row then `+U` of the new (nothing if they are equal); a delete of a key
//! with a row is `-D` of that row (the message had only the key), and nothing for a key
//! without one.

use super::per_key::KeyedChanges;
use crate::changelog::{Change, RowKind};
use crate::value::{Row, Value};
use hummer_types::error::Result;

/// The normalization of an upsert stream keyed by the columns `key`.
#[derive(Clone, Debug)]
pub struct ChangelogNormalize {
    /// The key's columns.
    pub key: Vec<usize>,
}

impl KeyedChanges for ChangelogNormalize {
    type State = Row;
    const TABLE: &'static str = "last-row";

    fn key(&self, row: &[Value]) -> Row {
        self.key.iter().map(|&i| row[i].clone()).collect()
    }

    fn apply(&self, state: &mut Option<Row>, change: Change, out: &mut Vec<Change>) -> Result<()> {
        if change.kind.retracts() {
            if let Some(row) = state.take() {
                out.push(Change {
                    kind: RowKind::Delete,
                    row,
                });
            }
            return Ok(());
        }
        match state.replace(change.row.clone()) {
            None => out.push(Change::insert(change.row)),
            Some(old) if old == change.row => {}
            Some(old) => {
                out.push(Change {
                    kind: RowKind::UpdateBefore,
                    row: old,
                });
                out.push(Change {
                    kind: RowKind::UpdateAfter,
                    row: change.row,
                });
            }
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
        /// Applied in order, the normalized changes give the last row of every key not
        /// deleted since (brute force over the upserts), and every retraction retracts the
        /// row the table holds.
        #[test]
        fn the_changes_give_the_last_row_per_key(
            upserts in proptest::collection::vec((0i64..5, 0i64..4, any::<bool>()), 0..60),
        ) {
            let normalize = ChangelogNormalize { key: vec![0] };
            let mut states: BTreeMap<Row, Option<Row>> = BTreeMap::new();
            let mut table: Vec<Row> = Vec::new();
            let mut expected: BTreeMap<i64, Row> = BTreeMap::new();
            for (k, v, delete) in upserts {
                let row = vec![Value::BigInt(k), if delete { Value::Null } else { Value::BigInt(v) }];
                let change = Change { kind: if delete { RowKind::Delete } else { RowKind::Insert }, row: row.clone() };
                if delete { expected.remove(&k); } else { expected.insert(k, row.clone()); }
                let state = states.entry(normalize.key(&row)).or_default();
                let mut out = Vec::new();
                normalize.apply(state, change, &mut out).unwrap();
                for c in out {
                    if c.kind.retracts() {
                        let at = table.iter().position(|r| *r == c.row);
                        prop_assert!(at.is_some(), "{:?} retracts a row the table lacks", c);
                        table.remove(at.unwrap());
                    } else {
                        table.push(c.row);
                    }
                }
            }
            table.sort();
            prop_assert_eq!(table, expected.into_values().collect::<Vec<_>>());
        }
    }
}
