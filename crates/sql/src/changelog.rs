//! Changelog rows: a row with its kind, as every SQL stream carries them.
//!
//! Flink's tables are changelogs: an append-only result is all inserts (`+I`), an updating
//! one (a `GROUP BY` without a window, a regular join) also retracts rows it emitted before:
//! an update is `-U` (the old row) then `+U` (the new one), a removal `-D`. Applying the
//! changes in order (add on `+I`/`+U`, remove on `-U`/`-D`) gives the table at that point.
//! The planner knows which results are append-only and refuses an updating one where a sink
//! cannot take it, before anything runs.

use serde::{Deserialize, Serialize};

use crate::value::{Row, Value};

/// What a changelog row does to the table (Flink's `RowKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RowKind {
    /// `+I`: a new row.
    Insert,
    /// `-U`: the old row of an update.
    UpdateBefore,
    /// `+U`: the new row of an update.
    UpdateAfter,
    /// `-D`: a row removed.
    Delete,
}

impl RowKind {
    /// Flink's short form: `+I`, `-U`, `+U`, `-D`.
    pub fn short(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }

    /// True for `-U` and `-D`: the row leaves the table.
    pub fn retracts(self) -> bool {
        matches!(self, RowKind::UpdateBefore | RowKind::Delete)
    }
}

/// A row and what it does to the table.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Change {
    /// Insert, update or delete.
    pub kind: RowKind,
    /// The row.
    pub row: Row,
}

impl Change {
    /// A new row.
    pub fn insert(row: Row) -> Self {
        Change {
            kind: RowKind::Insert,
            row,
        }
    }

    /// The row as Flink's `print` connector and client show a change: `+I[1, abc]`.
    pub fn printed(&self) -> String {
        let cells: Vec<String> = self.row.iter().map(ToString::to_string).collect();
        format!("{}[{}]", self.kind.short(), cells.join(", "))
    }
}

impl RowKind {
    fn code(self) -> i32 {
        match self {
            RowKind::Insert => 0,
            RowKind::UpdateBefore => 1,
            RowKind::UpdateAfter => 2,
            RowKind::Delete => 3,
        }
    }

    fn of_code(code: i32) -> RowKind {
        match code {
            1 => RowKind::UpdateBefore,
            2 => RowKind::UpdateAfter,
            3 => RowKind::Delete,
            _ => RowKind::Insert,
        }
    }
}

/// A change read by a source whose records are rows (a `debezium-json` line, an
/// `upsert-kafka` message), carried as one row so that the source's watermark reads its
/// columns in place: the row's `width` columns, then its kind, then for an update the old
/// row's columns. [`uncarry`] turns it back into the changes.
pub fn carry(kind: RowKind, mut row: Row, before: Option<Row>) -> Row {
    row.push(Value::Int(kind.code()));
    if let Some(before) = before {
        row.extend(before);
    }
    row
}

/// The changes of a row that [`carry`] made of a row `width` wide, in order: an update's
/// old row (`-U`), then the change itself.
pub fn uncarry(mut row: Row, width: usize) -> impl Iterator<Item = Change> {
    let before = (row.len() > width + 1).then(|| row.split_off(width + 1));
    let kind = match row.pop() {
        Some(Value::Int(code)) => RowKind::of_code(code),
        _ => RowKind::Insert,
    };
    let before = before.map(|row| Change {
        kind: RowKind::UpdateBefore,
        row,
    });
    before
        .into_iter()
        .chain(std::iter::once(Change { kind, row }))
}
