//! Rows written in the query: `VALUES (..), (..)` and a `SELECT` without `FROM`.
//!
//! Each row's expressions are constants, evaluated once while planning; the rows are a
//! bounded source of inserts (as Flink's `Values` node), so `INSERT INTO t VALUES ..` and
//! `SELECT 1 + 1` run as jobs like any other query.

use hummer_api::StreamExecutionEnvironment;
use sqlparser::ast::{self, Spanned};

use super::{Planned, at_span};
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::{bind, coerce, common_type};
use crate::schema::{Column, Schema};
use crate::types::DataType;
use crate::value::{Row, Value};

/// The rows of `VALUES`, its columns named `EXPR$0`, `EXPR$1`, .. (as Flink's) and typed by
/// the type all rows' values of a column share.
pub fn values(
    env: &StreamExecutionEnvironment,
    values: &ast::Values,
    at: Position,
) -> Result<Planned> {
    let empty = Schema::default();
    let mut bound = Vec::with_capacity(values.rows.len());
    for row in &values.rows {
        let typed = row
            .iter()
            .map(|e| bind(e, &empty).map(|t| (e, t)))
            .collect::<Result<Vec<_>>>()?;
        bound.push(typed);
    }
    let Some(first) = bound.first() else {
        return Err(SqlError::Invalid {
            at,
            message: "VALUES has no rows".into(),
        });
    };
    let mut columns: Vec<Column> = first
        .iter()
        .enumerate()
        .map(|(i, (_, t))| Column {
            name: format!("EXPR${i}"),
            ty: t.ty.clone(),
        })
        .collect();
    for row in &bound[1..] {
        if row.len() != columns.len() {
            let span = row.first().map_or(values.span(), |(e, _)| e.span());
            return Err(SqlError::Invalid {
                at: at_span(span),
                message: format!(
                    "this row of VALUES has {} values and the first has {}",
                    row.len(),
                    columns.len()
                ),
            });
        }
        for (column, (e, t)) in columns.iter_mut().zip(row) {
            let Some(ty) = common_type(&column.ty.ty, &t.ty.ty) else {
                return Err(SqlError::Invalid {
                    at: at_span(e.span()),
                    message: format!(
                        "'{e}' is {} where the rows above have {} (CAST one to the other)",
                        t.ty.ty, column.ty.ty
                    ),
                });
            };
            column.ty = DataType {
                ty,
                nullable: column.ty.nullable || t.ty.nullable,
            };
        }
    }
    let mut rows = Vec::with_capacity(bound.len());
    for row in bound {
        let mut values: Row = Vec::with_capacity(row.len());
        for ((e, t), column) in row.into_iter().zip(&columns) {
            let value =
                coerce(t.expr, &column.ty.ty)
                    .eval(&[])
                    .map_err(|err| SqlError::Invalid {
                        at: at_span(e.span()),
                        message: format!("'{e}' cannot be computed: {}", err.0),
                    })?;
            values.push(value);
        }
        rows.push(Change::insert(values));
    }
    Ok(rows_of(env, rows, Schema::new(columns), "Values"))
}

/// The one row without columns that a `SELECT` without `FROM` selects from.
pub fn one_row(env: &StreamExecutionEnvironment) -> Planned {
    rows_of(
        env,
        vec![Change::insert(Vec::<Value>::new())],
        Schema::default(),
        "Values: one row",
    )
}

fn rows_of(
    env: &StreamExecutionEnvironment,
    rows: Vec<Change>,
    schema: Schema,
    name: &str,
) -> Planned {
    Planned::new(env.from_collection(rows).name(name), schema)
}
