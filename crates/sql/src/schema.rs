//! The columns of a relation (a table, a view, a query's result): names and types, and the
//! one rule for finding a column by name.

use crate::error::{Position, Result, SqlError};
use crate::types::DataType;

/// A named, typed column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ty: DataType,
}

/// The columns of a relation, in order, and the table (or alias) each comes from where a
/// `FROM` names one: `A.id` and `P.id` of a join are two columns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// The columns.
    pub columns: Vec<Column>,
    /// The table or alias of each column, where known (empty: none known).
    pub qualifiers: Vec<Option<String>>,
}

impl Schema {
    /// A schema of `columns`.
    pub fn new(columns: Vec<Column>) -> Self {
        Schema {
            columns,
            qualifiers: Vec::new(),
        }
    }

    /// Nullable columns `c0`, `c1`, .. of `types` (for tests of formats and operators).
    #[cfg(test)]
    pub(crate) fn of_types(types: &[crate::types::SqlType]) -> Self {
        Schema::new(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Column {
                    name: format!("c{i}"),
                    ty: DataType::nullable(t.clone()),
                })
                .collect(),
        )
    }

    /// The same columns, all of the table (or alias) `name`.
    pub fn qualified(self, name: &str) -> Self {
        let qualifiers = vec![Some(name.to_string()); self.columns.len()];
        Schema { qualifiers, ..self }
    }

    /// The columns of `left` then those of `right` (a join's).
    pub fn join(left: &Schema, right: &Schema) -> Self {
        let qualifiers = |s: &Schema| -> Vec<Option<String>> {
            (0..s.columns.len())
                .map(|i| s.qualifiers.get(i).cloned().flatten())
                .collect()
        };
        let mut columns = left.columns.clone();
        columns.extend(right.columns.iter().cloned());
        let mut q = qualifiers(left);
        q.extend(qualifiers(right));
        Schema {
            columns,
            qualifiers: q,
        }
    }

    /// Whether a column of the schema is of the table (or alias) `name`.
    pub fn is_qualifier(&self, name: &str) -> bool {
        self.qualifiers.iter().any(|q| q.as_deref() == Some(name))
    }

    /// The index of the column `name` (case-sensitive, as Flink's names); an unknown name is
    /// refused with the nearest one, a name two columns have (a join's) as ambiguous.
    pub fn index_of(&self, name: &str, at: Position) -> Result<usize> {
        let names = self.columns.iter().map(|c| c.name.clone()).collect();
        self.find(|i| self.columns[i].name == name, name, names, at)
    }

    /// The index of `table.name`: the column `name` of the table (or alias) `table` where
    /// the schema knows its columns' tables, else the column `name`.
    pub fn index_of_qualified(&self, table: &str, name: &str, at: Position) -> Result<usize> {
        if self.qualifiers.iter().all(Option::is_none) {
            return self.index_of(name, at);
        }
        // The nearest of the qualified names (`e.amount` for `e.amout`, `b.price` for
        // `a.price`).
        let names = self
            .columns
            .iter()
            .zip(&self.qualifiers)
            .map(|(c, q)| match q {
                Some(q) => format!("{q}.{}", c.name),
                None => c.name.clone(),
            })
            .collect();
        self.find(
            |i| {
                self.columns[i].name == name
                    && self.qualifiers.get(i).and_then(Option::as_deref) == Some(table)
            },
            &format!("{table}.{name}"),
            names,
            at,
        )
    }

    fn find(
        &self,
        matches: impl Fn(usize) -> bool,
        name: &str,
        candidates: Vec<String>,
        at: Position,
    ) -> Result<usize> {
        let mut found = (0..self.columns.len()).filter(|&i| matches(i));
        match (found.next(), found.next()) {
            (Some(i), None) => Ok(i),
            (Some(_), Some(_)) => Err(SqlError::Invalid {
                at,
                message: format!("Column '{name}' is ambiguous (qualify it with its table)"),
            }),
            (None, _) => Err(SqlError::unknown(
                at,
                "column",
                name,
                candidates.iter().map(String::as_str),
            )),
        }
    }
}
