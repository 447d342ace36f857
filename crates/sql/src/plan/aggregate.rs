//! `GROUP BY` without a window: the query's keys and aggregate calls, found in its `SELECT`
//! list and `HAVING`, lowered onto a [`GroupAggregate`] between two `Calc`s.
//!
//! The first `Calc` applies `WHERE` and computes, per input row, the group key's columns, then
//! each aggregate's argument and `FILTER` condition. The rows are shuffled by key to the
//! group aggregate, whose output is the key's columns followed by the aggregates' results.
//! The `SELECT` list and `HAVING` are then bound to that output: each aggregate call and each
//! expression the query groups by (as written, or a column by its name) becomes a column of
//! it; a column that is neither is refused as Flink refuses it ("not being grouped").

use std::collections::HashMap;
use std::ops::ControlFlow;

use sqlparser::ast::{self, Spanned, VisitMut, VisitorMut};

use hummer_operators::window::WindowResult;

use super::reuse::Part;
use super::window::{WindowClock, WindowSpec, is_instant, window_column_type, window_values};
use super::{Planned, at_span, condition, select_list, unsupported};
use crate::catalog::AggregateSettings;
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::group_aggregate::{AggCall, AggKind, GroupAggregate, Spread};
use crate::lower::per_key::PerKey;
use crate::schema::{Column, Schema};
use crate::types::{DataType, SqlType};
use crate::value::{Row, Value};

/// The aggregate functions, by name.
fn aggregate_kind(name: &str, star: bool) -> Option<AggKind> {
    Some(match name.to_uppercase().as_str() {
        "COUNT" if star => AggKind::CountStar,
        "COUNT" => AggKind::Count,
        "SUM" => AggKind::Sum,
        "MIN" => AggKind::Min,
        "MAX" => AggKind::Max,
        "AVG" => AggKind::Avg,
        "FIRST_VALUE" => AggKind::FirstValue,
        "LAST_VALUE" => AggKind::LastValue,
        "LISTAGG" => AggKind::ListAgg,
        "VAR_POP" | "VAR_SAMP" | "VARIANCE" | "STDDEV_POP" | "STDDEV_SAMP" | "STDDEV" => {
            let name = name.to_uppercase();
            AggKind::Spread(Spread {
                sample: !name.ends_with("_POP"),
                root: name.starts_with("STDDEV"),
            })
        }
        _ => return None,
    })
}

/// A call's name, if it is an aggregate function.
fn aggregate_name(f: &ast::Function) -> Option<String> {
    if f.over.is_some() {
        // An over aggregation's call ([`super::over`]), not a group's.
        return None;
    }
    let name = f.name.0.last()?.as_ident()?.value.clone();
    aggregate_kind(&name, false).map(|_| name)
}

/// Whether the `SELECT` list calls an aggregate function (a global aggregation).
pub fn has_aggregates(select: &ast::Select) -> bool {
    struct Finder(bool);
    impl VisitorMut for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            // A subquery's aggregates are its own: it is not looked into.
            if matches!(expr, ast::Expr::Subquery(_)) {
                *expr = ast::Expr::Value(ast::Value::Null.with_empty_span());
            }
            if let ast::Expr::Function(f) = expr
                && aggregate_name(f).is_some()
            {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut finder = Finder(false);
    for item in &select.projection {
        let mut item = item.clone();
        let _ = item.visit(&mut finder);
    }
    finder.0
}

/// The key of an expression for matching a `SELECT` item's parts with the `GROUP BY`'s: its
/// text with names unquoted and function names in capitals, a column by its last name
/// (`B.bidder` is `bidder`).
pub(super) fn match_key(e: &ast::Expr) -> String {
    struct Plain;
    impl VisitorMut for Plain {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            match expr {
                ast::Expr::Identifier(id) => id.quote_style = None,
                ast::Expr::CompoundIdentifier(parts) => {
                    let mut last = parts.pop().unwrap_or_else(|| ast::Ident::new(""));
                    last.quote_style = None;
                    *expr = ast::Expr::Identifier(last);
                }
                ast::Expr::Function(f) => {
                    for part in &mut f.name.0 {
                        if let ast::ObjectNamePart::Identifier(id) = part {
                            id.value = id.value.to_uppercase();
                            id.quote_style = None;
                        }
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut e = e.clone();
    while let ast::Expr::Nested(inner) = e {
        e = *inner;
    }
    let _ = e.visit(&mut Plain);
    e.to_string()
}

/// Rewrites an expression over the input into one over the aggregate's output: group
/// expressions become `$gI`, aggregate calls `$aJ` (found in `calls`, by text). A column left
/// over is not grouped: the first one found is the error.
struct OntoOutput<'a> {
    keys: &'a HashMap<String, usize>,
    calls: &'a HashMap<String, usize>,
    /// A window aggregation: `TUMBLE_START(..)`, `SESSION_END(..)`, ... are its bounds.
    windowed: bool,
    /// The grouping sets, for `GROUPING(..)`.
    sets: GroupingSets<'a>,
    error: Option<SqlError>,
}

/// The grouping sets of an aggregation, as `GROUPING(..)` reads them.
#[derive(Clone, Copy)]
enum GroupingSets<'a> {
    /// None: every key is grouped by.
    None,
    /// The sets (as indices of the GROUP BY expressions); the rows carry the index of theirs
    /// in the column `$gid`.
    Indexed(&'a [Vec<usize>]),
    /// Sets of a window aggregation, whose rows do not carry their set.
    OfWindows,
}

impl OntoOutput<'_> {
    /// `GROUPING(k, ..)` (`GROUPING_ID`): per argument from the left, a bit that is 1 where
    /// the row's grouping set leaves that key out, as Flink's; 0 without grouping sets. A
    /// `CASE` over the set's index, or the error for an argument that is not grouped by.
    fn grouping(&self, f: &ast::Function) -> std::result::Result<ast::Expr, SqlError> {
        // A BIGINT, as Flink's GROUPING returns.
        let number = |n: usize| ast::Expr::Cast {
            kind: ast::CastKind::Cast,
            expr: Box::new(ast::Expr::Value(
                ast::Value::Number(n.to_string(), false).into(),
            )),
            data_type: ast::DataType::BigInt(None),
            format: None,
        };
        let ast::FunctionArguments::List(list) = &f.args else {
            return Err(SqlError::Invalid {
                at: at_span(f.span()),
                message: format!("'{f}' takes the grouped expressions as its arguments"),
            });
        };
        let mut keys = Vec::with_capacity(list.args.len());
        for arg in &list.args {
            let key = match arg {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    self.keys.get(&match_key(e)).copied()
                }
                _ => None,
            };
            keys.push(key.ok_or_else(|| SqlError::Invalid {
                at: at_span(f.span()),
                message: format!("'{arg}' in '{f}' is not an expression the query groups by"),
            })?);
        }
        let sets = match self.sets {
            GroupingSets::None => return Ok(number(0)),
            GroupingSets::Indexed(sets) => sets,
            GroupingSets::OfWindows => {
                return Err(SqlError::Unsupported {
                    at: at_span(f.span()),
                    what: format!("'{f}' over the grouping sets of a window aggregation"),
                    supported: "GROUPING(..) over the grouping sets of a GROUP BY without \
                                windows is"
                        .into(),
                });
            }
        };
        let bits = |set: &Vec<usize>| {
            keys.iter()
                .fold(0, |bits, k| bits << 1 | usize::from(!set.contains(k)))
        };
        Ok(ast::Expr::Case {
            case_token: ast::helpers::attached_token::AttachedToken::empty(),
            end_token: ast::helpers::attached_token::AttachedToken::empty(),
            operand: Some(Box::new(ast::Expr::Identifier(ast::Ident::new("$gid")))),
            conditions: sets
                .iter()
                .enumerate()
                .map(|(i, set)| ast::CaseWhen {
                    condition: ast::Expr::Value(ast::Value::Number(i.to_string(), false).into()),
                    result: number(bits(set)),
                })
                .collect(),
            else_result: Some(Box::new(number(0))),
        })
    }
}

impl VisitorMut for OntoOutput<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Function(f) = expr
            && ["GROUPING", "GROUPING_ID"]
                .iter()
                .any(|g| f.name.to_string().eq_ignore_ascii_case(g))
        {
            match self.grouping(f) {
                Ok(e) => *expr = e,
                Err(e) => {
                    self.error = Some(e);
                    return ControlFlow::Break(());
                }
            }
            return ControlFlow::Continue(());
        }
        if let Some(&i) = self.keys.get(&match_key(expr)) {
            *expr = ast::Expr::Identifier(ast::Ident::new(format!("$g{i}")));
            return ControlFlow::Continue(());
        }
        if let ast::Expr::Function(f) = expr
            && self.windowed
        {
            let name = f.name.to_string().to_uppercase();
            let bound =
                ["TUMBLE", "HOP", "SESSION"]
                    .iter()
                    .find_map(|w| match name.strip_prefix(w) {
                        Some("_START") => Some("$ws"),
                        Some("_END") => Some("$we"),
                        Some("_ROWTIME" | "_PROCTIME") => Some("$wt"),
                        _ => None,
                    });
            if let Some(bound) = bound {
                *expr = ast::Expr::Identifier(ast::Ident::new(bound));
                return ControlFlow::Continue(());
            }
        }
        match expr {
            ast::Expr::Function(f) if aggregate_name(f).is_some() => {
                if let Some(&j) = self.calls.get(&expr.to_string()) {
                    *expr = ast::Expr::Identifier(ast::Ident::new(format!("$a{j}")));
                }
            }
            ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)
                if !expr.to_string().starts_with('$') =>
            {
                self.error = Some(SqlError::Invalid {
                    at: at_span(expr.span()),
                    message: format!(
                        "Expression '{expr}' is not being grouped (GROUP BY it, or use \
                             it in an aggregate function)"
                    ),
                });
                return ControlFlow::Break(());
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Collects the aggregate calls of an expression, in order, once each (by text).
struct Calls<'a>(&'a mut Vec<ast::Function>);

impl VisitorMut for Calls<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let ast::Expr::Function(f) = expr
            && aggregate_name(f).is_some()
            && !self.0.iter().any(|c| c.to_string() == f.to_string())
        {
            self.0.push(f.clone());
        }
        ControlFlow::Continue(())
    }
}

/// One aggregate call's parts: its kind, argument, `DISTINCT` and `LISTAGG`'s separator.
pub(crate) fn call_parts(f: &ast::Function) -> Result<CallParts> {
    let at = at_span(f.span());
    let refuse = |what: &str| SqlError::Unsupported {
        at,
        what: format!("{what} in '{f}'"),
        supported: "COUNT(*), and COUNT, SUM, MIN, MAX, AVG, FIRST_VALUE, LAST_VALUE, STDDEV_POP, \
                    STDDEV_SAMP, VAR_POP and VAR_SAMP of one argument, LISTAGG(x [, 'separator']), \
                    with DISTINCT and FILTER (WHERE ..), are"
            .into(),
    };
    let name = aggregate_name(f).unwrap_or_default();
    if f.over.is_some() {
        return Err(refuse("OVER"));
    }
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(refuse("these arguments"));
    };
    let distinct = matches!(
        list.duplicate_treatment,
        Some(ast::DuplicateTreatment::Distinct)
    );
    let (arg, parameter) = match list.args.as_slice() {
        [arg] => (arg, None),
        // LISTAGG's separator: a string literal.
        [
            arg,
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(separator)),
        ] if name.eq_ignore_ascii_case("LISTAGG") => {
            match crate::expr::bind::literal_string(separator) {
                Some(s) => (arg, Some(Value::String(s))),
                None => return Err(refuse("a separator that is not a string literal")),
            }
        }
        _ => return Err(refuse("other than one argument")),
    };
    let arg = match arg {
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => None,
        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
        _ => return Err(refuse("this argument")),
    };
    let kind = aggregate_kind(&name, arg.is_none()).ok_or_else(|| refuse("this function"))?;
    if arg.is_none() && kind != AggKind::CountStar {
        return Err(refuse("'*'"));
    }
    if distinct
        && matches!(
            kind,
            AggKind::FirstValue | AggKind::LastValue | AggKind::ListAgg | AggKind::Spread(_)
        )
    {
        return Err(refuse("DISTINCT"));
    }
    Ok(CallParts {
        kind,
        arg,
        distinct,
        parameter,
    })
}

/// One aggregate call's parts.
pub(crate) struct CallParts {
    /// The function.
    pub kind: AggKind,
    /// Its argument (none for `COUNT(*)`).
    pub arg: Option<ast::Expr>,
    /// `DISTINCT`.
    pub distinct: bool,
    /// A literal argument besides the value: `LISTAGG`'s separator.
    pub parameter: Option<Value>,
}

/// An aggregate's argument bound to `schema` and computed by the `Calc` before the
/// aggregation (in `pre`, see [`column_once`]): its column there and its type; none for
/// `COUNT(*)`.
pub(crate) fn argument_column(
    arg: Option<&ast::Expr>,
    schema: &Schema,
    pre: &mut Vec<Named>,
    shared_from: usize,
) -> Result<Option<(usize, DataType)>> {
    let Some(a) = arg else {
        return Ok(None);
    };
    let bound = bind(a, schema)?;
    let named = Named {
        expr: bound.expr,
        text: a.to_string(),
    };
    Ok(Some((column_once(pre, shared_from, named), bound.ty)))
}

/// The column of `pre` that computes `named`: one from `shared_from` on that computes the
/// same expression, else a new one. Aggregates over one argument or with one `FILTER` (q16's
/// thirteen calls over three arguments and three filters) read one column, computed once per
/// row, and COUNT(DISTINCT x) calls over one column share one table of values.
pub(crate) fn column_once(pre: &mut Vec<Named>, shared_from: usize, named: Named) -> usize {
    let same = format!("{:?}", named.expr);
    match (shared_from..pre.len()).find(|&i| format!("{:?}", pre[i].expr) == same) {
        Some(i) => i,
        None => {
            pre.push(named);
            pre.len() - 1
        }
    }
}

/// The result type of an aggregate over `arg` (Flink's: COUNT is `BIGINT NOT NULL`; SUM,
/// MIN, MAX and AVG keep the argument's type, but for a DECIMAL's sum and average).
pub(crate) fn result_type(kind: AggKind, arg: Option<&DataType>, at: Position) -> Result<DataType> {
    match (kind, arg) {
        (AggKind::CountStar | AggKind::Count, _) => Ok(DataType::not_null(SqlType::BigInt)),
        (AggKind::ListAgg, Some(t)) if !t.ty.is_string() => Err(SqlError::Invalid {
            at,
            message: format!("LISTAGG takes a string, not {} (CAST it)", t.ty),
        }),
        (AggKind::ListAgg, Some(_)) => Ok(DataType::nullable(SqlType::STRING)),
        (AggKind::Lag(_), Some(t)) => Ok(DataType::nullable(t.ty.clone())),
        (AggKind::Sum | AggKind::Avg | AggKind::Spread(_), Some(t)) if !t.ty.is_numeric() => {
            Err(SqlError::Invalid {
                at,
                message: format!("SUM and AVG take a number, not {}", t.ty),
            })
        }
        // Flink's: a DECIMAL sum is a DECIMAL(38, s), its average a DECIMAL(38, max(6, s)).
        (AggKind::Sum, Some(t)) if let SqlType::Decimal { scale, .. } = t.ty => {
            Ok(DataType::nullable(SqlType::Decimal {
                precision: 38,
                scale,
            }))
        }
        (AggKind::Avg, Some(t)) if let SqlType::Decimal { scale, .. } = t.ty => {
            Ok(DataType::nullable(SqlType::Decimal {
                precision: 38,
                scale: scale.max(6),
            }))
        }
        (_, Some(t)) => Ok(DataType::nullable(t.ty.clone())),
        (_, None) => Err(SqlError::Invalid {
            at,
            message: "the aggregate takes an argument".into(),
        }),
    }
}

/// What a `GROUP BY` expression is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A key: the rows are grouped by its value.
    Key,
    /// A window table function's `window_start`, `window_end`, `window_time`.
    WindowStart,
    WindowEnd,
    WindowTime,
    /// A legacy group window (`TUMBLE(ts, size)`): its value is the window's start.
    LegacyWindow,
}

/// A column's name, if `e` is a column (its last name part).
pub fn column_name(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Identifier(id) => Some(id.value.clone()),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.clone()),
        ast::Expr::Nested(inner) => column_name(inner),
        _ => None,
    }
}

/// The window of a `GROUP BY` and the role of each of its expressions: a window table
/// function grouped by `window_start` and `window_end`, a legacy group window, or the
/// bounds of the windows a window aggregation's rows are results of (each row is then in one
/// window already: a tumbling window of a millisecond at its time, the window's end less one,
/// gathers a window's rows, keyed by its bounds); `None` where the grouping is not by
/// windows.
fn windowing(
    group_by: &[ast::Expr],
    input: &Planned,
) -> Result<Option<(WindowSpec, Vec<Role>, WindowClock)>> {
    let mut roles = vec![Role::Key; group_by.len()];
    if let Some((start, end)) = input.window_bounds {
        let columns: Vec<Option<usize>> = group_by
            .iter()
            .map(|g| {
                let name = column_name(g)?;
                input.schema.columns.iter().position(|c| c.name == name)
            })
            .collect();
        if columns.contains(&Some(start)) && columns.contains(&Some(end)) {
            return Ok(Some((
                WindowSpec::Tumble { size: 1, offset: 0 },
                roles,
                WindowClock::default(),
            )));
        }
    }
    let mut legacy = None;
    for (g, role) in group_by.iter().zip(&mut roles) {
        if let Some(pending) = &input.window {
            let name = column_name(g);
            let column = name.and_then(|n| input.schema.columns.iter().position(|c| c.name == n));
            *role = match column.map(|c| c.checked_sub(pending.first_column)) {
                Some(Some(0)) => Role::WindowStart,
                Some(Some(1)) => Role::WindowEnd,
                Some(Some(2)) => Role::WindowTime,
                _ => Role::Key,
            };
        }
        let ast::Expr::Function(f) = g else { continue };
        let name = f.name.to_string().to_uppercase();
        if !matches!(name.as_str(), "TUMBLE" | "HOP" | "SESSION") {
            continue;
        }
        let at = at_span(g.span());
        let args = match &f.args {
            ast::FunctionArguments::List(l) => l
                .args
                .iter()
                .filter_map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        let Some((time, sizes)) = args.split_first() else {
            return Err(SqlError::Invalid {
                at,
                message: format!("{name} takes a time column and intervals"),
            });
        };
        let column = column_name(time)
            .map(|n| input.schema.index_of(&n, at_span(time.span())))
            .transpose()?;
        let processing_time = column.is_some() && column == input.proctime;
        if column.is_none() || (column != input.rowtime && !processing_time) {
            return Err(SqlError::Invalid {
                at: at_span(time.span()),
                message: format!(
                    "'{time}' is not the rowtime of the rows grouped (a group window is on the \
                     time attribute a table declares with WATERMARK FOR, or on PROCTIME())"
                ),
            });
        }
        // The legacy HOP is HOP(ts, slide, size), as the function table's.
        if legacy.is_some() {
            return Err(SqlError::Invalid {
                at,
                message: "a GROUP BY has at most one group window".into(),
            });
        }
        let clock = WindowClock {
            processing_time,
            wall_clock: column.is_some_and(|c| is_instant(&input.schema, c)),
        };
        legacy = Some((WindowSpec::of(&name, sizes, at)?, clock));
        *role = Role::LegacyWindow;
    }
    if let Some((spec, clock)) = legacy {
        return Ok(Some((spec, roles, clock)));
    }
    match &input.window {
        Some(pending) if roles.contains(&Role::WindowStart) && roles.contains(&Role::WindowEnd) => {
            // Sessions are kept apart per group: a PARTITION BY column must be grouped by.
            let grouped: Vec<Option<String>> = group_by.iter().map(column_name).collect();
            if let Some(&c) = pending
                .partition
                .iter()
                .find(|&&c| !grouped.contains(&Some(input.schema.columns[c].name.clone())))
            {
                return Err(SqlError::Unsupported {
                    at: group_by
                        .first()
                        .map_or(at_span(sqlparser::tokenizer::Span::empty()), |g| {
                            at_span(g.span())
                        }),
                    what: format!(
                        "a session window partitioned by '{}' that the GROUP BY does not \
                         group by",
                        input.schema.columns[c].name
                    ),
                    supported: "grouping by every PARTITION BY column of SESSION is".into(),
                });
            }
            let clock = WindowClock {
                processing_time: pending.processing_time,
                wall_clock: is_instant(&input.schema, pending.rowtime),
            };
            Ok(Some((pending.spec, roles, clock)))
        }
        _ => Ok(None),
    }
}

/// Plans `select` (with `group_by`, possibly empty for a global aggregate) over `input`.
pub fn plan(
    select: &ast::Select,
    group_by: &[ast::Expr],
    input: Planned,
    table_name: &str,
    settings: AggregateSettings,
    at: Position,
) -> Result<Planned> {
    let mini_batch = settings.mini_batch;
    let (group_by, sets) = grouping_sets(group_by, at)?;
    let group_by = group_by.as_slice();
    if let Some(item) = select.projection.iter().find(|i| {
        !matches!(
            i,
            ast::SelectItem::UnnamedExpr(_) | ast::SelectItem::ExprWithAlias { .. }
        )
    }) {
        return Err(unsupported(
            "this SELECT item with GROUP BY",
            item.span(),
            at,
        ));
    }
    let windowing = windowing(group_by, &input)?;
    if let (Some(_), Some(updated_by)) = (&windowing, &input.updated_by) {
        return Err(unsupported(
            &format!("a window aggregation of an updating input (updated by {updated_by})"),
            group_by.first().map_or(select.span(), |g| g.span()),
            at,
        ));
    }
    // Grouped by other than the window: the window table function's rows first.
    let input = match windowing {
        Some(_) => input,
        None => super::window::materialize(input, at)?,
    };
    let roles = match &windowing {
        Some((_, roles, _)) => roles.clone(),
        None => vec![Role::Key; group_by.len()],
    };
    let schema = &input.schema;
    // The first Calc: WHERE, then the keys, the aggregates' arguments and filters.
    let where_condition = match &select.selection {
        Some(e) => Some(condition(e, e, schema, "WHERE")?),
        None => None,
    };
    let mut pre = Vec::new();
    let mut output = Vec::new();
    let mut keys = HashMap::new();
    // Per GROUP BY expression, its key's place among the keys (a window's bounds have none).
    let mut key_of = Vec::with_capacity(group_by.len());
    for (i, (g, role)) in group_by.iter().zip(&roles).enumerate() {
        keys.insert(match_key(g), i);
        let ty = if *role == Role::Key {
            let bound = bind(g, schema)?;
            key_of.push(Some(pre.len()));
            pre.push(Named {
                expr: bound.expr,
                text: g.to_string(),
            });
            // A key that a grouping set leaves out is NULL in that set's rows.
            DataType {
                nullable: bound.ty.nullable || sets.is_some(),
                ..bound.ty
            }
        } else {
            key_of.push(None);
            let wall_clock = windowing.as_ref().is_some_and(|(_, _, c)| c.wall_clock);
            DataType::not_null(window_column_type(*role == Role::WindowTime, wall_clock))
        };
        output.push(Column {
            name: format!("$g{i}"),
            ty,
        });
    }
    // With grouping sets (of rows, not windows), the index of the set as the last key, for
    // GROUPING(..) to read; each set's rows are aggregated apart, so it splits no group.
    let set_index = match (&sets, &windowing) {
        (Some(_), None) => {
            pre.push(Named {
                expr: crate::expr::Expr::Literal(Value::Int(0)),
                text: "$gid".into(),
            });
            output.push(Column {
                name: "$gid".into(),
                ty: DataType::not_null(SqlType::Int),
            });
            Some(pre.len() - 1)
        }
        _ => None,
    };
    let key_count = pre.len();
    if let Some((_, _, clock)) = &windowing {
        // The window's start, end and time (its end less 1 ms: `TUMBLE_ROWTIME(..)`).
        for (c, time) in [("$ws", false), ("$we", false), ("$wt", true)] {
            output.push(Column {
                name: c.into(),
                ty: DataType::not_null(window_column_type(time, clock.wall_clock)),
            });
        }
    }
    let mut found = Vec::new();
    for item in &select.projection {
        let _ = item.clone().visit(&mut Calls(&mut found));
    }
    if let Some(having) = &select.having {
        let _ = having.clone().visit(&mut Calls(&mut found));
    }
    let mut calls = Vec::new();
    let mut call_index = HashMap::new();
    for (j, f) in found.iter().enumerate() {
        let CallParts {
            kind,
            arg,
            distinct,
            parameter,
        } = call_parts(f)?;
        let f_at = at_span(f.span());
        // Not a key's column: a grouping set computes a key it leaves out as NULL.
        let arg_column = argument_column(arg.as_ref(), schema, &mut pre, key_count)?;
        let filter = match &f.filter {
            Some(w) => Some(column_once(
                &mut pre,
                key_count,
                condition(w, w, schema, "FILTER")?,
            )),
            None => None,
        };
        let ty = result_type(kind, arg_column.as_ref().map(|(_, t)| t), f_at)?;
        output.push(Column {
            name: format!("$a{j}"),
            ty: ty.clone(),
        });
        call_index.insert(ast::Expr::Function(f.clone()).to_string(), j);
        calls.push(AggCall {
            kind,
            arg: arg_column.map(|(c, _)| c),
            distinct,
            filter,
            ty: ty.ty,
            parameter,
        });
    }
    let output = Schema::new(output);
    // The SELECT list and HAVING over the aggregate's output.
    let rewrite = |e: &ast::Expr| -> Result<ast::Expr> {
        let mut e = e.clone();
        let mut onto = OntoOutput {
            keys: &keys,
            calls: &call_index,
            windowed: windowing.is_some(),
            sets: match (set_index, &sets) {
                (Some(_), Some(sets)) => GroupingSets::Indexed(sets),
                (None, Some(_)) => GroupingSets::OfWindows,
                _ => GroupingSets::None,
            },
            error: None,
        };
        let _ = e.visit(&mut onto);
        match onto.error {
            Some(err) => Err(err),
            None => Ok(e),
        }
    };
    let having = match &select.having {
        Some(h) => Some(condition(h, &rewrite(h)?, &output, "HAVING")?),
        None => None,
    };
    let (projection, columns) = select_list(&select.projection, &output, rewrite, at)?;

    let agg = GroupAggregate::new(key_count, calls, input.updated_by.is_none());
    // In batch mode a global aggregate gives its row over no rows too.
    // In batch mode a global aggregate, and an empty grouping set (`()`, a ROLLUP's last),
    // give their row over no rows too: per input Calc, the key of that row.
    let set_count = sets.as_ref().map_or(1, Vec::len);
    let mut when_empty: Vec<Option<(Row, Row)>> = Vec::with_capacity(set_count);
    for set_number in 0..set_count {
        let empty_set = match &sets {
            None => key_count == 0,
            Some(sets) => sets[set_number].is_empty(),
        };
        when_empty.push(if settings.batch && windowing.is_none() && empty_set {
            let mut key = vec![Value::Null; key_count];
            if let Some(g) = set_index {
                key[g] = Value::Int(set_number as i32);
            }
            Some((key.clone(), agg.result_of_no_rows(&key)?))
        } else {
            None
        });
    }
    // One input Calc per grouping set (one without them), each key it leaves out NULL.
    let pres: Vec<Calc> = match &sets {
        None => vec![Calc::new(where_condition, pre)],
        Some(sets) => {
            let mut pres = Vec::with_capacity(sets.len());
            for (set_number, set) in sets.iter().enumerate() {
                let mut keyed = pre.clone();
                if let Some(g) = set_index {
                    keyed[g].expr = crate::expr::Expr::Literal(Value::Int(set_number as i32));
                }
                for (i, k) in key_of.iter().enumerate() {
                    match k {
                        Some(k) if !set.contains(&i) => {
                            keyed[*k] = Named {
                                expr: crate::expr::Expr::Literal(Value::Null),
                                text: "NULL".into(),
                            };
                        }
                        None if !set.contains(&i) => {
                            return Err(unsupported(
                                "a grouping set without the window's bounds",
                                group_by[i].span(),
                                at,
                            ));
                        }
                        _ => {}
                    }
                }
                pres.push(Calc::new(where_condition.clone(), keyed));
            }
            pres
        }
    };
    // Where the window's bounds are among the result's columns (before `post`).
    let window_bounds = windowing.as_ref().and_then(|(_, roles, _)| {
        let role_at = |r: Role| roles.iter().position(|x| *x == r);
        match (role_at(Role::WindowStart), role_at(Role::WindowEnd)) {
            (Some(s), Some(e)) => Some((s, e)),
            // A legacy window's bounds, or the bounds grouped by again.
            _ if roles.contains(&Role::LegacyWindow) => Some((group_by.len(), group_by.len() + 1)),
            _ => input.window_bounds.and_then(|(s, e)| {
                let name = |c: usize| input.schema.columns[c].name.clone();
                let at = |n: String| {
                    group_by
                        .iter()
                        .position(|g| column_name(g) == Some(n.clone()))
                };
                Some((at(name(s))?, at(name(e))?))
            }),
        }
    });
    // The window's time (`window_time`, `TUMBLE_ROWTIME(..)`) stays a time attribute where it
    // is selected as it is: a window of an event-time window's results is on it.
    let window_time = windowing.as_ref().map(|(_, roles, clock)| {
        let column = roles
            .iter()
            .position(|r| *r == Role::WindowTime)
            .unwrap_or(group_by.len() + 2);
        (column, clock.processing_time)
    });
    // The same aggregation of the same rows twice in a query (q5's counts per auction and
    // window) is computed once.
    let mut results = Vec::with_capacity(pres.len());
    for (pre, when_empty) in pres.into_iter().zip(when_empty) {
        let reuse_key = format!(
            "aggregate of node {} through {} by {:?} as {:?}, {:?}",
            input.input.node_id(),
            input.fused(pre.clone(), "").0.signature(),
            windowing,
            agg,
            mini_batch
        );
        let (agg, windowing, found) = (agg.clone(), windowing.clone(), &found);
        let result = super::reuse::reused(Part::SubPlan, reuse_key, || {
            let keyed = input
                .rows_through(pre, &format!("Calc: GROUP BY input of {table_name}"))
                .key_by(move |c: &Change| -> Row { c.row[..key_count].to_vec() });
            Ok::<_, SqlError>(match windowing {
                None => {
                    let description = describe("GroupAggregate", group_by, found);
                    let when_empty = when_empty.clone();
                    let rows = keyed.transform(&description, move |ctx| {
                        Ok(PerKey::batched(agg.clone(), mini_batch, ctx.time.clone())
                            .showing_when_empty(when_empty.clone(), ctx))
                    });
                    (rows, Some(description))
                }
                Some((spec, roles, clock)) => {
                    let description = describe("WindowAggregate", group_by, found);
                    let rows = spec
                        .aggregate(&keyed, agg, clock, at)?
                        .map(move |r: WindowResult<Row, Row>| {
                            let [start, end, time] = window_values(&r.window, clock.wall_clock);
                            let mut key = r.key.into_iter();
                            let mut row: Row = roles
                                .iter()
                                .map(|role| match role {
                                    Role::Key => key.next().unwrap_or(Value::Null),
                                    Role::WindowStart | Role::LegacyWindow => start.clone(),
                                    Role::WindowEnd => end.clone(),
                                    Role::WindowTime => time.clone(),
                                })
                                .collect();
                            row.extend([start, end, time]);
                            row.extend(r.value);
                            Change::insert(row)
                        })
                        .name(&description);
                    (rows, None)
                }
            })
        })?;
        results.push(result);
    }
    // The grouping sets' results, one stream.
    let updated_by = results.iter().find_map(|(_, u)| u.clone());
    let mut streams = results.into_iter().map(|(rows, _)| rows);
    let first = streams.next().ok_or_else(|| SqlError::Invalid {
        at,
        message: "a GROUP BY without grouping sets".into(),
    })?;
    let rest: Vec<_> = streams.collect();
    let rows = if rest.is_empty() {
        first
    } else {
        first.union(&rest)
    };
    let post = Calc::new(having, projection);
    let window_bounds =
        window_bounds.and_then(|(s, e)| Some((post.position_of(s)?, post.position_of(e)?)));
    let time = |processing: bool| {
        window_time
            .filter(|(_, p)| *p == processing)
            .and_then(|(c, _)| post.position_of(c))
    };
    let (rowtime, proctime) = (time(false), time(true));
    let name = post.described(&format!("Calc: SELECT .. FROM {table_name}"));
    let rows = rows.transform(&name, move |_| Ok(post.clone()));
    Ok(Planned {
        updated_by,
        rowtime,
        proctime,
        window_bounds,
        ..Planned::new(rows, Schema::new(columns))
    })
}

/// One grouping set: the indices of the `GROUP BY` expressions it groups by.
type GroupingSet = Vec<usize>;

/// `GROUP BY`'s expressions with `GROUPING SETS`, `ROLLUP` and `CUBE` expanded: every
/// expression grouped by in some set, once, and the sets as indices into them (none without
/// grouping sets). Plain expressions beside them are in every set.
fn grouping_sets(
    group_by: &[ast::Expr],
    at: Position,
) -> Result<(Vec<ast::Expr>, Option<Vec<GroupingSet>>)> {
    use ast::Expr as E;
    if !group_by
        .iter()
        .any(|g| matches!(g, E::GroupingSets(_) | E::Rollup(_) | E::Cube(_)))
    {
        return Ok((group_by.to_vec(), None));
    }
    let mut all: Vec<ast::Expr> = Vec::new();
    let index = |e: &ast::Expr, all: &mut Vec<ast::Expr>| -> usize {
        let key = match_key(e);
        match all.iter().position(|x| match_key(x) == key) {
            Some(i) => i,
            None => {
                all.push(e.clone());
                all.len() - 1
            }
        }
    };
    // The sets so far: the cross product of each GROUP BY item's sets.
    let mut sets: Vec<Vec<usize>> = vec![Vec::new()];
    for g in group_by {
        let item_sets: Vec<Vec<usize>> = match g {
            E::GroupingSets(list) => list
                .iter()
                .map(|set| set.iter().map(|e| index(e, &mut all)).collect())
                .collect(),
            E::Rollup(items) => {
                let items: Vec<Vec<usize>> = items
                    .iter()
                    .map(|item| item.iter().map(|e| index(e, &mut all)).collect())
                    .collect();
                (0..=items.len())
                    .rev()
                    .map(|n| items[..n].concat())
                    .collect()
            }
            E::Cube(items) => {
                let items: Vec<Vec<usize>> = items
                    .iter()
                    .map(|item| item.iter().map(|e| index(e, &mut all)).collect())
                    .collect();
                if items.len() > 12 {
                    return Err(unsupported("a CUBE of more than 12 items", g.span(), at));
                }
                (0..1u32 << items.len())
                    .rev()
                    .map(|mask| {
                        (0..items.len())
                            .filter(|i| mask & (1 << (items.len() - 1 - i)) != 0)
                            .flat_map(|i| items[i].clone())
                            .collect()
                    })
                    .collect()
            }
            plain => vec![vec![index(plain, &mut all)]],
        };
        sets = sets
            .iter()
            .flat_map(|s| {
                item_sets.iter().map(move |t| {
                    let mut u = s.clone();
                    u.extend(t.iter().filter(|i| !s.contains(i)));
                    u
                })
            })
            .collect();
    }
    Ok((all, Some(sets)))
}

/// The operator's name, as Flink's plan shows it: `GroupAggregate(groupBy=[..],
/// select=[..])` (or `WindowAggregate`).
fn describe(operator: &str, group_by: &[ast::Expr], calls: &[ast::Function]) -> String {
    let keys: Vec<String> = group_by.iter().map(ToString::to_string).collect();
    let calls: Vec<String> = calls.iter().map(ToString::to_string).collect();
    format!(
        "{operator}(groupBy=[{}], select=[{}])",
        keys.join(", "),
        calls.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::FlinkDialect;
    use sqlparser::parser::Parser;

    fn key(text: &str) -> String {
        let mut parser = Parser::new(&FlinkDialect)
            .try_with_sql(text)
            .expect("tokens");
        match_key(&parser.parse_expr().expect("an expression"))
    }

    /// A SELECT item matches its GROUP BY expression however its names are quoted or
    /// qualified and its functions spelled.
    #[test]
    fn group_expressions_match_up_to_quotes_qualifiers_and_case() {
        assert_eq!(key("B.`dateTime`"), key("dateTime"));
        assert_eq!(
            key("date_format(`dateTime`, 'yyyy-MM-dd')"),
            key("DATE_FORMAT(dateTime, 'yyyy-MM-dd')")
        );
        assert_eq!(key("(channel)"), key("channel"));
        assert_ne!(key("Channel"), key("channel"), "names are case-sensitive");
        assert_ne!(key("price + 1"), key("price"));
    }
}
