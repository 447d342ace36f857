//! `Calc`: a filter and a projection over rows in one operator, as Flink's planner fuses a
//! query's `WHERE` and `SELECT` list above a scan into one `Calc`.
//!
//! A row the condition does not hold for (`FALSE` or `NULL`) is dropped; every kept row is
//! projected, keeping its changelog kind (a retraction of a row that passes is a retraction of
//! its projection, as Flink's `Calc` passes kinds through). An expression that fails on a row (a division by zero, a bad `CAST`) fails the
//! job with the row and the expression named.

use hummer_operators::{Batch, Collector, Operator};
use hummer_types::error::{HummerError, Result};

use crate::changelog::Change;
use crate::expr::{EvalError, Expr};
use crate::value::Row;

/// One bound expression with its SQL text, for errors.
#[derive(Clone, Debug)]
pub struct Named {
    /// The expression.
    pub expr: Expr,
    /// As written in the query.
    pub text: String,
}

/// The filter and projection of rows.
#[derive(Clone, Debug)]
pub struct Calc {
    /// The condition rows must meet, if any.
    pub condition: Option<Named>,
    /// The output columns, computed from the input row.
    pub projection: Vec<Named>,
}

impl Calc {
    /// The output column that is input column `column` as it is, if one is.
    pub fn position_of(&self, column: usize) -> Option<usize> {
        self.projection
            .iter()
            .position(|p| matches!(p.expr, Expr::Column(c) if c == column))
    }

    /// The output column that `PROCTIME()` computes, if one does.
    pub fn proctime_column(&self) -> Option<usize> {
        self.projection.iter().position(|p| p.expr.is_proctime())
    }

    /// The output row of `row`, or `None` if the condition drops it.
    pub fn apply(&self, row: &[crate::value::Value]) -> Result<Option<Row>> {
        if let Some(c) = &self.condition
            && !c.expr.holds(row).map_err(|e| failed(c, row, e))?
        {
            return Ok(None);
        }
        self.projection
            .iter()
            .map(|p| p.expr.eval(row).map_err(|e| failed(p, row, e)))
            .collect::<Result<Row>>()
            .map(Some)
    }
}

fn failed(expr: &Named, row: &[crate::value::Value], e: EvalError) -> HummerError {
    let shown: Vec<String> = row.iter().map(ToString::to_string).collect();
    HummerError::BadInput {
        input: format!("the row ({}) in '{}'", shown.join(", "), expr.text),
        reason: e.to_string(),
    }
}

impl Operator for Calc {
    type In = (Change,);
    type Out = Change;

    #[inline]
    fn process_batch(
        &mut self,
        batch: Batch<'_, Change>,
        out: &mut Collector<'_, Change>,
    ) -> Result<()> {
        batch.for_each(out, |change, out| {
            if let Some(row) = self.apply(&change.row)? {
                out.collect(Change {
                    kind: change.kind,
                    row,
                });
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::FlinkDialect;
    use crate::expr::bind::bind;
    use crate::schema::{Column, Schema};
    use crate::types::{DataType, SqlType};
    use crate::value::Value;
    use hummer_api::StreamExecutionEnvironment;
    use proptest::prelude::*;
    use sqlparser::parser::Parser;

    fn schema() -> Schema {
        Schema::new(vec![
            Column {
                name: "auction".into(),
                ty: DataType::not_null(SqlType::BigInt),
            },
            Column {
                name: "price".into(),
                ty: DataType::nullable(SqlType::BigInt),
            },
        ])
    }

    fn named(text: &str) -> Named {
        let mut parser = Parser::new(&FlinkDialect)
            .try_with_sql(text)
            .expect("tokens");
        let ast = parser.parse_expr().expect("an expression");
        Named {
            expr: bind(&ast, &schema()).expect("binds").expr,
            text: text.into(),
        }
    }

    fn calc(condition: &str, projection: &[&str]) -> Calc {
        Calc {
            condition: Some(named(condition)),
            projection: projection.iter().map(|p| named(p)).collect(),
        }
    }

    fn run(rows: Vec<Row>, calc: Calc, parallelism: usize) -> Result<Vec<Row>> {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(parallelism);
        let out = env
            .from_collection(rows.into_iter().map(Change::insert).collect::<Vec<_>>())
            .transform("Calc", move |_| Ok(calc.clone()))
            .collect();
        let mut result = env.execute("calc")?;
        Ok(result.collected(&out)?.into_iter().map(|c| c.row).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        /// A job's Calc keeps and projects exactly what a filter and map over the rows would
        /// (NULL prices dropped by the condition, as SQL's WHERE does).
        #[test]
        fn a_calc_job_filters_and_projects_as_a_reference(
            rows in proptest::collection::vec((0i64..50, proptest::option::of(0i64..1000)), 0..200),
            parallelism in 1usize..4,
        ) {
            let input: Vec<Row> = rows
                .iter()
                .map(|(a, p)| vec![Value::BigInt(*a), p.map_or(Value::Null, Value::BigInt)])
                .collect();
            let mut got = run(input, calc("price > 500 AND auction % 2 = 0", &["auction", "price * 2"]), parallelism).unwrap();
            let mut expected: Vec<Row> = rows
                .iter()
                .filter(|(a, p)| p.is_some_and(|p| p > 500) && a % 2 == 0)
                .map(|(a, p)| vec![Value::BigInt(*a), Value::BigInt(p.unwrap_or_default() * 2)])
                .collect();
            got.sort();
            expected.sort();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_failing_expression_fails_the_job_naming_the_row_and_expression() {
        let rows = vec![vec![Value::BigInt(1), Value::BigInt(0)]];
        let e = run(rows, calc("auction > 0", &["auction / price"]), 1).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("the row (1, 0) in 'auction / price'"),
            "{text}"
        );
        assert!(text.contains("division by zero"), "{text}");
    }
}
