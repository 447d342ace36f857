//! `IN`, `NOT IN`, `EXISTS` and `NOT EXISTS` subqueries in `WHERE`, planned as Flink plans
//! them: a semi join (the rows with a match) or an anti join (the rows without one) of the
//! query's rows with the subquery's, on a [`SemiJoin`].
//!
//! A test is one conjunct of `WHERE` (`a AND x IN (SELECT ..)`). The subquery may be
//! correlated: conjuncts of its `WHERE` that name the outer query's columns join the two,
//! its equalities as the join key (`b.auction = a.id`) and the rest as a condition on each
//! pair (`b.price > a.reserve`); the other conjuncts filter the subquery's rows first. `x IN
//! (SELECT y ..)` adds `x = y` to the key. `NOT IN` is null-aware as SQL's: a row passes only
//! if its value is not `NULL` and no row of the subquery equals it or is `NULL` (or the
//! subquery has no rows); where either side can be `NULL` the test runs on one key.

use hummer_api::StreamExecutionEnvironment;
use sqlparser::ast::{self, Spanned};

use super::join::{equalities, residual_filter, with_keys};
use super::{Planned, aggregate, at_span, conjuncts, from_clause, over, plan_query, unsupported};
use crate::catalog::Catalog;
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::bind;
use crate::expr::{Compare, Expr};
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::join::ChangeJoin;
use crate::lower::semi_join::SemiJoin;
use crate::lower::window_join::{WindowJoin, WindowJoined};
use crate::schema::Schema;
use crate::value::Row;

/// One subquery test of `WHERE`.
pub(crate) struct Test<'a> {
    /// `NOT IN`, `NOT EXISTS`.
    anti: bool,
    /// The value of `x IN (..)`; none for `EXISTS`.
    value: Option<&'a ast::Expr>,
    subquery: &'a ast::Query,
    written: &'a ast::Expr,
}

/// The subquery test `e` is, if it is one.
fn test_of(e: &ast::Expr) -> Option<Test<'_>> {
    match e {
        ast::Expr::Nested(inner) => test_of(inner),
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr,
        } => test_of(expr).map(|t| Test {
            anti: !t.anti,
            written: e,
            ..t
        }),
        ast::Expr::In {
            expr,
            target: ast::InTarget::Subquery(subquery),
            negated,
            ..
        } => Some(Test {
            anti: *negated,
            value: Some(expr),
            subquery,
            written: e,
        }),
        ast::Expr::Exists { subquery, negated } => Some(Test {
            anti: *negated,
            value: None,
            subquery,
            written: e,
        }),
        _ => None,
    }
}

/// The subquery tests among the conjuncts of `selection`, and the other conjuncts as one
/// condition (none if there are none).
pub(crate) fn split(selection: Option<&ast::Expr>) -> (Vec<Test<'_>>, Option<ast::Expr>) {
    let mut tests = Vec::new();
    let mut rest: Option<ast::Expr> = None;
    for c in selection.map(conjuncts).unwrap_or_default() {
        match test_of(c) {
            Some(t) => tests.push(t),
            None => {
                rest = Some(match rest {
                    None => c.clone(),
                    Some(r) => ast::Expr::BinaryOp {
                        left: Box::new(r),
                        op: ast::BinaryOperator::And,
                        right: Box::new(c.clone()),
                    },
                })
            }
        }
    }
    (tests, rest)
}

/// The subquery's side of the join: its rows, the conjuncts that filter them, and those
/// that name the outer query's columns too.
struct Inner {
    planned: Planned,
    filter: Vec<ast::Expr>,
    correlated: Vec<ast::Expr>,
    /// What `x IN (SELECT item ..)` compares `x` with, bound to `planned`'s rows.
    item: Option<(Expr, bool)>,
}

/// Whether an expression of `select` names a column of an outer query: a column under a
/// qualifier that is none of `select`'s own tables' (names or aliases). It is known from the
/// text, so that a column of the outer query is not taken for one of the subquery's of the
/// same name (`L.k = R.k` where both have a `k`).
pub(crate) fn names_outer(select: &ast::Select) -> impl Fn(&ast::Expr) -> bool {
    let mut own: Vec<String> = Vec::new();
    for table in &select.from {
        for relation in
            std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation))
        {
            match relation {
                ast::TableFactor::Table { name, alias, .. } => {
                    own.extend(alias.as_ref().map(|a| a.name.value.to_lowercase()));
                    own.extend(
                        name.0
                            .last()
                            .and_then(|p| p.as_ident())
                            .map(|i| i.value.to_lowercase()),
                    );
                }
                ast::TableFactor::Derived { alias, .. }
                | ast::TableFactor::TableFunction { alias, .. } => {
                    own.extend(alias.as_ref().map(|a| a.name.value.to_lowercase()));
                }
                _ => {}
            }
        }
    }
    move |e: &ast::Expr| {
        let mut found = false;
        let _ = ast::visit_expressions(e, |e| {
            if let ast::Expr::CompoundIdentifier(parts) = e
                && let Some(q) = parts.first()
                && !own.contains(&q.value.to_lowercase())
            {
                found = true;
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        found
    }
}

/// A `SELECT` simple enough to be correlated: no grouping, aggregates, `DISTINCT`, over
/// windows, `WITH`, `ORDER BY` or `LIMIT`.
fn plain_select(query: &ast::Query) -> Option<&ast::Select> {
    let ast::SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    let plain = query.with.is_none()
        && query.order_by.is_none()
        && query.limit_clause.is_none()
        && query.fetch.is_none()
        && select.distinct.is_none()
        && !grouped
        && select.having.is_none()
        && !aggregate::has_aggregates(select)
        && !over::has_over(select)
        && !select.from.is_empty();
    plain.then_some(select.as_ref())
}

fn inner_side(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    test: &Test<'_>,
    at: Position,
) -> Result<Inner> {
    let sub_at = at_span(test.subquery.span());
    let one_item = |n: usize| -> Result<()> {
        if test.value.is_some() && n != 1 {
            return Err(SqlError::Invalid {
                at: sub_at,
                message: format!("the subquery of IN selects {n} columns where one is expected"),
            });
        }
        Ok(())
    };
    let Some(select) = plain_select(test.subquery) else {
        // A subquery of its own (grouped, say): uncorrelated.
        let planned =
            super::window::materialize(plan_query(catalog, env, test.subquery, sub_at)?, at)?;
        one_item(planned.schema.columns.len())?;
        let item = test
            .value
            .map(|_| (Expr::Column(0), planned.schema.columns[0].ty.nullable));
        return Ok(Inner {
            planned,
            filter: Vec::new(),
            correlated: Vec::new(),
            item,
        });
    };
    // The subquery's own subquery tests first.
    let (tests, rest) = split(select.selection.as_ref());
    let (mut planned, _) = from_clause(catalog, env, &select.from, rest.as_ref(), sub_at)?;
    for t in &tests {
        planned = apply(catalog, env, planned, t, sub_at)?;
    }
    let planned = super::window::materialize(planned, sub_at)?;
    let (mut filter, mut correlated) = (Vec::new(), Vec::new());
    let outer = names_outer(select);
    for c in rest.as_ref().map(conjuncts).unwrap_or_default() {
        if !outer(c) && bind(c, &planned.schema).is_ok() {
            filter.push(c.clone());
        } else {
            correlated.push(c.clone());
        }
    }
    let item = match test.value {
        None => None,
        Some(_) => {
            one_item(select.projection.len())?;
            match &select.projection[0] {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                    let bound = bind(e, &planned.schema)?;
                    Some((bound.expr, bound.ty.nullable))
                }
                other => return Err(unsupported("this item of an IN subquery", other.span(), at)),
            }
        }
    };
    Ok(Inner {
        planned,
        filter,
        correlated,
        item,
    })
}

/// `outer`'s rows that pass the subquery test `test`.
pub(crate) fn apply(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    outer: Planned,
    test: &Test<'_>,
    at: Position,
) -> Result<Planned> {
    let outer = super::window::materialize(outer, at)?;
    let inner = inner_side(catalog, env, test, at)?;
    let right = &inner.planned;
    let (left_width, right_width) = (outer.schema.columns.len(), right.schema.columns.len());
    let mut left_keys = Vec::new();
    let mut right_keys = Vec::new();
    let mut conditions: Vec<Expr> = Vec::new();
    let joined = Schema::join(&outer.schema, &right.schema);
    // The right row's columns where they are in a joined row.
    let shifted: Vec<Expr> = (left_width..left_width + right_width)
        .map(Expr::Column)
        .collect();
    for c in &inner.correlated {
        let (l, r, rest) = equalities(Some(c), &outer.schema, &right.schema);
        left_keys.extend(l);
        right_keys.extend(r);
        if let Some(rest) = residual_filter(&rest, &joined)? {
            conditions.extend(rest.into_parts().0.map(|n| n.expr));
        }
    }
    if let (Some(value), Some((item, item_nullable))) = (test.value, &inner.item) {
        let x = bind(value, &outer.schema)?;
        if test.anti && (x.ty.nullable || *item_nullable) {
            // NOT IN over values that may be NULL: a pair matches where `x = y` or either is
            // NULL (which makes `x NOT IN (..)` not true); it is a condition on each pair of
            // the correlation's key (one key if uncorrelated), not a key of its own.
            let y = item.substitute(&shifted);
            conditions.push(Expr::Or(vec![
                Expr::Compare {
                    op: Compare::Eq,
                    left: Box::new(x.expr.clone()),
                    right: Box::new(y.clone()),
                },
                Expr::IsNull(Box::new(x.expr), false),
                Expr::IsNull(Box::new(y), false),
            ]));
        } else {
            left_keys.push(Named {
                expr: x.expr,
                text: value.to_string(),
            });
            right_keys.push(Named {
                expr: item.clone(),
                text: "the subquery's value".into(),
            });
        }
    }
    let condition = match conditions.len() {
        0 => None,
        1 => conditions.pop(),
        _ => Some(Expr::And(conditions)),
    };
    let description = format!(
        "Join(joinType=[{}], where=[{}])",
        if test.anti {
            "LeftAntiJoin"
        } else {
            "LeftSemiJoin"
        },
        test.written
    );
    let filter = residual_filter(&inner.filter.iter().collect::<Vec<_>>(), &right.schema)?
        .and_then(|f| f.into_parts().0);
    // Correlated on both windows' bounds, of windowed append-only inputs: a window semi or
    // anti join, append-only, each window's rows sent when it ends (as Flink plans it).
    let window_end = super::join::window_end_in_key(&outer, right, &left_keys, &right_keys);
    let mut right_projection = Named::columns(&right.schema);
    right_projection.extend(right_keys);
    let right_rows = right.rows_through(
        Calc::new(filter, right_projection),
        "Calc: subquery and join key",
    );
    let left_rows = outer.rows_through(with_keys(&outer.schema, left_keys), "Calc: join key");
    let anti = test.anti;
    if let Some(end_in_key) = window_end {
        let function = WindowJoin {
            joined: WindowJoined::LeftRows { anti },
            left_width,
            right_width,
            end_in_key,
            condition: condition.as_ref().map(crate::expr::Compiled::new),
        };
        let rows = super::join::window_joined(left_rows, right_rows, function, &description);
        return Ok(Planned {
            window_bounds: outer.window_bounds,
            ..Planned::new(rows, outer.schema)
        });
    }
    let right_rows = right_rows.key_by(move |c: &Change| -> Row { c.row[right_width..].to_vec() });
    let left_rows = left_rows.key_by(move |c: &Change| -> Row { c.row[left_width..].to_vec() });
    let rows = left_rows
        .connect(&right_rows)
        .transform(&description, move |_| {
            Ok(ChangeJoin(SemiJoin::new(
                anti,
                (left_width, right_width),
                condition.as_ref(),
            )))
        });
    // A semi join emits a row when its first match comes, an anti join retracts it then.
    let updated_by = if anti {
        Some(description)
    } else {
        outer.updated_by.clone().or(right.updated_by.clone())
    };
    Ok(Planned {
        updated_by,
        ..Planned::new(rows, outer.schema)
    })
}
