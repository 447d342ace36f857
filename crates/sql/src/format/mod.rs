//! Formats: a table's row as one line of a file or one message of a topic, and back, with
//! Flink's format names and options (`'format' = 'csv'` with `'csv.field-delimiter'`, ...).
//!
//! A connector asks for its table's format once ([`Format::of`]) and decodes or encodes rows
//! through it, so the filesystem and Kafka connectors read and write every format the same
//! way. `csv` and `json` carry rows (inserts); `debezium-json` carries changes: a source
//! in it reads an updating table ([`Format::decode_change`]), a sink writes one.

pub mod csv;
pub mod json;

pub use csv::Csv;

use crate::changelog::{Change, RowKind};
use crate::error::{Result, SqlError};
use crate::schema::Schema;
use crate::statement::TableDefinition;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// The formats, for errors.
const FORMATS: &str = "the formats 'csv', 'json' and 'debezium-json' are";

/// A table's format.
#[derive(Clone, Debug)]
pub enum Format {
    /// `csv`.
    Csv(Csv),
    /// `json`; `json.ignore-parse-errors` makes a field that does not decode `NULL`, and
    /// skips a line that is not a JSON object.
    Json {
        /// `json.ignore-parse-errors`.
        ignore_parse_errors: bool,
    },
    /// `debezium-json`: a changelog.
    DebeziumJson,
}

/// Whether option `key` of `table` is `'true'`.
fn flag(table: &TableDefinition, key: &str) -> bool {
    table
        .options
        .get(key)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

impl Format {
    /// The format `table` names with the option `key` (`format`, or `key.format` and
    /// `value.format` for a message's two parts), with its options, which Flink prefixes as
    /// the key is (`csv.field-delimiter`, `value.csv.field-delimiter`).
    pub fn of(table: &TableDefinition, key: &str) -> Result<Format> {
        let prefix = key.strip_suffix("format").unwrap_or("");
        let name = table.options.get(key).ok_or_else(|| SqlError::Invalid {
            at: table.at,
            message: format!("the table '{}' needs the option '{key}'", table.name),
        })?;
        let option = |o: &str| format!("{prefix}{name}.{o}");
        match name.as_str() {
            "csv" => {
                let mut csv = Csv::default();
                if let Some(d) = table.options.get(&option("field-delimiter")) {
                    let mut chars = d.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => csv.delimiter = c,
                        _ => {
                            return Err(SqlError::Invalid {
                                at: table.at,
                                message: format!(
                                    "'{}' is one character, not '{d}'",
                                    option("field-delimiter")
                                ),
                            });
                        }
                    }
                }
                csv.null_literal = table.options.get(&option("null-literal")).cloned();
                csv.ignore_parse_errors = flag(table, &option("ignore-parse-errors"));
                csv.allow_comments = flag(table, &option("allow-comments"));
                Ok(Format::Csv(csv))
            }
            "json" => Ok(Format::Json {
                ignore_parse_errors: flag(table, &option("ignore-parse-errors")),
            }),
            "debezium-json" => Ok(Format::DebeziumJson),
            other => Err(SqlError::Unsupported {
                at: table.at,
                what: format!("the format '{other}' of table '{}'", table.name),
                supported: FORMATS.into(),
            }),
        }
    }

    /// The format's name.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Csv(_) => "csv",
            Format::Json { .. } => "json",
            Format::DebeziumJson => "debezium-json",
        }
    }

    /// Whether it writes updates and deletes (a changelog), not only inserts.
    pub fn takes_updates(&self) -> bool {
        matches!(self, Format::DebeziumJson)
    }

    /// Whether a line that does not decode is skipped rather than failing the job (its
    /// fields that do not decode are `NULL` then, the rest of it read).
    pub fn ignores_parse_errors(&self) -> bool {
        match self {
            Format::Csv(csv) => csv.ignore_parse_errors,
            Format::Json {
                ignore_parse_errors,
            } => *ignore_parse_errors,
            Format::DebeziumJson => false,
        }
    }

    /// The row of `text` for `schema`'s columns; with `used`, the columns it does not mark
    /// may be left `NULL` unread.
    pub fn decode(
        &self,
        text: &str,
        schema: &Schema,
        used: Option<&[bool]>,
    ) -> std::result::Result<Row, String> {
        match self {
            Format::Csv(csv) => csv.decode_used(text, schema, used),
            Format::Json {
                ignore_parse_errors,
            } => json::decode(text, schema, *ignore_parse_errors),
            Format::DebeziumJson => Err("a debezium-json line is a change, not a row".into()),
        }
    }

    /// The record `line` ends, joined to the lines of `open` before it, or `None` while a
    /// csv record goes on (a quoted field with line breaks; kept in `open`, which the
    /// reader takes as it is at the end of its file).
    pub fn record(&self, open: &mut Option<String>, line: String) -> Option<String> {
        let record = match open.take() {
            Some(mut before) => {
                before.push('\n');
                before.push_str(&line);
                before
            }
            None => line,
        };
        match self {
            Format::Csv(csv) if csv.ends_inside_quotes(&record) => {
                *open = Some(record);
                None
            }
            _ => Some(record),
        }
    }

    /// Whether a line holds no row: an empty one, a blank one of JSON, a comment of a csv
    /// table that allows them.
    pub fn skips(&self, line: &str) -> bool {
        match self {
            _ if line.is_empty() => true,
            Format::Csv(csv) => csv.allow_comments && line.starts_with('#'),
            Format::Json { .. } | Format::DebeziumJson => line.trim().is_empty(),
        }
    }

    /// The change of `text` for `schema`'s columns: an insert of its row in `csv` and
    /// `json`; in `debezium-json` the change it holds, with the old row of an update.
    pub fn decode_change(
        &self,
        text: &str,
        schema: &Schema,
    ) -> std::result::Result<(RowKind, Row, Option<Row>), String> {
        match self {
            Format::DebeziumJson => json::decode_debezium(text, schema),
            other => Ok((RowKind::Insert, other.decode(text, schema, None)?, None)),
        }
    }
}

/// A format with the columns it writes: each change as one line or message.
#[derive(Clone, Debug)]
pub struct Encoder {
    format: Format,
    names: Vec<String>,
    types: Vec<SqlType>,
}

impl Encoder {
    /// Writes rows of `schema` in `format`.
    pub fn new(format: Format, schema: &Schema) -> Self {
        Encoder {
            format,
            names: schema.columns.iter().map(|c| c.name.clone()).collect(),
            types: schema.columns.iter().map(|c| c.ty.ty.clone()).collect(),
        }
    }

    /// Appends `change`: its row (`csv`, `json`, which take inserts only: the planner sees to
    /// it), or the change (`debezium-json`).
    pub fn encode(&self, change: &Change, out: &mut String) {
        match &self.format {
            Format::Csv(csv) => csv.encode(&change.row, &self.types, out),
            Format::Json { .. } => json::encode(&change.row, &self.names, &self.types, out),
            Format::DebeziumJson => json::encode_debezium(change, &self.names, &self.types, out),
        }
    }

    /// Appends `row` alone (a message key's columns).
    pub fn encode_row(&self, row: &[crate::value::Value], out: &mut String) {
        match &self.format {
            Format::Csv(csv) => csv.encode(row, &self.types, out),
            Format::Json { .. } | Format::DebeziumJson => {
                json::encode(row, &self.names, &self.types, out)
            }
        }
    }
}

/// The value of a text field of type `ty`, as Flink's csv and json formats read it: a
/// `TIMESTAMP_LTZ` is an instant written in UTC (`2024-01-01 00:00:03.000Z`, the `Z` optional),
/// whatever the session's zone; anything else as a cast from the text.
pub fn field_value(text: &str, ty: &SqlType) -> Option<Value> {
    match ty {
        SqlType::TimestampLtz(_) => {
            let utc = text.strip_suffix('Z').unwrap_or(text);
            crate::value::parse_timestamp(utc).map(Value::TimestampLtz)
        }
        _ => crate::expr::cast(Value::String(text.to_string()), ty).ok(),
    }
}

/// Appends a `TIMESTAMP_LTZ` as Flink's csv and json formats write one: in UTC, with a `Z`.
pub fn write_instant(out: &mut String, millis: i64, precision: u8) {
    let _ = crate::value::write_timestamp(out, millis, precision);
    out.push('Z');
}
