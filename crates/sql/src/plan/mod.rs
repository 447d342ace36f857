//! Planning: a query as a stream of changelog rows built from Hummer's operators, with the
//! schema of its result and whether it updates what it emitted.
//!
//! A query is planned bottom-up into `DataStream<Change>`: the `FROM` items (a table's scan,
//! a view's or subquery's plan, a window table function, rows written in the query:
//! [`values`], joins of them: [`join`], and temporal joins: [`temporal`]), the subquery tests
//! of `WHERE` ([`subquery`], [`scalar_subquery`]), then one of: a [`Calc`] (filter and
//! projection), a `GROUP BY` ([`aggregate`]: a group or window aggregation, grouping sets
//! too), an over aggregation ([`over`]), or a Top-N over a subquery ([`rank`]); `DISTINCT`
//! and the set operations over them ([`distinct`]), then `ORDER BY` and `LIMIT` ([`order`]).
//! Every clause that is not supported is refused before anything runs, with its line and
//! column and what is supported.

pub mod aggregate;
pub mod distinct;
pub mod join;
pub mod order;
pub mod over;
pub mod rank;
pub mod reuse;
pub mod scalar_subquery;
pub mod subquery;
pub mod temporal;
pub mod values;
pub mod window;

use hummer_api::{DataStream, StreamExecutionEnvironment};
use sqlparser::ast::{self, GroupByExpr, SelectItem, SetExpr, Spanned, TableFactor};

use crate::catalog::Catalog;
use crate::changelog::Change;
use crate::connector;
use crate::connector::column_use::ColumnUse;
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::final_table::FinalTable;
use crate::schema::{Column, Schema};
use crate::value::Row;

/// A planned query: its rows and their columns.
pub struct Planned {
    /// The result's rows before `pending` (read them with [`Planned::rows`]).
    pub input: DataStream<Change>,
    /// A filter and projection of `input` not made an operator yet, with its name: the next
    /// one fuses with it (see [`Planned::calc`]), so a chain of views and subqueries costs one
    /// `Calc` per row, as Flink's planner merges adjacent Calcs.
    pub pending: Option<(Calc, String)>,
    /// The columns read of the scan that `input` is, if it is a table's scan: reading the
    /// rows marks what the pending `Calc` reads (everything, without one).
    pub scan: Option<ColumnUse>,
    /// The result's columns.
    pub schema: Schema,
    /// The operator that makes the result updating (it retracts rows it emitted), if one
    /// does: a sink that takes only inserts refuses it, naming it.
    pub updated_by: Option<String>,
    /// The column that is the rows' event time (the rowtime attribute), if one is: the time a
    /// window is on.
    pub rowtime: Option<usize>,
    /// A window table function whose rows are not assigned to windows yet.
    pub window: Option<window::PendingWindow>,
    /// The column that is the rows' processing time (`PROCTIME()`), if one is.
    pub proctime: Option<usize>,
    /// The columns holding the start and end of the window each row is a result of (a
    /// window aggregation's, kept through projections): grouped by both, the rows are
    /// aggregated per window again (Flink's cascading window aggregation).
    pub window_bounds: Option<(usize, usize)>,
}

impl Planned {
    /// `input`'s rows with the columns of `schema`: nothing pending, not a table's scan,
    /// append-only, without time attributes or windows. Set what differs with struct update
    /// syntax (`Planned { rowtime, ..Planned::new(rows, schema) }`).
    pub fn new(input: DataStream<Change>, schema: Schema) -> Planned {
        Planned {
            input,
            pending: None,
            scan: None,
            schema,
            updated_by: None,
            rowtime: None,
            window: None,
            proctime: None,
            window_bounds: None,
        }
    }

    /// The result's rows: `input` with the pending `Calc` applied. Call it once per use of
    /// the rows (each call adds the pending `Calc` to the job).
    pub fn rows(&self) -> DataStream<Change> {
        if let Some(scan) = &self.scan {
            match &self.pending {
                Some((calc, _)) => scan.mark(&calc.used(scan.used().len())),
                None => scan.mark_all(),
            }
        }
        match &self.pending {
            Some((calc, name)) => {
                let calc = calc.clone();
                self.input
                    .transform(&calc.described(name), move |_| Ok(calc.clone()))
            }
            None => self.input.clone(),
        }
    }

    /// The result's rows filtered and projected by `calc` (named `name`), fused with the
    /// pending `Calc` into one operator.
    pub fn rows_through(&self, calc: Calc, name: &str) -> DataStream<Change> {
        let (calc, name) = self.fused(calc, name);
        if let Some(scan) = &self.scan {
            scan.mark(&calc.used(scan.used().len()));
        }
        self.input
            .transform(&calc.described(&name), move |_| Ok(calc.clone()))
    }

    /// The rows projected by `calc` (named `name`, fused with the pending `Calc`) into the
    /// columns `offset..offset + width` of a join's output whose reads `output` records (the
    /// outputs after `width`, the join's keys, are always read): each column no reader of the
    /// join reads is `NULL` in the join's state, and the scan below does not decode it.
    pub fn rows_into(
        &self,
        calc: Calc,
        name: &str,
        output: &ColumnUse,
        offset: usize,
        width: usize,
    ) -> DataStream<Change> {
        let (calc, name) = self.fused(calc, name);
        if let Some(scan) = &self.scan {
            scan.link(calc.clone(), output, offset, width);
        }
        let output = output.clone();
        self.input.transform(&calc.described(&name), move |_| {
            // The whole query is planned by the time the job's operators are made.
            let read = output.used();
            Ok(calc.pruned(|k| k >= width || read.get(offset + k).copied().unwrap_or(true)))
        })
    }

    /// The rows filtered and projected by `calc` (named `name`): fused with a pending `Calc`
    /// into one, else pending itself.
    pub fn calc(self, calc: Calc, name: &str) -> Planned {
        let pending = self.fused(calc, name);
        Planned {
            pending: Some(pending),
            ..self
        }
    }

    /// `calc` (named `name`) after the pending `Calc`, as one, with the names of both.
    pub fn fused(&self, calc: Calc, name: &str) -> (Calc, String) {
        match &self.pending {
            Some((first, first_name)) => (first.then(&calc), format!("{first_name}, {name}")),
            None => (calc, name.to_string()),
        }
    }
}

/// What a query may hold so far, for errors.
const SUPPORTED: &str = "SELECT [DISTINCT] [.. OVER ..] [FROM tables, views, subqueries, \
    VALUES, window table functions and their joins], with WHERE, GROUP BY, HAVING, UNION [ALL], \
    INTERSECT, EXCEPT, WITH, ORDER BY and LIMIT, is";

pub(crate) fn at_span(span: sqlparser::tokenizer::Span) -> Position {
    Position::new(span.start.line.max(1), span.start.column.max(1))
}

pub(crate) fn unsupported(
    what: &str,
    span: sqlparser::tokenizer::Span,
    fallback: Position,
) -> SqlError {
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
) -> Result<Planned> {
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
        return Ok(Planned { schema, ..planned });
    }
    let table = catalog.table(name, at)?;
    let connector::Scan {
        changes,
        schema,
        column_use,
        updated_by,
    } = reuse::reused(reuse::Part::Source, table.name.clone(), || {
        connector::scan(env, table)
    })?;
    let proctime = connector::table_schema(table)?
        .1
        .and_then(|computed| computed.proctime_column());
    let rowtime = match &table.watermark {
        Some(w) => Some(schema.index_of(&w.column, w.at)?),
        None => None,
    };
    Ok(Planned {
        scan: column_use,
        updated_by,
        rowtime,
        proctime,
        ..Planned::new(changes, schema)
    })
}

/// Plans `query` over the tables of `catalog` on `env`; `at` is where the statement starts.
pub fn plan_query(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    query: &ast::Query,
    at: Position,
) -> Result<Planned> {
    in_scope(catalog, env, || plan_in_scope(catalog, env, query, at))
}

/// `plan` run with the catalog's functions and the session's reuse in scope (what planning
/// any query needs).
fn in_scope(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    plan: impl FnOnce() -> Result<Planned>,
) -> Result<Planned> {
    crate::expr::udf::in_scope(catalog.functions(), || {
        reuse::in_scope(env, catalog.reuse(), plan)
    })
}

/// The result of a statement's query (a `SELECT`'s, an `INSERT`'s): in streaming mode the
/// query's changelog; in batch mode its final table, each row once, as inserts (Flink's batch
/// result), sorted on any columns where the query says `ORDER BY`.
pub fn plan_result(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    query: &ast::Query,
    at: Position,
) -> Result<Planned> {
    if !catalog.batch() {
        return plan_query(catalog, env, query, at);
    }
    in_scope(catalog, env, || {
        if is_ordered(query) {
            let (unordered, sorted, hidden) = order::unordered(query);
            let planned = plan_in_scope(catalog, env, &unordered, at)?;
            return order::final_sorted(planned, &sorted, hidden, at);
        }
        let planned = plan_in_scope(catalog, env, query, at)?;
        let Some(updated_by) = &planned.updated_by else {
            return Ok(planned);
        };
        let description = format!("FinalTable(of=[{updated_by}])");
        let rows = final_rows(
            planned.rows(),
            FinalTable::new(0, Vec::new(), 0, None),
            &description,
        );
        Ok(Planned::new(rows, planned.schema))
    })
}

/// The rows of `table` over the changelog `rows`: in one subtask if it sorts or limits, else
/// keyed by the rows themselves (a row and its retraction meet).
fn final_rows(
    rows: DataStream<Change>,
    table: FinalTable,
    description: &str,
) -> DataStream<Change> {
    let global = table.is_global();
    let keyed = rows.key_by(move |c: &Change| -> Row {
        if global { Row::new() } else { c.row.clone() }
    });
    keyed.transform(description, move |_| Ok(table.clone()))
}

/// Whether `query` has an `ORDER BY`, a `LIMIT` or a `FETCH`.
fn is_ordered(query: &ast::Query) -> bool {
    query.order_by.is_some() || query.limit_clause.is_some() || query.fetch.is_some()
}

/// [`plan_query`] with the catalog's functions in scope.
fn plan_in_scope(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    query: &ast::Query,
    at: Position,
) -> Result<Planned> {
    if is_ordered(query) {
        let (unordered, sorted, hidden) = order::unordered(query);
        let planned = plan_query(catalog, env, &unordered, at)?;
        return order::order_and_limit(planned, &sorted, hidden, at);
    }
    // WITH: each common table expression is a view for what follows it.
    if let Some(with) = &query.with {
        if with.recursive {
            return Err(unsupported("WITH RECURSIVE", with.span(), at));
        }
        let mut scoped = catalog.clone();
        for cte in &with.cte_tables {
            let view = crate::catalog::View {
                columns: cte
                    .alias
                    .columns
                    .iter()
                    .map(|c| c.name.value.clone())
                    .collect(),
                query: cte.query.clone(),
            };
            let name_at = at_span(cte.alias.name.span);
            scoped.create_view(cte.alias.name.value.clone(), view, false, name_at)?;
        }
        let mut body = query.clone();
        body.with = None;
        return plan_query(&scoped, env, &body, at);
    }
    plan_body(catalog, env, &query.body, at)
}

/// Plans a query's body: a `SELECT`, a parenthesised query, or a `UNION ALL`.
fn plan_body(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    body: &SetExpr,
    at: Position,
) -> Result<Planned> {
    match body {
        SetExpr::Select(select) => plan_select(catalog, env, select, at),
        SetExpr::Query(inner) => plan_query(catalog, env, inner, at),
        SetExpr::SetOperation {
            op: ast::SetOperator::Union,
            set_quantifier,
            left,
            right,
        } => {
            let all = match set_quantifier {
                ast::SetQuantifier::All => true,
                ast::SetQuantifier::Distinct | ast::SetQuantifier::None => false,
                _ => return Err(unsupported("this UNION", body.span(), at)),
            };
            let union = union_all(
                plan_body(catalog, env, left, at)?,
                plan_body(catalog, env, right, at)?,
                at_span(body.span()),
            )?;
            if all {
                Ok(union)
            } else {
                distinct::distinct(union, "UNION", catalog.aggregate_settings(at)?, at)
            }
        }
        SetExpr::SetOperation {
            op: op @ (ast::SetOperator::Intersect | ast::SetOperator::Except),
            set_quantifier: ast::SetQuantifier::Distinct | ast::SetQuantifier::None,
            left,
            right,
        } => intersect_or_except(
            catalog,
            plan_body(catalog, env, left, at)?,
            plan_body(catalog, env, right, at)?,
            *op == ast::SetOperator::Except,
            at_span(body.span()),
        ),
        SetExpr::SetOperation {
            op: op @ (ast::SetOperator::Intersect | ast::SetOperator::Except),
            set_quantifier: ast::SetQuantifier::All,
            left,
            right,
        } => bag_operation(
            plan_body(catalog, env, left, at)?,
            plan_body(catalog, env, right, at)?,
            *op == ast::SetOperator::Except,
            at_span(body.span()),
        ),
        SetExpr::Values(rows) => values::values(env, rows, at),
        other => Err(unsupported("this query form", other.span(), at)),
    }
}

/// `left UNION ALL right`: the rows of both, under the left's names; a column whose types
/// differ takes the type both fit in (`INT` and `BIGINT` make a `BIGINT`), as Flink's.
fn union_all(left: Planned, right: Planned, at: Position) -> Result<Planned> {
    let left = window::materialize(left, at)?;
    let right = window::materialize(right, at)?;
    let schema = set_schema(&left.schema, &right.schema, "UNION", at)?;
    let (left_rows, right_rows) = (cast_to(&left, &schema), cast_to(&right, &schema));
    Ok(Planned {
        updated_by: left.updated_by.or(right.updated_by),
        rowtime: left.rowtime.filter(|r| Some(*r) == right.rowtime),
        proctime: left.proctime.filter(|p| Some(*p) == right.proctime),
        ..Planned::new(left_rows.union(&[right_rows]), schema)
    })
}

/// The columns of a set operation (`op`) of rows of `l` and `r`: the left's names, each of
/// the type both sides' fit in.
fn set_schema(l: &Schema, r: &Schema, op: &str, at: Position) -> Result<Schema> {
    let (l, r) = (&l.columns, &r.columns);
    if l.len() != r.len() {
        return Err(SqlError::Invalid {
            at,
            message: format!(
                "the two sides of {op} have {} and {} columns",
                l.len(),
                r.len()
            ),
        });
    }
    let mut columns = Vec::with_capacity(l.len());
    for (a, b) in l.iter().zip(r) {
        let Some(ty) = crate::expr::bind::common_type(&a.ty.ty, &b.ty.ty) else {
            return Err(SqlError::Invalid {
                at,
                message: format!(
                    "{op}'s column '{}' is {} on the left and {} on the right, which have no \
                     common type (CAST one side to the other's type)",
                    a.name, a.ty.ty, b.ty.ty
                ),
            });
        };
        let mut c = a.clone();
        c.ty.ty = ty;
        c.ty.nullable |= b.ty.nullable;
        columns.push(c);
    }
    Ok(Schema::new(columns))
}

/// `left INTERSECT right` (`except`: `left EXCEPT right`): the distinct rows of `left` that
/// are (are not) rows of `right`, `NULL` equal to `NULL` as set operations take it; a semi
/// (anti) join on every column, then `DISTINCT`.
fn intersect_or_except(
    catalog: &Catalog,
    left: Planned,
    right: Planned,
    except: bool,
    at: Position,
) -> Result<Planned> {
    let op = if except { "EXCEPT" } else { "INTERSECT" };
    let left = window::materialize(left, at)?;
    let right = window::materialize(right, at)?;
    let schema = set_schema(&left.schema, &right.schema, op, at)?;
    let width = schema.columns.len();
    let keyed = |planned: &Planned| {
        cast_to(planned, &schema)
            .map(move |mut c: Change| {
                let key = c.row.clone();
                c.row.extend(key);
                c
            })
            .key_by(move |c: &Change| -> crate::value::Row { c.row[width..].to_vec() })
    };
    let description = format!(
        "Join(joinType=[{}], where=[every column IS NOT DISTINCT FROM], {op})",
        if except {
            "LeftAntiJoin"
        } else {
            "LeftSemiJoin"
        }
    );
    let rows = keyed(&left)
        .connect(&keyed(&right))
        .transform(&description, move |_| {
            Ok(crate::lower::join::ChangeJoin(
                crate::lower::semi_join::SemiJoin::new(except, (width, width), None).null_safe(),
            ))
        });
    let joined = Planned {
        // An anti join retracts a row when its first match comes.
        updated_by: if except {
            Some(description)
        } else {
            left.updated_by.or(right.updated_by)
        },
        ..Planned::new(rows, schema)
    };
    distinct::distinct(joined, op, catalog.aggregate_settings(at)?, at)
}

/// `left INTERSECT ALL right` (`except`: `EXCEPT ALL`): each row as many times as both sides
/// have it (as the left has it more than the right), on a [`SetAll`] keyed by the row.
fn bag_operation(left: Planned, right: Planned, except: bool, at: Position) -> Result<Planned> {
    use crate::lower::per_key::PerKey;
    use crate::lower::set_all::SetAll;
    let op = if except {
        "EXCEPT ALL"
    } else {
        "INTERSECT ALL"
    };
    let left = window::materialize(left, at)?;
    let right = window::materialize(right, at)?;
    let schema = set_schema(&left.schema, &right.schema, op, at)?;
    let width = schema.columns.len();
    let tagged = |planned: &Planned, from_left: bool| {
        cast_to(planned, &schema).map(move |mut c: Change| {
            c.row.push(crate::value::Value::Boolean(from_left));
            c
        })
    };
    let description = format!("SetOp({op})");
    let step = SetAll { width, except };
    let rows = tagged(&left, true)
        .union(&[tagged(&right, false)])
        .key_by(move |c: &Change| -> Row { c.row[..width].to_vec() })
        .transform(&description, move |_| Ok(PerKey::new(step.clone())));
    Ok(Planned {
        // EXCEPT ALL takes a row back when the right side gets one.
        updated_by: if except {
            Some(description)
        } else {
            left.updated_by.or(right.updated_by)
        },
        ..Planned::new(rows, schema)
    })
}

/// The rows of `planned` with each column cast to `schema`'s type where it is not of it.
fn cast_to(planned: &Planned, schema: &Schema) -> DataStream<Change> {
    let differ = |(a, b): (&Column, &Column)| a.ty.ty != b.ty.ty;
    if !planned
        .schema
        .columns
        .iter()
        .zip(&schema.columns)
        .any(differ)
    {
        return planned.rows();
    }
    let projection = planned
        .schema
        .columns
        .iter()
        .zip(&schema.columns)
        .enumerate()
        .map(|(i, (from, to))| Named {
            expr: if from.ty.ty == to.ty.ty {
                crate::expr::Expr::Column(i)
            } else {
                crate::expr::Expr::Cast {
                    expr: Box::new(crate::expr::Expr::Column(i)),
                    to: to.ty.ty.clone(),
                    try_cast: false,
                }
            },
            text: from.name.clone(),
        })
        .collect();
    planned.rows_through(Calc::new(None, projection), "Calc: UNION's types")
}

/// Plans one `SELECT`.
fn plan_select(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    select: &ast::Select,
    at: Position,
) -> Result<Planned> {
    // `OVER w` with `WINDOW w AS (..)`: the windows in place.
    let named;
    let select = if select.named_window.is_empty() {
        select
    } else {
        named = over::with_named_windows(select)?;
        &named
    };
    match &select.distinct {
        None => {}
        Some(ast::Distinct::Distinct) => {
            let mut all = select.clone();
            all.distinct = None;
            let planned = plan_select(catalog, env, &all, at)?;
            return distinct::distinct(planned, "DISTINCT", catalog.aggregate_settings(at)?, at);
        }
        Some(_) => return Err(unsupported("DISTINCT ON", select.span(), at)),
    }
    let group_by = match &select.group_by {
        GroupByExpr::Expressions(e, modifiers) if modifiers.is_empty() => e,
        other => return Err(unsupported("this GROUP BY", other.span(), at)),
    };
    // WHERE's subquery tests join the FROM's rows; its other conjuncts stay WHERE.
    let (tests, rest) = subquery::split(select.selection.as_ref());
    let filtered;
    let select = if tests.is_empty() {
        select
    } else {
        filtered = ast::Select {
            selection: rest,
            ..select.clone()
        };
        &filtered
    };
    let (mut input, table_name) =
        from_clause(catalog, env, &select.from, select.selection.as_ref(), at)?;
    for test in &tests {
        input = subquery::apply(catalog, env, input, test, at)?;
    }
    // Conjuncts that compare with a scalar subquery, on its value joined to each row.
    let (input, selection) =
        scalar_subquery::apply(catalog, env, input, select.selection.as_ref(), at)?;
    let scalar_filtered;
    let select = if selection.as_ref() == select.selection.as_ref() {
        select
    } else {
        scalar_filtered = ast::Select {
            selection,
            ..select.clone()
        };
        &scalar_filtered
    };
    if over::has_over(select) {
        if !group_by.is_empty() || select.having.is_some() {
            return Err(unsupported(
                "an over aggregation with GROUP BY or HAVING",
                select.span(),
                at,
            ));
        }
        return over::plan(select, input, &table_name, at);
    }
    if !group_by.is_empty() || select.having.is_some() || aggregate::has_aggregates(select) {
        let settings = catalog.aggregate_settings(at)?;
        return aggregate::plan(select, group_by, input, &table_name, settings, at);
    }
    let planned = window::materialize(input, at)?;
    // Scalar subqueries in the SELECT list: their values joined to each row first.
    let scalar_items;
    let (planned, items) = match scalar_subquery::in_select_list(&select.projection, at)? {
        Some((items, queries)) => {
            scalar_items = items;
            let planned = scalar_subquery::with_values(catalog, env, planned, &queries, at)?;
            (planned, &scalar_items)
        }
        None => (planned, &select.projection),
    };
    let (input, updated_by, rowtime, proctime, window_bounds) = (
        planned.schema.clone(),
        planned.updated_by.clone(),
        planned.rowtime,
        planned.proctime,
        planned.window_bounds,
    );
    let condition = match &select.selection {
        Some(e) => Some(condition(e, &e.clone(), &input, "WHERE")?),
        None => None,
    };
    let (projection, columns) = select_list(items, &input, |e| Ok(e.clone()), at)?;
    let calc = Calc::new(condition, projection);
    // The rowtime stays a time attribute where it is selected as it is, and so do a
    // window's bounds.
    let rowtime = rowtime.and_then(|r| calc.position_of(r));
    let proctime = proctime
        .and_then(|p| calc.position_of(p))
        .or_else(|| calc.proctime_column());
    let window_bounds =
        window_bounds.and_then(|(s, e)| Some((calc.position_of(s)?, calc.position_of(e)?)));
    Ok(Planned {
        schema: Schema::new(columns),
        updated_by,
        rowtime,
        proctime,
        window: None,
        window_bounds,
        ..planned.calc(calc, &format!("Calc: SELECT .. FROM {table_name}"))
    })
}

/// The `FROM` clause planned: one item, or items joined (`JOIN .. ON`, or a comma with the
/// equalities in `WHERE`), with a name for its operators.
fn from_clause(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    at: Position,
) -> Result<(Planned, String)> {
    use crate::lower::join::JoinKind;
    use ast::JoinConstraint as C;
    let mut items: Vec<(&TableFactor, JoinKind, Option<&C>)> = Vec::new();
    for item in from {
        items.push((&item.relation, JoinKind::Inner, None));
        for j in &item.joins {
            use ast::JoinOperator as J;
            let (kind, constraint) = match &j.join_operator {
                J::Inner(c) | J::Join(c) => (JoinKind::Inner, c),
                J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
                J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
                J::FullOuter(c) => (JoinKind::Full, c),
                // A cross join: every pair, or those the WHERE keeps.
                J::CrossJoin(C::None) => (JoinKind::Inner, &C::None),
                _ => {
                    return Err(unsupported("this kind of JOIN", j.relation.span(), at));
                }
            };
            if !matches!(constraint, C::On(_) | C::Using(_) | C::Natural | C::None)
                || (matches!(constraint, C::None) && !matches!(j.join_operator, J::CrossJoin(_)))
            {
                return Err(unsupported("this kind of JOIN", j.relation.span(), at));
            }
            items.push((&j.relation, kind, Some(constraint)));
        }
    }
    let Some(((first, _, _), rest)) = items.split_first() else {
        // `SELECT 1 + 1`: one row without columns to select from.
        return Ok((values::one_row(env), "VALUES".to_string()));
    };
    // A lone subquery may rank its rows for this query's WHERE to limit (Top-N).
    let outer_where = if rest.is_empty() { selection } else { None };
    let (mut planned, mut name) = from_item(catalog, env, first, outer_where, at)?;
    for (factor, kind, constraint) in rest {
        let on = match constraint {
            Some(C::On(on)) => Some(on),
            _ => None,
        };
        if let TableFactor::Table {
            name: table,
            alias,
            args: None,
            version: Some(version),
            ..
        } = factor
        {
            let ast::TableVersion::ForSystemTimeAsOf(time) = version else {
                return Err(unsupported("this table version", factor.span(), at));
            };
            let table_name = last_name(table);
            let versioned = temporal::VersionedTable {
                name: &table_name,
                qualifier: alias.as_ref().map_or(&table_name, |a| &a.name.value),
                time,
            };
            planned = temporal::plan(catalog, env, planned, &versioned, *kind, on, at)?;
            name = format!("{name} JOIN {table_name}");
            continue;
        }
        let (right, right_name) = from_item(catalog, env, factor, None, at)?;
        planned = match constraint {
            // `USING (k)` and `NATURAL`: equal columns of one name, shown once.
            Some(C::Using(columns)) => {
                let columns: Vec<String> = columns.iter().map(last_name).collect();
                join::plan_using(planned, right, *kind, &columns, at)?
            }
            Some(C::Natural) => {
                let columns: Vec<String> = planned
                    .schema
                    .columns
                    .iter()
                    .map(|c| c.name.clone())
                    .filter(|n| right.schema.columns.iter().any(|r| r.name == *n))
                    .collect();
                join::plan_using(planned, right, *kind, &columns, at)?
            }
            _ => {
                let conditions = on.or(selection);
                join::plan(planned, right, *kind, conditions, on.is_some(), at)?
            }
        };
        name = format!("{name} JOIN {right_name}");
    }
    Ok((planned, name))
}

/// The table name of a possibly qualified `catalog.db.name`: its last part.
fn last_name(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .and_then(|p| p.as_ident())
        .map(|i| i.value.clone())
        .unwrap_or_default()
}

/// A `FROM` item planned, with a name for its operators: a table or view, a window table
/// function over one, or a subquery; its columns qualified by its alias (or table name).
fn from_item(
    catalog: &Catalog,
    env: &StreamExecutionEnvironment,
    factor: &TableFactor,
    outer_where: Option<&ast::Expr>,
    at: Position,
) -> Result<(Planned, String)> {
    match factor {
        TableFactor::Table {
            name,
            alias,
            args: None,
            version: None,
            ..
        } => {
            let table_name = last_name(name);
            let planned = relation(catalog, env, &table_name, at_span(name.span()))?;
            let qualifier = alias.as_ref().map_or(&table_name, |a| &a.name.value);
            let schema = planned.schema.clone().qualified(qualifier);
            Ok((Planned { schema, ..planned }, table_name))
        }
        TableFactor::TableFunction {
            expr: ast::Expr::Function(f),
            alias,
        } => {
            let planned = window::table_function(f, catalog.batch(), |name, at| {
                relation(catalog, env, name, at)
            })?;
            match alias {
                Some(a) => {
                    let schema = planned.schema.clone().qualified(&a.name.value);
                    Ok((Planned { schema, ..planned }, a.name.value.clone()))
                }
                None => Ok((planned, f.name.to_string())),
            }
        }
        TableFactor::Derived {
            lateral: false,
            subquery,
            alias,
            ..
        } => {
            let sub_at = at_span(subquery.span());
            let planned = match rank::plan(catalog, env, subquery, outer_where, sub_at)? {
                Some(ranked) => ranked,
                None => plan_query(catalog, env, subquery, sub_at)?,
            };
            match alias {
                Some(a) => {
                    let mut schema = planned.schema.clone().qualified(&a.name.value);
                    // `AS t(x, y)` names the columns.
                    if !a.columns.is_empty() {
                        if a.columns.len() != schema.columns.len() {
                            return Err(SqlError::Invalid {
                                at: at_span(a.name.span),
                                message: format!(
                                    "'{a}' names {} columns and the subquery has {}",
                                    a.columns.len(),
                                    schema.columns.len()
                                ),
                            });
                        }
                        for (c, n) in schema.columns.iter_mut().zip(&a.columns) {
                            c.name.clone_from(&n.name.value);
                        }
                    }
                    Ok((Planned { schema, ..planned }, a.name.value.clone()))
                }
                None => Ok((planned, "subquery".to_string())),
            }
        }
        other => Err(unsupported("this FROM item", other.span(), at)),
    }
}

/// A `WHERE` or `HAVING` condition (`clause`), `bound` (the condition as written, or as the
/// planner rewrote it) bound to `schema`: it must be a `BOOLEAN`.
pub(crate) fn condition(
    written: &ast::Expr,
    bound: &ast::Expr,
    schema: &Schema,
    clause: &str,
) -> Result<Named> {
    let typed = bind(bound, schema)?;
    if !matches!(
        typed.ty.ty,
        crate::types::SqlType::Boolean | crate::types::SqlType::Null
    ) {
        return Err(SqlError::Invalid {
            at: at_span(written.span()),
            message: format!(
                "{clause} '{written}' is {}, where a BOOLEAN is expected",
                typed.ty.ty
            ),
        });
    }
    Ok(Named {
        expr: typed.expr,
        text: written.to_string(),
    })
}

/// The `SELECT` list bound to `schema`, each item after `rewrite` (the identity, or a
/// `GROUP BY`'s mapping onto its keys and aggregates); a column is named by its alias, the
/// column it is, or `EXPR$i` (as Flink names them).
pub(crate) fn select_list(
    items: &[SelectItem],
    schema: &Schema,
    rewrite: impl Fn(&ast::Expr) -> Result<ast::Expr>,
    at: Position,
) -> Result<(Vec<Named>, Vec<Column>)> {
    let mut projection = Vec::new();
    let mut columns = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            // Every column of `schema`, or of one table of a join (`A.*`); a `GROUP BY`
            // refuses `*` before it comes here.
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                let table = match item {
                    SelectItem::QualifiedWildcard(
                        ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                        _,
                    ) => name
                        .0
                        .last()
                        .and_then(|p| p.as_ident())
                        .map(|i| i.value.clone()),
                    SelectItem::QualifiedWildcard(..) => {
                        return Err(unsupported("this SELECT item", item.span(), at));
                    }
                    _ => None,
                };
                let of_table = |j: usize| match &table {
                    None => true,
                    Some(t) => schema.qualifiers.get(j).and_then(Option::as_deref) == Some(t),
                };
                let before = projection.len();
                for (j, c) in schema
                    .columns
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| of_table(*j))
                {
                    projection.push(Named {
                        expr: crate::expr::Expr::Column(j),
                        text: c.name.clone(),
                    });
                    let name = unique_name(&columns, c.name.clone());
                    columns.push(Column { name, ..c.clone() });
                }
                if projection.len() == before {
                    return Err(SqlError::Invalid {
                        at: at_span(item.span()),
                        message: format!("'{item}' names no table of the FROM"),
                    });
                }
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                let bound = bind(&rewrite(e)?, schema)?;
                let name = match (item, e) {
                    (SelectItem::ExprWithAlias { alias, .. }, _) => alias.value.clone(),
                    (_, ast::Expr::Identifier(id)) => id.value.clone(),
                    (_, ast::Expr::CompoundIdentifier(ids)) => {
                        ids.last().map(|i| i.value.clone()).unwrap_or_default()
                    }
                    _ => format!("EXPR${i}"),
                };
                let name = unique_name(&columns, name);
                columns.push(Column { name, ty: bound.ty });
                projection.push(Named {
                    expr: bound.expr,
                    text: e.to_string(),
                });
            }
            other => return Err(unsupported("this SELECT item", other.span(), at)),
        }
    }
    Ok((projection, columns))
}

/// `name`, or, where `columns` has a column of that name already, the name with the first
/// number that makes it new, as Flink (Calcite) names a `SELECT` list's columns
/// (`dateTime0`; `k0` for the second `k` of `SELECT *` over a join).
fn unique_name(columns: &[Column], name: String) -> String {
    let taken = |n: &str| columns.iter().any(|c| c.name == n);
    if !taken(&name) {
        return name;
    }
    (0..)
        .map(|k| format!("{name}{k}"))
        .find(|n| !taken(n))
        .unwrap_or(name)
}

/// The conjuncts of `e` (`a AND b AND c`).
pub(crate) fn conjuncts(e: &ast::Expr) -> Vec<&ast::Expr> {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::And,
            right,
        } => {
            let mut all = conjuncts(left);
            all.extend(conjuncts(right));
            all
        }
        ast::Expr::Nested(inner) => conjuncts(inner),
        other => vec![other],
    }
}
