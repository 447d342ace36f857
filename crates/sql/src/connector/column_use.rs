//! `ColumnUse`: which columns of a table's scan a query reads, so that a format reads only
//! those (Flink's projection pushdown into a scan).
//!
//! The planner builds a query bottom-up, so the scan exists before the operators that read
//! it: the scan hands out this shared record, each reader of its rows marks the columns it
//! reads (every column, where it reads the rows as they are), and the source's readers,
//! created when the job starts, leave the unmarked ones `NULL` without parsing them.
//!
//! A join's output has a `ColumnUse` too: what its readers mark decides which columns its
//! inputs carry into the join's state. Its input's `Calc` is not known to read anything until
//! then, so the input's scan holds a [`Link`] instead of marks: the columns the `Calc` reads
//! for the join's columns that end up read (and for its keys and condition, always).

use std::sync::{Arc, Mutex, PoisonError};

use crate::lower::Calc;

/// The columns of one scan that the query reads (shared by the scan and the planner).
#[derive(Clone, Debug, Default)]
pub struct ColumnUse(Arc<Mutex<Uses>>);

#[derive(Clone, Debug, Default)]
struct Uses {
    marked: Vec<bool>,
    links: Vec<Link>,
}

/// The columns a `calc` over these columns reads for output columns `offset..` of `output`
/// (its first `width` outputs; the ones after, the keys it appends, are always read).
#[derive(Clone, Debug)]
struct Link {
    calc: Calc,
    output: ColumnUse,
    offset: usize,
    width: usize,
}

impl ColumnUse {
    /// A scan of `width` columns, none read yet.
    pub fn new(width: usize) -> Self {
        ColumnUse(Arc::new(Mutex::new(Uses {
            marked: vec![false; width],
            links: Vec::new(),
        })))
    }

    fn uses(&self) -> std::sync::MutexGuard<'_, Uses> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the columns `used` marks as read.
    pub fn mark(&self, used: &[bool]) {
        for (c, u) in self.uses().marked.iter_mut().zip(used) {
            *c |= *u;
        }
    }

    /// Marks every column as read.
    pub fn mark_all(&self) {
        self.uses().marked.iter_mut().for_each(|c| *c = true);
    }

    /// Marks what `calc` reads for the columns `offset..offset + width` of `output` that are
    /// read in the end (and for the outputs after its first `width`, always).
    pub fn link(&self, calc: Calc, output: &ColumnUse, offset: usize, width: usize) {
        self.uses().links.push(Link {
            calc,
            output: output.clone(),
            offset,
            width,
        });
    }

    /// Which columns are read (ask once the whole query is planned).
    pub fn used(&self) -> Vec<bool> {
        let Uses { mut marked, links } = self.uses().clone();
        for link in links {
            let outputs = link.output.used();
            let read = link.calc.used_for(marked.len(), |k| {
                k >= link.width || outputs.get(link.offset + k).copied().unwrap_or(true)
            });
            for (c, r) in marked.iter_mut().zip(read) {
                *c |= r;
            }
        }
        marked
    }
}
