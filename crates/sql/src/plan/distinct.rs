//! `SELECT DISTINCT` and `UNION` (without `ALL`): each distinct row once.
//!
//! As Flink plans them: a `GROUP BY` of every column with no aggregate function, so the
//! result is a group aggregation (updating where the input is) or, where the rows carry a
//! window's bounds, a window aggregation that emits each window's distinct rows once.

use sqlparser::ast::{self, Ident, SelectItem};
use sqlparser::parser::Parser;

use super::{Planned, aggregate};
use crate::catalog::AggregateSettings;
use crate::dialect::FlinkDialect;
use crate::error::{Position, Result, SqlError};
use crate::schema::{Column, Schema};

/// The distinct rows of `planned`, under its column names; `what` names the operator.
pub fn distinct(
    planned: Planned,
    what: &str,
    settings: AggregateSettings,
    at: Position,
) -> Result<Planned> {
    // Columns renamed `$d0`, `$d1`, .. so that two columns of one name (`SELECT *` of a
    // join) stay two keys.
    let names: Vec<String> = planned
        .schema
        .columns
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let renamed = Schema::new(
        planned
            .schema
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| Column {
                name: format!("$d{i}"),
                ty: c.ty.clone(),
            })
            .collect(),
    );
    let keys: Vec<ast::Expr> = (0..names.len())
        .map(|i| ast::Expr::Identifier(Ident::with_quote('`', format!("$d{i}"))))
        .collect();
    let mut select = empty_select(at)?;
    select.projection = keys
        .iter()
        .zip(&names)
        .map(|(k, n)| SelectItem::ExprWithAlias {
            expr: k.clone(),
            alias: Ident::with_quote('`', n),
        })
        .collect();
    select.group_by = ast::GroupByExpr::Expressions(keys.clone(), Vec::new());
    let input = Planned {
        schema: renamed,
        ..planned
    };
    aggregate::plan(&select, &keys, input, what, settings, at)
}

/// A `SELECT` to fill in (sqlparser's `Select` has many fields; most stay empty).
fn empty_select(at: Position) -> Result<ast::Select> {
    let query = Parser::new(&FlinkDialect)
        .try_with_sql("SELECT 1")
        .and_then(|mut p| p.parse_query())
        .map_err(|e| SqlError::Invalid {
            at,
            message: format!("internal: {e}"),
        })?;
    match *query.body {
        ast::SetExpr::Select(select) => Ok(*select),
        _ => Err(SqlError::Invalid {
            at,
            message: "internal: SELECT 1 is not a SELECT".into(),
        }),
    }
}
