//! `Calc`: a filter and a projection over rows in one operator, as Flink's planner fuses a
//! query's `WHERE` and `SELECT` list above a scan into one `Calc`.
//!
//! A row the condition does not hold for (`FALSE` or `NULL`) is dropped; every kept row is
//! projected, keeping its changelog kind (a retraction of a row that passes is a retraction of
//! its projection, as Flink's `Calc` passes kinds through). An expression that fails on a row (a division by zero, a bad `CAST`) fails the
//! job with the row and the expression named.

use hummer_operators::{Batch, Collector, Operator};
use hummer_types::error::{HummerError, Result};

use std::sync::OnceLock;

use crate::changelog::Change;
use crate::expr::{Compiled, EvalError, Expr};
use crate::value::Row;

/// One bound expression with its SQL text, for errors.
#[derive(Clone, Debug)]
pub struct Named {
    /// The expression.
    pub expr: Expr,
    /// As written in the query.
    pub text: String,
}

impl Named {
    /// Every column of `schema` as it is, by name: a projection that keeps the rows whole.
    pub fn columns(schema: &crate::schema::Schema) -> Vec<Named> {
        schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| Named {
                expr: Expr::Column(i),
                text: c.name.clone(),
            })
            .collect()
    }
}

/// The filter and projection of rows.
#[derive(Clone, Debug)]
pub struct Calc {
    /// The condition rows must meet, if any.
    condition: Option<Named>,
    /// The output columns, computed from the input row.
    projection: Vec<Named>,
    /// The expressions compiled, when the Calc first runs.
    compiled: OnceLock<Program>,
}

/// A Calc's expressions as they run.
#[derive(Clone, Debug)]
struct Program {
    condition: Option<Compiled>,
    projection: Vec<Compiled>,
    /// See [`Calc::moves`].
    moves: Vec<Option<usize>>,
    /// The projection keeps a row's `width` first columns in place: see [`Calc::extend_row`].
    keeps_in_place: usize,
}

impl Calc {
    /// Rows that meet `condition` (all rows without one), projected to `projection`.
    pub fn new(condition: Option<Named>, projection: Vec<Named>) -> Calc {
        Calc {
            condition,
            projection,
            compiled: OnceLock::new(),
        }
    }

    /// What the Calc computes, as text: two Calcs with one signature give the same rows of
    /// the same input (sub-plan reuse keys on it).
    pub fn signature(&self) -> String {
        format!("{:?} {:?}", self.condition, self.projection)
    }

    /// The operator's name for a plan: `name` and what the Calc selects and where, as
    /// Flink's plans show a Calc (`Calc: .. (select=[a, b + 1], where=[a > 2])`).
    pub fn described(&self, name: &str) -> String {
        let select: Vec<&str> = self.projection.iter().map(|n| n.text.as_str()).collect();
        match &self.condition {
            Some(c) => format!(
                "{name} (select=[{}], where=[{}])",
                select.join(", "),
                c.text
            ),
            None => format!("{name} (select=[{}])", select.join(", ")),
        }
    }

    /// The condition rows must meet, if any.
    pub fn condition(&self) -> Option<&Named> {
        self.condition.as_ref()
    }

    /// The output columns, computed from the input row.
    pub fn projection(&self) -> &[Named] {
        &self.projection
    }

    /// The parts: the condition and the projection.
    pub fn into_parts(self) -> (Option<Named>, Vec<Named>) {
        (self.condition, self.projection)
    }

    fn program(&self) -> &Program {
        self.compiled.get_or_init(|| {
            let keeps_in_place = if self.condition.is_some() {
                0
            } else {
                self.projection
                    .iter()
                    .enumerate()
                    .take_while(|(i, p)| matches!(p.expr, Expr::Column(c) if c == *i))
                    .count()
            };
            Program {
                condition: self.condition.as_ref().map(|c| Compiled::new(&c.expr)),
                projection: self
                    .projection
                    .iter()
                    .map(|p| Compiled::new(&p.expr))
                    .collect(),
                moves: self.moves(),
                keeps_in_place,
            }
        })
    }

    /// The output column that is input column `column` as it is, if one is.
    pub fn position_of(&self, column: usize) -> Option<usize> {
        self.projection
            .iter()
            .position(|p| matches!(p.expr, Expr::Column(c) if c == column))
    }

    /// Which of `width` input columns the Calc reads.
    pub fn used(&self, width: usize) -> Vec<bool> {
        self.used_for(width, |_| true)
    }

    /// Which of `width` input columns the Calc reads for its condition and the output
    /// columns `k` for which `output(k)` holds.
    pub fn used_for(&self, width: usize, output: impl Fn(usize) -> bool) -> Vec<bool> {
        let mut used = vec![false; width];
        let mut mark = |i: usize| {
            if let Some(u) = used.get_mut(i) {
                *u = true;
            }
        };
        let kept = self
            .projection
            .iter()
            .enumerate()
            .filter(|(k, _)| output(*k));
        for e in self.condition.iter().chain(kept.map(|(_, p)| p)) {
            e.expr.columns(&mut mark);
        }
        used
    }

    /// This Calc with the output columns `k` for which `output(k)` does not hold computed as
    /// `NULL`: no reader reads them.
    pub fn pruned(&self, output: impl Fn(usize) -> bool) -> Calc {
        let projection = self
            .projection
            .iter()
            .enumerate()
            .map(|(k, p)| match output(k) {
                true => p.clone(),
                false => Named {
                    expr: Expr::Literal(crate::value::Value::Null),
                    text: p.text.clone(),
                },
            })
            .collect();
        Calc::new(self.condition.clone(), projection)
    }

    /// The output column that `PROCTIME()` computes, if one does.
    pub fn proctime_column(&self) -> Option<usize> {
        self.projection.iter().position(|p| p.expr.is_proctime())
    }

    /// This Calc and then `next` as one: `next`'s expressions read this one's outputs as the
    /// expressions that compute them, and `next`'s condition is checked only on the rows
    /// this one keeps (so it fails on no row this one drops).
    pub fn then(&self, next: &Calc) -> Calc {
        let columns: Vec<Expr> = self.projection.iter().map(|p| p.expr.clone()).collect();
        let through = |n: &Named| Named {
            expr: n.expr.substitute(&columns),
            text: n.text.clone(),
        };
        let condition = match (&self.condition, &next.condition) {
            (first, None) => first.clone(),
            (None, Some(second)) => Some(through(second)),
            (Some(first), Some(second)) => Some(Named {
                // CASE WHEN first THEN second ELSE FALSE: `second` only where `first` holds.
                expr: Expr::Case {
                    branches: vec![(first.expr.clone(), through(second).expr)],
                    otherwise: Box::new(Expr::Literal(crate::value::Value::Boolean(false))),
                },
                text: format!("{} AND {}", first.text, second.text),
            }),
        };
        Calc::new(condition, next.projection.iter().map(through).collect())
    }

    /// Per output column, the input column it is as it is, if no other output column reads
    /// that input column: its value can be moved out of an owned row instead of copied.
    fn moves(&self) -> Vec<Option<usize>> {
        let mut reads: Vec<u32> = Vec::new();
        for p in &self.projection {
            p.expr.columns(&mut |c| {
                if reads.len() <= c {
                    reads.resize(c + 1, 0);
                }
                reads[c] += 1;
            });
        }
        self.projection
            .iter()
            .map(|p| match p.expr {
                Expr::Column(c) if reads[c] == 1 => Some(c),
                _ => None,
            })
            .collect()
    }

    /// The output row of an owned `row` (as [`Calc::apply`]), the columns `moves` names moved
    /// out of it: the other expressions are computed first, while the row is whole.
    fn apply_owned(&self, mut row: Row) -> Result<Option<Row>> {
        use crate::value::Value;
        let program = self.program();
        if !self.holds(program, &row)? {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(self.projection.len());
        for (i, m) in program.moves.iter().enumerate() {
            out.push(match m {
                Some(_) => Value::Null,
                None => self.eval(program, i, &row)?,
            });
        }
        for (o, m) in out.iter_mut().zip(&program.moves) {
            if let Some(c) = m
                && let Some(v) = row.get_mut(*c)
            {
                *o = std::mem::take(v);
            }
        }
        Ok(Some(out))
    }

    /// A table's row of an owned `physical` row: where the Calc keeps the physical columns
    /// in place first (a table's computed columns, declared after them), only the computed
    /// columns are evaluated and appended, nothing is copied; else as [`Calc::apply`].
    pub fn extend_row(&self, physical: Row) -> Result<Option<Row>> {
        let program = self.program();
        let width = physical.len();
        if program.keeps_in_place < width || self.projection.len() < width {
            return self.apply(&physical);
        }
        let mut row = physical;
        for p in &program.projection[width..] {
            match p.eval(&row[..width]) {
                Ok(v) => row.push(v),
                // Apply names the row and the expression that failed.
                Err(_) => return self.apply(&row[..width]),
            }
        }
        Ok(Some(row))
    }

    /// The output row of `row`, or `None` if the condition drops it.
    pub fn apply(&self, row: &[crate::value::Value]) -> Result<Option<Row>> {
        let program = self.program();
        if !self.holds(program, row)? {
            return Ok(None);
        }
        (0..self.projection.len())
            .map(|i| self.eval(program, i, row))
            .collect::<Result<Row>>()
            .map(Some)
    }

    #[inline]
    fn holds(&self, program: &Program, row: &[crate::value::Value]) -> Result<bool> {
        match (&program.condition, &self.condition) {
            (Some(compiled), Some(c)) => compiled.holds(row).map_err(|e| failed(c, row, e)),
            _ => Ok(true),
        }
    }

    #[inline]
    fn eval(
        &self,
        program: &Program,
        i: usize,
        row: &[crate::value::Value],
    ) -> Result<crate::value::Value> {
        program.projection[i]
            .eval(row)
            .map_err(|e| failed(&self.projection[i], row, e))
    }
}

/// The error of `expr` failing on `row`: the row as the expression reads it, a column it
/// does not read shown as `_` (a scan does not decode what no one reads, so its value is not
/// there to show).
fn failed(expr: &Named, row: &[crate::value::Value], e: EvalError) -> HummerError {
    let mut read = vec![false; row.len()];
    expr.expr.columns(&mut |c| {
        if let Some(r) = read.get_mut(c) {
            *r = true;
        }
    });
    let shown: Vec<String> = row
        .iter()
        .zip(&read)
        .map(|(v, read)| match read {
            true => v.to_string(),
            false => "_".into(),
        })
        .collect();
    HummerError::BadInput {
        input: format!("the row ({}) in '{}'", shown.join(", "), expr.text),
        reason: e.to_string(),
    }
}

impl Operator for Calc {
    type In = (Change,);
    type Out = Change;

    #[inline]
    fn process(&mut self, batch: Batch<'_, Change>, out: &mut Collector<'_, Change>) -> Result<()> {
        batch.for_each(out, |change, out| {
            if let Some(row) = self.apply_owned(change.row)? {
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
        Calc::new(
            Some(named(condition)),
            projection.iter().map(|p| named(p)).collect(),
        )
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
        /// A table's computed columns appended in place give the rows a whole projection
        /// gives, and a projection that does not keep the columns in place falls back to it.
        #[test]
        fn extending_a_row_in_place_is_the_projection(
            auction in 0i64..50,
            price in proptest::option::of(-1000i64..1000),
        ) {
            let row = vec![Value::BigInt(auction), price.map_or(Value::Null, Value::BigInt)];
            for projection in [
                &["auction", "price", "price * 2", "auction + price"][..],
                &["price", "auction", "auction * 3"][..],
            ] {
                let calc = Calc::new(None, projection.iter().map(|p| named(p)).collect());
                prop_assert_eq!(
                    calc.extend_row(row.clone()).unwrap(),
                    calc.apply(&row).unwrap()
                );
            }
        }
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

    proptest! {
        /// Two Calcs fused are the second applied to the first's output: the same rows kept,
        /// the same values; and the second's condition never fails on a row the first drops
        /// (its division by zero is only reached where the first keeps the row).
        #[test]
        fn fused_calcs_are_one_then_the_other(
            rows in proptest::collection::vec((0i64..50, proptest::option::of(0i64..20)), 0..100),
        ) {
            let first = calc("price IS NOT NULL AND price <> 0", &["price", "auction"]);
            // Over the first's output: column 0 is the price, 1 the auction.
            let second = Calc::new(
                Some(Named {
                    expr: bind(
                        &Parser::new(&FlinkDialect).try_with_sql("auction / price > 1").unwrap().parse_expr().unwrap(),
                        &Schema::new(vec![schema().columns[1].clone(), schema().columns[0].clone()]),
                    ).unwrap().expr,
                    text: "auction / price > 1".into(),
                }),
                vec![named("price + auction"), named("auction")],
            );
            let fused = first.then(&second);
            for (a, p) in rows {
                let row = vec![Value::BigInt(a), p.map_or(Value::Null, Value::BigInt)];
                let stepwise = match first.apply(&row).unwrap() {
                    Some(mid) => second.apply(&mid).unwrap(),
                    None => None,
                };
                prop_assert_eq!(fused.apply(&row).unwrap(), stepwise);
            }
        }
    }
}
