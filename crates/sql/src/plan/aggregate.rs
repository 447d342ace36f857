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

use super::{Planned, at_span, condition, select_list, unsupported};
use crate::changelog::Change;
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::group_aggregate::{AggCall, AggKind, GroupAggregate, GroupAggregateOperator};
use crate::schema::{Column, Schema};
use crate::types::{DataType, SqlType};
use crate::value::Row;

/// The aggregate functions, by name.
fn aggregate_kind(name: &str, star: bool) -> Option<AggKind> {
    Some(match name.to_uppercase().as_str() {
        "COUNT" if star => AggKind::CountStar,
        "COUNT" => AggKind::Count,
        "SUM" => AggKind::Sum,
        "MIN" => AggKind::Min,
        "MAX" => AggKind::Max,
        "AVG" => AggKind::Avg,
        _ => return None,
    })
}

/// A call's name, if it is an aggregate function.
fn aggregate_name(f: &ast::Function) -> Option<String> {
    let name = f.name.0.last()?.as_ident()?.value.clone();
    aggregate_kind(&name, false).map(|_| name)
}

/// Whether the `SELECT` list calls an aggregate function (a global aggregation).
pub fn has_aggregates(select: &ast::Select) -> bool {
    struct Finder(bool);
    impl VisitorMut for Finder {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
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
fn match_key(e: &ast::Expr) -> String {
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
    error: Option<SqlError>,
}

impl VisitorMut for OntoOutput<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        if let Some(&i) = self.keys.get(&match_key(expr)) {
            *expr = ast::Expr::Identifier(ast::Ident::new(format!("$g{i}")));
            return ControlFlow::Continue(());
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

/// One aggregate call's parts: its kind, argument, `DISTINCT` and `FILTER`.
fn call_parts(f: &ast::Function) -> Result<(AggKind, Option<ast::Expr>, bool)> {
    let at = at_span(f.span());
    let refuse = |what: &str| SqlError::Unsupported {
        at,
        what: format!("{what} in '{f}'"),
        supported: "COUNT(*), and COUNT, SUM, MIN, MAX and AVG of one argument, with \
                    DISTINCT and FILTER (WHERE ..), are"
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
    let [arg] = list.args.as_slice() else {
        return Err(refuse("other than one argument"));
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
    Ok((kind, arg, distinct))
}

/// The result type of an aggregate over `arg` (Flink's: COUNT is `BIGINT NOT NULL`; SUM,
/// MIN, MAX and AVG keep the argument's type).
fn result_type(kind: AggKind, arg: Option<&DataType>, at: Position) -> Result<DataType> {
    match (kind, arg) {
        (AggKind::CountStar | AggKind::Count, _) => Ok(DataType::not_null(SqlType::BigInt)),
        (AggKind::Sum | AggKind::Avg, Some(t)) if !t.ty.is_numeric() => Err(SqlError::Invalid {
            at,
            message: format!("SUM and AVG take a number, not {}", t.ty),
        }),
        (AggKind::Avg, Some(t)) if matches!(t.ty, SqlType::Decimal { .. }) => {
            Err(SqlError::Unsupported {
                at,
                what: "AVG of a DECIMAL".into(),
                supported: "AVG of integers and DOUBLE is".into(),
            })
        }
        (_, Some(t)) => Ok(DataType::nullable(t.ty.clone())),
        (_, None) => Err(SqlError::Invalid {
            at,
            message: "the aggregate takes an argument".into(),
        }),
    }
}

/// Plans `select` (with `group_by`, possibly empty for a global aggregate) over `input`.
pub fn plan(
    select: &ast::Select,
    group_by: &[ast::Expr],
    input: Planned,
    table_name: &str,
    at: Position,
) -> Result<Planned> {
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
    let schema = &input.schema;
    // The first Calc: WHERE, then the keys, the aggregates' arguments and filters.
    let where_condition = match &select.selection {
        Some(e) => Some(condition(e, e, schema, "WHERE")?),
        None => None,
    };
    let mut pre = Vec::new();
    let mut output = Vec::new();
    let mut keys = HashMap::new();
    for (i, g) in group_by.iter().enumerate() {
        let bound = bind(g, schema)?;
        keys.insert(match_key(g), i);
        output.push(Column {
            name: format!("$g{i}"),
            ty: bound.ty.clone(),
        });
        pre.push(Named {
            expr: bound.expr,
            text: g.to_string(),
        });
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
        let (kind, arg, distinct) = call_parts(f)?;
        let f_at = at_span(f.span());
        let arg_column = match &arg {
            Some(a) => {
                let bound = bind(a, schema)?;
                pre.push(Named {
                    expr: bound.expr,
                    text: a.to_string(),
                });
                Some((pre.len() - 1, bound.ty))
            }
            None => None,
        };
        let filter = match &f.filter {
            Some(w) => {
                pre.push(condition(w, w, schema, "FILTER")?);
                Some(pre.len() - 1)
            }
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
        });
    }
    let output = Schema::new(output);
    // The SELECT list and HAVING over the aggregate's output.
    let rewrite = |e: &ast::Expr| -> Result<ast::Expr> {
        let mut e = e.clone();
        let mut onto = OntoOutput {
            keys: &keys,
            calls: &call_index,
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

    let key_count = group_by.len();
    let agg = GroupAggregate {
        keys: key_count,
        calls,
    };
    let description = describe(group_by, &found);
    let pre = Calc {
        condition: where_condition,
        projection: pre,
    };
    let rows = input
        .rows
        .transform(
            &format!("Calc: GROUP BY input of {table_name}"),
            move |_| Ok(pre.clone()),
        )
        .key_by(move |c: &Change| -> Row { c.row[..key_count].to_vec() })
        .transform(&description, move |_| {
            Ok(GroupAggregateOperator::new(agg.clone()))
        });
    let post = Calc {
        condition: having,
        projection,
    };
    let rows = rows.transform(&format!("Calc: SELECT .. FROM {table_name}"), move |_| {
        Ok(post.clone())
    });
    Ok(Planned {
        rows,
        schema: Schema::new(columns),
        updated_by: Some(description),
    })
}

/// The operator's name, as Flink's plan shows it: `GroupAggregate(groupBy=[..],
/// select=[..])`.
fn describe(group_by: &[ast::Expr], calls: &[ast::Function]) -> String {
    let keys: Vec<String> = group_by.iter().map(ToString::to_string).collect();
    let calls: Vec<String> = calls.iter().map(ToString::to_string).collect();
    format!(
        "GroupAggregate(groupBy=[{}], select=[{}])",
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
        let mut parser = Parser::new(&FlinkDialect).try_with_sql(text).expect("tokens");
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
