//! Scalar subqueries in `WHERE` (`price > (SELECT AVG(price) FROM bid)`): the subquery's one
//! value joined to every row, then the conjunct that compares with it.
//!
//! As Flink plans an uncorrelated scalar subquery: a left outer join of the rows with the
//! subquery's (one) row on no key, so that a row sees `NULL` while the subquery has no row,
//! and every row is updated when the subquery's value changes. The joined value is a column
//! `$sN` of the join's output that the conjunct reads and the projection after it drops.

use std::ops::ControlFlow;

use hummer_api::StreamExecutionEnvironment;
use sqlparser::ast::{self, Spanned, VisitMut, VisitorMut};

use super::{Planned, at_span, condition, conjuncts, plan_query};
use crate::catalog::Catalog;
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::join::{ChangeJoin, JoinKind, RegularJoin};
use crate::schema::Schema;
use crate::value::Row;

/// Replaces each subquery of an expression with the column its value will be (`$sN`),
/// collecting the subqueries.
struct Subqueries {
    found: Vec<ast::Query>,
}

impl VisitorMut for Subqueries {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Subquery(q) = expr {
            let column = format!("$s{}", self.found.len());
            self.found.push(q.as_ref().clone());
            *expr = ast::Expr::Identifier(ast::Ident::new(column));
        }
        ControlFlow::Continue(())
    }
}

/// `input`'s rows that pass the conjuncts of `selection` holding scalar subqueries, and the
/// other conjuncts as one condition (`selection` itself if it has no scalar subquery).
pub(crate) fn apply(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    input: Planned,
    selection: Option<&ast::Expr>,
    at: Position,
) -> Result<(Planned, Option<ast::Expr>)> {
    let mut rest: Vec<&ast::Expr> = Vec::new();
    let mut tests: Vec<(ast::Expr, &ast::Expr)> = Vec::new();
    let mut subqueries = Subqueries { found: Vec::new() };
    for c in selection.map(conjuncts).unwrap_or_default() {
        let mut rewritten = c.clone();
        let before = subqueries.found.len();
        let _ = rewritten.visit(&mut subqueries);
        if subqueries.found.len() == before {
            rest.push(c);
        } else {
            tests.push((rewritten, c));
        }
    }
    if tests.is_empty() {
        return Ok((input, selection.cloned()));
    }
    let input = super::window::materialize(input, at)?;
    let original = input.schema.clone();
    let planned = with_values(catalog, env, input, &subqueries.found, at)?;
    let written = tests[0].1;
    let all = tests[1..]
        .iter()
        .fold(tests[0].0.clone(), |a, (b, _)| ast::Expr::BinaryOp {
            left: Box::new(a),
            op: ast::BinaryOperator::And,
            right: Box::new(b.clone()),
        });
    let filter = condition(written, &all, &planned.schema, "WHERE")?;
    let projection = Named::columns(&original);
    let calc = Calc::new(Some(filter), projection);
    let planned = planned.calc(calc, "Calc: WHERE with scalar subqueries");
    let rest = rest
        .into_iter()
        .cloned()
        .reduce(|a, b| ast::Expr::BinaryOp {
            left: Box::new(a),
            op: ast::BinaryOperator::And,
            right: Box::new(b),
        });
    Ok((
        Planned {
            schema: original,
            ..planned
        },
        rest,
    ))
}

/// `input`'s rows, each with the value of every one of `subqueries` appended (as `$s0`,
/// `$s1`, ..): a left join on no key with each subquery's one row, `NULL` while it has none.
pub(crate) fn with_values(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    input: Planned,
    subqueries: &[ast::Query],
    at: Position,
) -> Result<Planned> {
    let mut planned = super::window::materialize(input, at)?;
    for (k, query) in subqueries.iter().enumerate() {
        let sub_at = at_span(query.span());
        let value = super::window::materialize(plan_query(catalog, env, query, sub_at)?, at)?;
        if value.schema.columns.len() != 1 {
            return Err(SqlError::Invalid {
                at: sub_at,
                message: format!(
                    "a scalar subquery selects one column; this one selects {}",
                    value.schema.columns.len()
                ),
            });
        }
        let left_width = planned.schema.columns.len();
        // No key: the rows go to the join as they are (an empty key after their columns).
        let left = planned.rows().key_by(|_: &Change| -> Row { Vec::new() });
        let right = value.rows().key_by(|_: &Change| -> Row { Vec::new() });
        let description = format!("Join(joinType=[LeftOuterJoin], where=[], scalar=[({query})])");
        let rows = left.connect(&right).transform(&description, move |_| {
            Ok(ChangeJoin(RegularJoin::new(JoinKind::Left, left_width, 1)))
        });
        let mut column = value.schema.columns[0].clone();
        column.name = format!("$s{k}");
        column.ty.nullable = true;
        planned = Planned {
            updated_by: Some(description),
            ..Planned::new(
                rows,
                Schema::join(&planned.schema, &Schema::new(vec![column])),
            )
        };
    }
    Ok(planned)
}

/// The `SELECT` list with each scalar subquery replaced by the column its value will be
/// (`$sN`), and the subqueries; `None` if it has none. A `*` with them is refused: the
/// values' columns are not the query's.
pub(crate) fn in_select_list(
    items: &[ast::SelectItem],
    at: Position,
) -> Result<Option<(Vec<ast::SelectItem>, Vec<ast::Query>)>> {
    let mut subqueries = Subqueries { found: Vec::new() };
    let mut rewritten = items.to_vec();
    for item in &mut rewritten {
        let _ = item.visit(&mut subqueries);
    }
    if subqueries.found.is_empty() {
        return Ok(None);
    }
    if let Some(star) = items.iter().find(|i| {
        matches!(
            i,
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
        )
    }) {
        return Err(super::unsupported(
            "a scalar subquery in a SELECT list with *",
            star.span(),
            at,
        ));
    }
    Ok(Some((rewritten, subqueries.found)))
}
