//! `ColumnUse`: which columns of a table's scan a query reads, so that a format reads only
//! those (Flink's projection pushdown into a scan).
//!
//! The planner builds a query bottom-up, so the scan exists before the operators that read
//! it: the scan hands out this shared record, each reader of its rows marks the columns it
//! reads (every column, where it reads the rows as they are), and the source's readers,
//! created when the job starts, leave the unmarked ones `NULL` without parsing them.

use std::sync::{Arc, Mutex, PoisonError};

/// The columns of one scan that the query reads (shared by the scan and the planner).
#[derive(Clone, Debug, Default)]
pub struct ColumnUse(Arc<Mutex<Vec<bool>>>);

impl ColumnUse {
    /// A scan of `width` columns, none read yet.
    pub fn new(width: usize) -> Self {
        ColumnUse(Arc::new(Mutex::new(vec![false; width])))
    }

    /// Marks the columns `used` marks as read.
    pub fn mark(&self, used: &[bool]) {
        let mut columns = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (c, u) in columns.iter_mut().zip(used) {
            *c |= *u;
        }
    }

    /// Marks every column as read.
    pub fn mark_all(&self) {
        let mut columns = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        columns.iter_mut().for_each(|c| *c = true);
    }

    /// Which columns are read.
    pub fn used(&self) -> Vec<bool> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
