//! Over aggregations: a `SELECT` whose list calls aggregates `OVER (PARTITION BY ..
//! ORDER BY time [frame])` (or `OVER w` with `WINDOW w AS (..)`), lowered onto an
//! [`OverAggregate`] between two `Calc`s.
//!
//! As in Flink, every call of one `SELECT` has the same window, ordered ascending by the
//! rowtime or a `PROCTIME()` column, with a frame that ends at the current row (`ROWS` or
//! `RANGE`, bounded or `UNBOUNDED PRECEDING`; without a frame, `RANGE UNBOUNDED PRECEDING`).
//! The first `Calc` applies `WHERE` and appends the partition key and the calls' arguments;
//! the rows are keyed by the partition; the aggregation appends each call's result; the
//! second `Calc` is the `SELECT` list with each call read from its column. The result is
//! append-only and keeps the input's time attributes.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned, VisitMut, VisitorMut};

use super::aggregate::{CallParts, call_parts, result_type};
use super::{Planned, at_span, condition, select_list};
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::Expr;
use crate::expr::bind::{bind, literal_integer};
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::group_aggregate::{AggCall, AggKind, GroupAggregate};
use crate::lower::over_aggregate::{Frame, OverAggregate};
use crate::schema::{Column, Schema};
use crate::value::Row;
use hummer_operators::keyed_process_function::KeyedProcessOperator;

/// What over aggregations may be, for errors.
const SUPPORTED: &str = "COUNT, SUM, MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE and LAG OVER \
    (PARTITION BY .. ORDER BY a time \
    attribute ASC [ROWS|RANGE BETWEEN .. PRECEDING AND CURRENT ROW]), one window per SELECT, \
    are";

/// `LAG(x [, offset [, default]])`'s parts: the offset and the default are literals.
fn lag_parts(f: &ast::Function) -> Option<CallParts> {
    let ast::FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let exprs: Vec<&ast::Expr> = list
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let offset = |n: &ast::Expr| usize::try_from(literal_integer(n)?).ok();
    let (arg, offset, default) = match exprs.as_slice() {
        [x] => (*x, 1, None),
        [x, n] => (*x, offset(n)?, None),
        [x, n, d] => (*x, offset(n)?, Some(*d)),
        _ => return None,
    };
    let parameter = match default {
        None => None,
        Some(d) => Some(bind(d, &Schema::default()).ok()?.expr.eval(&[]).ok()?),
    };
    Some(CallParts {
        kind: AggKind::Lag(offset),
        arg: Some(arg.clone()),
        distinct: false,
        parameter,
    })
}

/// `select` with each `OVER w` replaced by the window its `WINDOW w AS (..)` clause names
/// (a name may name another), and no `WINDOW` clause left; an unknown name is refused with
/// the names there are.
pub fn with_named_windows(select: &ast::Select) -> Result<ast::Select> {
    struct Resolve<'a> {
        windows: &'a [ast::NamedWindowDefinition],
        error: Option<SqlError>,
    }
    impl Resolve<'_> {
        fn spec(&self, name: &ast::Ident, depth: usize) -> Option<ast::WindowSpec> {
            let found = self
                .windows
                .iter()
                .find(|w| w.0.value.eq_ignore_ascii_case(&name.value))?;
            match &found.1 {
                ast::NamedWindowExpr::WindowSpec(spec) => Some(spec.clone()),
                ast::NamedWindowExpr::NamedWindow(other) if depth < 16 => {
                    self.spec(other, depth + 1)
                }
                ast::NamedWindowExpr::NamedWindow(_) => None,
            }
        }
    }
    impl VisitorMut for Resolve<'_> {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Function(f) = expr
                && let Some(ast::WindowType::NamedWindow(name)) = &f.over
            {
                match self.spec(name, 0) {
                    Some(spec) => f.over = Some(ast::WindowType::WindowSpec(spec)),
                    None => {
                        let names: Vec<String> =
                            self.windows.iter().map(|w| w.0.value.clone()).collect();
                        self.error = Some(SqlError::Invalid {
                            at: at_span(name.span),
                            message: format!(
                                "'{name}' is no window of the WINDOW clause (it names {})",
                                names.join(", ")
                            ),
                        });
                        return ControlFlow::Break(());
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut resolved = select.clone();
    resolved.named_window.clear();
    let mut resolve = Resolve {
        windows: &select.named_window,
        error: None,
    };
    for item in &mut resolved.projection {
        let _ = item.visit(&mut resolve);
    }
    match resolve.error {
        Some(e) => Err(e),
        None => Ok(resolved),
    }
}

/// Whether the `SELECT` list calls a function `OVER` a window.
pub fn has_over(select: &ast::Select) -> bool {
    struct Finder(bool);
    impl VisitorMut for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            if let ast::Expr::Function(f) = expr
                && f.over.is_some()
            {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut finder = Finder(false);
    for item in &select.projection {
        let _ = item.clone().visit(&mut finder);
    }
    finder.0
}

/// Collects the `OVER` calls of an expression, once each (by text), and replaces each with
/// the column `$overN` of its result.
struct OverCalls<'a>(&'a mut Vec<ast::Function>);

impl VisitorMut for OverCalls<'_> {
    type Break = ();
    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Function(f) = expr
            && f.over.is_some()
        {
            let text = f.to_string();
            let i = match self.0.iter().position(|c| c.to_string() == text) {
                Some(i) => i,
                None => {
                    self.0.push(f.clone());
                    self.0.len() - 1
                }
            };
            *expr = ast::Expr::Identifier(ast::Ident::new(format!("$over{i}")));
        }
        ControlFlow::Continue(())
    }
}

/// The window a call is over, with `WINDOW w AS (..)` definitions looked up.
fn window_of<'a>(f: &'a ast::Function, select: &'a ast::Select) -> Result<&'a ast::WindowSpec> {
    let at = at_span(f.span());
    let mut name = match &f.over {
        Some(ast::WindowType::WindowSpec(spec)) => return Ok(spec),
        Some(ast::WindowType::NamedWindow(name)) => name,
        None => unreachable_over(at)?,
    };
    for _ in 0..=select.named_window.len() {
        let Some(ast::NamedWindowDefinition(_, definition)) = select
            .named_window
            .iter()
            .find(|d| d.0.value.eq_ignore_ascii_case(&name.value))
        else {
            break;
        };
        match definition {
            ast::NamedWindowExpr::WindowSpec(spec) => return Ok(spec),
            ast::NamedWindowExpr::NamedWindow(other) => name = other,
        }
    }
    Err(SqlError::Invalid {
        at,
        message: format!("the window '{name}' is not defined (WINDOW {name} AS (..))"),
    })
}

fn unreachable_over(at: Position) -> Result<&'static ast::Ident> {
    Err(SqlError::Invalid {
        at,
        message: "a call without OVER in an over aggregation".into(),
    })
}

/// A frame as SQL text.
fn frame_text(frame: &ast::WindowFrame) -> String {
    let end = frame
        .end_bound
        .as_ref()
        .map_or_else(|| "CURRENT ROW".to_string(), ToString::to_string);
    format!("{} BETWEEN {} AND {end}", frame.units, frame.start_bound)
}

/// The frame of `spec` (Flink's default: `RANGE UNBOUNDED PRECEDING`).
fn frame_of(spec: &ast::WindowSpec, at: Position) -> Result<Frame> {
    let refuse = |what: String| SqlError::Unsupported {
        at,
        what,
        supported: SUPPORTED.into(),
    };
    let Some(frame) = &spec.window_frame else {
        return Ok(Frame::Range(None));
    };
    if !matches!(
        frame.end_bound,
        None | Some(ast::WindowFrameBound::CurrentRow)
    ) {
        return Err(refuse(format!(
            "the frame '{}' (it ends after the current row)",
            frame_text(frame)
        )));
    }
    let preceding = match &frame.start_bound {
        ast::WindowFrameBound::Preceding(bound) => bound.as_deref(),
        ast::WindowFrameBound::CurrentRow => {
            return Ok(match frame.units {
                ast::WindowFrameUnits::Rows => Frame::Rows(Some(0)),
                _ => Frame::Range(Some(0)),
            });
        }
        ast::WindowFrameBound::Following(_) => {
            return Err(refuse(format!("the frame '{}'", frame_text(frame))));
        }
    };
    match (&frame.units, preceding) {
        (ast::WindowFrameUnits::Rows, None) => Ok(Frame::Rows(None)),
        (ast::WindowFrameUnits::Range, None) => Ok(Frame::Range(None)),
        (ast::WindowFrameUnits::Rows, Some(n)) => {
            let count = bind(n, &Schema::default())
                .ok()
                .and_then(|b| b.expr.eval(&[]).ok())
                .and_then(|v| match v {
                    crate::value::Value::Int(i) => u64::try_from(i).ok(),
                    crate::value::Value::BigInt(i) => u64::try_from(i).ok(),
                    _ => None,
                });
            count
                .map(|c| Frame::Rows(Some(c)))
                .ok_or_else(|| SqlError::Invalid {
                    at,
                    message: format!("ROWS '{n}' PRECEDING takes a count of rows, not '{n}'"),
                })
        }
        (ast::WindowFrameUnits::Range, Some(t)) => {
            Ok(Frame::Range(Some(super::window::interval(t)?)))
        }
        (ast::WindowFrameUnits::Groups, _) => {
            Err(refuse(format!("the frame '{}'", frame_text(frame))))
        }
    }
}

/// Plans a `SELECT` with over aggregations over `input`.
pub fn plan(
    select: &ast::Select,
    input: Planned,
    table_name: &str,
    at: Position,
) -> Result<Planned> {
    let input = super::window::materialize(input, at)?;
    let schema = &input.schema;
    let mut found = Vec::new();
    let mut items = select.projection.clone();
    for item in &mut items {
        let _ = item.visit(&mut OverCalls(&mut found));
    }
    let Some(first) = found.first() else {
        return Err(SqlError::Invalid {
            at,
            message: "an over aggregation without an OVER call".into(),
        });
    };
    let spec = window_of(first, select)?;
    let spec_at = at_span(first.span());
    let refuse = |what: String, at: Position| SqlError::Unsupported {
        at,
        what,
        supported: SUPPORTED.into(),
    };
    for f in &found[1..] {
        let other = window_of(f, select)?;
        if other.to_string() != spec.to_string() {
            return Err(refuse(
                format!("OVER windows that differ ('{spec}' and '{other}')"),
                at_span(f.span()),
            ));
        }
    }
    // Ordered by a time attribute, ascending.
    let [order] = spec.order_by.as_slice() else {
        return Err(refuse(
            format!("OVER ({spec}): ordered by other than one time attribute"),
            spec_at,
        ));
    };
    if matches!(order.options.sort, Some(ast::OrderBySort::Desc)) {
        return Err(refuse(format!("OVER ({spec}): descending"), spec_at));
    }
    let time = match bind(&order.expr, schema)?.expr {
        Expr::Column(c) if Some(c) == input.rowtime => (c, false),
        Expr::Column(c) if Some(c) == input.proctime => (c, true),
        _ => {
            return Err(refuse(
                format!(
                    "OVER ({spec}): ordered by '{}', which is not a time attribute (the \
                     rowtime of a WATERMARK, or PROCTIME())",
                    order.expr
                ),
                spec_at,
            ));
        }
    };
    let frame = frame_of(spec, spec_at)?;
    // The first Calc: WHERE, the query's columns, the partition key, the arguments.
    let where_condition = match &select.selection {
        Some(e) => Some(condition(e, e, schema, "WHERE")?),
        None => None,
    };
    let width = schema.columns.len();
    let mut pre = Named::columns(schema);
    for p in &spec.partition_by {
        pre.push(Named {
            expr: bind(p, schema)?.expr,
            text: p.to_string(),
        });
    }
    let partition = spec.partition_by.len();
    let mut output = schema.columns.clone();
    let mut calls = Vec::new();
    for (j, f) in found.iter().enumerate() {
        let f_at = at_span(f.span());
        if f.filter.is_some() {
            return Err(refuse(format!("FILTER in '{f}'"), f_at));
        }
        let mut plain = f.clone();
        plain.over = None;
        let parts = match plain.name.to_string().to_uppercase().as_str() {
            "LAG" => lag_parts(&plain).ok_or_else(|| {
                refuse(
                    format!("'{f}' (LAG takes a value, a literal offset and a literal default)"),
                    f_at,
                )
            })?,
            "LEAD" => {
                return Err(refuse(
                    format!("'{f}' (LEAD would hold each row back until the next comes)"),
                    f_at,
                ));
            }
            _ => call_parts(&plain).map_err(|_| refuse(format!("'{f}'"), f_at))?,
        };
        let (kind, arg) = (parts.kind, parts.arg);
        if parts.distinct {
            return Err(refuse(format!("DISTINCT in '{f}'"), f_at));
        }
        let arg_column =
            super::aggregate::argument_column(arg.as_ref(), schema, &mut pre, width + partition)?;
        let ty = result_type(kind, arg_column.as_ref().map(|(_, t)| t), f_at)?;
        output.push(Column {
            name: format!("$over{j}"),
            ty: ty.clone(),
        });
        calls.push(AggCall {
            kind,
            arg: arg_column.map(|(c, _)| c),
            distinct: false,
            filter: None,
            // A default of the result's type (LAG's).
            parameter: match parts.parameter {
                Some(v) if matches!(kind, AggKind::Lag(_)) => {
                    Some(crate::expr::cast(v, &ty.ty).map_err(|e| SqlError::Invalid {
                        at: f_at,
                        message: format!("LAG's default in '{f}': {e}"),
                    })?)
                }
                other => other,
            },
            ty: ty.ty,
        });
    }
    let output = Schema::new(output);
    let (projection, mut columns) = select_list(&items, &output, |e| Ok(e.clone()), at)?;
    // An over call selected without an alias is named as Flink names it, by its place.
    for (i, c) in columns.iter_mut().enumerate() {
        if c.name.starts_with("$over") {
            c.name = format!("EXPR${i}");
        }
    }
    let post = Calc::new(None, projection);
    let description = format!(
        "OverAggregate(partitionBy=[{}], orderBy=[{}], window=[{}], select=[{}])",
        spec.partition_by
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        order,
        spec.window_frame.as_ref().map_or_else(
            || "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW".into(),
            frame_text
        ),
        found
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let function = OverAggregate {
        width,
        aggregate: GroupAggregate::new(0, calls, false),
        frame,
        time: time.0,
        processing_time: time.1,
    };
    let pre = Calc::new(where_condition, pre);
    let key = move |c: &Change| -> Row { c.row[width..width + partition].to_vec() };
    let rows = input
        .rows_through(pre, &format!("Calc: OVER input of {table_name}"))
        .key_by(key)
        .transform(&description, move |ctx| {
            Ok(KeyedProcessOperator::new(key, function.clone(), ctx))
        });
    let rowtime = input.rowtime.and_then(|r| post.position_of(r));
    let proctime = input.proctime.and_then(|p| post.position_of(p));
    let window_bounds = input
        .window_bounds
        .and_then(|(s, e)| Some((post.position_of(s)?, post.position_of(e)?)));
    let rows = rows.transform(&format!("Calc: SELECT .. FROM {table_name}"), move |_| {
        Ok(post.clone())
    });
    if let Some(updated_by) = input.updated_by {
        return Err(refuse(
            format!("an over aggregation of an updating input (updated by {updated_by})"),
            spec_at,
        ));
    }
    Ok(Planned {
        rowtime,
        proctime,
        window_bounds,
        ..Planned::new(rows, Schema::new(columns))
    })
}
