//! Inner joins: `a JOIN b ON ..` and `FROM a, b WHERE ..`, lowered onto a [`RegularJoin`]
//! keyed by the equalities between the two sides.
//!
//! The condition's conjuncts of the form `left_expr = right_expr` (each side's columns only)
//! are the join key: a `Calc` on each side appends the key's values to its rows, both sides
//! are partitioned by them and joined per key. An `ON`'s other conjuncts filter the joined
//! rows right after the join; a comma join's `WHERE` is applied whole by the query after it.
//! A join without any such equality (a cross join) is refused.

use sqlparser::ast::{self, BinaryOperator, Spanned};

use super::{Planned, at_span, condition, conjuncts};
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::Expr;
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::join::{JoinKind, RegularJoin};
use crate::schema::Schema;
use crate::value::Row;

/// `e` bound to `schema` if every column it names is one of `schema`'s.
fn bound_to(e: &ast::Expr, schema: &Schema) -> Option<Named> {
    bind(e, schema).ok().map(|t| Named {
        expr: t.expr,
        text: e.to_string(),
    })
}

/// A `Calc` that keeps every column of `schema` and appends `keys`.
fn with_keys(schema: &Schema, keys: Vec<Named>) -> Calc {
    let mut projection: Vec<Named> = schema
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| Named {
            expr: Expr::Column(i),
            text: c.name.clone(),
        })
        .collect();
    projection.extend(keys);
    Calc {
        condition: None,
        projection,
    }
}

/// Joins `left` and `right` on `conditions` (an `ON`, when `on`; else the query's `WHERE`).
pub fn plan(
    left: Planned,
    right: Planned,
    kind: JoinKind,
    conditions: Option<&ast::Expr>,
    on: bool,
    at: Position,
) -> Result<Planned> {
    let left = super::window::materialize(left, at)?;
    let right = super::window::materialize(right, at)?;
    let mut left_keys = Vec::new();
    let mut right_keys = Vec::new();
    let mut residual = Vec::new();
    for c in conditions.map(conjuncts).unwrap_or_default() {
        let pair = match c {
            ast::Expr::BinaryOp {
                left: a,
                op: BinaryOperator::Eq,
                right: b,
            } => match (bound_to(a, &left.schema), bound_to(b, &right.schema)) {
                (Some(l), Some(r)) => Some((l, r)),
                _ => match (bound_to(b, &left.schema), bound_to(a, &right.schema)) {
                    (Some(l), Some(r)) => Some((l, r)),
                    _ => None,
                },
            },
            _ => None,
        };
        match pair {
            Some((l, r)) => {
                left_keys.push(l);
                right_keys.push(r);
            }
            None => residual.push(c),
        }
    }
    if left_keys.is_empty() {
        let span = conditions.map_or_else(sqlparser::tokenizer::Span::empty, |c| c.span());
        return Err(SqlError::Unsupported {
            at: if span.start.line == 0 {
                at
            } else {
                at_span(span)
            },
            what: "a join without an equality between its two sides' columns (a cross join)".into(),
            supported: "inner joins on equalities (JOIN .. ON a.x = b.y, or FROM a, b WHERE \
                        a.x = b.y) are"
                .into(),
        });
    }
    if kind != JoinKind::Inner && on && !residual.is_empty() {
        return Err(SqlError::Unsupported {
            at,
            what: format!(
                "an outer join's condition other than equalities ('{}')",
                residual[0]
            ),
            supported: "outer joins on equalities between the two sides are".into(),
        });
    }
    let (left_width, right_width) = (left.schema.columns.len(), right.schema.columns.len());
    let description = format!(
        "Join(joinType=[{}], where=[{}])",
        kind.name(),
        left_keys
            .iter()
            .zip(&right_keys)
            .map(|(l, r)| format!("{} = {}", l.text, r.text))
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    let left_calc = with_keys(&left.schema, left_keys);
    let right_calc = with_keys(&right.schema, right_keys);
    let left_rows = left
        .rows
        .transform("Calc: join key", move |_| Ok(left_calc.clone()))
        .key_by(move |c: &Change| -> Row { c.row[left_width..].to_vec() });
    let right_rows = right
        .rows
        .transform("Calc: join key", move |_| Ok(right_calc.clone()))
        .key_by(move |c: &Change| -> Row { c.row[right_width..].to_vec() });
    let mut rows = left_rows
        .connect(&right_rows)
        .transform(&description, move |_| {
            Ok(RegularJoin::new(kind, left_width, right_width))
        });
    let mut schema = Schema::join(&left.schema, &right.schema);
    // The columns an outer join pads take NULL.
    for (i, c) in schema.columns.iter_mut().enumerate() {
        if kind.preserves_padding_of(i < left_width) {
            c.ty.nullable = true;
        }
    }
    // An ON's other conditions filter the joined rows (a WHERE's come after, with the query).
    if on && !residual.is_empty() {
        let mut conditions = residual.into_iter();
        let first = conditions.next().map(|c| (*c).clone());
        let all = conditions.fold(first, |acc, c| {
            acc.map(|a| ast::Expr::BinaryOp {
                left: Box::new(a),
                op: BinaryOperator::And,
                right: Box::new(c.clone()),
            })
        });
        if let Some(all) = all {
            let filter = Calc {
                condition: Some(condition(&all, &all, &schema, "ON")?),
                projection: (0..schema.columns.len())
                    .map(|i| Named {
                        expr: Expr::Column(i),
                        text: schema.columns[i].name.clone(),
                    })
                    .collect(),
            };
            rows = rows.transform("Calc: ON", move |_| Ok(filter.clone()));
        }
    }
    Ok(Planned {
        rows,
        schema,
        // An outer join retracts the padded rows it emitted when their match comes.
        updated_by: match kind {
            JoinKind::Inner => left.updated_by.or(right.updated_by),
            _ => Some(description.clone()),
        },
        rowtime: None,
        proctime: None,
        window: None,
        window_bounds: None,
    })
}
