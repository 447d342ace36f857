//! The connectors a table's `WITH ('connector' = ..)` names, with Flink's option names:
//! reading a table into a stream of rows, and writing a stream of rows into a table.
//!
//! Here so far: `filesystem` (the `csv` format, source and sink), `print` and `blackhole`.
//! A table's computed columns are computed right after its scan, so a query sees every
//! column of the table in declaration order.

use std::fmt;

mod csv_files;
mod watermark;

pub use csv_files::{CsvFiles, list_files};
pub use watermark::EventTime;

use hummer_api::{DataStream, StreamExecutionEnvironment};
use hummer_operators::OperatorContext;
use hummer_operators::sink::{Sink, SinkWriter};

use crate::error::{Result, SqlError};
use crate::expr::bind::bind;
use crate::format::Csv;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::schema::{Column, Schema};
use crate::statement::{ColumnKind, TableDefinition};
use crate::value::Row;

/// The connectors, for errors.
const CONNECTORS: &str = "'filesystem' (format 'csv'), 'print' and 'blackhole' are";

/// The table's physical columns (what its connector reads or writes).
pub fn physical_schema(table: &TableDefinition) -> Schema {
    Schema::new(
        table
            .columns
            .iter()
            .filter_map(|c| match &c.kind {
                ColumnKind::Physical(ty) => Some(Column {
                    name: c.name.clone(),
                    ty: ty.clone(),
                }),
                ColumnKind::Computed(_) => None,
            })
            .collect(),
    )
}

/// Every column of the table, and the `Calc` that computes them from the physical ones
/// (`None` without computed columns).
pub fn table_schema(table: &TableDefinition) -> Result<(Schema, Option<Calc>)> {
    let physical = physical_schema(table);
    if physical.columns.len() == table.columns.len() {
        return Ok((physical, None));
    }
    let mut columns = Vec::with_capacity(table.columns.len());
    let mut projection = Vec::with_capacity(table.columns.len());
    for c in &table.columns {
        let (ty, expr, text) = match &c.kind {
            ColumnKind::Physical(_) => {
                let i = physical.index_of(&c.name, c.at)?;
                (
                    physical.columns[i].ty.clone(),
                    crate::expr::Expr::Column(i),
                    c.name.clone(),
                )
            }
            ColumnKind::Computed(e) => {
                let bound = bind(e, &physical)?;
                (bound.ty, bound.expr, e.to_string())
            }
        };
        columns.push(Column {
            name: c.name.clone(),
            ty,
        });
        projection.push(Named { expr, text });
    }
    let calc = Calc {
        condition: None,
        projection,
    };
    Ok((Schema::new(columns), Some(calc)))
}

/// The option `key` of `table`, which its connector needs.
fn required<'a>(table: &'a TableDefinition, key: &str) -> Result<&'a str> {
    table
        .options
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| SqlError::Invalid {
            at: table.at,
            message: format!("the table '{}' needs the option '{key}'", table.name),
        })
}

/// The `path` of a `filesystem` table as a local path: a plain path or a `file://` URL, as
/// Flink takes them.
fn local_path(table: &TableDefinition) -> Result<std::path::PathBuf> {
    let path = required(table, "path")?;
    if let Some(local) = path.strip_prefix("file://") {
        return Ok(local.into());
    }
    match path.split_once("://") {
        Some((scheme, _)) => Err(SqlError::Unsupported {
            at: table.at,
            what: format!("the path '{path}' of table '{}'", table.name),
            supported: format!("local paths and file:// URLs are (not {scheme}://)"),
        }),
        None => Ok(path.into()),
    }
}

fn connector(table: &TableDefinition) -> Result<&str> {
    required(table, "connector")
}

/// The `csv` format of a `filesystem` table, from its options.
fn csv(table: &TableDefinition) -> Result<Csv> {
    let format = required(table, "format")?;
    if format != "csv" {
        return Err(SqlError::Unsupported {
            at: table.at,
            what: format!("the format '{format}' of table '{}'", table.name),
            supported: "the format 'csv' is (json and debezium-json come next)".into(),
        });
    }
    let mut csv = Csv::default();
    if let Some(d) = table.options.get("csv.field-delimiter") {
        let mut chars = d.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => csv.delimiter = c,
            _ => {
                return Err(SqlError::Invalid {
                    at: table.at,
                    message: format!("'csv.field-delimiter' is one character, not '{d}'"),
                });
            }
        }
    }
    csv.null_literal = table.options.get("csv.null-literal").cloned();
    csv.ignore_parse_errors = table
        .options
        .get("csv.ignore-parse-errors")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    Ok(csv)
}

/// Reads `table` into a stream of its rows (every column, computed ones included), with
/// event time where the table declares a watermark.
pub fn scan(
    env: &StreamExecutionEnvironment,
    table: &TableDefinition,
) -> Result<(DataStream<Row>, Schema)> {
    let (schema, computed) = table_schema(table)?;
    let event_time = match &table.watermark {
        Some(w) => Some(EventTime::bind(w, &schema)?),
        None => None,
    };
    let rows = match connector(table)? {
        "filesystem" => {
            let source = CsvFiles {
                table: table.name.clone(),
                path: local_path(table)?,
                csv: csv(table)?,
                physical: physical_schema(table),
                computed,
            };
            match event_time {
                Some(event_time) => env.from_source(source, event_time.strategy()),
                None => env.add_source(source),
            }
        }
        other => {
            return Err(SqlError::Unsupported {
                at: table.at,
                what: format!("reading the connector '{other}' of table '{}'", table.name),
                supported: "reading 'filesystem' (format 'csv') is".into(),
            });
        }
    };
    Ok((rows, schema))
}

/// Writes `rows` (of `schema`) into `table`.
pub fn write(rows: &DataStream<Row>, schema: &Schema, table: &TableDefinition) -> Result<()> {
    let target = physical_schema(table);
    if target.columns.len() != schema.columns.len() {
        return Err(SqlError::Invalid {
            at: table.at,
            message: format!(
                "the query has {} columns and the table '{}' {}",
                schema.columns.len(),
                table.name,
                target.columns.len()
            ),
        });
    }
    match connector(table)? {
        "filesystem" => {
            let path = local_path(table)?;
            let csv = csv(table)?;
            let types: Vec<_> = target.columns.iter().map(|c| c.ty.ty.clone()).collect();
            rows.map(move |row: Row| {
                let mut line = String::new();
                csv.encode(&row, &types, &mut line);
                line
            })
            .name(&format!("Encode CSV: {}", table.name))
            .write_text_file(path);
        }
        "print" => {
            rows.map(|row: Row| Printed::of(&row))
                .name(&format!("Print: {}", table.name))
                .print();
        }
        "blackhole" => {
            rows.add_sink(Blackhole);
        }
        other => {
            return Err(SqlError::Unsupported {
                at: table.at,
                what: format!("the connector '{other}' of table '{}'", table.name),
                supported: CONNECTORS.into(),
            });
        }
    }
    Ok(())
}

/// A row as Flink's `print` connector shows it: `+I[1, abc]`.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Printed(String);

impl Printed {
    /// The printed form of an inserted row.
    pub fn of(row: &[crate::value::Value]) -> Self {
        let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
        Printed(format!("+I[{}]", cells.join(", ")))
    }
}

impl fmt::Debug for Printed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `blackhole` connector: takes every row and keeps none.
struct Blackhole;

impl Sink<Row> for Blackhole {
    fn name(&self) -> String {
        "Blackhole".into()
    }
    fn create_writer(
        &self,
        _: &OperatorContext,
    ) -> hummer_types::error::Result<Box<dyn SinkWriter<Row>>> {
        Ok(Box::new(Blackhole))
    }
}

impl SinkWriter<Row> for Blackhole {
    fn write_batch(&mut self, batch: &mut Vec<Row>) -> hummer_types::error::Result<()> {
        batch.clear();
        Ok(())
    }
    fn finish(&mut self) -> hummer_types::error::Result<()> {
        Ok(())
    }
}
