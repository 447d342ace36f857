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
//! Read, an `upsert-kafka` table is that: each message upserts its key, a tombstone deletes
//! it, and the scan turns them into a changelog with the old rows (`ChangelogNormalize`);
//! a `kafka` table in `debezium-json` is read as the changes it holds.

use hummer_connectors::kafka::{
    DeliveryGuarantee, KafkaRecord, KafkaSink, KafkaSource, Partitioner, ProducerRecord,
    StartingOffsets,
};

use super::{required, table_schema};
use crate::changelog::{Change, RowKind, carry};
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

/// An option that is one of `allowed`, in any case, spelled as in `allowed` (`None` if not
/// given).
fn choice(
    table: &TableDefinition,
    key: &str,
    allowed: &[&'static str],
) -> Result<Option<&'static str>> {
    Ok(choice_index(table, key, allowed)?.map(|i| allowed[i]))
}

/// Which of `allowed` an option is, in any case (`None` if not given).
fn choice_index(table: &TableDefinition, key: &str, allowed: &[&str]) -> Result<Option<usize>> {
    match table.options.get(key) {
        None => Ok(None),
        Some(v) => match allowed.iter().position(|a| a.eq_ignore_ascii_case(v)) {
            Some(i) => Ok(Some(i)),
            None => Err(SqlError::Invalid {
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
        },
    }
}

/// An option that names one of `values` (the first if not given).
fn choose<T: Copy>(table: &TableDefinition, key: &str, values: &[(&str, T)]) -> Result<T> {
    let names: Vec<&str> = values.iter().map(|(name, _)| *name).collect();
    Ok(values[choice_index(table, key, &names)?.unwrap_or(0)].1)
}

/// `sink.delivery-guarantee`, the default first.
const DELIVERY_GUARANTEES: [(&str, DeliveryGuarantee); 3] = [
    ("at-least-once", DeliveryGuarantee::AtLeastOnce),
    ("none", DeliveryGuarantee::None),
    ("exactly-once", DeliveryGuarantee::ExactlyOnce),
];

/// `sink.partitioner`, the default first.
const PARTITIONERS: [(&str, Partitioner); 3] = [
    ("default", Partitioner::KeyHash),
    ("fixed", Partitioner::Fixed),
    ("round-robin", Partitioner::RoundRobin),
];

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

/// Where a table's columns are in a message: the key's columns in `key.format`, the value's
/// in `value.format` (Flink's `key.fields` and `value.fields-include`; an `upsert-kafka`
/// table's key is its primary key).
#[derive(Clone, Debug)]
struct Layout {
    /// The key's columns and their encoding (none: messages without a key).
    key: Vec<usize>,
    key_format: Option<Format>,
    key_schema: Schema,
    /// The value's columns and their format.
    value: Vec<usize>,
    value_format: Format,
    value_schema: Schema,
    /// How many physical columns the table has.
    width: usize,
}

impl Layout {
    fn of(table: &TableDefinition, physical: &Schema, upsert: bool) -> Result<Layout> {
        let key: Vec<usize> = if upsert {
            if table.primary_key.is_empty() {
                return Err(invalid(
                    table,
                    "'upsert-kafka' needs a PRIMARY KEY (..) NOT ENFORCED: the message key",
                ));
            }
            table
                .primary_key
                .iter()
                .map(|k| physical.index_of(k, table.at))
                .collect::<Result<_>>()?
        } else {
            match table.options.get("key.fields") {
                None => Vec::new(),
                Some(list) => list
                    .split(';')
                    .map(|name| physical.index_of(name.trim(), table.at))
                    .collect::<Result<_>>()?,
            }
        };
        let key_format = if key.is_empty() {
            None
        } else {
            Some(Format::of(table, "key.format")?)
        };
        let except_key =
            choice(table, "value.fields-include", &["ALL", "EXCEPT_KEY"])? == Some("EXCEPT_KEY");
        let value: Vec<usize> = (0..physical.columns.len())
            .filter(|i| !(except_key && key.contains(i)))
            .collect();
        let columns =
            |of: &[usize]| Schema::new(of.iter().map(|&i| physical.columns[i].clone()).collect());
        Ok(Layout {
            key_schema: columns(&key),
            value_schema: columns(&value),
            key,
            key_format,
            value,
            value_format: value_format(table)?,
            width: physical.columns.len(),
        })
    }

    /// The physical row of a message and what it does: an insert (an upsert for
    /// `upsert-kafka`), a `debezium-json` change (with an update's old row), or for a
    /// tombstone of an `upsert` table the delete of its key (the other columns `NULL`).
    fn decode(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        upsert: bool,
    ) -> std::result::Result<(RowKind, Row, Option<Row>), String> {
        // The key is read only where the value does not hold its columns.
        let key_row = || -> std::result::Result<Option<Row>, String> {
            match (&self.key_format, key) {
                (None, _) => Ok(None),
                (Some(format), Some(bytes)) => format
                    .decode(text(bytes, "key")?, &self.key_schema, None)
                    .map(Some)
                    .map_err(|e| format!("its key: {e}")),
                (Some(_), None) if upsert => Err("it has no key".into()),
                (Some(_), None) => Ok(None),
            }
        };
        let placed = |columns: &[usize], values: Row| -> Row {
            if columns.len() == self.width {
                // Every column, in order.
                return values;
            }
            let mut row = vec![crate::value::Value::Null; self.width];
            for (&i, v) in columns.iter().zip(values) {
                row[i] = v;
            }
            row
        };
        let Some(value) = value else {
            if !upsert {
                return Err("the message has no value (a tombstone)".into());
            }
            let key_row = key_row()?.unwrap_or_default();
            return Ok((RowKind::Delete, placed(&self.key, key_row), None));
        };
        let (kind, values, before) = self
            .value_format
            .decode_change(text(value, "value")?, &self.value_schema)?;
        let mut row = placed(&self.value, values);
        let before = before.map(|values| placed(&self.value, values));
        if self.value.len() < self.width
            && let Some(key_row) = key_row()?
        {
            // The key's columns are in the key only.
            for (&i, v) in self.key.iter().zip(key_row) {
                row[i] = v;
            }
        }
        Ok((kind, row, before))
    }
}

/// A message's key or value (`what`) as text, without a trailing line break.
fn text<'a>(bytes: &'a [u8], what: &str) -> std::result::Result<&'a str, String> {
    std::str::from_utf8(bytes)
        .map(|t| t.trim_end_matches(['\n', '\r']))
        .map_err(|e| format!("its {what} is not UTF-8 ({e})"))
}

/// The source of a `kafka` (`upsert`: `upsert-kafka`) table: its messages decoded, the
/// computed columns appended; a table whose messages are changes (`debezium-json`,
/// `upsert-kafka`) gives each as one row ([`carry`]).
pub fn source(table: &TableDefinition, upsert: bool) -> Result<KafkaSource<Row>> {
    let physical = super::physical_schema(table);
    let computed: Option<Calc> = table_schema(table)?.1;
    let layout = Layout::of(table, &physical, upsert)?;
    let changelog = upsert || layout.value_format.takes_updates();
    let ignores_parse_errors = layout.value_format.ignores_parse_errors();
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
        // An upsert table is read whole: every key's last value.
        None if group && !upsert => StartingOffsets::Committed,
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
    if ignores_parse_errors {
        builder = builder.skip_bad_records();
    }
    let computed_row = move |row: Row| -> std::result::Result<Row, String> {
        match &computed {
            None => Ok(row),
            Some(calc) => calc
                .extend_row(row)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "the computed columns dropped it".to_string()),
        }
    };
    let decode = move |record: &KafkaRecord<'_>| -> std::result::Result<Row, String> {
        let (kind, row, before) = layout.decode(record.key, record.value, upsert)?;
        let row = computed_row(row)?;
        if !changelog {
            return Ok(row);
        }
        let before = before.map(&computed_row).transpose()?;
        Ok(carry(kind, row, before))
    };
    builder
        .deserializer(decode)
        .build()
        .map_err(|e| invalid(table, e))
}

/// The sink of a `kafka` (`upsert`: `upsert-kafka`) table whose physical columns are
/// `target`: the changes it writes, as messages.
pub fn sink(table: &TableDefinition, target: &Schema, upsert: bool) -> Result<KafkaSink<Change>> {
    let layout = Layout::of(table, target, upsert)?;
    let key = layout
        .key_format
        .clone()
        .map(|format| (layout.key.clone(), Encoder::new(format, &layout.key_schema)));
    let value = Encoder::new(layout.value_format.clone(), &layout.value_schema);
    let value_columns = layout.value;
    let all_columns = value_columns.len() == target.columns.len();
    let serialize = move |change: &Change| -> ProducerRecord {
        let key = key.as_ref().map(|(columns, encoder)| {
            let row: Row = columns.iter().map(|&i| change.row[i].clone()).collect();
            let mut text = String::new();
            encoder.encode_row(&row, &mut text);
            text.into_bytes()
        });
        let value = (!(upsert && change.kind.retracts())).then(|| {
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
    let guarantee = choose(table, "sink.delivery-guarantee", &DELIVERY_GUARANTEES)?;
    let partitioner = choose(table, "sink.partitioner", &PARTITIONERS)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn table(options: &[(&str, &str)]) -> TableDefinition {
        TableDefinition {
            name: "t".into(),
            columns: Vec::new(),
            watermark: None,
            primary_key: Vec::new(),
            options: options
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            if_not_exists: false,
            at: crate::error::Position::default(),
        }
    }

    #[test]
    fn an_option_is_chosen_in_any_case_and_defaults_when_absent() {
        let key = "sink.delivery-guarantee";
        let chosen = |t: &TableDefinition| choose(t, key, &DELIVERY_GUARANTEES);
        let upper = table(&[(key, "EXACTLY-ONCE")]);
        assert_eq!(chosen(&upper).ok(), Some(DeliveryGuarantee::ExactlyOnce));
        assert_eq!(
            chosen(&table(&[])).ok(),
            Some(DeliveryGuarantee::AtLeastOnce)
        );
        let message = chosen(&table(&[(key, "twice")]))
            .err()
            .map(|e| e.to_string());
        let message = message.unwrap_or_default();
        assert!(
            message.contains("'twice'") && message.contains("'exactly-once'"),
            "{message}"
        );
    }
}
