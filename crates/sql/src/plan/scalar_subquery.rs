//! Scalar subqueries in `WHERE` (`price > (SELECT AVG(price) FROM bid)`): the subquery's one
//! value joined to every row, then the conjunct that compares with it.
//!
//! As Flink plans an uncorrelated scalar subquery: a left outer join of the rows with the
//! subquery's (one) row on no key, so that a row sees `NULL` while the subquery has no row,
//! and every row is updated when the subquery's value changes. The joined value is a column
//! `$sN` of the join's output that the conjunct reads and the projection after it drops.
//!
//! A correlated one (`v = (SELECT MAX(v) FROM t b WHERE b.k = a.k)`) is decorrelated as
//! Calcite does for Flink: its equalities with the outer query's columns become a grouping
//! (`SELECT b.k, MAX(v) .. GROUP BY b.k`), joined to the rows on those columns, `NULL` for a
//! row whose group is empty (0 for a `COUNT`).

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
        if let Some(correlated) = correlated(query, &planned.schema, sub_at)? {
            planned = join_correlated(catalog, env, planned, correlated, k, at)?;
            continue;
        }
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

/// A correlated scalar subquery taken apart: its value per group of its correlation.
struct Correlated {
    /// The subquery grouped by its side of each correlating equality (`$k0`, `$k1`, .. then
    /// its value `$v`).
    grouped: ast::Query,
    /// The outer query's side of each equality, in the order of `$k0`, `$k1`, ..
    outer_keys: Vec<ast::Expr>,
    /// Its value is a `COUNT`: 0, not `NULL`, for an empty group.
    counts: bool,
}

/// `query` as a [`Correlated`] if it names columns of `outer` (the rows it is a value of),
/// `None` if it does not; an error for a correlation Hummer does not decorrelate.
fn correlated(query: &ast::Query, outer: &Schema, at: Position) -> Result<Option<Correlated>> {
    let ast::SetExpr::Select(select) = query.body.as_ref() else {
        return Ok(None);
    };
    let names_outer = super::subquery::names_outer(select);
    let conjuncts_of = select.selection.as_ref().map(conjuncts).unwrap_or_default();
    if !conjuncts_of.iter().any(|c| names_outer(c)) {
        return Ok(None);
    }
    let refuse = |what: String, span: sqlparser::tokenizer::Span| SqlError::Unsupported {
        at: if span.start.line == 0 {
            at
        } else {
            at_span(span)
        },
        what,
        supported: "a correlated scalar subquery that is one aggregate of a SELECT .. FROM .. \
                    WHERE whose conjuncts naming the outer query are equalities (b.k = a.k) is"
            .into(),
    };
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && select.distinct.is_none()
        && matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
        && select.having.is_none()
        && select.projection.len() == 1
        && super::aggregate::has_aggregates(select);
    if !plain {
        return Err(refuse(
            format!("the correlated scalar subquery ({query})"),
            query.span(),
        ));
    }
    let (mut own_conjuncts, mut inner_keys, mut outer_keys) = (Vec::new(), Vec::new(), Vec::new());
    for c in conjuncts_of {
        if !names_outer(c) {
            own_conjuncts.push(c.clone());
            continue;
        }
        let pair = match c {
            ast::Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::Eq,
                right,
            } => match (names_outer(left), names_outer(right)) {
                (false, true) => Some((left, right)),
                (true, false) => Some((right, left)),
                _ => None,
            },
            _ => None,
        };
        let Some((inner, outer_side)) = pair else {
            return Err(refuse(
                format!("the correlation '{c}' of a scalar subquery"),
                c.span(),
            ));
        };
        // The outer side must be the rows' own.
        crate::expr::bind::bind(outer_side, outer)?;
        inner_keys.push(inner.as_ref().clone());
        outer_keys.push(outer_side.as_ref().clone());
    }
    let value = match &select.projection[0] {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            e.clone()
        }
        other => {
            return Err(refuse(
                "this item of a scalar subquery".into(),
                other.span(),
            ));
        }
    };
    let counts = matches!(&value, ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("COUNT"));
    let mut grouped_select = select.as_ref().clone();
    grouped_select.projection = inner_keys
        .iter()
        .enumerate()
        .map(|(i, e)| ast::SelectItem::ExprWithAlias {
            expr: e.clone(),
            alias: ast::Ident::new(format!("$k{i}")),
        })
        .chain(std::iter::once(ast::SelectItem::ExprWithAlias {
            expr: value,
            alias: ast::Ident::new("$v"),
        }))
        .collect();
    grouped_select.selection = own_conjuncts
        .into_iter()
        .reduce(|a, b| ast::Expr::BinaryOp {
            left: Box::new(a),
            op: ast::BinaryOperator::And,
            right: Box::new(b),
        });
    grouped_select.group_by = ast::GroupByExpr::Expressions(inner_keys, Vec::new());
    let mut grouped = query.clone();
    grouped.body = Box::new(ast::SetExpr::Select(Box::new(grouped_select)));
    Ok(Some(Correlated {
        grouped,
        outer_keys,
        counts,
    }))
}

/// `planned`'s rows with the value of the correlated subquery `correlated` appended (as
/// `$s{k}`): a left join on the correlation's columns with the subquery's groups.
fn join_correlated(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    planned: Planned,
    correlated: Correlated,
    k: usize,
    at: Position,
) -> Result<Planned> {
    use crate::expr::Expr;
    let sub_at = at_span(correlated.grouped.span());
    let value =
        super::window::materialize(plan_query(catalog, env, &correlated.grouped, sub_at)?, at)?;
    let keys = correlated.outer_keys.len();
    let mut outer_keys = Vec::with_capacity(keys);
    for e in &correlated.outer_keys {
        outer_keys.push(Named {
            expr: crate::expr::bind::bind(e, &planned.schema)?.expr,
            text: e.to_string(),
        });
    }
    let (left_width, right_width) = (planned.schema.columns.len(), keys + 1);
    let left = planned
        .rows_through(
            super::join::with_keys(&planned.schema, outer_keys),
            "Calc: join key",
        )
        .key_by(move |c: &Change| -> Row { c.row[left_width..].to_vec() });
    // The subquery's key columns appended again after its row, as the join reads a side's
    // key after its width.
    let key_columns = (0..keys)
        .map(|i| Named {
            expr: Expr::Column(i),
            text: format!("$k{i}"),
        })
        .collect();
    let right = value
        .rows_through(
            super::join::with_keys(&value.schema, key_columns),
            "Calc: join key",
        )
        .key_by(move |c: &Change| -> Row { c.row[right_width..].to_vec() });
    let description = format!(
        "Join(joinType=[LeftOuterJoin], where=[{}], scalar=[({})])",
        correlated
            .outer_keys
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        correlated.grouped
    );
    let rows = left.connect(&right);
    let rows = rows.transform(&description, move |_| {
        Ok(ChangeJoin(RegularJoin::new(
            JoinKind::Left,
            left_width,
            right_width,
        )))
    });
    let mut column = value.schema.columns[keys].clone();
    column.name = format!("$s{k}");
    column.ty.nullable = !correlated.counts;
    let mut projection: Vec<Named> = Named::columns(&planned.schema);
    let joined_value = Expr::Column(left_width + keys);
    projection.push(Named {
        expr: match correlated.counts {
            true => Expr::Coalesce(vec![
                joined_value,
                Expr::Literal(crate::value::Value::BigInt(0)),
            ]),
            false => joined_value,
        },
        text: column.name.clone(),
    });
    let schema = Schema::join(&planned.schema, &Schema::new(vec![column]));
    let rows = rows.transform("Calc: the subquery's value", move |_| {
        Ok(Calc::new(None, projection.clone()))
    });
    Ok(Planned {
        updated_by: Some(description),
        ..Planned::new(rows, schema)
    })
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
