//! Event time as a table's DDL declares it: `WATERMARK FOR rowtime AS expr`.
//!
//! As in Flink SQL, a row's event time is its rowtime column, and the watermark is the
//! largest value the watermark expression has taken over the rows seen (emitted
//! periodically): a row whose rowtime is at or below it is late. The expression is evaluated
//! per row, so `rowtime - INTERVAL '4' SECOND` trails the largest rowtime by four seconds.

use hummer_operators::WatermarkStrategy;
use hummer_operators::watermark_strategy::{WatermarkGenerator, WatermarkOutput};
use hummer_operators::{Batch, Collector, Operator};
use hummer_types::error::{HummerError, Result as HummerResult};
use hummer_types::{NO_TIMESTAMP, Timestamp};

use crate::error::{Result, SqlError};
use crate::expr::bind::bind;
use crate::expr::{Compiled, Expr};
use crate::schema::Schema;
use crate::statement::WatermarkDefinition;
use crate::types::SqlType;
use crate::value::{Row, Value};

/// A table's rowtime column and watermark expression, bound to its columns.
#[derive(Clone, Debug)]
pub struct EventTime {
    /// The rowtime column's index.
    pub rowtime: usize,
    /// The watermark expression.
    pub watermark: Expr,
}

impl EventTime {
    /// Binds `definition` to `schema` (every column of the table): the rowtime column must
    /// exist and be a `TIMESTAMP(p)` or `TIMESTAMP_LTZ(p)` with `p` at most 3, and the
    /// expression a time.
    pub fn bind(definition: &WatermarkDefinition, schema: &Schema) -> Result<Self> {
        let rowtime = schema.index_of(&definition.column, definition.at)?;
        let column_type = &schema.columns[rowtime].ty.ty;
        if !matches!(column_type, SqlType::Timestamp(p) | SqlType::TimestampLtz(p) if *p <= 3) {
            return Err(SqlError::Invalid {
                at: definition.at,
                message: format!(
                    "Invalid data type of time field for watermark definition: the rowtime \
                     column '{}' is {column_type}, where a TIMESTAMP(p) or TIMESTAMP_LTZ(p) with \
                     a precision 'p' from 0 to 3 is expected",
                    definition.column
                ),
            });
        }
        let bound = bind(&definition.expr, schema)?;
        if !bound.ty.ty.is_time() {
            return Err(SqlError::Invalid {
                at: definition.at,
                message: format!(
                    "the watermark '{}' is {}, where a TIMESTAMP(3) or TIMESTAMP_LTZ(3) is \
                     expected",
                    definition.expr, bound.ty.ty
                ),
            });
        }
        Ok(EventTime {
            rowtime,
            watermark: bound.expr,
        })
    }

    /// The watermark strategy of the table's source: rows stamped with their rowtime, the
    /// watermark the largest value of the expression.
    pub fn strategy(self) -> WatermarkStrategy<Row> {
        let rowtime = self.rowtime;
        let watermark = self.watermark;
        let watermark = Compiled::new(&watermark);
        WatermarkStrategy::for_generator(move || LargestWatermark {
            expr: watermark.clone(),
            largest: None,
        })
        .with_timestamp_assigner(move |row: &Row, _| millis(&row[rowtime]))
    }
}

/// Fails the job on a row whose rowtime is `NULL`, as Flink's watermark assigner does: such
/// a row has no event time, so a window, an interval join or an `OVER` would drop it
/// silently.
#[derive(Clone, Debug)]
pub struct RowtimeNotNull {
    /// The rowtime column.
    pub column: usize,
    /// Its name.
    pub name: String,
    /// The table's name.
    pub table: String,
    /// The columns a scan that skips columns reads (the others are shown as `_`).
    pub used: Option<super::column_use::ColumnUse>,
}

impl Operator for RowtimeNotNull {
    type In = (Row,);
    type Out = Row;

    fn process(&mut self, batch: Batch<'_, Row>, out: &mut Collector<'_, Row>) -> HummerResult<()> {
        batch.for_each(out, |row, out| {
            if row[self.column].is_null() {
                let used = self.used.as_ref().map(|u| u.used()).unwrap_or_default();
                let shown: Vec<String> = row
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match used.get(i) {
                        Some(false) => "_".into(),
                        _ => v.to_string(),
                    })
                    .collect();
                return Err(HummerError::BadInput {
                    input: format!("table '{}'", self.table),
                    reason: format!(
                        "RowTime field should not be null, please convert it to a non-null \
                         long value: the rowtime column '{}' is NULL in the row ({})",
                        self.name,
                        shown.join(", ")
                    ),
                });
            }
            out.collect(row);
            Ok(())
        })
    }
}

/// A time value's milliseconds (`NO_TIMESTAMP` for `NULL`).
fn millis(v: &Value) -> Timestamp {
    v.time_millis().unwrap_or(NO_TIMESTAMP)
}

/// Flink SQL's watermark: the largest value the expression took.
struct LargestWatermark {
    expr: Compiled,
    largest: Option<Timestamp>,
}

impl WatermarkGenerator<Row> for LargestWatermark {
    fn on_event(&mut self, row: &Row, _: Timestamp, _: &mut WatermarkOutput) {
        // A row the expression fails on (or is NULL for) does not move the watermark.
        if let Ok(v) = self.expr.eval(row) {
            let t = millis(&v);
            if t != NO_TIMESTAMP {
                self.largest = Some(self.largest.map_or(t, |l| l.max(t)));
            }
        }
    }

    fn on_periodic_emit(&mut self, output: &mut WatermarkOutput) {
        if let Some(w) = self.largest {
            output.emit_watermark(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{Statement, parse_text};

    fn table(ddl: &str) -> (Schema, WatermarkDefinition) {
        let Ok(Statement::CreateTable(t)) = parse_text(ddl) else {
            panic!("a CREATE TABLE");
        };
        let (schema, _) = crate::connector::table_schema(&t).expect("a schema");
        (schema, t.watermark.expect("a watermark"))
    }

    /// The watermark is the largest `rowtime - 4 s` seen, whatever the order of the rows.
    #[test]
    fn the_watermark_is_the_largest_value_of_the_expression() {
        let (schema, w) = table(
            "CREATE TABLE t (ms BIGINT, ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)), \
             WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH ('connector' = 'filesystem')",
        );
        let event_time = EventTime::bind(&w, &schema).expect("binds");
        let mut tracker = event_time.strategy().tracker();
        let mut expected = i64::MIN;
        for ms in [10_000i64, 7_000, 15_500, 15_000, 2_000] {
            let row = vec![Value::BigInt(ms), Value::Timestamp(ms)];
            let (t, _) = tracker.on_record(&row, NO_TIMESTAMP);
            assert_eq!(t, ms, "stamped with its rowtime");
            expected = expected.max(ms - 4_000);
            tracker.on_periodic(0);
            assert_eq!(tracker.watermark(), Some(expected));
        }
    }

    #[test]
    fn a_rowtime_that_is_not_a_time_is_refused_by_name() {
        let (schema, w) = table(
            "CREATE TABLE t (ms BIGINT, WATERMARK FOR ms AS ms - 4) WITH ('connector' = 'x')",
        );
        let err = EventTime::bind(&w, &schema).expect_err("refused");
        assert!(err.to_string().contains("'ms' is BIGINT"), "{err}");
    }
}
