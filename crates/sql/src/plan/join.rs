//! Inner joins: `a JOIN b ON ..` and `FROM a, b WHERE ..`, lowered onto a [`RegularJoin`]
//! keyed by the equalities between the two sides.
//!
//! The condition's conjuncts of the form `left_expr = right_expr` (each side's columns only)
//! are the join key: a `Calc` on each side appends the key's values to its rows, both sides
//! are partitioned by them and joined per key. An `ON`'s other conjuncts filter the joined
//! rows right after the join; a comma join's `WHERE` is applied whole by the query after it.
//! A join without any such equality (a cross or theta join) keys both sides by an empty key:
//! it runs in one subtask, the conditions over its two sides deciding the pairs inside it.
//!
//! A join of two append-only inputs whose conditions bound one side's rowtime by the
//! other's (`B.ts BETWEEN A.ts AND A.ts + INTERVAL '3' SECOND`, or `>=`/`<=` pairs) is an
//! interval join instead: Hummer's interval join operator, whose state the watermark bounds;
//! its result is append-only and keeps the left side's rowtime as its time attribute (where
//! no left row is padded). An outer one emits a row without a match, padded, once the
//! watermark passes the last time a match could come.

use hummer_api::DataStream;
use hummer_operators::Collector;
use hummer_operators::interval_join::{IntervalJoin, Unmatched};
use hummer_operators::keyed_process_function::KeyedProcessOperator;
use sqlparser::ast::{self, BinaryOperator};

use super::{Planned, condition, conjuncts};
use crate::changelog::Change;
use crate::connector::column_use::ColumnUse;
use crate::error::{Position, Result};
use crate::expr::Expr;
use crate::expr::bind::bind;
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::join::{ChangeJoin, JoinKind, RegularJoin, joined_row, matches_nothing};
use crate::lower::rowtime::Rowtime;
use crate::lower::window_join::{WindowJoin, WindowJoined};
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
pub(super) fn with_keys(schema: &Schema, keys: Vec<Named>) -> Calc {
    let mut projection = Named::columns(schema);
    projection.extend(keys);
    Calc::new(None, projection)
}

/// The conjuncts of `conditions` that equate an expression of the left side's columns with
/// one of the right side's (the join key, as left and right expressions), and the others.
pub(super) fn equalities<'a>(
    conditions: Option<&'a ast::Expr>,
    left: &Schema,
    right: &Schema,
) -> (Vec<Named>, Vec<Named>, Vec<&'a ast::Expr>) {
    let mut left_keys = Vec::new();
    let mut right_keys = Vec::new();
    let mut residual = Vec::new();
    for c in conditions.map(conjuncts).unwrap_or_default() {
        let pair = match c {
            ast::Expr::BinaryOp {
                left: a,
                op: BinaryOperator::Eq,
                right: b,
            } => match (bound_to(a, left), bound_to(b, right)) {
                (Some(l), Some(r)) => Some((l, r)),
                _ => match (bound_to(b, left), bound_to(a, right)) {
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
    (left_keys, right_keys, residual)
}

/// The conjuncts `conditions` as one condition over `schema` (a join's other conditions), in
/// a `Calc` with no projection: it tells whether a row passes without copying it.
pub(super) fn residual_filter(conditions: &[&ast::Expr], schema: &Schema) -> Result<Option<Calc>> {
    let Some((first, rest)) = conditions.split_first() else {
        return Ok(None);
    };
    let all = rest
        .iter()
        .fold((*first).clone(), |acc, c| ast::Expr::BinaryOp {
            left: Box::new(acc),
            op: BinaryOperator::And,
            right: Box::new((*c).clone()),
        });
    Ok(Some(Calc::new(
        Some(condition(&all, &all, schema, "ON")?),
        Vec::new(),
    )))
}

/// Joins `left` and `right` on the columns `columns` of both (`USING (..)`, `NATURAL`), each
/// shown once, first, as Flink (Calcite) shows them: the left side's value (the right's for a
/// right join, the one that is not `NULL` for a full join), then the other columns of each
/// side.
pub fn plan_using(
    left: Planned,
    right: Planned,
    kind: JoinKind,
    columns: &[String],
    at: Position,
) -> Result<Planned> {
    let left_width = left.schema.columns.len();
    let mut pairs = Vec::with_capacity(columns.len());
    for c in columns {
        pairs.push((left.schema.index_of(c, at)?, right.schema.index_of(c, at)?));
    }
    let on = columns
        .iter()
        .map(|c| ast::Expr::BinaryOp {
            left: Box::new(qualified_by_position(&left.schema, c)),
            op: BinaryOperator::Eq,
            right: Box::new(qualified_by_position(&right.schema, c)),
        })
        .reduce(|a, b| ast::Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        });
    let joined = plan(left, right, kind, on.as_ref(), true, at)?;
    // The USING columns once, then each side's others.
    let schema = &joined.schema;
    let mut projection = Vec::with_capacity(schema.columns.len() - pairs.len());
    let (mut names, mut qualifiers) = (Vec::new(), Vec::new());
    let mut push = |expr: Expr, column: usize, projection: &mut Vec<Named>| {
        projection.push(Named {
            expr,
            text: schema.columns[column].name.clone(),
        });
        names.push(schema.columns[column].clone());
        qualifiers.push(schema.qualifiers.get(column).cloned().flatten());
    };
    for &(l, r) in &pairs {
        let r = left_width + r;
        let expr = match kind {
            JoinKind::Inner | JoinKind::Left => Expr::Column(l),
            JoinKind::Right => Expr::Column(r),
            JoinKind::Full => Expr::Coalesce(vec![Expr::Column(l), Expr::Column(r)]),
        };
        push(
            expr,
            if kind == JoinKind::Right { r } else { l },
            &mut projection,
        );
    }
    for column in 0..schema.columns.len() {
        let used = pairs
            .iter()
            .any(|&(l, r)| column == l || column == left_width + r);
        if !used {
            push(Expr::Column(column), column, &mut projection);
        }
    }
    let calc = Calc::new(None, projection);
    let schema = Schema {
        columns: names,
        qualifiers,
    };
    Ok(Planned {
        schema,
        rowtime: None,
        window_bounds: None,
        ..joined.calc(calc, "Calc: USING columns")
    })
}

/// Column `name` of `schema` as an expression that names it alone: qualified by its table
/// where the schema knows it.
fn qualified_by_position(schema: &Schema, name: &str) -> ast::Expr {
    let qualifier = schema
        .columns
        .iter()
        .position(|c| c.name == name)
        .and_then(|i| schema.qualifiers.get(i).cloned().flatten());
    match qualifier {
        Some(q) => ast::Expr::CompoundIdentifier(vec![ast::Ident::new(q), ast::Ident::new(name)]),
        None => ast::Expr::Identifier(ast::Ident::new(name)),
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
    let (left_keys, right_keys, mut residual) = equalities(conditions, &left.schema, &right.schema);
    // Without an equality between the two sides (a cross join, a theta join), every row
    // meets every other: both sides go to one subtask (an empty key), as Flink runs such a
    // join, and the conditions that read only the two sides decide the pairs inside it.
    let cross = left_keys.is_empty();
    // Equal window bounds on both sides make a join of two windowed, append-only inputs a
    // window join: each window's pairs go out once the watermark passes its end.
    let window_end = window_end_in_key(&left, &right, &left_keys, &right_keys);
    // Bounds between the two sides' rowtimes make a join of append-only inputs an interval
    // join: its state is bounded by the watermark, its result keeps the times. An outer
    // one's other ON conditions decide what matches inside it, as Flink's.
    let interval = match (left.rowtime, right.rowtime) {
        (Some(lt), Some(rt))
            if window_end.is_none() && left.updated_by.is_none() && right.updated_by.is_none() =>
        {
            let sides = TimeSides {
                left: (&left.schema, lt),
                right: (&right.schema, rt),
            };
            let mut rest = residual.clone();
            match interval_bounds(&mut rest, &sides)? {
                Some(bounds) => {
                    residual = rest;
                    Some(bounds)
                }
                None => None,
            }
        }
        _ => None,
    };
    let (left_width, right_width) = (left.schema.columns.len(), right.schema.columns.len());
    // An outer join's other ON conditions decide what matches, inside the join.
    let condition_text: Vec<String> = residual.iter().map(ToString::to_string).collect();
    let outer_condition = if kind != JoinKind::Inner && on && !residual.is_empty() {
        let joined = Schema::join(&left.schema, &right.schema);
        let condition = residual_filter(&residual, &joined)?.and_then(|c| c.into_parts().0);
        residual.clear();
        condition.map(|c| c.expr)
    } else if cross && kind == JoinKind::Inner && !residual.is_empty() {
        // A WHERE's conjuncts may read tables joined later: only those over these two sides
        // go into the join (the WHERE is applied after it whole).
        let joined = Schema::join(&left.schema, &right.schema);
        let (inside, rest): (Vec<&ast::Expr>, Vec<&ast::Expr>) = residual
            .iter()
            .partition(|c| residual_filter(&[*c], &joined).is_ok());
        let condition = residual_filter(&inside, &joined)?.and_then(|c| c.into_parts().0);
        if on {
            residual = rest;
        }
        condition.map(|c| c.expr)
    } else {
        None
    };
    let description = format!(
        "Join(joinType=[{}], where=[{}])",
        kind.name(),
        left_keys
            .iter()
            .zip(&right_keys)
            .map(|(l, r)| format!("{} = {}", l.text, r.text))
            .chain(
                condition_text
                    .iter()
                    .filter(|_| outer_condition.is_some())
                    .cloned()
            )
            .collect::<Vec<_>>()
            .join(" AND ")
    );
    let left_rowtime = left.rowtime.unwrap_or(0);
    let left_calc = with_keys(&left.schema, left_keys);
    let right_calc = with_keys(&right.schema, right_keys);
    // What the join's readers read of its output decides what its state keeps.
    let output = ColumnUse::new(left_width + right_width);
    let read_by = |e: &Expr| {
        let mut used = vec![false; left_width + right_width];
        e.columns(&mut |c| {
            if let Some(u) = used.get_mut(c) {
                *u = true;
            }
        });
        used
    };
    if let Some(condition) = &outer_condition {
        output.mark(&read_by(condition));
    }
    if interval.is_some() {
        // The result's time attribute.
        let mut rowtime = vec![false; left_width + right_width];
        rowtime[left_rowtime] = true;
        output.mark(&rowtime);
    }
    let left_rows = left.rows_into(left_calc, "Calc: join key", &output, 0, left_width);
    let right_rows = right.rows_into(
        right_calc,
        "Calc: join key",
        &output,
        left_width,
        right_width,
    );
    let mut rows = match interval {
        _ if let Some(end_in_key) = window_end => {
            let function = WindowJoin {
                joined: WindowJoined::Pairs(kind),
                left_width,
                right_width,
                end_in_key,
                condition: outer_condition.as_ref().map(crate::expr::Compiled::new),
            };
            window_joined(left_rows, right_rows, function, &description)
        }
        Some((lower, upper)) => {
            let description = format!("Interval{description}, bounds=[{lower}, {upper}] ms");
            let rows = interval_join(
                left_rows,
                right_rows,
                (left_width, right_width),
                (kind, outer_condition.as_ref()),
                (lower, upper),
                &description,
            );
            // The result's time is the left row's where every row has one.
            if matches!(kind, JoinKind::Inner | JoinKind::Left) {
                rows.transform(
                    &format!(
                        "Rowtime: left time, watermark held back {} ms",
                        upper.max(0)
                    ),
                    move |_| {
                        Ok(Rowtime {
                            column: left_rowtime,
                            delay: upper.max(0),
                        })
                    },
                )
            } else {
                rows
            }
        }
        None => {
            let left_rows =
                left_rows.key_by(move |c: &Change| -> Row { c.row[left_width..].to_vec() });
            let right_rows =
                right_rows.key_by(move |c: &Change| -> Row { c.row[right_width..].to_vec() });
            left_rows
                .connect(&right_rows)
                .transform(&description, move |_| {
                    let join = RegularJoin::new(kind, left_width, right_width);
                    Ok(ChangeJoin(match &outer_condition {
                        Some(condition) => join.with_condition(condition.clone()),
                        None => join,
                    }))
                })
        }
    };
    let mut schema = Schema::join(&left.schema, &right.schema);
    // The columns an outer join pads take NULL.
    for (i, c) in schema.columns.iter_mut().enumerate() {
        if kind.preserves_padding_of(i < left_width) {
            c.ty.nullable = true;
        }
    }
    // An ON's other conditions filter the joined rows (a WHERE's come after, with the query).
    if on && let Some(filter) = residual_filter(&residual, &schema)? {
        let filter = Calc::new(filter.into_parts().0, Named::columns(&schema));
        output.mark(&filter.used_for(left_width + right_width, |_| false));
        rows = rows.transform("Calc: ON", move |_| Ok(filter.clone()));
    }
    Ok(Planned {
        scan: Some(output),
        // An outer join retracts the padded rows it emitted when their match comes.
        // (An outer interval or window join pads a row only once no match can come:
        // append-only.)
        updated_by: match kind {
            JoinKind::Inner => left.updated_by.or(right.updated_by),
            _ if interval.is_some() || window_end.is_some() => None,
            _ => Some(description.clone()),
        },
        // An interval join's result keeps the left side's rowtime as its time attribute
        // where no left row is padded.
        rowtime: interval
            .filter(|_| matches!(kind, JoinKind::Inner | JoinKind::Left))
            .and(left.rowtime),
        // A window join's result keeps the window of a side that is never padded.
        window_bounds: match (window_end, kind) {
            (Some(_), JoinKind::Inner | JoinKind::Left) => left.window_bounds,
            (Some(_), JoinKind::Right) => right
                .window_bounds
                .map(|(s, e)| (left_width + s, left_width + e)),
            _ => None,
        },
        ..Planned::new(rows, schema)
    })
}

/// The window join `function` of `left` and `right` (each row its side's columns, then the
/// key): both as one stream, each row tagged with its side, keyed by the key (which holds the
/// window).
pub(super) fn window_joined(
    left: DataStream<Change>,
    right: DataStream<Change>,
    function: WindowJoin,
    description: &str,
) -> DataStream<Change> {
    let tag = |left: bool| {
        move |mut c: Change| {
            c.row.push(crate::value::Value::Boolean(left));
            c
        }
    };
    let key = WindowJoin::key(function.left_width, function.right_width);
    left.map(tag(true))
        .union(&[right.map(tag(false))])
        .key_by(key.clone())
        .transform(&format!("Window{description}"), move |ctx| {
            Ok(KeyedProcessOperator::new(
                key.clone(),
                function.clone(),
                ctx,
            ))
        })
}

/// Where the window's end is among the join keys, if the keys equate both sides' window
/// bounds (start with start, end with end) and both inputs are windowed and append-only.
pub(super) fn window_end_in_key(
    left: &Planned,
    right: &Planned,
    left_keys: &[Named],
    right_keys: &[Named],
) -> Option<usize> {
    let ((ls, le), (rs, re)) = (left.window_bounds?, right.window_bounds?);
    if left.updated_by.is_some() || right.updated_by.is_some() {
        return None;
    }
    let pair = |a: usize, b: usize| {
        left_keys.iter().zip(right_keys).position(|(l, r)| {
            matches!(l.expr, Expr::Column(c) if c == a)
                && matches!(r.expr, Expr::Column(c) if c == b)
        })
    };
    pair(ls, rs)?;
    pair(le, re)
}

/// The interval join of `left` and `right` (rows of `widths` columns, then their key) with
/// `bounds` on the right row's time less the left's, its pairs those for which `condition`
/// (on the joined row) holds if there is one; an outer `kind` emits a preserved row padded
/// with `NULL`s once the watermark passes its last possible match. A row whose key holds a
/// `NULL` matches nothing: a preserved side's goes out padded past the join.
fn interval_join(
    left: DataStream<Change>,
    right: DataStream<Change>,
    (left_width, right_width): (usize, usize),
    (kind, condition): (JoinKind, Option<&Expr>),
    (lower, upper): (i64, i64),
    description: &str,
) -> DataStream<Change> {
    let condition = condition.map(crate::expr::Compiled::new);
    let (keep_left, keep_right) = (
        kind.preserves_padding_of(false),
        kind.preserves_padding_of(true),
    );
    let null_key = |width: usize| move |c: &Change| matches_nothing(&c.row[width..]);
    let has_key = |width: usize| move |c: &Change| !matches_nothing(&c.row[width..]);
    let mut bypass = Vec::new();
    if keep_left {
        bypass.push(left.filter(null_key(left_width)).map(move |c: Change| {
            Change::insert(joined_row(
                Some(&c.row[..left_width]),
                None,
                (left_width, right_width),
            ))
        }));
    }
    if keep_right {
        bypass.push(right.filter(null_key(right_width)).map(move |c: Change| {
            Change::insert(joined_row(
                None,
                Some(&c.row[..right_width]),
                (left_width, right_width),
            ))
        }));
    }
    let left = left
        .filter(has_key(left_width))
        .key_by(move |c: &Change| -> Row { c.row[left_width..].to_vec() });
    let right = right
        .filter(has_key(right_width))
        .key_by(move |c: &Change| -> Row { c.row[right_width..].to_vec() });
    let widths = (left_width, right_width);
    let joined = left.connect(&right).transform(description, move |ctx| {
        let join = IntervalJoin::new(
            move |c: &Change| -> Row { c.row[left_width..].to_vec() },
            move |c: &Change| -> Row { c.row[right_width..].to_vec() },
            lower,
            upper,
            move |l: &Change, r: &Change, out: &mut Collector<'_, Change>| {
                out.collect(Change::insert(joined_row(
                    Some(&l.row[..left_width]),
                    Some(&r.row[..right_width]),
                    widths,
                )));
            },
            ctx,
        );
        let join = match condition.clone() {
            // Only TRUE matches: NULL or an error does not (as the regular join's condition).
            Some(condition) => join.with_condition(move |l: &Change, r: &Change| {
                let row = joined_row(
                    Some(&l.row[..left_width]),
                    Some(&r.row[..right_width]),
                    widths,
                );
                matches!(condition.holds(&row), Ok(true))
            }),
            None => join,
        };
        Ok(if keep_left || keep_right {
            join.with_unmatched(
                keep_left,
                keep_right,
                move |u: Unmatched<'_, Change, Change>, out: &mut Collector<'_, Change>| {
                    let row = match u {
                        Unmatched::Left(l) => joined_row(Some(&l.row[..left_width]), None, widths),
                        Unmatched::Right(r) => {
                            joined_row(None, Some(&r.row[..right_width]), widths)
                        }
                    };
                    out.collect(Change::insert(row));
                },
            )
        } else {
            join
        })
    });
    if bypass.is_empty() {
        joined
    } else {
        joined.union(&bypass)
    }
}

/// The rowtime columns of a join's two sides.
struct TimeSides<'a> {
    left: (&'a Schema, usize),
    right: (&'a Schema, usize),
}

/// Which side's rowtime a term is, and the milliseconds added to it: `t`, `t + INTERVAL ..`
/// or `t - INTERVAL ..`.
fn time_term(e: &ast::Expr, sides: &TimeSides<'_>) -> Option<(bool, i64)> {
    match e {
        ast::Expr::Nested(inner) => time_term(inner, sides),
        ast::Expr::BinaryOp {
            left: t,
            op: op @ (BinaryOperator::Plus | BinaryOperator::Minus),
            right: interval,
        } => {
            let (is_left, offset) = time_term(t, sides)?;
            let ms = super::window::interval(interval).ok()?;
            Some((
                is_left,
                if *op == BinaryOperator::Plus {
                    offset + ms
                } else {
                    offset - ms
                },
            ))
        }
        _ => {
            let is = |(schema, rowtime): (&Schema, usize)| matches!(bind(e, schema), Ok(t) if matches!(t.expr, Expr::Column(c) if c == rowtime));
            if is(sides.left) {
                Some((true, 0))
            } else if is(sides.right) {
                Some((false, 0))
            } else {
                None
            }
        }
    }
}

/// What a comparison of the two rowtimes says of `b - a` (a left row at `a`, a right at
/// `b`): `(lower, upper)` bounds, either open.
fn time_bound(
    x: &ast::Expr,
    op: &BinaryOperator,
    y: &ast::Expr,
    sides: &TimeSides<'_>,
) -> Option<(Option<i64>, Option<i64>)> {
    let (x_left, xo) = time_term(x, sides)?;
    let (y_left, yo) = time_term(y, sides)?;
    if x_left == y_left {
        return None;
    }
    // As `a + lo (op) b + ro`, with the left side's term first.
    let (lo, op, ro) = if x_left {
        (xo, op.clone(), yo)
    } else {
        let flipped = match op {
            BinaryOperator::Lt => BinaryOperator::Gt,
            BinaryOperator::LtEq => BinaryOperator::GtEq,
            BinaryOperator::Gt => BinaryOperator::Lt,
            BinaryOperator::GtEq => BinaryOperator::LtEq,
            other => other.clone(),
        };
        (yo, flipped, xo)
    };
    // a + lo <= b + ro  <=>  b - a >= lo - ro.
    let d = lo - ro;
    match op {
        BinaryOperator::LtEq => Some((Some(d), None)),
        BinaryOperator::Lt => Some((Some(d + 1), None)),
        BinaryOperator::GtEq => Some((None, Some(d))),
        BinaryOperator::Gt => Some((None, Some(d - 1))),
        BinaryOperator::Eq => Some((Some(d), Some(d))),
        _ => None,
    }
}

/// The interval join's bounds on `b - a` if `conditions` bound the rowtimes on both sides,
/// with the conjuncts that say so taken out of them; `None` if they do not.
fn interval_bounds(
    conditions: &mut Vec<&ast::Expr>,
    sides: &TimeSides<'_>,
) -> Result<Option<(i64, i64)>> {
    let (mut lower, mut upper): (Option<i64>, Option<i64>) = (None, None);
    let mut used = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let bounds = match c {
            ast::Expr::BinaryOp { left, op, right } => time_bound(left, op, right, sides)
                .into_iter()
                .collect::<Vec<_>>(),
            ast::Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } => match (
                time_bound(expr, &BinaryOperator::GtEq, low, sides),
                time_bound(expr, &BinaryOperator::LtEq, high, sides),
            ) {
                (Some(a), Some(b)) => vec![a, b],
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        if bounds.is_empty() {
            continue;
        }
        used.push(i);
        for (lo, hi) in bounds {
            if let Some(lo) = lo {
                lower = Some(lower.map_or(lo, |l| l.max(lo)));
            }
            if let Some(hi) = hi {
                upper = Some(upper.map_or(hi, |u| u.min(hi)));
            }
        }
    }
    let (Some(lower), Some(upper)) = (lower, upper) else {
        return Ok(None);
    };
    if lower > upper {
        // No pair can meet both: a regular join with the conditions finds none either.
        return Ok(None);
    }
    for i in used.into_iter().rev() {
        conditions.remove(i);
    }
    Ok(Some((lower, upper)))
}
