//! `ORDER BY`, `LIMIT`, `OFFSET` and `FETCH FIRST` on a streaming query, as Flink plans them:
//!
//! - `ORDER BY cols LIMIT n [OFFSET m]`: a Top-N over the whole result (a rank without a
//!   partition key, [`crate::lower::rank`]), updating: a row leaves the first `n` when a
//!   better one comes;
//! - `LIMIT n [OFFSET m]` without `ORDER BY`: the first rows to come, append-only;
//! - `ORDER BY rowtime [ASC] [, cols]` without `LIMIT`: the rows in event-time order
//!   ([`crate::lower::temporal_sort`]), append-only;
//! - any other `ORDER BY` without `LIMIT` is refused with Flink's error: a stream cannot be
//!   sorted on a column that is not its time.
//!
//! Each runs in one subtask (its rows keyed by an empty key), as Flink's global sort and
//! limit do. `NULL`s sort first ascending and last descending (Flink's default), or as
//! `NULLS FIRST`/`NULLS LAST` says.

use sqlparser::ast::{self, Spanned};

use super::{Planned, at_span};
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::Expr;
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::final_table::FinalTable;
use crate::lower::limit::Limit;
use crate::lower::per_key::PerKey;
use crate::lower::rank::RankSpec;
use crate::lower::sort_order::SortOrder;
use crate::lower::temporal_sort::TemporalSort;
use crate::value::{Row, Value};
use hummer_operators::keyed_process_function::KeyedProcessOperator;

/// One `ORDER BY` key: its expression over the planned columns, as written, and its order.
struct SortKey {
    expr: Expr,
    text: String,
    order: SortOrder,
}

/// The keys as plans show them: `a DESC, b ASC NULLS LAST`.
fn order_text(sorts: &[SortKey]) -> String {
    sorts
        .iter()
        .map(|k| {
            let nulls = match (k.order.descending, k.order.nulls_first) {
                (false, false) => " NULLS LAST",
                (true, true) => " NULLS FIRST",
                _ => "",
            };
            let direction = if k.order.descending { "DESC" } else { "ASC" };
            format!("{} {direction}{nulls}", k.text)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the query's `LIMIT`/`OFFSET`/`FETCH` keep: the rows after the first `offset`, at
/// most `fetch` of them (`None`: all).
struct Bounds {
    fetch: Option<usize>,
    offset: usize,
}

fn count(e: &ast::Expr, what: &str, at: Position) -> Result<usize> {
    let number = match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<usize>().ok(),
            _ => None,
        },
        _ => None,
    };
    number.ok_or_else(|| SqlError::Unsupported {
        at: if e.span().start.line == 0 {
            at
        } else {
            at_span(e.span())
        },
        what: format!("'{e}' as the {what}"),
        supported: format!("a whole number literal as the {what} is"),
    })
}

fn bounds(query: &ast::Query, at: Position) -> Result<Bounds> {
    let mut bounds = Bounds {
        fetch: None,
        offset: 0,
    };
    match &query.limit_clause {
        None => {}
        Some(ast::LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        }) => {
            if let Some(by) = limit_by.first() {
                return Err(super::unsupported("LIMIT BY", by.span(), at));
            }
            if let Some(limit) = limit {
                bounds.fetch = Some(count(limit, "LIMIT", at)?);
            }
            if let Some(offset) = offset {
                bounds.offset = count(&offset.value, "OFFSET", at)?;
            }
        }
        Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
            bounds.offset = count(offset, "OFFSET", at)?;
            bounds.fetch = Some(count(limit, "LIMIT", at)?);
        }
    }
    if let Some(fetch) = &query.fetch {
        if fetch.percent || fetch.with_ties {
            return Err(SqlError::Unsupported {
                at,
                what: "FETCH .. PERCENT or WITH TIES".into(),
                supported: "FETCH FIRST n ROWS ONLY is".into(),
            });
        }
        bounds.fetch = match &fetch.quantity {
            Some(q) => Some(count(q, "FETCH count", at)?),
            None => Some(1),
        };
    }
    Ok(bounds)
}

/// `query` without its `ORDER BY`, `LIMIT` and `FETCH`, each `ORDER BY` expression that is
/// not one of its output columns appended to its `SELECT` list as a hidden column (`$oN`),
/// and the `ORDER BY` on the output columns; the number of hidden columns.
pub fn unordered(query: &ast::Query) -> (ast::Query, ast::Query, usize) {
    let mut sorted = query.clone();
    let mut body = query.clone();
    body.order_by = None;
    body.limit_clause = None;
    body.fetch = None;
    let mut hidden = 0;
    let (Some(ast::OrderByKind::Expressions(order)), ast::SetExpr::Select(select)) = (
        sorted.order_by.as_mut().map(|o| &mut o.kind),
        body.body.as_mut(),
    ) else {
        return (body, sorted, 0);
    };
    let wildcard = select.projection.iter().any(|item| {
        matches!(
            item,
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
        )
    });
    let outputs: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            ast::SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            ast::SelectItem::UnnamedExpr(e) => super::aggregate::column_name(e),
            _ => None,
        })
        .collect();
    for o in order.iter_mut() {
        // `ORDER BY 2`: the second item of the SELECT list (Flink sorts by ordinal).
        if let ast::Expr::Value(v) = &o.expr
            && let ast::Value::Number(n, _) = &v.value
            && let Some(i) = n.parse::<usize>().ok().and_then(|n| n.checked_sub(1))
            && let Some(item) = select.projection.get(i)
        {
            match item {
                ast::SelectItem::UnnamedExpr(e) if super::aggregate::column_name(e).is_some() => {
                    o.expr = e.clone();
                }
                // An unnamed expression's column is `EXPR$i`.
                ast::SelectItem::UnnamedExpr(_) => {
                    o.expr = ast::Expr::Identifier(ast::Ident::new(format!("EXPR${i}")));
                }
                ast::SelectItem::ExprWithAlias { alias, .. } => {
                    o.expr = ast::Expr::Identifier(alias.clone());
                }
                _ => {}
            }
        }
        // An expression the SELECT list computes (`ORDER BY SUM(v)` of `SELECT k, SUM(v)`):
        // the column it is.
        let key = super::aggregate::match_key(&o.expr);
        let computed = select
            .projection
            .iter()
            .enumerate()
            .find_map(|(i, item)| match item {
                ast::SelectItem::UnnamedExpr(e) if super::aggregate::match_key(e) == key => {
                    Some(super::aggregate::column_name(e).unwrap_or_else(|| format!("EXPR${i}")))
                }
                ast::SelectItem::ExprWithAlias { expr, alias }
                    if super::aggregate::match_key(expr) == key =>
                {
                    Some(alias.value.clone())
                }
                _ => None,
            });
        if let Some(column) = computed
            && super::aggregate::column_name(&o.expr).is_none()
        {
            o.expr = ast::Expr::Identifier(ast::Ident::with_span(o.expr.span(), column));
            continue;
        }
        let output = super::aggregate::column_name(&o.expr)
            .is_some_and(|n| wildcard || outputs.iter().any(|c| c.eq_ignore_ascii_case(&n)));
        // Another expression is computed as a hidden column (an aggregate too, in a grouped
        // query), but not under DISTINCT, whose rows it would split.
        if output || select.distinct.is_some() {
            continue;
        }
        let name = format!("$o{hidden}");
        select.projection.push(ast::SelectItem::ExprWithAlias {
            expr: o.expr.clone(),
            alias: ast::Ident::new(name.clone()),
        });
        o.expr = ast::Expr::Identifier(ast::Ident::new(name));
        hidden += 1;
    }
    (body, sorted, hidden)
}

/// `planned` (the query without its `ORDER BY` and `LIMIT`, from [`unordered`], its last
/// `hidden` columns there only to sort by) ordered and limited as `query` says.
pub fn order_and_limit(
    planned: Planned,
    query: &ast::Query,
    hidden: usize,
    at: Position,
) -> Result<Planned> {
    let (sorts, bounds, order) = sorting(&planned, query, at)?;
    if sorts.is_empty() {
        return limit(planned, bounds, at);
    }
    let visible = planned.schema.columns.len() - hidden;
    let Some(fetch) = bounds.fetch else {
        return temporal_sort(planned, sorts, order, bounds.offset, visible, at);
    };
    top_n(planned, sorts, fetch, bounds.offset, visible)
}

/// In batch mode, `planned` (as for [`order_and_limit`]) as its final table sorted and
/// limited as `query` says: all its rows in one subtask, sorted at the end of the input on
/// any columns, as Flink's batch `Sort` and `SortLimit`.
pub fn final_sorted(
    planned: Planned,
    query: &ast::Query,
    hidden: usize,
    at: Position,
) -> Result<Planned> {
    let (sorts, bounds, _) = sorting(&planned, query, at)?;
    let width = planned.schema.columns.len();
    let schema = visible_schema(&planned.schema, width - hidden);
    let table = FinalTable::new(
        width,
        sorts.iter().map(|k| k.order).collect(),
        bounds.offset,
        bounds.fetch,
    );
    let description = format!(
        "Sort(orderBy=[{}], offset=[{}], fetch=[{}])",
        order_text(&sorts),
        bounds.offset,
        bounds.fetch.map_or("unlimited".into(), |f| f.to_string())
    );
    let rows = super::final_rows(
        with_sort_columns(planned, &sorts).rows(),
        table,
        &description,
    );
    Ok(Planned {
        pending: Some((
            Calc::new(None, Named::columns(&schema)),
            "Calc: the sorted rows".into(),
        )),
        ..Planned::new(rows, schema)
    })
}

/// `query`'s `ORDER BY` keys over `planned`'s columns, its bounds, and the keys as written.
fn sorting<'q>(
    planned: &Planned,
    query: &'q ast::Query,
    at: Position,
) -> Result<(Vec<SortKey>, Bounds, &'q [ast::OrderByExpr])> {
    let bounds = bounds(query, at)?;
    let order: &[ast::OrderByExpr] = match query.order_by.as_ref().map(|o| &o.kind) {
        None => &[],
        Some(ast::OrderByKind::Expressions(exprs)) => exprs,
        Some(ast::OrderByKind::All(_)) => {
            return Err(super::unsupported(
                "ORDER BY ALL",
                query.order_by.as_ref().map_or(query.span(), |o| o.span()),
                at,
            ));
        }
    };
    let mut sorts = Vec::with_capacity(order.len());
    for o in order {
        let descending = match &o.options.sort {
            None | Some(ast::OrderBySort::Asc) => false,
            Some(ast::OrderBySort::Desc) => true,
            Some(ast::OrderBySort::Using(_)) => {
                return Err(super::unsupported("ORDER BY .. USING", o.span(), at));
            }
        };
        sorts.push(SortKey {
            expr: bind(&o.expr, &planned.schema)?.expr,
            text: o.expr.to_string(),
            order: SortOrder::new(descending, o.options.nulls_first),
        });
    }
    Ok((sorts, bounds, order))
}

/// The first `visible` columns of `schema`.
fn visible_schema(schema: &crate::schema::Schema, visible: usize) -> crate::schema::Schema {
    crate::schema::Schema::new(schema.columns[..visible].to_vec())
}

/// `LIMIT` without `ORDER BY`: the first rows to come.
fn limit(planned: Planned, bounds: Bounds, at: Position) -> Result<Planned> {
    if let Some(updated_by) = &planned.updated_by {
        return Err(SqlError::Unsupported {
            at,
            what: format!("LIMIT without ORDER BY on an updating result (updated by {updated_by})"),
            supported: "LIMIT without ORDER BY on an append-only result, and ORDER BY .. LIMIT \
                        on any, are"
                .into(),
        });
    }
    let Some(fetch) = bounds.fetch else {
        return Ok(planned);
    };
    let step = Limit {
        offset: bounds.offset,
        fetch,
    };
    let description = format!("Limit(offset=[{}], fetch=[{fetch}])", bounds.offset);
    let rows = planned
        .rows()
        .key_by(|_: &Change| -> Row { Row::new() })
        .transform(&description, move |_| Ok(PerKey::new(step.clone())));
    Ok(Planned {
        input: rows,
        pending: None,
        scan: None,
        ..planned
    })
}

/// The query's columns then the sort keys' values, for a rank over them.
fn with_sort_columns(planned: Planned, sorts: &[SortKey]) -> Planned {
    let mut projection = Named::columns(&planned.schema);
    for k in sorts {
        projection.push(Named {
            expr: k.expr.clone(),
            text: k.text.clone(),
        });
    }
    let calc = Calc::new(None, projection);
    planned.calc(calc, "Calc: ORDER BY keys")
}

/// `ORDER BY .. LIMIT n [OFFSET m]`: a Top-N of the whole result, the row number dropped.
fn top_n(
    planned: Planned,
    sorts: Vec<SortKey>,
    fetch: usize,
    offset: usize,
    visible: usize,
) -> Result<Planned> {
    let width = planned.schema.columns.len();
    let spec = RankSpec {
        width,
        partition: 0,
        orders: sorts.iter().map(|k| k.order).collect(),
        limit: fetch.saturating_add(offset),
        number_at: width,
        keep_all: planned.updated_by.is_some(),
        later_first: false,
    };
    let description = format!(
        "SortLimit(orderBy=[{}], offset=[{offset}], fetch=[{fetch}])",
        order_text(&sorts)
    );
    let schema = visible_schema(&planned.schema, visible);
    let sorted = with_sort_columns(planned, &sorts);
    let rows = sorted
        .rows()
        .key_by(|_: &Change| -> Row { Row::new() })
        .transform(&description, move |_| Ok(PerKey::new(spec.clone())));
    // The rank's rows are the query's columns and the row number: the first `offset` ranks
    // are skipped, the number dropped.
    let condition = (offset > 0).then(|| Named {
        expr: Expr::Compare {
            op: crate::expr::Compare::Gt,
            left: Box::new(Expr::Column(width)),
            right: Box::new(Expr::Literal(Value::BigInt(offset as i64))),
        },
        text: format!("rank > {offset}"),
    });
    let calc = Calc::new(condition, Named::columns(&schema));
    Ok(Planned {
        pending: Some((calc, "Calc: the sorted rows".into())),
        updated_by: Some(description),
        ..Planned::new(rows, schema)
    })
}

/// `ORDER BY rowtime [ASC] [, cols]` without `LIMIT`: the rows in event-time order.
fn temporal_sort(
    planned: Planned,
    sorts: Vec<SortKey>,
    order: &[ast::OrderByExpr],
    offset: usize,
    visible: usize,
    at: Position,
) -> Result<Planned> {
    let first_at = order.first().map_or(at, |o| at_span(o.expr.span()));
    let refuse = || SqlError::Unsupported {
        at: first_at,
        what: "Sort on a non-time-attribute field".into(),
        supported: "on a stream, ORDER BY its rowtime ascending first (then any columns), or \
                    ORDER BY any columns with a LIMIT, is"
            .into(),
    };
    let time = match (&sorts[0], planned.rowtime) {
        (
            SortKey {
                expr: Expr::Column(c),
                order: SortOrder {
                    descending: false, ..
                },
                ..
            },
            Some(rowtime),
        ) if *c == rowtime => rowtime,
        _ => return Err(refuse()),
    };
    if offset > 0 {
        return Err(super::unsupported(
            "OFFSET without LIMIT",
            order[0].span(),
            at,
        ));
    }
    if let Some(updated_by) = &planned.updated_by {
        return Err(SqlError::Unsupported {
            at: first_at,
            what: format!("ORDER BY on an updating result (updated by {updated_by})"),
            supported: "ORDER BY rowtime on an append-only result is".into(),
        });
    }
    // The further keys are read where they are; one that is not a column is computed into
    // a column after the query's, and only then are columns dropped after the sort.
    let mut computed = Vec::new();
    let width = planned.schema.columns.len();
    let then = sorts[1..]
        .iter()
        .map(|k| match k.expr {
            Expr::Column(c) => (c, k.order),
            _ => {
                computed.push(Named {
                    expr: k.expr.clone(),
                    text: k.text.clone(),
                });
                (width + computed.len() - 1, k.order)
            }
        })
        .collect();
    let sort = TemporalSort { time, then };
    let description = format!("TemporalSort(orderBy=[{}])", order_text(&sorts));
    let schema = visible_schema(&planned.schema, visible);
    let (rowtime, proctime) = (
        planned.rowtime.filter(|&c| c < visible),
        planned.proctime.filter(|&c| c < visible),
    );
    let extra = width - visible + computed.len();
    let sorted = if computed.is_empty() {
        planned
    } else {
        let mut projection = Named::columns(&planned.schema);
        projection.extend(computed);
        planned.calc(Calc::new(None, projection), "Calc: ORDER BY keys")
    };
    let rows = sorted
        .rows()
        .key_by(|_: &Change| -> Row { Row::new() })
        .transform(&description, move |ctx| {
            Ok(KeyedProcessOperator::new(
                |_: &Change| -> Row { Row::new() },
                sort.clone(),
                ctx,
            ))
        });
    let pending = (extra > 0).then(|| {
        (
            Calc::new(None, Named::columns(&schema)),
            "Calc: the sorted rows".to_string(),
        )
    });
    Ok(Planned {
        pending,
        rowtime,
        proctime,
        ..Planned::new(rows, schema)
    })
}
