//! Which options a table's connector and format take, as Flink's factories declare them.
//!
//! A table is checked when it is read or written (as Flink validates a table when a query
//! uses it): an option its connector or format does not take is refused, naming it and the
//! nearest one taken, so that a typo (`'csv.field-delimeter'`) or an option Hummer does not
//! apply (`'source.monitor-interval'`) does not go unnoticed. Options that only shape files,
//! not what is read or written (`sink.rolling-policy.*`, `sink.partition-commit.*`), are
//! taken and have no effect.
//! `datagen`, `nexmark`, `kafka` and `upsert-kafka` check their own options.

use crate::error::{Result, SqlError};
use crate::statement::TableDefinition;

/// An option taken: any value, or only the one value Hummer implements (Flink's default).
type Taken = (&'static str, Option<&'static str>);

/// The options of each connector checked here, besides its format's.
const CONNECTORS: &[(&str, &[Taken])] = &[
    (
        "filesystem",
        &[
            ("connector", None),
            ("path", None),
            ("format", None),
            ("sink.rolling-policy.file-size", None),
            ("sink.rolling-policy.rollover-interval", None),
            ("sink.rolling-policy.check-interval", None),
            ("sink.rolling-policy.inactivity-interval", None),
            ("sink.parallelism", None),
            ("auto-compaction", None),
            ("compaction.file-size", None),
            // A partitioned sink's commit policy (upstream Nexmark's q10 sets them).
            ("sink.partition-commit.trigger", None),
            ("sink.partition-commit.delay", None),
            ("sink.partition-commit.policy.kind", None),
            ("sink.partition-commit.success-file.name", None),
            ("sink.partition-commit.watermark-time-zone", None),
            ("partition.time-extractor.timestamp-pattern", None),
            ("partition.time-extractor.kind", None),
            ("partition.default-name", None),
        ],
    ),
    (
        "print",
        &[
            ("connector", None),
            ("print-identifier", None),
            ("standard-error", None),
            ("sink.parallelism", None),
        ],
    ),
    ("blackhole", &[("connector", None)]),
];

/// The options of each format, without the format's prefix (`csv.`).
const FORMATS: &[(&str, &[Taken])] = &[
    (
        "csv",
        &[
            ("field-delimiter", None),
            ("null-literal", None),
            ("ignore-parse-errors", None),
            ("allow-comments", None),
            ("quote-character", Some("\"")),
            ("disable-quote-character", Some("false")),
        ],
    ),
    (
        "json",
        &[
            ("ignore-parse-errors", None),
            ("fail-on-missing-field", Some("false")),
            ("timestamp-format.standard", Some("SQL")),
        ],
    ),
    (
        "debezium-json",
        &[
            ("ignore-parse-errors", None),
            ("schema-include", None),
            ("timestamp-format.standard", Some("SQL")),
        ],
    ),
];

/// Refuses an option of `table` that its connector `connector` (or its format) does not
/// take, or takes only with another value; connectors that check their own pass.
pub fn check(table: &TableDefinition, connector: &str) -> Result<()> {
    let Some((_, own)) = CONNECTORS.iter().find(|(c, _)| *c == connector) else {
        return Ok(());
    };
    let format = table.options.get("format").map(String::as_str);
    let format_options: &[Taken] = format
        .and_then(|f| FORMATS.iter().find(|(name, _)| *name == f))
        .map_or(&[], |(_, o)| *o);
    let taken = |key: &str| -> Option<Option<&'static str>> {
        own.iter()
            .find(|(k, _)| *k == key)
            .or_else(|| {
                let rest = key.strip_prefix(format?)?.strip_prefix('.')?;
                format_options.iter().find(|(k, _)| *k == rest)
            })
            .map(|(_, value)| *value)
    };
    let all: Vec<String> = own
        .iter()
        .map(|(k, _)| k.to_string())
        .chain(
            format_options
                .iter()
                .filter_map(|(k, _)| Some(format!("{}.{k}", format?))),
        )
        .collect();
    let mut keys: Vec<&String> = table.options.keys().collect();
    keys.sort();
    for key in keys {
        let value = &table.options[key];
        match taken(key) {
            Some(None) => {}
            Some(Some(only)) if value.eq_ignore_ascii_case(only) => {}
            Some(Some(only)) => {
                return Err(SqlError::Unsupported {
                    at: table.at,
                    what: format!("'{key}' = '{value}' in table '{}'", table.name),
                    supported: format!("'{key}' = '{only}' (Flink's default) is"),
                });
            }
            None => {
                let nearest = crate::error::nearest(key, all.iter().map(String::as_str))
                    .map(|n| format!(" (did you mean '{n}'?)"))
                    .unwrap_or_default();
                return Err(SqlError::Invalid {
                    at: table.at,
                    message: format!(
                        "Unsupported options found for '{connector}' in table '{}': \
                         '{key}'{nearest}. Supported options: {}",
                        table.name,
                        all.join(", ")
                    ),
                });
            }
        }
    }
    Ok(())
}
