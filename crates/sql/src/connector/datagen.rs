//! The `datagen` connector: rows of random or sequential values for a table's physical
//! columns, with Flink's options, so a script can be tried without any data.
//!
//! - `rows-per-second` (default 10000, over all subtasks; 0 for as fast as the job takes
//!   them) and `number-of-rows` (unbounded without it);
//! - per column `fields.<name>.kind`: `random` (default) or `sequence`;
//! - random: `fields.<name>.min` / `.max` for numbers (the type's range by default),
//!   `.length` for strings (default 100 hexadecimal characters), `.max-past` for timestamps
//!   (milliseconds before now, default 0), `.null-rate` (default 0);
//! - sequence: `fields.<name>.start` and `.end`, both required. A sequence ends the table
//!   when it is used up, so a table with one is bounded.
//!
//! Row `n` of the table goes to subtask `n mod parallelism`, and its random values are a
//! function of `n` and the column: a subtask restored from its checkpointed position (the
//! number of its next row) generates the same rows again.

use std::time::{Duration, Instant};

use hummer_connectors::{Source, SourceContext, SourceReader, SourceStatus};
use hummer_types::error::Result;

use super::subtask_rows::SubtaskRows;
use crate::error::SqlError;
use crate::expr::cast;
use crate::lower::Calc;
use crate::schema::Schema;
use crate::statement::TableDefinition;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// How one column's values are made.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// Uniform between `min` and `max` (numbers), of `length` (strings), up to `max_past`
    /// milliseconds before now (timestamps).
    Random {
        min: f64,
        max: f64,
        length: usize,
        max_past: i64,
    },
    /// `start`, `start + 1`, .., `end`, by row number.
    Sequence { start: i64, end: i64 },
}

/// One column's generator.
#[derive(Clone, Debug, PartialEq)]
struct Column {
    ty: SqlType,
    kind: Kind,
    null_rate: f64,
}

/// The rows of a `datagen` table.
#[derive(Clone, Debug)]
pub struct DataGen {
    /// The table's name, for errors.
    table: String,
    columns: Vec<Column>,
    /// How many rows (`None`: unbounded).
    rows: Option<u64>,
    /// Rows per second over all subtasks (`None`: unthrottled).
    rate: Option<f64>,
    /// The table's computed columns, appended to the generated ones.
    computed: Option<Calc>,
}

/// The option `key` of `table` as a number, if given.
fn number<T: std::str::FromStr>(
    table: &TableDefinition,
    key: &str,
) -> crate::error::Result<Option<T>> {
    match table.options.get(key) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| SqlError::Invalid {
            at: table.at,
            message: format!(
                "the option '{key}' of table '{}' is '{v}', not a number",
                table.name
            ),
        }),
    }
}

/// The range of values of an integer type.
fn integer_range(ty: &SqlType) -> Option<(f64, f64)> {
    Some(match ty {
        SqlType::TinyInt => (i8::MIN.into(), i8::MAX.into()),
        SqlType::SmallInt => (i16::MIN.into(), i16::MAX.into()),
        SqlType::Int => (i32::MIN.into(), i32::MAX.into()),
        SqlType::BigInt => (i64::MIN as f64, i64::MAX as f64),
        _ => return None,
    })
}

impl DataGen {
    /// The generator of `table`, whose physical columns are `physical`.
    pub fn of(
        table: &TableDefinition,
        physical: &Schema,
        computed: Option<Calc>,
    ) -> crate::error::Result<Self> {
        // Every `fields.<name>.<option>` names a physical column and an option there is.
        for key in table.options.keys() {
            let Some(rest) = key.strip_prefix("fields.") else {
                if !matches!(
                    key.as_str(),
                    "connector" | "rows-per-second" | "number-of-rows"
                ) {
                    return Err(SqlError::Invalid {
                        at: table.at,
                        message: format!(
                            "the 'datagen' table '{}' has no option '{key}' (it takes \
                             'rows-per-second', 'number-of-rows' and 'fields.<column>.*')",
                            table.name
                        ),
                    });
                }
                continue;
            };
            let (column, option) = rest.rsplit_once('.').unwrap_or((rest, ""));
            if physical.columns.iter().all(|c| c.name != column) {
                return Err(SqlError::unknown(
                    table.at,
                    "column",
                    column,
                    physical.columns.iter().map(|c| c.name.as_str()),
                ));
            }
            const OPTIONS: [&str; 8] = [
                "kind",
                "min",
                "max",
                "length",
                "max-past",
                "null-rate",
                "start",
                "end",
            ];
            if !OPTIONS.contains(&option) {
                return Err(SqlError::Invalid {
                    at: table.at,
                    message: format!(
                        "'{key}' of table '{}' is not a datagen option (a column takes {})",
                        table.name,
                        OPTIONS.join(", ")
                    ),
                });
            }
        }
        let mut columns = Vec::with_capacity(physical.columns.len());
        let mut rows: Option<u64> = number(table, "number-of-rows")?;
        for c in &physical.columns {
            let option = |o: &str| format!("fields.{}.{o}", c.name);
            let ty = c.ty.ty.clone();
            let supported = integer_range(&ty).is_some()
                || matches!(
                    ty,
                    SqlType::Boolean
                        | SqlType::Float
                        | SqlType::Double
                        | SqlType::Decimal { .. }
                        | SqlType::Char(_)
                        | SqlType::VarChar(_)
                        | SqlType::Timestamp(_)
                        | SqlType::TimestampLtz(_)
                );
            if !supported {
                return Err(SqlError::Unsupported {
                    at: table.at,
                    what: format!(
                        "generating the {ty} column '{}' of table '{}'",
                        c.name, table.name
                    ),
                    supported: "BOOLEAN, integer, FLOAT, DOUBLE, DECIMAL, CHAR, VARCHAR, \
                                TIMESTAMP and TIMESTAMP_LTZ columns are"
                        .into(),
                });
            }
            let kind = match table.options.get(&option("kind")).map(String::as_str) {
                None | Some("random") => {
                    let (type_min, type_max) = integer_range(&ty).unwrap_or((0.0, f64::MAX));
                    let min = number(table, &option("min"))?.unwrap_or(type_min);
                    let max = number(table, &option("max"))?.unwrap_or(type_max);
                    if min > max {
                        return Err(SqlError::Invalid {
                            at: table.at,
                            message: format!(
                                "'{}' ({min}) is above '{}' ({max}) in table '{}'",
                                option("min"),
                                option("max"),
                                table.name
                            ),
                        });
                    }
                    Kind::Random {
                        min,
                        max,
                        length: number(table, &option("length"))?.unwrap_or(100),
                        max_past: number(table, &option("max-past"))?.unwrap_or(0),
                    }
                }
                Some("sequence") => {
                    let (Some(start), Some(end)) = (
                        number::<i64>(table, &option("start"))?,
                        number::<i64>(table, &option("end"))?,
                    ) else {
                        return Err(SqlError::Invalid {
                            at: table.at,
                            message: format!(
                                "the sequence column '{}' of table '{}' needs '{}' and '{}'",
                                c.name,
                                table.name,
                                option("start"),
                                option("end")
                            ),
                        });
                    };
                    if end < start {
                        return Err(SqlError::Invalid {
                            at: table.at,
                            message: format!(
                                "the sequence column '{}' of table '{}' ends ({end}) before it \
                                 starts ({start})",
                                c.name, table.name
                            ),
                        });
                    }
                    let length = (end - start) as u64 + 1;
                    rows = Some(rows.map_or(length, |r| r.min(length)));
                    Kind::Sequence { start, end }
                }
                Some(other) => {
                    return Err(SqlError::Invalid {
                        at: table.at,
                        message: format!(
                            "'{}' of table '{}' is '{other}': it is 'random' or 'sequence'",
                            option("kind"),
                            table.name
                        ),
                    });
                }
            };
            let null_rate = number(table, &option("null-rate"))?.unwrap_or(0.0);
            columns.push(Column {
                ty,
                kind,
                null_rate,
            });
        }
        let rate: f64 = number(table, "rows-per-second")?.unwrap_or(10_000.0);
        Ok(DataGen {
            table: table.name.clone(),
            columns,
            rows,
            rate: (rate > 0.0).then_some(rate),
            computed,
        })
    }

    /// Row `n`.
    fn row(&self, n: u64, now: i64) -> Result<Row> {
        let mut row = Vec::with_capacity(self.columns.len());
        for (i, c) in self.columns.iter().enumerate() {
            let mut random = Random::new(n, i as u64);
            if c.null_rate > 0.0 && random.unit() < c.null_rate {
                row.push(Value::Null);
                continue;
            }
            let value = match &c.kind {
                Kind::Sequence { start, .. } => Value::BigInt(start + n as i64),
                Kind::Random {
                    min,
                    max,
                    length,
                    max_past,
                } => match &c.ty {
                    SqlType::Boolean => Value::Boolean(random.next() & 1 == 1),
                    SqlType::Char(_) | SqlType::VarChar(_) => {
                        let text = (0..*length)
                            .map(|_| {
                                char::from_digit((random.next() % 16) as u32, 16).unwrap_or('0')
                            })
                            .collect();
                        Value::String(text)
                    }
                    SqlType::Timestamp(_) | SqlType::TimestampLtz(_) => {
                        let past = (random.unit() * (*max_past as f64 + 1.0)) as i64;
                        Value::Timestamp(now - past.min(*max_past))
                    }
                    ty if integer_range(ty).is_some() => {
                        let span = (max - min).max(0.0) as u128 + 1;
                        let offset =
                            (u128::from(random.next()) << 64 | u128::from(random.next())) % span;
                        Value::BigInt((*min as i128 + offset as i128) as i64)
                    }
                    _ => Value::Double(min + random.unit() * (max - min)),
                },
            };
            row.push(cast(value, &c.ty).map_err(|e| {
                hummer_types::error::HummerError::BadInput {
                    input: format!("the datagen table '{}'", self.table),
                    reason: e.to_string(),
                }
            })?);
        }
        Ok(row)
    }
}

/// SplitMix64 over a row number and a column: the same values for the same row every time.
struct Random(u64);

impl Random {
    fn new(row: u64, column: u64) -> Self {
        Random(row.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ column.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Source<Row> for DataGen {
    fn name(&self) -> String {
        format!("DataGen: {}", self.table)
    }
    fn is_bounded(&self) -> bool {
        self.rows.is_some()
    }
    fn is_replayable(&self) -> bool {
        true
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<Row>>> {
        let rows = SubtaskRows::new(
            ctx,
            self.rows,
            self.computed.clone(),
            format!("the datagen table '{}'", self.table),
        );
        Ok(Box::new(DataGenReader {
            source: self.clone(),
            rate: self.rate.map(|r| r / rows.step as f64),
            rows,
            started: None,
        }))
    }
}

/// The rows of one subtask.
struct DataGenReader {
    source: DataGen,
    rows: SubtaskRows,
    /// This subtask's rows per second.
    rate: Option<f64>,
    /// When the throttle started, and the row it started at.
    started: Option<(Instant, u64)>,
}

impl SourceReader<Row> for DataGenReader {
    fn poll_next(&mut self, out: &mut Vec<Row>, max: usize) -> Result<SourceStatus> {
        let mut budget = max as u64;
        if let Some(rate) = self.rate {
            let (since, first) = *self.started.get_or_insert((Instant::now(), self.rows.next));
            let made = (self.rows.next - first) / self.rows.step;
            let due = (since.elapsed().as_secs_f64() * rate) as u64 + 1;
            if due <= made {
                return Ok(SourceStatus::Idle(Duration::from_secs_f64(
                    ((made + 1) as f64 / rate - since.elapsed().as_secs_f64()).clamp(0.0, 0.1),
                )));
            }
            budget = budget.min(due - made);
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        for _ in 0..budget {
            let Some(number) = self.rows.take() else {
                break;
            };
            let row = self.source.row(number, now)?;
            self.rows.push(out, row)?;
        }
        Ok(self.rows.status())
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        Some(self.rows.position())
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        self.rows.restore(position)?;
        self.started = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{Statement, parse};

    fn table(ddl: &str) -> (TableDefinition, Schema) {
        let statements = crate::script::split(ddl).expect("the DDL splits");
        let Ok(Statement::CreateTable(t)) = parse(&statements[0]) else {
            panic!("a CREATE TABLE");
        };
        let physical = super::super::physical_schema(&t);
        (*t, physical)
    }

    fn all_rows(source: &DataGen, parallelism: usize) -> Vec<Row> {
        let mut rows = Vec::new();
        for subtask in 0..parallelism {
            let ctx = SourceContext::standalone(subtask, parallelism);
            let mut reader = source.create_reader(&ctx).expect("a reader");
            while reader.poll_next(&mut rows, 7).expect("a poll") != SourceStatus::Finished {}
        }
        rows
    }

    /// A sequence column numbers the rows once each over the subtasks and bounds the table;
    /// random values keep to their range and length, and are the same for the same row.
    #[test]
    fn sequences_bound_the_table_and_random_values_keep_to_their_options() {
        let (t, physical) = table(
            "CREATE TABLE g (id BIGINT, n INT, s STRING, b BOOLEAN, d DOUBLE, ts TIMESTAMP(3)) \
             WITH ('connector' = 'datagen', 'rows-per-second' = '0',
               'fields.id.kind' = 'sequence', 'fields.id.start' = '5', 'fields.id.end' = '104',
               'fields.n.min' = '-3', 'fields.n.max' = '3', 'fields.s.length' = '6',
               'fields.d.min' = '1.5', 'fields.d.max' = '2.5', 'fields.ts.max-past' = '1000',
               'fields.b.null-rate' = '0.5')",
        );
        let source = DataGen::of(&t, &physical, None).expect("a datagen table");
        assert!(source.is_bounded());
        for parallelism in [1, 3] {
            let rows = all_rows(&source, parallelism);
            let mut ids: Vec<i64> = rows
                .iter()
                .map(|r| match r[0] {
                    Value::BigInt(id) => id,
                    ref other => panic!("an id, not {other}"),
                })
                .collect();
            ids.sort_unstable();
            assert_eq!(ids, (5..=104).collect::<Vec<_>>());
            for r in &rows {
                assert!(
                    matches!(r[1], Value::Int(n) if (-3..=3).contains(&n)),
                    "{r:?}"
                );
                assert!(matches!(&r[2], Value::String(s) if s.len() == 6), "{r:?}");
                assert!(
                    matches!(r[4], Value::Double(d) if (1.5..=2.5).contains(&d)),
                    "{r:?}"
                );
                assert!(matches!(r[5], Value::Timestamp(_)), "{r:?}");
            }
            let nulls = rows.iter().filter(|r| r[3] == Value::Null).count();
            assert!(
                (20..=80).contains(&nulls),
                "about half of 100 are NULL: {nulls}"
            );
        }
        let now = 1_000_000;
        assert_eq!(source.row(17, now).unwrap(), source.row(17, now).unwrap());
        assert_ne!(
            source.row(17, now).unwrap()[2],
            source.row(18, now).unwrap()[2]
        );
    }

    #[test]
    fn options_that_do_not_fit_are_refused_naming_them() {
        for (options, expected) in [
            ("'fields.nope.min' = '1'", "nope"),
            ("'fields.n.kind' = 'sequence'", "needs"),
            ("'fields.n.kind' = 'zigzag'", "zigzag"),
            ("'fields.n.mn' = '1'", "fields.n.mn"),
            ("'rows-per-second' = 'fast'", "not a number"),
            (
                "'fields.n.min' = '9', 'fields.n.max' = '2'",
                "'fields.n.min' (9) is above 'fields.n.max' (2)",
            ),
        ] {
            let (t, physical) = table(&format!(
                "CREATE TABLE g (n INT) WITH ('connector' = 'datagen', {options})"
            ));
            let err = DataGen::of(&t, &physical, None)
                .expect_err(options)
                .to_string();
            assert!(err.contains(expected), "{options}: {err}");
        }
    }
}
