//! The `kafka` and `upsert-kafka` connectors, with Flink's options, on Hummer's Kafka source
//! and sink (engine-assigned partitions, offsets checkpointed, the exactly-once sink).
//!
//! `kafka` reads and writes a topic's messages as rows in the table's format:
//! - `topic` (several separated by `;`) or `topic-pattern`; `properties.bootstrap.servers`,
//!   `properties.group.id` and any other `properties.*` for the client;
//! - `scan.startup.mode`: `earliest-offset`, `latest-offset`, `group-offsets` (the default
//!   with a `properties.group.id`; `earliest-offset` without one) or `timestamp` (with
//!   `scan.startup.timestamp-millis`); `scan.bounded.mode`: `unbounded` (default) or
//!   `latest-offset` (the job ends at the offsets the partitions had when first read);
//! - `format` (or `value.format`), and for the message key `key.format` with `key.fields`;
//!   `value.fields-include`: `ALL` (default) or `EXCEPT_KEY`;
//! - `sink.delivery-guarantee` (`none`, `at-least-once`, the default, or `exactly-once`),
//!   `sink.transactional-id-prefix`, `sink.partitioner` (`default`: by the key's hash, else
//!   the writer's own partition; `fixed`; `round-robin`).
//!
//! Written, a `kafka` table takes inserts only (unless its format is `debezium-json`), as
//! Flink's. `upsert-kafka` writes an updating result as upserts: the message key is the
//! table's `PRIMARY KEY` in `key.format`, an insert or an update's new row is the message
//! value in `value.format`, and a delete or an update's old row is a tombstone (a message
//! without a value), as Flink's upsert-kafka sink writes them: whatever the query's own
//! key, the last message of a key is its row in the result, or a tombstone if it has none.

use hummer_connectors::kafka::{
    DeliveryGuarantee, KafkaRecord, KafkaSink, KafkaSource, Partitioner, ProducerRecord,
    StartingOffsets,
};

use super::{required, table_schema};
use crate::changelog::{Change, RowKind};
use crate::error::{Result, SqlError};
use crate::format::{Encoder, Format};
use crate::lower::Calc;
use crate::schema::Schema;
use crate::statement::TableDefinition;
use crate::value::Row;

/// A configuration error of the Kafka client or its options, as the table's error.
fn invalid(table: &TableDefinition, e: impl std::fmt::Display) -> SqlError {
    SqlError::Invalid {
        at: table.at,
        message: format!("the table '{}': {e}", table.name),
    }
}

/// An option that is one of `allowed` (`None` if not given).
fn choice<'a>(table: &'a TableDefinition, key: &str, allowed: &[&str]) -> Result<Option<&'a str>> {
    match table.options.get(key) {
        None => Ok(None),
        Some(v) if allowed.iter().any(|a| a.eq_ignore_ascii_case(v)) => Ok(Some(v.as_str())),
        Some(v) => Err(SqlError::Invalid {
            at: table.at,
            message: format!(
                "'{key}' of table '{}' is '{v}': it takes {}",
                table.name,
                allowed
                    .iter()
                    .map(|a| format!("'{a}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// The client properties: every `properties.*` option but the bootstrap servers.
fn properties(table: &TableDefinition) -> impl Iterator<Item = (&str, &str)> {
    table.options.iter().filter_map(|(k, v)| {
        k.strip_prefix("properties.")
            .filter(|k| *k != "bootstrap.servers")
            .map(|k| (k, v.as_str()))
    })
}

/// The format of the message values: `value.format`, else `format`.
pub(super) fn value_format(table: &TableDefinition) -> Result<Format> {
    if table.options.contains_key("value.format") {
        Format::of(table, "value.format")
    } else {
        Format::of(table, "format")
    }
}

/// The columns of `schema` that option `key` lists (`a;b`), by index.
fn listed_columns(table: &TableDefinition, key: &str, schema: &Schema) -> Result<Vec<usize>> {
    let Some(list) = table.options.get(key) else {
        return Ok(Vec::new());
    };
    list.split(';')
        .map(|name| schema.index_of(name.trim(), table.at))
        .collect()
}

/// The source of a `kafka` table: its messages' values decoded in its format, the computed
/// columns appended.
pub fn source(table: &TableDefinition) -> Result<KafkaSource<Row>> {
    let physical = super::physical_schema(table);
    let computed: Option<Calc> = table_schema(table)?.1;
    let format = value_format(table)?.readable(table)?;
    let mut builder =
        KafkaSource::builder().bootstrap_servers(required(table, "properties.bootstrap.servers")?);
    builder = match (
        table.options.get("topic"),
        table.options.get("topic-pattern"),
    ) {
        (Some(topics), None) => builder.topics(topics.split(';').map(str::trim)),
        (None, Some(pattern)) => builder.topic_pattern(pattern),
        _ => {
            return Err(invalid(
                table,
                "it needs one of 'topic' and 'topic-pattern'",
            ));
        }
    };
    for (k, v) in properties(table) {
        builder = builder.property(k, v);
    }
    let group = table.options.contains_key("properties.group.id");
    let modes = [
        "earliest-offset",
        "latest-offset",
        "group-offsets",
        "timestamp",
    ];
    let starting = match choice(table, "scan.startup.mode", &modes)? {
        None if group => StartingOffsets::Committed,
        None | Some("earliest-offset") => StartingOffsets::Earliest,
        Some("latest-offset") => StartingOffsets::Latest,
        Some("group-offsets") => StartingOffsets::Committed,
        Some(_) => {
            let millis = required(table, "scan.startup.timestamp-millis")?;
            StartingOffsets::Timestamp(millis.trim().parse().map_err(|_| {
                invalid(
                    table,
                    format!("'scan.startup.timestamp-millis' is '{millis}'"),
                )
            })?)
        }
    };
    builder = builder.starting_offsets(starting);
    if choice(table, "scan.bounded.mode", &["unbounded", "latest-offset"])? == Some("latest-offset")
    {
        builder = builder.bounded();
    }
    if format.ignores_parse_errors() {
        builder = builder.skip_bad_records();
    }
    let decode = move |record: &KafkaRecord<'_>| -> std::result::Result<Row, String> {
        let bytes = record
            .value
            .ok_or_else(|| "the message has no value (a tombstone)".to_string())?;
        let text = std::str::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 ({e})"))?;
        let row = format.decode(text.trim_end_matches(['\n', '\r']), &physical, None)?;
        match &computed {
            None => Ok(row),
            Some(calc) => calc
                .apply(&row)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the computed columns dropped it".to_string()),
        }
    };
    builder
        .deserializer(decode)
        .build()
        .map_err(|e| invalid(table, e))
}

/// The sink of a `kafka` (`upsert`: `upsert-kafka`) table whose physical columns are
/// `target`: the changes it writes, as messages.
pub fn sink(table: &TableDefinition, target: &Schema, upsert: bool) -> Result<KafkaSink<Change>> {
    let value_format = value_format(table)?;
    let key_columns = if upsert {
        if table.primary_key.is_empty() {
            return Err(invalid(
                table,
                "'upsert-kafka' needs a PRIMARY KEY (..) NOT ENFORCED: the message key",
            ));
        }
        table
            .primary_key
            .iter()
            .map(|k| target.index_of(k, table.at))
            .collect::<Result<Vec<_>>>()?
    } else {
        listed_columns(table, "key.fields", target)?
    };
    let key = if key_columns.is_empty() {
        None
    } else {
        let schema = Schema::new(
            key_columns
                .iter()
                .map(|&i| target.columns[i].clone())
                .collect(),
        );
        Some((
            key_columns.clone(),
            Encoder::new(Format::of(table, "key.format")?, &schema),
        ))
    };
    let except_key = choice(table, "value.fields-include", &["ALL", "EXCEPT_KEY"])?
        .is_some_and(|v| v.eq_ignore_ascii_case("EXCEPT_KEY"));
    let value_columns: Vec<usize> = (0..target.columns.len())
        .filter(|i| !(except_key && key_columns.contains(i)))
        .collect();
    let value_schema = Schema::new(
        value_columns
            .iter()
            .map(|&i| target.columns[i].clone())
            .collect(),
    );
    let value = Encoder::new(value_format, &value_schema);
    let all_columns = value_columns.len() == target.columns.len();
    let serialize = move |change: &Change| -> ProducerRecord {
        let key = key.as_ref().map(|(columns, encoder)| {
            let row: Row = columns.iter().map(|&i| change.row[i].clone()).collect();
            let mut text = String::new();
            encoder.encode_row(&row, &mut text);
            text.into_bytes()
        });
        let retracts = matches!(change.kind, RowKind::Delete | RowKind::UpdateBefore);
        let value = (!(upsert && retracts)).then(|| {
            let mut text = String::new();
            if all_columns {
                value.encode(change, &mut text);
            } else {
                let row = value_columns
                    .iter()
                    .map(|&i| change.row[i].clone())
                    .collect();
                value.encode(
                    &Change {
                        kind: change.kind,
                        row,
                    },
                    &mut text,
                );
            }
            text.into_bytes()
        });
        ProducerRecord { key, value }
    };
    let guarantee = match choice(
        table,
        "sink.delivery-guarantee",
        &["none", "at-least-once", "exactly-once"],
    )? {
        Some("none") => DeliveryGuarantee::None,
        Some("exactly-once") => DeliveryGuarantee::ExactlyOnce,
        _ => DeliveryGuarantee::AtLeastOnce,
    };
    let partitioner = match choice(
        table,
        "sink.partitioner",
        &["default", "fixed", "round-robin"],
    )? {
        Some("fixed") => Partitioner::Fixed,
        Some("round-robin") => Partitioner::RoundRobin,
        _ => Partitioner::KeyHash,
    };
    let mut builder = KafkaSink::builder()
        .bootstrap_servers(required(table, "properties.bootstrap.servers")?)
        .topic(required(table, "topic")?)
        .delivery_guarantee(guarantee)
        .partitioner(partitioner);
    if let Some(prefix) = table.options.get("sink.transactional-id-prefix") {
        builder = builder.transactional_id_prefix(prefix);
    }
    for (k, v) in properties(table) {
        builder = builder.property(k, v);
    }
    builder
        .serializer(serialize)
        .build::<Change>()
        .map_err(|e| invalid(table, e))
}

/// Whether a `kafka` table written in its format takes an updating result.
pub fn takes_updates(table: &TableDefinition) -> Result<bool> {
    Ok(value_format(table)?.takes_updates())
}
