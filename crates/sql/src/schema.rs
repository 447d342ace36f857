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

/// The columns of a relation, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schema {
    /// The columns.
    pub columns: Vec<Column>,
}

impl Schema {
    /// A schema of `columns`.
    pub fn new(columns: Vec<Column>) -> Self {
        Schema { columns }
    }

    /// The index of the column `name` (case-sensitive, as Flink's names); an unknown name is
    /// refused with the nearest one.
    pub fn index_of(&self, name: &str, at: Position) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| {
                SqlError::unknown(
                    at,
                    "column",
                    name,
                    self.columns.iter().map(|c| c.name.as_str()),
                )
            })
    }
}
