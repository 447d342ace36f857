//! `Decode`: the lines a file source reads, as rows of the table's physical columns.

use hummer_operators::{Batch, Collector, Operator};
use hummer_types::error::{HummerError, Result};

use crate::format::Csv;
use crate::schema::Schema;
use crate::value::Row;

/// Decodes lines of the `csv` format into rows of `schema`.
#[derive(Clone, Debug)]
pub struct Decode {
    /// The table, for errors.
    pub table: String,
    /// The format's options.
    pub csv: Csv,
    /// The physical columns.
    pub schema: Schema,
}

impl Operator for Decode {
    type In = (String,);
    type Out = Row;

    fn process_batch(
        &mut self,
        batch: Batch<'_, String>,
        out: &mut Collector<'_, Row>,
    ) -> Result<()> {
        batch.for_each(out, |line, out| {
            if line.is_empty() {
                return Ok(());
            }
            match self.csv.decode(&line, &self.schema) {
                Ok(row) => out.collect(row),
                Err(_) if self.csv.ignore_parse_errors => {}
                Err(reason) => {
                    return Err(HummerError::BadInput {
                        input: format!("the line '{line}' of table '{}'", self.table),
                        reason: format!(
                            "{reason} (the table's 'csv.ignore-parse-errors' = 'true' skips such lines)"
                        ),
                    });
                }
            }
            Ok(())
        })
    }
}
