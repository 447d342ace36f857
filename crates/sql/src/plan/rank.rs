//! Top-N and deduplication: a subquery with `ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..)
//! AS rn` filtered by `rn <= N` (or `rn < N`, `rn = 1`) outside, lowered onto a
//! rank ([`crate::lower::rank`]), as Flink's planner turns the pattern into its `Rank` node.
//!
//! The subquery is planned without its `ROW_NUMBER` item and with the partition and sort
//! keys appended to its columns; the rows are keyed by the partition key and ranked. The
//! result has the subquery's columns with the row number where the query put it, and is
//! updating (a row leaves the first N when a better one comes).

use sqlparser::ast::{self, BinaryOperator, Spanned};

use super::{Planned, at_span, conjuncts};
use crate::catalog::Catalog;
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::lower::per_key::PerKey;
use crate::lower::rank::{KeepFirst, RankSpec};
use crate::lower::sort_order::SortOrder;
use crate::lower::window_rank::WindowRank;
use crate::schema::{Column, Schema};
use crate::types::{DataType, SqlType};
use crate::value::Row;
use hummer_api::StreamExecutionEnvironment;
use hummer_operators::keyed_process_function::KeyedProcessOperator;
use hummer_operators::window::TimeDomain;

/// The `ROW_NUMBER() OVER (..)` item of `select`: its index, alias and window.
pub(super) fn row_number(select: &ast::Select) -> Option<(usize, String, &ast::WindowSpec)> {
    select.projection.iter().enumerate().find_map(|(i, item)| {
        let ast::SelectItem::ExprWithAlias {
            expr: ast::Expr::Function(f),
            alias,
        } = item
        else {
            return None;
        };
        let over = match &f.over {
            Some(ast::WindowType::WindowSpec(spec)) => spec,
            _ => return None,
        };
        f.name
            .to_string()
            .eq_ignore_ascii_case("ROW_NUMBER")
            .then(|| (i, alias.value.clone(), over))
    })
}

/// The limit a conjunct puts on the column `name`: `name <= N`, `name < N`, `name = N`,
/// `name BETWEEN M AND N` (N from 1), or `None`. (A lower bound stays in the outer `WHERE`.)
pub(super) fn limit_of(conjunct: &ast::Expr, name: &str) -> Option<usize> {
    let number = |e: &ast::Expr| -> Option<usize> {
        let ast::Expr::Value(v) = e else {
            return None;
        };
        let ast::Value::Number(n, _) = &v.value else {
            return None;
        };
        n.parse().ok()
    };
    let (left, op, n) = match conjunct {
        ast::Expr::BinaryOp { left, op, right } => (left, op, number(right)?),
        ast::Expr::Between {
            expr,
            negated: false,
            high,
            ..
        } => (expr, &BinaryOperator::LtEq, number(high)?),
        _ => return None,
    };
    if super::aggregate::column_name(left)? != name {
        return None;
    }
    match op {
        BinaryOperator::LtEq | BinaryOperator::Eq if n >= 1 => Some(n),
        BinaryOperator::Lt if n >= 2 => Some(n - 1),
        _ => None,
    }
}

/// If `subquery` ranks its rows with `ROW_NUMBER` and `outer_where` limits the rank, the
/// Top-N planned; `None` if the pattern is not there.
pub fn plan(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    subquery: &ast::Query,
    outer_where: Option<&ast::Expr>,
    at: Position,
) -> Result<Option<Planned>> {
    let ast::SetExpr::Select(select) = subquery.body.as_ref() else {
        return Ok(None);
    };
    let Some((number_at, name, over)) = row_number(select) else {
        return Ok(None);
    };
    let over_at = at_span(select.projection[number_at].span());
    let limit = outer_where
        .map(conjuncts)
        .unwrap_or_default()
        .into_iter()
        .find_map(|c| limit_of(c, &name));
    let Some(limit) = limit else {
        return Err(SqlError::Unsupported {
            at: over_at,
            what: format!("ROW_NUMBER ('{name}') without a limit on it outside"),
            supported: format!(
                "ROW_NUMBER in a subquery whose rows the query limits with WHERE {name} <= N \
                 (Top-N) is"
            ),
        });
    };
    if over.order_by.is_empty() || over.window_frame.is_some() {
        return Err(SqlError::Unsupported {
            at: over_at,
            what: "ROW_NUMBER without ORDER BY, or with a frame".into(),
            supported: "ROW_NUMBER() OVER (PARTITION BY .. ORDER BY ..) is".into(),
        });
    }
    // The subquery without ROW_NUMBER, with the partition and sort keys as its last columns.
    let mut inner = subquery.clone();
    let ast::SetExpr::Select(inner_select) = inner.body.as_mut() else {
        return Ok(None);
    };
    inner_select.projection.remove(number_at);
    let keyed = |prefix: &str, i: usize, e: &ast::Expr| ast::SelectItem::ExprWithAlias {
        expr: e.clone(),
        alias: ast::Ident::new(format!("${prefix}{i}")),
    };
    for (i, p) in over.partition_by.iter().enumerate() {
        inner_select.projection.push(keyed("p", i, p));
    }
    for (i, o) in over.order_by.iter().enumerate() {
        inner_select.projection.push(keyed("o", i, &o.expr));
    }
    let planned = super::plan_query(catalog, env, &inner, at)?;
    let (partition, sorts) = (over.partition_by.len(), over.order_by.len());
    let width = planned.schema.columns.len() - partition - sorts;
    // The row number's column: after the visible columns of the items before it (the items
    // after it are single columns; a `*` before it counts whole).
    let after = select.projection.len() - number_at - 1;
    let number_at = width.saturating_sub(after);
    let mut columns: Vec<Column> = planned.schema.columns[..width].to_vec();
    columns.insert(
        number_at,
        Column {
            name: name.clone(),
            ty: DataType::not_null(SqlType::BigInt),
        },
    );
    let orders: Vec<SortOrder> = over
        .order_by
        .iter()
        .map(|o| {
            let descending = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            SortOrder::new(descending, o.options.nulls_first)
        })
        .collect();
    let descending: Vec<bool> = orders.iter().map(|o| o.descending).collect();
    // The time attribute of the subquery's rows `e` is, if it is one: processing time (or
    // `PROCTIME()` itself) or event time.
    let time_of = |e: &ast::Expr| -> Option<TimeDomain> {
        if matches!(e, ast::Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("PROCTIME"))
        {
            return Some(TimeDomain::ProcessingTime);
        }
        let name = super::aggregate::column_name(e)?;
        let is = |c: Option<usize>| {
            c.is_some_and(|c| planned.schema.columns[c].name.eq_ignore_ascii_case(&name))
        };
        if is(planned.proctime) {
            Some(TimeDomain::ProcessingTime)
        } else if is(planned.rowtime) {
            Some(TimeDomain::EventTime)
        } else {
            None
        }
    };
    // Ordered by a time attribute descending to keep one row: Flink's keep-last
    // deduplication, where of rows of one time the later one is kept.
    let keep_last = limit == 1
        && descending == [true]
        && over
            .order_by
            .first()
            .is_some_and(|o| time_of(&o.expr).is_some());
    let spec = RankSpec {
        width,
        partition,
        orders,
        limit,
        number_at,
        keep_all: planned.updated_by.is_some(),
        later_first: keep_last,
    };
    let description = format!(
        "Rank(rankType=[ROW_NUMBER], rankRange=[rankStart=1, rankEnd={limit}], \
         partitionBy=[{}], orderBy=[{}])",
        over.partition_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        over.order_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let key = move |c: &Change| -> Row { c.row[width..width + partition].to_vec() };
    let keyed = planned.rows().key_by(key);
    // An append-only result of `rows`, with its time attribute and window bounds.
    let append_only = |rows, rowtime, window_bounds| {
        Ok(Some(Planned {
            rowtime,
            window_bounds,
            ..Planned::new(rows, Schema::new(columns.clone()))
        }))
    };
    // The first row per key in processing time, of an append-only input: each key's first
    // row goes out, once (Flink's keep-first deduplication, append-only).
    if let [order] = over.order_by.as_slice()
        && limit == 1
        && planned.updated_by.is_none()
        && !spec.orders[0].descending
        && time_of(&order.expr) == Some(TimeDomain::ProcessingTime)
    {
        let description = description.replacen("Rank(", "Deduplicate(keep=[FirstRow], ", 1);
        let function = KeepFirst { spec };
        let rows = keyed.transform(&description, move |ctx| {
            Ok(KeyedProcessOperator::new(key, function.clone(), ctx))
        });
        return append_only(rows, None, None);
    }
    // Partitioned by both bounds of an event-time window over an append-only input, it is a
    // window Top-N: append-only, emitted when each window ends.
    let key_index = |column: usize| -> Option<usize> {
        if (width..width + partition).contains(&column) {
            return Some(column - width);
        }
        let name = &planned.schema.columns[column].name;
        over.partition_by.iter().position(|p| {
            super::aggregate::column_name(p).is_some_and(|c| c.eq_ignore_ascii_case(name))
        })
    };
    let window_end = planned
        .window_bounds
        .filter(|_| planned.updated_by.is_none())
        .and_then(|(start, end)| {
            key_index(start)?;
            key_index(end)
        });
    let output_index = |i: usize| (i < width).then(|| if i < number_at { i } else { i + 1 });
    if let Some(end_in_key) = window_end {
        let description = description.replacen("Rank(", "WindowRank(", 1);
        // A window deduplication keeping the last row orders by the window's time column,
        // which the window's rows carry as a plain timestamp (their time is `window_time`).
        let by_time = planned.schema.columns[width + partition].ty.ty.is_time();
        let spec = RankSpec {
            later_first: spec.later_first || (limit == 1 && descending == [true] && by_time),
            ..spec
        };
        let function = WindowRank { spec, end_in_key };
        let rows = keyed.transform(&description, move |ctx| {
            Ok(KeyedProcessOperator::new(key, function.clone(), ctx))
        });
        let bounds = planned
            .window_bounds
            .and_then(|(s, e)| Some((output_index(s)?, output_index(e)?)));
        return append_only(rows, planned.rowtime.and_then(output_index), bounds);
    }
    let rows = keyed.transform(&description, move |_| Ok(PerKey::new(spec.clone())));
    Ok(Some(Planned {
        updated_by: Some(description),
        ..Planned::new(rows, Schema::new(columns))
    }))
}
