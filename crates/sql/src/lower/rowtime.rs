//! `Rowtime`: stamps rows with the value of a time column and holds the watermark back by a
//! delay, for an operator whose output's time attribute is not the time its records carry.
//!
//! An interval join emits a pair when its later row comes, stamped with the later time; its
//! result's time attribute is the left row's time, which may be up to the join's upper bound
//! behind the watermark then. Stamped with that time and with the watermark held back by the
//! bound (as Flink's interval join delays its watermark), no result is late for a window
//! after it.

use hummer_operators::{Batch, Collector, Operator};
use hummer_types::Timestamp;
use hummer_types::error::Result;

use crate::changelog::Change;

/// Stamps rows with column `column`'s time; the watermark is the input's less `delay`.
#[derive(Clone, Debug)]
pub struct Rowtime {
    /// The time column.
    pub column: usize,
    /// Milliseconds the watermark is held back.
    pub delay: i64,
}

impl Operator for Rowtime {
    type In = (Change,);
    type Out = Change;

    fn process(&mut self, batch: Batch<'_, Change>, out: &mut Collector<'_, Change>) -> Result<()> {
        for (change, _) in batch.drain() {
            match change.row[self.column].time_millis() {
                Some(t) => out.set_timestamp(t),
                None => out.clear_timestamp(),
            }
            out.collect(change);
        }
        out.clear_timestamp();
        Ok(())
    }

    fn generates_watermarks(&self) -> bool {
        true
    }

    fn on_watermark(&mut self, time: Timestamp, out: &mut Collector<'_, Change>) -> Result<()> {
        // The end of the input's time stays the end.
        let held = if time == Timestamp::MAX {
            time
        } else {
            time.saturating_sub(self.delay)
        };
        out.emit_watermark(held);
        Ok(())
    }
}
