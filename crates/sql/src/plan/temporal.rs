//! Temporal joins: `left JOIN t FOR SYSTEM_TIME AS OF left.time [AS alias] ON ..`, a left row
//! joined with the table as it was at the row's time, as Flink plans them.
//!
//! The time decides the kind:
//! - the left side's processing time (a `PROCTIME()` column): a **lookup join**. The table is
//!   looked up when the row comes; here it must be a bounded `filesystem` table, which each
//!   subtask reads whole ([`LookupJoin`]), as Flink's lookup source of a CSV table caches it;
//! - the left side's rowtime: an **event-time temporal join** with a versioned table (a table
//!   with a `PRIMARY KEY` and a watermark), each row joined with the version of its key that
//!   held at its time ([`TemporalJoin`]).
//!
//! Both are inner or left joins on equalities between the two sides (the key), with any other
//! conditions of the `ON` checked on the joined row; both keep the left side's time attributes
//! and are append-only when the left side is.

use hummer_api::StreamExecutionEnvironment;
use hummer_operators::keyed_process_function::KeyedProcessOperator;
use sqlparser::ast::{self, Spanned};

use super::join::{equalities, residual_filter, with_keys};
use super::{Planned, at_span, relation, window};
use crate::catalog::Catalog;
use crate::changelog::Change;
use crate::connector;
use crate::error::{Position, Result, SqlError};
use crate::expr::Expr;
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::join::JoinKind;
use crate::lower::lookup_join::{LookupJoin, index};
use crate::lower::rowtime::Rowtime;
use crate::lower::temporal_join::TemporalJoin;
use crate::schema::Schema;
use crate::value::{Row, Value};

/// The table a temporal join reads, as the `FROM` names it.
pub struct VersionedTable<'a> {
    /// The table's name.
    pub name: &'a str,
    /// The name its columns are qualified by (its alias, or its name).
    pub qualifier: &'a str,
    /// `FOR SYSTEM_TIME AS OF` this.
    pub time: &'a ast::Expr,
}

/// `left` joined (`kind`) with `table` on `on`.
pub fn plan(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    left: Planned,
    table: &VersionedTable<'_>,
    kind: JoinKind,
    on: Option<&ast::Expr>,
    at: Position,
) -> Result<Planned> {
    let left = window::materialize(left, at)?;
    let time_at = at_span(table.time.span());
    if !matches!(kind, JoinKind::Inner | JoinKind::Left) {
        return Err(SqlError::Unsupported {
            at: time_at,
            what: format!("a {} with a temporal table", kind.name()),
            supported: "inner and left temporal joins are".into(),
        });
    }
    let Some(on) = on else {
        return Err(SqlError::Invalid {
            at: time_at,
            message: format!(
                "the temporal join with '{}' needs an ON with an equality between the two \
                 sides",
                table.name
            ),
        });
    };
    let time = match bind(table.time, &left.schema)?.expr {
        Expr::Column(c) => Some(c),
        _ => None,
    };
    match time {
        Some(c) if Some(c) == left.proctime => lookup(catalog, left, table, kind, on, time_at),
        Some(c) if Some(c) == left.rowtime => {
            let sides = Sides { left, left_time: c };
            event_time(catalog, env, sides, table, kind, on, time_at)
        }
        _ => Err(SqlError::Invalid {
            at: time_at,
            message: format!(
                "FOR SYSTEM_TIME AS OF takes a time attribute of the left side: its rowtime (a \
                 column with a WATERMARK) for an event-time temporal join, or a PROCTIME() \
                 column for a lookup join; '{}' is neither",
                table.time
            ),
        }),
    }
}

/// The left side of an event-time temporal join, with its rowtime column.
struct Sides {
    left: Planned,
    left_time: usize,
}

/// The joined schema: the left columns, then the table's, which a left join may pad.
fn joined_schema(left: &Schema, right: &Schema, kind: JoinKind) -> Schema {
    let mut schema = Schema::join(left, right);
    if kind == JoinKind::Left {
        for c in &mut schema.columns[left.columns.len()..] {
            c.ty.nullable = true;
        }
    }
    schema
}

/// The key's equalities of `on`, refused if there is none.
fn key_of<'a>(
    on: &'a ast::Expr,
    left: &Schema,
    right: &Schema,
    table: &str,
    at: Position,
) -> Result<(Vec<Named>, Vec<Named>, Vec<&'a ast::Expr>)> {
    let (left_keys, right_keys, residual) = equalities(Some(on), left, right);
    if left_keys.is_empty() {
        return Err(SqlError::Invalid {
            at,
            message: format!(
                "the temporal join with '{table}' needs an equality between a column of \
                 '{table}' and the left side in its ON ('{on}' has none)"
            ),
        });
    }
    Ok((left_keys, right_keys, residual))
}

/// The `where=[..]` of a plan's description.
fn described(left_keys: &[Named], right_keys: &[Named]) -> String {
    left_keys
        .iter()
        .zip(right_keys)
        .map(|(l, r)| format!("{} = {}", l.text, r.text))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// A lookup join with a bounded table.
fn lookup(
    catalog: &Catalog,
    left: Planned,
    table: &VersionedTable<'_>,
    kind: JoinKind,
    on: &ast::Expr,
    at: Position,
) -> Result<Planned> {
    let definition = catalog.table_not_view(
        table.name,
        at,
        |view| format!("a lookup join with the view '{view}'"),
        "lookup joins with bounded 'filesystem' tables are",
    )?;
    let source = connector::lookup_source(definition)?;
    let right = connector::table_schema(definition)?
        .0
        .qualified(table.qualifier);
    let (left_keys, right_keys, residual) = key_of(on, &left.schema, &right, table.name, at)?;
    let schema = joined_schema(&left.schema, &right, kind);
    let residual = residual_filter(&residual, &schema)?;
    let description = format!(
        "LookupJoin(table=[{}], joinType=[{}], where=[{}])",
        table.name,
        kind.name(),
        described(&left_keys, &right_keys)
    );
    let (left_width, right_width) = (left.schema.columns.len(), right.columns.len());
    let right_key = Calc::new(None, right_keys);
    let rows = left
        .rows_through(with_keys(&left.schema, left_keys), "Calc: lookup key")
        .transform(&description, move |_| {
            Ok(LookupJoin {
                table: index(source.read_all()?, &right_key)?,
                left_width,
                right_width,
                keep_unmatched: kind == JoinKind::Left,
                residual: residual.clone(),
            })
        });
    Ok(Planned {
        updated_by: left.updated_by,
        rowtime: left.rowtime,
        proctime: left.proctime,
        ..Planned::new(rows, schema)
    })
}

/// The versions of the versioned table `name` and its primary key's columns: a table's rows
/// and its `PRIMARY KEY`, or, for a versioned view (Flink's deduplication of an append-only
/// table keeping each key's last row by event time: `SELECT .. FROM (SELECT *, ROW_NUMBER()
/// OVER (PARTITION BY k ORDER BY rowtime DESC) AS rn FROM t) WHERE rn = 1`), every row of the
/// view's query without the deduplication (each a version of its key, held until the next)
/// and the partition key.
fn versions(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    name: &str,
    at: Position,
) -> Result<(Planned, Vec<String>)> {
    let Some(view) = catalog.view(name) else {
        let definition = catalog.table(name, at)?;
        return Ok((
            relation(catalog, env, name, at)?,
            definition.primary_key.clone(),
        ));
    };
    let refuse = || SqlError::Unsupported {
        at,
        what: format!("the view '{name}' as a versioned table"),
        supported: "tables with a PRIMARY KEY and a WATERMARK, and views that keep each key's \
                    last row by event time (ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime \
                    DESC) = 1), as versioned tables are"
            .into(),
    };
    // The view's query: `SELECT .. FROM (SELECT .., ROW_NUMBER() .. AS rn FROM ..) WHERE rn = 1`.
    let mut query = view.query.clone();
    let ast::SetExpr::Select(outer) = query.body.as_mut() else {
        return Err(refuse());
    };
    let [from] = outer.from.as_mut_slice() else {
        return Err(refuse());
    };
    let ast::TableFactor::Derived { subquery, .. } = &mut from.relation else {
        return Err(refuse());
    };
    let ast::SetExpr::Select(inner) = subquery.body.as_mut() else {
        return Err(refuse());
    };
    let Some((number_at, number, over)) = super::rank::row_number(inner) else {
        return Err(refuse());
    };
    let keep_last = matches!(over.order_by.as_slice(), [o]
        if matches!(o.options.sort, Some(ast::OrderBySort::Desc)));
    let keys: Option<Vec<String>> = over
        .partition_by
        .iter()
        .map(super::aggregate::column_name)
        .collect();
    let order = over.order_by.first().map(|o| o.expr.clone());
    let conjuncts: Vec<ast::Expr> = outer
        .selection
        .as_ref()
        .map(super::conjuncts)
        .unwrap_or_default()
        .into_iter()
        .cloned()
        .collect();
    let (limits, rest): (Vec<_>, Vec<_>) = conjuncts
        .into_iter()
        .partition(|c| super::rank::limit_of(c, &number).is_some());
    let (Some(keys), Some(order), true, [limit]) = (keys, order, keep_last, limits.as_slice())
    else {
        return Err(refuse());
    };
    if super::rank::limit_of(limit, &number) != Some(1)
        || !view.columns.is_empty()
        || !rest.is_empty()
    {
        return Err(refuse());
    }
    inner.projection.remove(number_at);
    outer.selection = None;
    let planned = super::plan_query(catalog, env, &query, at)?;
    // Ordered by the rows' event time, which the view keeps.
    let ordered_by_rowtime = super::aggregate::column_name(&order).is_some_and(|o| {
        planned
            .rowtime
            .is_some_and(|r| planned.schema.columns[r].name.eq_ignore_ascii_case(&o))
    });
    if !ordered_by_rowtime || planned.updated_by.is_some() {
        return Err(refuse());
    }
    Ok((planned, keys))
}

/// An event-time temporal join with a versioned table.
fn event_time(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    sides: Sides,
    table: &VersionedTable<'_>,
    kind: JoinKind,
    on: &ast::Expr,
    at: Position,
) -> Result<Planned> {
    let Sides { left, left_time } = sides;
    if let Some(updated_by) = &left.updated_by {
        return Err(SqlError::Unsupported {
            at,
            what: format!(
                "an event-time temporal join of an updating input (updated by {updated_by})"
            ),
            supported: "event-time temporal joins of append-only inputs are".into(),
        });
    }
    let (right, primary_key) = versions(catalog, env, table.name, at)?;
    let right = window::materialize(right, at)?;
    let right_schema = right.schema.clone().qualified(table.qualifier);
    let Some(right_time) = right.rowtime else {
        return Err(SqlError::Invalid {
            at,
            message: format!(
                "the versioned table '{}' has no event time: an event-time temporal join \
                 needs a WATERMARK on it",
                table.name
            ),
        });
    };
    if primary_key.is_empty() {
        return Err(SqlError::Invalid {
            at,
            message: format!(
                "an event-time temporal join needs a primary key on the versioned table, and \
                 '{}' has none (PRIMARY KEY (..) NOT ENFORCED)",
                table.name
            ),
        });
    }
    let (left_keys, right_keys, residual) =
        key_of(on, &left.schema, &right_schema, table.name, at)?;
    for key in &primary_key {
        let column = right.schema.index_of(key, at)?;
        if !right_keys
            .iter()
            .any(|k| matches!(k.expr, Expr::Column(c) if c == column))
        {
            return Err(SqlError::Invalid {
                at,
                message: format!(
                    "the primary key column '{key}' of the versioned table '{}' must be in the \
                     join's equalities",
                    table.name
                ),
            });
        }
    }
    let schema = joined_schema(&left.schema, &right_schema, kind);
    let residual = residual_filter(&residual, &schema)?;
    let description = format!(
        "TemporalJoin(joinType=[{}], where=[{}], versioned=[{}])",
        kind.name(),
        described(&left_keys, &right_keys),
        table.name
    );
    let keys = left_keys.len();
    // Both sides as one stream: a flag that says which, the key, the side's own columns.
    let tagged = |is_left: bool, schema: &Schema, key: Vec<Named>| {
        let mut projection = vec![Named {
            expr: Expr::Literal(Value::Boolean(is_left)),
            text: if is_left { "left" } else { "right" }.into(),
        }];
        projection.extend(key);
        projection.extend(Named::columns(schema));
        Calc::new(None, projection)
    };
    let left_rows = left.rows_through(
        tagged(true, &left.schema, left_keys),
        "Calc: temporal join key",
    );
    let right_rows = right.rows_through(
        tagged(false, &right.schema, right_keys),
        "Calc: versioned table key",
    );
    let function = TemporalJoin {
        keys,
        left_width: left.schema.columns.len(),
        right_width: right.schema.columns.len(),
        left_time,
        right_time,
        keep_unmatched: kind == JoinKind::Left,
        residual,
    };
    let key = move |c: &Change| -> Row { c.row[1..=keys].to_vec() };
    let rows = left_rows
        .union(&[right_rows])
        .key_by(key)
        .transform(&description, move |ctx| {
            Ok(KeyedProcessOperator::new(key, function.clone(), ctx))
        })
        .transform("Rowtime: left time", move |_| {
            Ok(Rowtime {
                column: left_time,
                delay: 0,
            })
        });
    Ok(Planned {
        rowtime: Some(left_time),
        ..Planned::new(rows, schema)
    })
}
