//! Planning: a query as a stream of rows built from Hummer's operators, with the schema of
//! its result.
//!
//! So far a query is a `SELECT` list and an optional `WHERE` over one table or view: the
//! scan (or the view's plan), then one [`Calc`]. Every other clause is refused before anything runs, with its line and column
//! and what is supported (joins, aggregations and windows come with issue 31's next steps).

use hummer_api::{DataStream, StreamExecutionEnvironment};
use sqlparser::ast::{self, GroupByExpr, SelectItem, SetExpr, Spanned, TableFactor};

use crate::catalog::Catalog;
use crate::connector;
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::schema::{Column, Schema};
use crate::value::Row;

/// A planned query: its rows and their columns.
pub struct Planned {
    /// The result's rows.
    pub rows: DataStream<Row>,
    /// The result's columns.
    pub schema: Schema,
}

/// What a query may hold so far, for errors.
const SUPPORTED: &str = "a SELECT list with WHERE over one table or view is (joins, GROUP BY, \
    windows, ORDER BY and LIMIT come next)";

fn at_span(span: sqlparser::tokenizer::Span) -> Position {
    Position::new(span.start.line.max(1), span.start.column.max(1))
}

fn unsupported(what: &str, span: sqlparser::tokenizer::Span, fallback: Position) -> SqlError {
    let at = if span.start.line == 0 {
        fallback
    } else {
        at_span(span)
    };
    SqlError::Unsupported {
        at,
        what: what.into(),
        supported: SUPPORTED.into(),
    }
}

/// The rows of the table or view `name`: a table's scan, or a view's query planned in its
/// place (with the view's column names, if it gives them).
fn relation(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    name: &str,
    at: Position,
) -> Result<(DataStream<Row>, Schema)> {
    if let Some(view) = catalog.view(name) {
        let planned = plan_query(catalog, env, &view.query, at)?;
        let mut schema = planned.schema;
        if !view.columns.is_empty() {
            if view.columns.len() != schema.columns.len() {
                return Err(SqlError::Invalid {
                    at,
                    message: format!(
                        "the view '{name}' names {} columns and its query has {}",
                        view.columns.len(),
                        schema.columns.len()
                    ),
                });
            }
            for (c, n) in schema.columns.iter_mut().zip(&view.columns) {
                c.name.clone_from(n);
            }
        }
        return Ok((planned.rows, schema));
    }
    let table = catalog.table(name, at)?;
    connector::scan(env, table)
}

/// Plans `query` over the tables of `catalog` on `env`; `at` is where the statement starts.
pub fn plan_query(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    query: &ast::Query,
    at: Position,
) -> Result<Planned> {
    if let Some(with) = &query.with {
        return Err(unsupported("WITH", with.span(), at));
    }
    if let Some(order) = &query.order_by {
        return Err(unsupported("ORDER BY", order.span(), at));
    }
    if let Some(limit) = &query.limit_clause {
        return Err(unsupported("LIMIT", limit.span(), at));
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(select) => select,
        SetExpr::Query(inner) => return plan_query(catalog, env, inner, at),
        other => return Err(unsupported("this query form", other.span(), at)),
    };
    if select.distinct.is_some() {
        return Err(unsupported("DISTINCT", select.span(), at));
    }
    if !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty()) {
        return Err(unsupported("GROUP BY", select.span(), at));
    }
    if let Some(having) = &select.having {
        return Err(unsupported("HAVING", having.span(), at));
    }
    let [from] = select.from.as_slice() else {
        return Err(unsupported(
            "a FROM of other than one table",
            select.span(),
            at,
        ));
    };
    if let Some(join) = from.joins.first() {
        return Err(unsupported("JOIN", join.relation.span(), at));
    }
    let TableFactor::Table {
        name,
        args: None,
        version: None,
        ..
    } = &from.relation
    else {
        return Err(unsupported("this FROM item", from.relation.span(), at));
    };
    let table_name = name
        .0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default();
    let name_at = at_span(name.span());
    let (rows, input) = relation(catalog, env, &table_name, name_at)?;
    let condition = match &select.selection {
        Some(e) => {
            let bound = bind(e, &input)?;
            if !matches!(
                bound.ty.ty,
                crate::types::SqlType::Boolean | crate::types::SqlType::Null
            ) {
                return Err(SqlError::Invalid {
                    at: at_span(e.span()),
                    message: format!(
                        "WHERE '{e}' is {}, where a BOOLEAN is expected",
                        bound.ty.ty
                    ),
                });
            }
            Some(Named {
                expr: bound.expr,
                text: e.to_string(),
            })
        }
        None => None,
    };
    let mut projection = Vec::new();
    let mut columns = Vec::new();
    for (i, item) in select.projection.iter().enumerate() {
        match item {
            SelectItem::Wildcard(_) => {
                for (j, c) in input.columns.iter().enumerate() {
                    projection.push(Named {
                        expr: crate::expr::Expr::Column(j),
                        text: c.name.clone(),
                    });
                    columns.push(c.clone());
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let bound = bind(e, &input)?;
                let name = match (item, e) {
                    (SelectItem::ExprWithAlias { alias, .. }, _) => alias.value.clone(),
                    (_, ast::Expr::Identifier(id)) => id.value.clone(),
                    (_, ast::Expr::CompoundIdentifier(ids)) => {
                        ids.last().map(|i| i.value.clone()).unwrap_or_default()
                    }
                    _ => format!("EXPR${i}"),
                };
                columns.push(Column { name, ty: bound.ty });
                projection.push(Named {
                    expr: bound.expr,
                    text: e.to_string(),
                });
            }
            other => return Err(unsupported("this SELECT item", other.span(), at)),
        }
    }
    let calc = Calc {
        condition,
        projection,
    };
    let rows = rows.transform(&format!("Calc: SELECT .. FROM {table_name}"), move |_| {
        Ok(calc.clone())
    });
    Ok(Planned {
        rows,
        schema: Schema::new(columns),
    })
}
