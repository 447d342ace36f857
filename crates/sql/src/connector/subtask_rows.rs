//! A generated table's share of its rows on one subtask (the `datagen` and `nexmark`
//! connectors): the row numbers `subtask, subtask + parallelism, ..` below the table's end,
//! each row extended by the table's computed columns, the position checkpointed as the number
//! of the next row.

use hummer_connectors::{SourceContext, SourceStatus, count_position, read_count_position};
use hummer_types::error::Result;

use crate::lower::Calc;
use crate::value::Row;

/// The row numbers one subtask generates, and how its rows go out.
pub(crate) struct SubtaskRows {
    /// The number of the next row.
    pub next: u64,
    /// The parallelism: the distance between this subtask's numbers.
    pub step: u64,
    end: u64,
    computed: Option<Calc>,
    /// The source, for errors ("the nexmark table 'bid'").
    source: String,
}

impl SubtaskRows {
    /// The numbers of subtask `ctx` below `end` (none: no end), extended by `computed`.
    pub fn new(
        ctx: &SourceContext,
        end: Option<u64>,
        computed: Option<Calc>,
        source: String,
    ) -> Self {
        SubtaskRows {
            next: ctx.subtask as u64,
            step: ctx.parallelism.max(1) as u64,
            end: end.unwrap_or(u64::MAX),
            computed,
            source,
        }
    }

    /// The next row number, if the subtask has one left.
    pub fn take(&mut self) -> Option<u64> {
        (self.next < self.end).then(|| {
            let n = self.next;
            self.next += self.step;
            n
        })
    }

    /// Appends `row` with the table's computed columns to `out`.
    pub fn push(&self, out: &mut Vec<Row>, row: Row) -> Result<()> {
        match &self.computed {
            None => out.push(row),
            Some(calc) => out.extend(calc.extend_row(row)?),
        }
        Ok(())
    }

    /// Finished once every number is taken.
    pub fn status(&self) -> SourceStatus {
        if self.next >= self.end {
            SourceStatus::Finished
        } else {
            SourceStatus::MoreAvailable
        }
    }

    /// The checkpointed position: the next number.
    pub fn position(&self) -> Vec<u8> {
        count_position(self.next)
    }

    /// Goes back to a checkpointed position.
    pub fn restore(&mut self, position: &[u8]) -> Result<()> {
        self.next = read_count_position(position, &self.source)?;
        Ok(())
    }
}
