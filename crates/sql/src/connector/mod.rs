//! The connectors a table's `WITH ('connector' = ..)` names, with Flink's option names:
//! reading a table into a stream of rows, and writing a stream of rows into a table.
//!
//! Here so far: `filesystem` (the `csv` format, source and sink), `nexmark` and `datagen`
//! (sources), `print` and `blackhole` (sinks).
//! A table's computed columns are computed right after its scan, so a query sees every
//! column of the table in declaration order.

use std::fmt;

pub mod column_use;
mod csv_files;
mod datagen;
mod nexmark;
mod watermark;

pub use csv_files::{CsvFiles, list_files};
pub use datagen::DataGen;
pub use nexmark::NexmarkEvents;
pub use watermark::EventTime;

use hummer_api::{DataStream, StreamExecutionEnvironment};
use hummer_operators::OperatorContext;
use hummer_operators::sink::{Sink, SinkWriter};

use crate::changelog::Change;
use crate::error::{Result, SqlError};
use crate::expr::bind::bind;
use crate::format::Csv;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::plan::Planned;
use crate::schema::{Column, Schema};
use crate::statement::{ColumnKind, TableDefinition};
use crate::value::Row;
use column_use::ColumnUse;

/// The connectors, for errors.
const CONNECTORS: &str = "'filesystem' (formats 'csv' and 'debezium-json'), 'nexmark' and 'datagen' (read), 'print' \
     and 'blackhole' (written) are";

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

/// A `filesystem` table's format.
enum Format {
    /// `csv`.
    Csv(Csv),
    /// `debezium-json` (a sink's changelog).
    DebeziumJson,
}

/// The format of a `filesystem` table, from its options.
fn format(table: &TableDefinition) -> Result<Format> {
    match required(table, "format")? {
        "debezium-json" => Ok(Format::DebeziumJson),
        _ => csv(table).map(Format::Csv),
    }
}

/// The `csv` format of a `filesystem` table, from its options.
fn csv(table: &TableDefinition) -> Result<Csv> {
    let format = required(table, "format")?;
    if format != "csv" {
        return Err(SqlError::Unsupported {
            at: table.at,
            what: format!("the format '{format}' of table '{}'", table.name),
            supported: "the formats 'csv' (read and written) and 'debezium-json' (written) \
                        are"
            .into(),
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
) -> Result<(DataStream<Row>, Schema, Option<ColumnUse>)> {
    let (schema, computed) = table_schema(table)?;
    let event_time = match &table.watermark {
        Some(w) => Some(EventTime::bind(w, &schema)?),
        None => None,
    };
    // The rowtime and what the watermark reads are read whatever the query reads.
    let used = ColumnUse::new(schema.columns.len());
    if let Some(e) = &event_time {
        let mut time_columns = vec![false; schema.columns.len()];
        time_columns[e.rowtime] = true;
        e.watermark.columns(&mut |c| time_columns[c] = true);
        used.mark(&time_columns);
    }
    let mut column_use = None;
    // A source of rows with every column, with the table's event time if it has one.
    fn from<S: hummer_connectors::Source<Row>>(
        env: &StreamExecutionEnvironment,
        source: S,
        event_time: Option<EventTime>,
    ) -> DataStream<Row> {
        match event_time {
            Some(event_time) => env.from_source(source, event_time.strategy()),
            None => env.add_source(source),
        }
    }
    let rows = match connector(table)? {
        "filesystem" => {
            let source = CsvFiles {
                table: table.name.clone(),
                path: local_path(table)?,
                csv: csv(table)?,
                physical: physical_schema(table),
                computed,
                used: used.clone(),
                decoded: None,
                physical_prefix: 0,
            };
            column_use = Some(used);
            from(env, source, event_time)
        }
        "nexmark" => {
            let source = NexmarkEvents::of(table, &physical_schema(table), computed)?;
            from(env, source, event_time)
        }
        "datagen" => {
            let source = DataGen::of(table, &physical_schema(table), computed)?;
            from(env, source, event_time)
        }
        other => {
            return Err(SqlError::Unsupported {
                at: table.at,
                what: format!("reading the connector '{other}' of table '{}'", table.name),
                supported: "reading 'filesystem' (format 'csv'), 'nexmark' and 'datagen' is".into(),
            });
        }
    };
    Ok((rows, schema, column_use))
}

/// The source of a lookup join's table (`JOIN t FOR SYSTEM_TIME AS OF left.proctime`): a
/// bounded `filesystem` table, which a lookup join reads whole in each subtask.
pub fn lookup_source(table: &TableDefinition) -> Result<CsvFiles> {
    match connector(table)? {
        "filesystem" => {
            let (schema, computed) = table_schema(table)?;
            let used = ColumnUse::new(schema.columns.len());
            used.mark_all();
            Ok(CsvFiles {
                table: table.name.clone(),
                path: local_path(table)?,
                csv: csv(table)?,
                physical: physical_schema(table),
                computed,
                used,
                decoded: None,
                physical_prefix: 0,
            })
        }
        other => Err(SqlError::Unsupported {
            at: table.at,
            what: format!(
                "a processing-time temporal join with the '{other}' table '{}'",
                table.name
            ),
            supported: "lookup joins with bounded 'filesystem' tables (read whole by each \
                        subtask) and event-time temporal joins with versioned tables are"
                .into(),
        }),
    }
}

/// Writes the query's rows into `table`: a sink that takes only inserts (`csv`) refuses an
/// updating query before anything runs, naming the operator that updates, as Flink does.
pub fn write(planned: &Planned, table: &TableDefinition) -> Result<()> {
    let (rows, schema) = (planned.rows(), &planned.schema);
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
    let inserts_only = |format: &str| match &planned.updated_by {
        Some(node) => Err(SqlError::Invalid {
            at: table.at,
            message: format!(
                "Table sink '{}' doesn't support consuming update changes which is produced \
                 by node {node} (its format '{format}' takes inserts only; 'debezium-json' \
                 takes updates)",
                table.name
            ),
        }),
        None => Ok(()),
    };
    match connector(table)? {
        "filesystem" => {
            let path = local_path(table)?;
            let types: Vec<_> = target.columns.iter().map(|c| c.ty.ty.clone()).collect();
            let encoder = match format(table)? {
                Format::Csv(csv) => {
                    inserts_only("csv")?;
                    Encoder::Csv(csv, types)
                }
                Format::DebeziumJson => {
                    Encoder::DebeziumJson(target.columns.iter().map(|c| c.name.clone()).collect())
                }
            };
            rows.map(move |c: Change| {
                let mut line = String::new();
                encoder.encode(&c, &mut line);
                line
            })
            .name(&format!("Encode: {}", table.name))
            .write_text_file(path);
        }
        "print" => {
            rows.map(|c: Change| Printed(c.printed()))
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

/// How a `filesystem` sink writes a change as a line.
#[derive(Clone)]
enum Encoder {
    /// `csv`: the row (inserts only).
    Csv(Csv, Vec<crate::types::SqlType>),
    /// `debezium-json`: the change, with the columns' names.
    DebeziumJson(Vec<String>),
}

impl Encoder {
    fn encode(&self, change: &Change, line: &mut String) {
        match self {
            Encoder::Csv(csv, types) => csv.encode(&change.row, types, line),
            Encoder::DebeziumJson(names) => debezium_json(change, names, line),
        }
    }
}

/// A change as Flink's `debezium-json` format writes it: an insert or the new row of an
/// update as `{"before":null,"after":{..},"op":"c"}`, a delete or the old row of an update
/// as `{"before":{..},"after":null,"op":"d"}`.
pub fn debezium_json(change: &Change, names: &[String], out: &mut String) {
    let mut object = String::from("{");
    for (i, (name, value)) in names.iter().zip(&change.row).enumerate() {
        if i > 0 {
            object.push(',');
        }
        json_string(name, &mut object);
        object.push(':');
        json_value(value, &mut object);
    }
    object.push('}');
    if change.kind.retracts() {
        out.push_str(&format!(
            "{{\"before\":{object},\"after\":null,\"op\":\"d\"}}"
        ));
    } else {
        out.push_str(&format!(
            "{{\"before\":null,\"after\":{object},\"op\":\"c\"}}"
        ));
    }
}

/// A value in JSON, as Flink's JSON formats write it: numbers and booleans bare, `NULL` as
/// `null`, everything else as the string `CAST(v AS STRING)` gives.
fn json_value(value: &crate::value::Value, out: &mut String) {
    use crate::value::Value;
    match value {
        Value::Null => out.push_str("null"),
        Value::Boolean(_) | Value::Int(_) | Value::BigInt(_) | Value::Decimal(..) => {
            out.push_str(&value.to_string())
        }
        Value::Double(d) if d.is_finite() => out.push_str(&value.to_string()),
        other => json_string(&other.to_string(), out),
    }
}

/// `s` as a JSON string.
fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A row as Flink's `print` connector shows it: `+I[1, abc]`, `-U[..]`.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Printed(String);

impl fmt::Debug for Printed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `blackhole` connector: takes every row and keeps none.
struct Blackhole;

/// A sink that appends the changes to a shared buffer, for a reader beside the job (the
/// interactive client's live results).
#[derive(Clone)]
pub struct Shared(pub std::sync::Arc<std::sync::Mutex<Vec<Change>>>);

impl Sink<Change> for Shared {
    fn name(&self) -> String {
        "Live results".into()
    }
    fn create_writer(
        &self,
        _: &OperatorContext,
    ) -> hummer_types::error::Result<Box<dyn SinkWriter<Change>>> {
        Ok(Box::new(self.clone()))
    }
}

impl SinkWriter<Change> for Shared {
    fn write_batch(&mut self, batch: &mut Vec<Change>) -> hummer_types::error::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .append(batch);
        Ok(())
    }
    fn finish(&mut self) -> hummer_types::error::Result<()> {
        Ok(())
    }
}

impl Sink<Change> for Blackhole {
    fn name(&self) -> String {
        "Blackhole".into()
    }
    fn create_writer(
        &self,
        _: &OperatorContext,
    ) -> hummer_types::error::Result<Box<dyn SinkWriter<Change>>> {
        Ok(Box::new(Blackhole))
    }
}

impl SinkWriter<Change> for Blackhole {
    fn write_batch(&mut self, batch: &mut Vec<Change>) -> hummer_types::error::Result<()> {
        batch.clear();
        Ok(())
    }
    fn finish(&mut self) -> hummer_types::error::Result<()> {
        Ok(())
    }
}
