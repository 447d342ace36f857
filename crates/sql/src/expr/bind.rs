//! Binding: a `sqlparser` expression resolved against a [`Schema`] and typed by Flink's
//! rules, or refused with the line and column of what is wrong.
//!
//! Numeric types widen `TINYINT` < `SMALLINT` < `INT` < `BIGINT` < `DECIMAL` < `FLOAT` <
//! `DOUBLE`; an integer meets a decimal as `DECIMAL(10, 0)` (`INT`) or `DECIMAL(19, 0)`
//! (`BIGINT`); a decimal result's precision and scale follow Flink's `LogicalTypeMerging`.

use sqlparser::ast::{self, BinaryOperator, CastKind, Spanned, UnaryOperator};

use super::codec::Codec;
use super::functions::{LikePattern, TimeField, TrimSide, date_pattern};
use super::json_path::{JsonFunction, JsonPath};
use super::math::{Math, Random};
use super::{Arith, Compare, Expr, Function, Typed, udf};
use crate::error::{Position, Result, SqlError};
use crate::schema::Schema;
use crate::types::{DataType, SqlType, from_sqlparser};
use crate::value::Value;

/// Binds `expr` to the columns of `schema`.
pub fn bind(expr: &ast::Expr, schema: &Schema) -> Result<Typed> {
    Binder { schema }.bind(expr)
}

struct Binder<'a> {
    schema: &'a Schema,
}

/// Where an expression starts.
fn at(expr: &ast::Expr) -> Position {
    let start = expr.span().start;
    Position::new(start.line.max(1), start.column.max(1))
}

fn typed(expr: Expr, ty: SqlType, nullable: bool) -> Typed {
    Typed {
        expr,
        ty: DataType { ty, nullable },
    }
}

/// Numeric rank for widening: see [`SqlType::numeric_rank`].
fn rank(ty: &SqlType) -> Option<u8> {
    ty.numeric_rank()
}

/// An exact numeric type as a decimal's precision and scale.
fn as_decimal(ty: &SqlType) -> (u8, u8) {
    match ty {
        SqlType::TinyInt => (3, 0),
        SqlType::SmallInt => (5, 0),
        SqlType::Int => (10, 0),
        SqlType::BigInt => (19, 0),
        SqlType::Decimal { precision, scale } => (*precision, *scale),
        _ => (38, 0),
    }
}

fn decimal(precision: i32, scale: i32) -> SqlType {
    // Flink's adjustment when the exact result would not fit 38 digits: keep the integral
    // digits, and at least 6 fraction digits.
    let (precision, scale) = if precision > 38 {
        let integral = precision - scale;
        (38, (38 - integral).max(scale.min(6)))
    } else {
        (precision, scale)
    };
    SqlType::Decimal {
        precision: precision.clamp(1, 38) as u8,
        scale: scale.clamp(0, 38) as u8,
    }
}

/// The type `a op b` is computed in, for two numeric types.
fn arith_type(op: Arith, a: &SqlType, b: &SqlType) -> SqlType {
    let (ra, rb) = (rank(a).unwrap_or(7), rank(b).unwrap_or(7));
    if ra >= 6 || rb >= 6 {
        return SqlType::Double;
    }
    if ra < 5 && rb < 5 {
        return if ra >= rb { a.clone() } else { b.clone() };
    }
    let ((p1, s1), (p2, s2)) = (as_decimal(a), as_decimal(b));
    let (p1, s1, p2, s2) = (i32::from(p1), i32::from(s1), i32::from(p2), i32::from(s2));
    match op {
        Arith::Add | Arith::Subtract => {
            let s = s1.max(s2);
            decimal((p1 - s1).max(p2 - s2) + s + 1, s)
        }
        Arith::Multiply => decimal(p1 + p2 + 1, s1 + s2),
        Arith::Divide => {
            let s = 6.max(s1 + p2 + 1);
            decimal(p1 - s1 + s2 + s, s)
        }
        Arith::Modulo => {
            let s = s1.max(s2);
            decimal((p1 - s1).min(p2 - s2) + s, s)
        }
    }
}

/// The type values of `a` and `b` share (a `CASE`'s results, `COALESCE`'s arguments, the
/// two sides of a comparison), if they have one.
pub fn common_type(a: &SqlType, b: &SqlType) -> Option<SqlType> {
    if a == b {
        return Some(a.clone());
    }
    match (a, b) {
        (SqlType::Null, t) | (t, SqlType::Null) => Some(t.clone()),
        (x, y) if rank(x).is_some() && rank(y).is_some() => {
            if rank(x)? >= 6 || rank(y)? >= 6 {
                return Some(SqlType::Double);
            }
            if rank(x)? < 5 && rank(y)? < 5 {
                return Some(if rank(x)? >= rank(y)? {
                    x.clone()
                } else {
                    y.clone()
                });
            }
            let ((p1, s1), (p2, s2)) = (as_decimal(x), as_decimal(y));
            let s = s1.max(s2);
            Some(decimal(
                i32::from((p1 - s1).max(p2 - s2)) + i32::from(s),
                i32::from(s),
            ))
        }
        (x, y) if x.is_string() && y.is_string() => Some(SqlType::STRING),
        (SqlType::Timestamp(p), SqlType::Timestamp(q)) => Some(SqlType::Timestamp(*p.max(q))),
        (SqlType::TimestampLtz(p), SqlType::TimestampLtz(q)) => {
            Some(SqlType::TimestampLtz(*p.max(q)))
        }
        _ => None,
    }
}

impl Binder<'_> {
    fn bind(&self, expr: &ast::Expr) -> Result<Typed> {
        use ast::Expr as E;
        let here = at(expr);
        match expr {
            E::Identifier(ident) => self.column(&ident.value, here),
            E::CompoundIdentifier(parts) => match parts.as_slice() {
                // A ROW column's field (`person.id`), where no table is so named.
                [column, field]
                    if !self.schema.is_qualifier(&column.value)
                        && self.schema.index_of(&column.value, here).is_ok() =>
                {
                    let row = self.column(&column.value, here)?;
                    self.field(row, &field.value, here)
                }
                [table, column, field] => {
                    let index =
                        self.schema
                            .index_of_qualified(&table.value, &column.value, here)?;
                    let row = Typed {
                        expr: Expr::Column(index),
                        ty: self.schema.columns[index].ty.clone(),
                    };
                    self.field(row, &field.value, here)
                }
                [.., table, column] => {
                    let index =
                        self.schema
                            .index_of_qualified(&table.value, &column.value, here)?;
                    Ok(Typed {
                        expr: Expr::Column(index),
                        ty: self.schema.columns[index].ty.clone(),
                    })
                }
                [column] => self.column(&column.value, here),
                [] => Err(self.unsupported(expr, "an empty name")),
            },
            E::Nested(inner) => self.bind(inner),
            E::Value(v) => literal(&v.value, here),
            E::Interval(interval) => Ok(typed(
                Expr::Literal(Value::BigInt(interval_millis(interval, here)?)),
                SqlType::Interval,
                false,
            )),
            E::UnaryOp { op, expr: inner } => {
                let e = self.bind(inner)?;
                match op {
                    UnaryOperator::Not => {
                        self.expect_boolean(&e, inner)?;
                        Ok(typed(
                            Expr::Not(Box::new(e.expr)),
                            SqlType::Boolean,
                            e.ty.nullable,
                        ))
                    }
                    UnaryOperator::Minus => {
                        self.expect_numeric(&e, inner)?;
                        Ok(Typed {
                            expr: Expr::Negate(Box::new(e.expr)),
                            ty: e.ty,
                        })
                    }
                    UnaryOperator::Plus => {
                        self.expect_numeric(&e, inner)?;
                        Ok(e)
                    }
                    other => Err(self.unsupported(expr, &format!("the operator {other}"))),
                }
            }
            E::BinaryOp { left, op, right } => self.binary(expr, left, op, right),
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let (x, y) = (self.bind(a)?, self.bind(b)?);
                if common_type(&x.ty.ty, &y.ty.ty).is_none() {
                    return Err(SqlError::Invalid {
                        at: here,
                        message: format!("'{expr}' compares {} with {}", x.ty.ty, y.ty.ty),
                    });
                }
                let not = matches!(expr, E::IsNotDistinctFrom(..));
                Ok(typed(
                    Expr::Call {
                        function: Function::Distinct(not),
                        args: vec![x.expr, y.expr],
                    },
                    SqlType::Boolean,
                    false,
                ))
            }
            E::IsNull(inner) | E::IsNotNull(inner) => {
                let e = self.bind(inner)?;
                let negated = matches!(expr, E::IsNotNull(_));
                Ok(typed(
                    Expr::IsNull(Box::new(e.expr), negated),
                    SqlType::Boolean,
                    false,
                ))
            }
            E::IsTrue(inner) | E::IsNotTrue(inner) | E::IsFalse(inner) | E::IsNotFalse(inner) => {
                let e = self.bind(inner)?;
                self.expect_boolean(&e, inner)?;
                let wanted = matches!(expr, E::IsTrue(_) | E::IsNotTrue(_));
                let negated = matches!(expr, E::IsNotTrue(_) | E::IsNotFalse(_));
                // `x IS TRUE` is `COALESCE(x = TRUE, FALSE)`: never NULL.
                let is = Expr::Coalesce(vec![
                    Expr::Compare {
                        op: Compare::Eq,
                        left: Box::new(e.expr),
                        right: Box::new(Expr::Literal(Value::Boolean(wanted))),
                    },
                    Expr::Literal(Value::Boolean(false)),
                ]);
                let is = if negated { Expr::Not(Box::new(is)) } else { is };
                Ok(typed(is, SqlType::Boolean, false))
            }
            E::Between {
                expr: value,
                negated,
                low,
                high,
            } => {
                let ge = self.comparison(Compare::GtEq, value, low)?;
                let le = self.comparison(Compare::LtEq, value, high)?;
                let nullable = ge.ty.nullable || le.ty.nullable;
                let both = Expr::And(vec![ge.expr, le.expr]);
                let e = if *negated {
                    Expr::Not(Box::new(both))
                } else {
                    both
                };
                Ok(typed(e, SqlType::Boolean, nullable))
            }
            E::In {
                expr: value,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => {
                let v = self.bind(value)?;
                let mut nullable = v.ty.nullable;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let i = self.bind(item)?;
                    if common_type(&v.ty.ty, &i.ty.ty).is_none() {
                        return Err(SqlError::Invalid {
                            at: at(item),
                            message: format!("IN compares {} with {}", v.ty.ty, i.ty.ty),
                        });
                    }
                    nullable |= i.ty.nullable;
                    items.push(i.expr);
                }
                Ok(typed(
                    Expr::InList {
                        expr: Box::new(v.expr),
                        list: items,
                        negated: *negated,
                    },
                    SqlType::Boolean,
                    nullable,
                ))
            }
            E::Like {
                negated,
                any: false,
                expr: value,
                pattern,
                escape_char,
            } => {
                let v = self.bind(value)?;
                self.expect_string(&v, value)?;
                let ast::Expr::Value(p) = pattern.as_ref() else {
                    return Err(self.unsupported(pattern, "a LIKE pattern that is not a literal"));
                };
                let ast::Value::SingleQuotedString(text) = &p.value else {
                    return Err(self.unsupported(pattern, "a LIKE pattern that is not a string"));
                };
                let escape = match escape_char.as_deref() {
                    None => None,
                    Some(ast::Expr::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(e) if e.chars().count() == 1 => {
                            e.chars().next()
                        }
                        _ => {
                            return Err(
                                self.unsupported(expr, "an ESCAPE that is not one character")
                            );
                        }
                    },
                    Some(other) => {
                        return Err(self.unsupported(other, "an ESCAPE that is not a literal"));
                    }
                };
                let compiled =
                    LikePattern::new(text, escape).map_err(|message| SqlError::Invalid {
                        at: at(pattern),
                        message,
                    })?;
                let like = Expr::Call {
                    function: Function::Like(compiled),
                    args: vec![v.expr],
                };
                let e = if *negated {
                    Expr::Not(Box::new(like))
                } else {
                    like
                };
                Ok(typed(e, SqlType::Boolean, v.ty.nullable))
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut branches = Vec::with_capacity(conditions.len());
                let mut ty = SqlType::Null;
                let mut nullable = else_result.is_none();
                for when in conditions {
                    let condition = match operand {
                        Some(op) => self.comparison(Compare::Eq, op, &when.condition)?,
                        None => {
                            let c = self.bind(&when.condition)?;
                            self.expect_boolean(&c, &when.condition)?;
                            c
                        }
                    };
                    let result = self.bind(&when.result)?;
                    ty = self.merge(&ty, &result.ty.ty, &when.result)?;
                    nullable |= result.ty.nullable;
                    branches.push((condition.expr, result.expr));
                }
                let otherwise = match else_result {
                    Some(e) => {
                        let r = self.bind(e)?;
                        ty = self.merge(&ty, &r.ty.ty, e)?;
                        nullable |= r.ty.nullable;
                        r.expr
                    }
                    None => Expr::Literal(Value::Null),
                };
                let branches = branches
                    .into_iter()
                    .map(|(c, r)| (c, coerce(r, &ty)))
                    .collect();
                Ok(typed(
                    Expr::Case {
                        branches,
                        otherwise: Box::new(coerce(otherwise, &ty)),
                    },
                    ty,
                    nullable,
                ))
            }
            E::Cast {
                kind,
                expr: value,
                data_type,
                ..
            } => {
                let v = self.bind(value)?;
                let to = value_type(data_type, here, || {
                    format!("a cast to the type {data_type}")
                })?;
                let try_cast = matches!(kind, CastKind::TryCast | CastKind::SafeCast);
                let whole_seconds =
                    |t: &SqlType| matches!(t, SqlType::Timestamp(0) | SqlType::TimestampLtz(0));
                let expr = match (&v.ty.ty, &to.ty) {
                    // An interval prints as Flink shows it.
                    (SqlType::Interval, to) if to.is_string() => Expr::Call {
                        function: Function::IntervalText,
                        args: vec![v.expr],
                    },
                    // A TIMESTAMP(0) prints without a fraction, as Flink's.
                    (from, to) if whole_seconds(from) && to.is_string() => Expr::Call {
                        function: Function::DateFormat(
                            date_pattern("yyyy-MM-dd HH:mm:ss").unwrap_or_default(),
                        ),
                        args: vec![v.expr],
                    },
                    // A cast to TIMESTAMP(0) drops the milliseconds.
                    (_, to) if whole_seconds(to) => Expr::Call {
                        function: Function::FloorTime(TimeField::Second),
                        args: vec![Expr::Cast {
                            expr: Box::new(v.expr),
                            to: to.clone(),
                            try_cast,
                        }],
                    },
                    _ => Expr::Cast {
                        expr: Box::new(v.expr),
                        to: to.ty.clone(),
                        try_cast,
                    },
                };
                Ok(typed(expr, to.ty, v.ty.nullable || try_cast))
            }
            // `TIMESTAMP '2020-01-01 00:00:00'`: the text cast to the type, once, here.
            E::TypedString(literal) => {
                let to = value_type(&literal.data_type, here, || {
                    format!("a literal of the type {}", literal.data_type)
                })?;
                let text = literal_string(&E::Value(literal.value.clone())).unwrap_or_default();
                let value = super::cast(Value::String(text.clone()), &to.ty)
                    .ok()
                    .filter(|v| !v.is_null())
                    .ok_or_else(|| SqlError::Invalid {
                        at: here,
                        message: format!("'{text}' is not a {}", to.ty),
                    })?;
                Ok(typed(Expr::Literal(value), to.ty, false))
            }
            E::Substring {
                expr: value,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![value.as_ref()];
                args.extend(substring_from.as_deref());
                args.extend(substring_for.as_deref());
                self.call(expr, "SUBSTRING", &args)
            }
            E::Trim {
                trim_where,
                trim_what,
                expr: value,
                ..
            } => {
                let side = match trim_where {
                    Some(ast::TrimWhereField::Leading) => TrimSide::Leading,
                    Some(ast::TrimWhereField::Trailing) => TrimSide::Trailing,
                    _ => TrimSide::Both,
                };
                let v = self.bind(value)?;
                self.expect_string(&v, value)?;
                let mut args = vec![v.expr];
                let mut nullable = v.ty.nullable;
                if let Some(what) = trim_what {
                    let w = self.bind(what)?;
                    self.expect_string(&w, what)?;
                    nullable |= w.ty.nullable;
                    args.push(w.expr);
                }
                Ok(typed(
                    Expr::Call {
                        function: Function::Trim(side),
                        args,
                    },
                    SqlType::STRING,
                    nullable,
                ))
            }
            E::Extract {
                field, expr: value, ..
            } => {
                let v = self.bind(value)?;
                self.expect_time(&v, value)?;
                let field = time_field(field).ok_or_else(|| SqlError::Unsupported {
                    at: here,
                    what: format!("EXTRACT({field} ..)"),
                    supported: "EXTRACT of YEAR, QUARTER, MONTH, WEEK, DAY, DOW, DOY, HOUR, \
                                MINUTE, SECOND and MILLISECOND is"
                        .into(),
                })?;
                Ok(typed(
                    Expr::Call {
                        function: Function::TimeField(field),
                        args: vec![v.expr],
                    },
                    SqlType::BigInt,
                    v.ty.nullable,
                ))
            }
            E::Floor { expr: value, field } | E::Ceil { expr: value, field } => {
                let up = matches!(expr, E::Ceil { .. });
                let v = self.bind(value)?;
                let unit = match field {
                    ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime) => None,
                    ast::CeilFloorKind::DateTimeField(f) => Some(
                        time_field(f)
                            .filter(|u| u.floor(0).is_some())
                            .ok_or_else(|| SqlError::Unsupported {
                                at: here,
                                what: format!("FLOOR/CEIL to {f}"),
                                supported: "FLOOR and CEIL (t TO YEAR, QUARTER, MONTH, WEEK, \
                                            DAY, HOUR, MINUTE, SECOND) are"
                                    .into(),
                            })?,
                    ),
                    ast::CeilFloorKind::Scale(_) => {
                        return Err(SqlError::Unsupported {
                            at: here,
                            what: format!("'{expr}'"),
                            supported: "FLOOR(n), CEIL(n) and FLOOR/CEIL(t TO unit) are".into(),
                        });
                    }
                };
                let (function, ty) = match unit {
                    Some(unit) => {
                        self.expect_time(&v, value)?;
                        let f = if up {
                            Function::CeilTime(unit)
                        } else {
                            Function::FloorTime(unit)
                        };
                        (f, v.ty.ty.clone())
                    }
                    None => {
                        self.expect_numeric(&v, value)?;
                        let ty = match v.ty.ty {
                            SqlType::Decimal { precision, scale } => SqlType::Decimal {
                                precision: (precision - scale + u8::from(scale > 0)).clamp(1, 38),
                                scale: 0,
                            },
                            ref other => other.clone(),
                        };
                        (if up { Function::Ceil } else { Function::Floor }, ty)
                    }
                };
                Ok(typed(
                    Expr::Call {
                        function,
                        args: vec![v.expr],
                    },
                    ty,
                    v.ty.nullable,
                ))
            }
            E::Position { expr: needle, r#in } => {
                self.call(expr, "POSITION", &[needle.as_ref(), r#in.as_ref()])
            }
            E::Function(f) => {
                let name = f.name.to_string().to_uppercase();
                let list = match &f.args {
                    ast::FunctionArguments::List(list) => list,
                    // `CURRENT_TIMESTAMP`, `LOCALTIMESTAMP`: called without parentheses.
                    ast::FunctionArguments::None if NILADIC.contains(&name.as_str()) => {
                        return self.call(expr, &name, &[]);
                    }
                    _ => {
                        return Err(self.unsupported(expr, &format!("{name} without arguments")));
                    }
                };
                if f.over.is_some() || f.filter.is_some() || list.duplicate_treatment.is_some() {
                    return Err(self.unsupported(
                        expr,
                        &format!("the aggregate or window function {name} here"),
                    ));
                }
                let mut args = Vec::with_capacity(list.args.len());
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(e),
                        _ => {
                            return Err(self.unsupported(
                                expr,
                                &format!("an argument of {name} of this form"),
                            ));
                        }
                    }
                }
                if name == "TIMESTAMPADD" || name == "TIMESTAMPDIFF" {
                    return self.timestamp_arithmetic(expr, &name, &args);
                }
                let called = self.call(expr, &name, &args)?;
                // `JSON_VALUE(.. RETURNING INT)`: the value as that type, NULL where it is
                // not one (Flink's default `NULL ON ERROR`).
                let returning = list.clauses.iter().find_map(|c| match c {
                    ast::FunctionArgumentClause::JsonReturningClause(r) => Some(&r.data_type),
                    _ => None,
                });
                match returning {
                    None => Ok(called),
                    Some(data_type) if name == "JSON_VALUE" => {
                        let to = value_type(data_type, here, || {
                            format!("JSON_VALUE .. RETURNING {data_type}")
                        })?;
                        let expr = Expr::Cast {
                            expr: Box::new(called.expr),
                            to: to.ty.clone(),
                            try_cast: true,
                        };
                        Ok(typed(expr, to.ty, true))
                    }
                    Some(_) => Err(self.unsupported(expr, &format!("RETURNING in {name}"))),
                }
            }
            E::In {
                target: ast::InTarget::Subquery(_),
                ..
            }
            | E::Exists { .. }
            | E::Subquery(_) => Err(SqlError::Unsupported {
                at: here,
                what: format!("the subquery in '{expr}' here"),
                supported: "IN (SELECT ..), NOT IN, EXISTS and NOT EXISTS as conditions of WHERE \
                            (joined by AND), and scalar subqueries in WHERE and in the SELECT \
                            list of a query without GROUP BY, are"
                    .into(),
            }),
            other => Err(self.unsupported(other, "this expression")),
        }
    }

    /// `TIMESTAMPADD(unit, n, t)` and `TIMESTAMPDIFF(unit, from, to)`: the unit is a word,
    /// not a value.
    fn timestamp_arithmetic(
        &self,
        whole: &ast::Expr,
        name: &str,
        args: &[&ast::Expr],
    ) -> Result<Typed> {
        let [unit, a, b] = args else {
            return Err(SqlError::Invalid {
                at: at(whole),
                message: format!(
                    "{name} takes 3 arguments (a unit and two values), not {}",
                    args.len()
                ),
            });
        };
        let word = match unit {
            ast::Expr::Identifier(id) => id.value.to_uppercase(),
            other => other.to_string().to_uppercase(),
        };
        let unit = match word.trim_start_matches("SQL_TSI_") {
            "YEAR" => TimeField::Year,
            "QUARTER" => TimeField::Quarter,
            "MONTH" => TimeField::Month,
            "WEEK" => TimeField::Week,
            "DAY" => TimeField::Day,
            "HOUR" => TimeField::Hour,
            "MINUTE" => TimeField::Minute,
            "SECOND" => TimeField::Second,
            "MILLISECOND" => TimeField::Millisecond,
            _ => {
                return Err(SqlError::Unsupported {
                    at: at(unit),
                    what: format!("{name} in '{word}'"),
                    supported: "YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND and \
                                MILLISECOND are"
                        .into(),
                });
            }
        };
        let (x, y) = (self.bind(a)?, self.bind(b)?);
        let nullable = x.ty.nullable || y.ty.nullable;
        let (function, ty) = if name == "TIMESTAMPADD" {
            self.expect_integer(&x, a)?;
            self.expect_time(&y, b)?;
            (Function::TimestampAdd(unit), y.ty.ty.clone())
        } else {
            self.expect_time(&x, a)?;
            self.expect_time(&y, b)?;
            (Function::TimestampDiff(unit), SqlType::Int)
        };
        Ok(typed(
            Expr::Call {
                function,
                args: vec![x.expr, y.expr],
            },
            ty,
            nullable,
        ))
    }

    /// The field `name` of the `ROW` value `row`.
    fn field(&self, row: Typed, name: &str, here: Position) -> Result<Typed> {
        let SqlType::Row(fields) = &row.ty.ty else {
            return Err(SqlError::Invalid {
                at: here,
                message: format!(
                    "'{name}' is a field of a ROW, and this value is {}",
                    row.ty.ty
                ),
            });
        };
        let Some(index) = fields.iter().position(|f| f.name == name) else {
            return Err(SqlError::unknown(
                here,
                "field",
                name,
                fields.iter().map(|f| f.name.as_str()),
            ));
        };
        let ty = DataType {
            nullable: row.ty.nullable || fields[index].ty.nullable,
            ..fields[index].ty.clone()
        };
        Ok(Typed {
            expr: Expr::Field {
                row: Box::new(row.expr),
                index,
            },
            ty,
        })
    }

    fn column(&self, name: &str, here: Position) -> Result<Typed> {
        let index = self.schema.index_of(name, here)?;
        let ty = self.schema.columns[index].ty.clone();
        Ok(Typed {
            expr: Expr::Column(index),
            ty,
        })
    }

    fn binary(
        &self,
        whole: &ast::Expr,
        left: &ast::Expr,
        op: &BinaryOperator,
        right: &ast::Expr,
    ) -> Result<Typed> {
        let arith = match op {
            BinaryOperator::Plus => Some(Arith::Add),
            BinaryOperator::Minus => Some(Arith::Subtract),
            BinaryOperator::Multiply => Some(Arith::Multiply),
            BinaryOperator::Divide => Some(Arith::Divide),
            BinaryOperator::Modulo => Some(Arith::Modulo),
            _ => None,
        };
        if let Some(arith) = arith {
            return self.arithmetic(arith, left, right);
        }
        let compare = match op {
            BinaryOperator::Eq => Some(Compare::Eq),
            BinaryOperator::NotEq => Some(Compare::NotEq),
            BinaryOperator::Lt => Some(Compare::Lt),
            BinaryOperator::LtEq => Some(Compare::LtEq),
            BinaryOperator::Gt => Some(Compare::Gt),
            BinaryOperator::GtEq => Some(Compare::GtEq),
            _ => None,
        };
        if let Some(compare) = compare {
            return self.comparison(compare, left, right);
        }
        match op {
            BinaryOperator::And | BinaryOperator::Or => {
                let (l, r) = (self.bind(left)?, self.bind(right)?);
                self.expect_boolean(&l, left)?;
                self.expect_boolean(&r, right)?;
                let nullable = l.ty.nullable || r.ty.nullable;
                let terms = vec![l.expr, r.expr];
                let e = if *op == BinaryOperator::And {
                    Expr::And(terms)
                } else {
                    Expr::Or(terms)
                };
                Ok(typed(e, SqlType::Boolean, nullable))
            }
            BinaryOperator::StringConcat => self.call(whole, "CONCAT", &[left, right]),
            other => Err(self.unsupported(whole, &format!("the operator {other}"))),
        }
    }

    fn arithmetic(&self, op: Arith, left: &ast::Expr, right: &ast::Expr) -> Result<Typed> {
        let (l, r) = (self.bind(left)?, self.bind(right)?);
        let moves = l.ty.ty.is_time() || l.ty.ty == SqlType::Date;
        if moves && matches!(op, Arith::Add | Arith::Subtract) {
            if r.ty.ty != SqlType::Interval {
                return Err(SqlError::Invalid {
                    at: at(right),
                    message: format!(
                        "'{right}' is {}, where an INTERVAL is expected (a time moves by an \
                         interval)",
                        r.ty.ty
                    ),
                });
            }
            let nullable = l.ty.nullable || r.ty.nullable;
            let shifted = Expr::ShiftTime {
                time: Box::new(l.expr),
                by: Box::new(r.expr),
                subtract: op == Arith::Subtract,
            };
            return Ok(typed(shifted, l.ty.ty, nullable));
        }
        self.expect_numeric(&l, left)?;
        self.expect_numeric(&r, right)?;
        let ty = arith_type(op, &l.ty.ty, &r.ty.ty);
        let nullable = l.ty.nullable || r.ty.nullable || matches!(ty, SqlType::Decimal { .. });
        Ok(typed(
            Expr::Arith {
                op,
                left: Box::new(l.expr),
                right: Box::new(r.expr),
                ty: ty.clone(),
            },
            ty,
            nullable,
        ))
    }

    fn comparison(&self, op: Compare, left: &ast::Expr, right: &ast::Expr) -> Result<Typed> {
        let (l, r) = comparable(self.bind(left)?, self.bind(right)?);
        if common_type(&l.ty.ty, &r.ty.ty).is_none() {
            return Err(SqlError::Invalid {
                at: at(left),
                message: format!("cannot compare {} with {}", l.ty.ty, r.ty.ty),
            });
        }
        let nullable = l.ty.nullable || r.ty.nullable;
        Ok(typed(
            Expr::Compare {
                op,
                left: Box::new(l.expr),
                right: Box::new(r.expr),
            },
            SqlType::Boolean,
            nullable,
        ))
    }

    /// A built-in function called `name` on `args`.
    fn call(&self, whole: &ast::Expr, name: &str, args: &[&ast::Expr]) -> Result<Typed> {
        let mut bound = args
            .iter()
            .map(|a| self.bind(a))
            .collect::<Result<Vec<_>>>()?;
        let name = match udf::resolve(name) {
            None => name,
            Some(udf::Resolved::BuiltIn(builtin)) => builtin,
            Some(udf::Resolved::Registered(udf)) => {
                let types: Vec<DataType> = bound.iter().map(|b| b.ty.clone()).collect();
                let ty = udf
                    .function
                    .result_type(&types)
                    .map_err(|why| SqlError::Invalid {
                        at: at(whole),
                        message: format!(
                            "the function '{}' does not take this call: {why}",
                            udf.name
                        ),
                    })?;
                return Ok(Typed {
                    expr: Expr::Call {
                        function: Function::Udf(udf),
                        args: bound.into_iter().map(|b| b.expr).collect(),
                    },
                    ty,
                });
            }
        };
        let arity = |range: std::ops::RangeInclusive<usize>| {
            if range.contains(&bound.len()) {
                Ok(())
            } else {
                Err(SqlError::Invalid {
                    at: at(whole),
                    message: format!(
                        "{name} takes {} arguments, not {}",
                        if range.start() == range.end() {
                            range.start().to_string()
                        } else {
                            format!("{} to {}", range.start(), range.end())
                        },
                        bound.len()
                    ),
                })
            }
        };
        // Whether the result may be NULL: where an argument may, unless an arm says otherwise.
        let mut nullable = bound.iter().any(|b| b.ty.nullable);
        // The first `count` arguments are strings.
        let strings = |count: usize| -> Result<()> {
            for (b, a) in bound.iter().zip(args).take(count) {
                self.expect_string(b, a)?;
            }
            Ok(())
        };
        let (function, ty) = match name {
            "UPPER" | "LOWER" => {
                arity(1..=1)?;
                strings(1)?;
                let f = if name == "UPPER" {
                    Function::Upper
                } else {
                    Function::Lower
                };
                (f, SqlType::STRING)
            }
            "CHAR_LENGTH" | "CHARACTER_LENGTH" => {
                arity(1..=1)?;
                strings(1)?;
                (Function::CharLength, SqlType::Int)
            }
            "CONCAT" => {
                arity(1..=usize::MAX)?;
                (Function::Concat, SqlType::STRING)
            }
            "CONCAT_WS" => {
                arity(2..=usize::MAX)?;
                (Function::ConcatWs, SqlType::STRING)
            }
            "SUBSTRING" | "SUBSTR" => {
                arity(2..=3)?;
                strings(1)?;
                for (b, a) in bound.iter().zip(args).skip(1) {
                    self.expect_integer(b, a)?;
                }
                // NULL for a negative length.
                nullable |= bound.len() > 2;
                (Function::Substring, SqlType::STRING)
            }
            "REPLACE" => {
                arity(3..=3)?;
                strings(3)?;
                (Function::Replace, SqlType::STRING)
            }
            "POSITION" => {
                arity(2..=2)?;
                strings(2)?;
                (Function::Position, SqlType::Int)
            }
            "ABS" => {
                arity(1..=1)?;
                self.expect_numeric(&bound[0], args[0])?;
                let ty = bound[0].ty.ty.clone();
                (Function::Abs, ty)
            }
            "DATE_FORMAT" => {
                arity(2..=2)?;
                self.expect_time(&bound[0], args[0])?;
                let pieces = self.literal_date_pattern(args[1], "DATE_FORMAT")?;
                // The pattern is applied at bind time: the call takes the time only.
                bound.truncate(1);
                (Function::DateFormat(pieces), SqlType::STRING)
            }
            "YEAR" | "QUARTER" | "MONTH" | "WEEK" | "DAYOFMONTH" | "DAYOFWEEK" | "DAYOFYEAR"
            | "HOUR" | "MINUTE" | "SECOND" => {
                arity(1..=1)?;
                self.expect_time(&bound[0], args[0])?;
                let field = match name {
                    "YEAR" => TimeField::Year,
                    "QUARTER" => TimeField::Quarter,
                    "MONTH" => TimeField::Month,
                    "WEEK" => TimeField::Week,
                    "DAYOFMONTH" => TimeField::Day,
                    "DAYOFWEEK" => TimeField::DayOfWeek,
                    "DAYOFYEAR" => TimeField::DayOfYear,
                    "HOUR" => TimeField::Hour,
                    "MINUTE" => TimeField::Minute,
                    _ => TimeField::Second,
                };
                (Function::TimeField(field), SqlType::BigInt)
            }
            "REGEXP_EXTRACT" => {
                arity(2..=3)?;
                strings(2)?;
                if let Some(group) = bound.get(2) {
                    self.expect_integer(group, args[2])?;
                }
                let regex = self.literal_regex(args[1], "REGEXP_EXTRACT")?;
                // NULL where nothing matches.
                nullable = true;
                (Function::RegexpExtract(regex), SqlType::STRING)
            }
            "REGEXP_REPLACE" => {
                arity(3..=3)?;
                strings(3)?;
                let regex = self.literal_regex(args[1], "REGEXP_REPLACE")?;
                (Function::RegexpReplace(regex), SqlType::STRING)
            }
            "LTRIM" | "RTRIM" => {
                arity(1..=1)?;
                strings(1)?;
                let leading = name == "LTRIM";
                (Function::TrimSpaces { leading }, SqlType::STRING)
            }
            "LPAD" | "RPAD" => {
                arity(3..=3)?;
                self.expect_string(&bound[0], args[0])?;
                self.expect_integer(&bound[1], args[1])?;
                self.expect_string(&bound[2], args[2])?;
                // NULL for a negative length or an empty pad.
                nullable = true;
                let left = name == "LPAD";
                (Function::Pad { left }, SqlType::STRING)
            }
            "REPEAT" | "LEFT" | "RIGHT" => {
                arity(2..=2)?;
                self.expect_string(&bound[0], args[0])?;
                self.expect_integer(&bound[1], args[1])?;
                let f = match name {
                    "REPEAT" => Function::Repeat,
                    "LEFT" => Function::Side { left: true },
                    _ => Function::Side { left: false },
                };
                (f, SqlType::STRING)
            }
            "REVERSE" | "INITCAP" => {
                arity(1..=1)?;
                strings(1)?;
                let f = match name {
                    "REVERSE" => Function::Reverse,
                    _ => Function::InitCap,
                };
                (f, SqlType::STRING)
            }
            "GREATEST" | "LEAST" => {
                arity(1..=usize::MAX)?;
                let mut ty = SqlType::Null;
                for (b, a) in bound.iter().zip(args) {
                    ty = self.merge(&ty, &b.ty.ty, a)?;
                }
                let exprs = bound.into_iter().map(|b| coerce(b.expr, &ty)).collect();
                let greatest = name == "GREATEST";
                return Ok(typed(
                    Expr::Call {
                        function: Function::Extreme { greatest },
                        args: exprs,
                    },
                    ty,
                    nullable,
                ));
            }
            "SIGN" => {
                arity(1..=1)?;
                self.expect_numeric(&bound[0], args[0])?;
                (Function::Sign, bound[0].ty.ty.clone())
            }
            "EXP" | "LOG10" | "LOG2" => {
                arity(1..=1)?;
                self.expect_numeric(&bound[0], args[0])?;
                let f = match name {
                    "EXP" => Function::Exp,
                    "LOG10" => Function::Log(10.0),
                    _ => Function::Log(2.0),
                };
                (f, SqlType::Double)
            }
            "FROM_UNIXTIME" => {
                arity(1..=2)?;
                self.expect_integer(&bound[0], args[0])?;
                let pieces = match args.get(1) {
                    Some(a) => self.literal_date_pattern(a, "FROM_UNIXTIME")?,
                    // Flink's default, a pattern that parses.
                    None => date_pattern("yyyy-MM-dd HH:mm:ss").unwrap_or_default(),
                };
                (Function::FromUnixtime(pieces), SqlType::STRING)
            }
            "SPLIT_INDEX" => {
                arity(3..=3)?;
                strings(2)?;
                self.expect_integer(&bound[2], args[2])?;
                // NULL out of range.
                nullable = true;
                (Function::SplitIndex, SqlType::STRING)
            }
            "TO_TIMESTAMP" | "TO_DATE" => {
                arity(1..=2)?;
                strings(1)?;
                let date = name == "TO_DATE";
                let pieces = match args.get(1) {
                    Some(a) => self.literal_date_pattern(a, name)?,
                    // No pattern: Flink's default (a date's time dropped, a timestamp's
                    // fraction of a second any).
                    None => Vec::new(),
                };
                // NULL where the text does not follow the pattern.
                nullable = true;
                bound.truncate(1);
                match date {
                    true => (Function::ToDate(pieces), SqlType::Date),
                    false => (Function::ToTimestamp(pieces), SqlType::Timestamp(3)),
                }
            }
            "UNIX_TIMESTAMP" => {
                arity(0..=2)?;
                let pieces = match args.len() {
                    0 => None,
                    _ => {
                        strings(1)?;
                        nullable = true;
                        Some(match args.get(1) {
                            Some(a) => self.literal_date_pattern(a, "UNIX_TIMESTAMP")?,
                            None => date_pattern("yyyy-MM-dd HH:mm:ss").unwrap_or_default(),
                        })
                    }
                };
                bound.truncate(1);
                (Function::UnixTimestamp(pieces), SqlType::BigInt)
            }
            "CURRENT_DATE" => {
                arity(0..=0)?;
                (Function::Today, SqlType::Date)
            }
            "CURRENT_TIMESTAMP" | "NOW" | "LOCALTIMESTAMP" | "CURRENT_ROW_TIMESTAMP" => {
                arity(0..=0)?;
                let local = name == "LOCALTIMESTAMP";
                let ty = if local {
                    SqlType::Timestamp(3)
                } else {
                    SqlType::TimestampLtz(3)
                };
                (Function::Now { local }, ty)
            }
            "PROCTIME" => {
                arity(0..=0)?;
                nullable = false;
                (Function::ProcTime, SqlType::TimestampLtz(3))
            }
            "COUNT_CHAR" => {
                arity(2..=2)?;
                strings(2)?;
                // 0, not NULL, for a NULL string.
                nullable = false;
                (Function::CountChar, SqlType::BigInt)
            }
            "MOD" => {
                arity(2..=2)?;
                return self.arithmetic(Arith::Modulo, args[0], args[1]);
            }
            "POWER" | "SQRT" | "LN" => {
                arity(if name == "POWER" { 2..=2 } else { 1..=1 })?;
                for (b, a) in bound.iter().zip(args) {
                    self.expect_numeric(b, a)?;
                }
                let f = match name {
                    "POWER" => Function::Power,
                    "SQRT" => Function::Sqrt,
                    _ => Function::Ln,
                };
                (f, SqlType::Double)
            }
            "TRUNCATE" => {
                arity(1..=2)?;
                self.expect_numeric(&bound[0], args[0])?;
                let digits = match args.get(1) {
                    Some(a) => literal_integer(a).ok_or_else(|| {
                        self.unsupported(a, "TRUNCATE's digits that are not a literal")
                    })?,
                    None => 0,
                };
                match &bound[0].ty.ty {
                    SqlType::Decimal { precision, scale } => {
                        let kept = digits.clamp(0, i64::from(*scale)) as u8;
                        let ty = SqlType::Decimal {
                            precision: (*precision - *scale + kept).max(1),
                            scale: kept,
                        };
                        (Function::Truncate(Some(kept)), ty)
                    }
                    other => (Function::Truncate(None), other.clone()),
                }
            }
            "SIN" | "COS" | "TAN" | "COT" | "ASIN" | "ACOS" | "ATAN" | "ATAN2" | "SINH"
            | "COSH" | "TANH" | "DEGREES" | "RADIANS" | "LOG" | "PI" | "E" => {
                let Some((f, least, most)) = Math::named(name) else {
                    return Err(self.unsupported(whole, name));
                };
                arity(least..=most)?;
                for (b, a) in bound.iter().zip(args) {
                    self.expect_numeric(b, a)?;
                }
                (Function::Math(f), SqlType::Double)
            }
            "RAND" | "UUID" => {
                arity(0..=0)?;
                match name {
                    "RAND" => (Function::Random(Random::Double), SqlType::Double),
                    _ => (Function::Random(Random::Uuid), SqlType::STRING),
                }
            }
            "RAND_INTEGER" => {
                arity(1..=1)?;
                self.expect_integer(&bound[0], args[0])?;
                (Function::Random(Random::Integer), SqlType::Int)
            }
            "MD5" | "SHA224" | "SHA256" | "SHA384" | "SHA512" | "SHA2" | "TO_BASE64"
            | "FROM_BASE64" => {
                arity(if name == "SHA2" { 2..=2 } else { 1..=1 })?;
                strings(1)?;
                let codec = match name {
                    "MD5" => Codec::Md5,
                    "TO_BASE64" => Codec::ToBase64,
                    "FROM_BASE64" => {
                        nullable = true;
                        Codec::FromBase64
                    }
                    "SHA2" => {
                        let bits =
                            literal_integer(args[1]).filter(|b| [224, 256, 384, 512].contains(b));
                        let Some(bits) = bits else {
                            return Err(SqlError::Invalid {
                                at: at(args[1]),
                                message: "SHA2's length is a literal 224, 256, 384 or 512".into(),
                            });
                        };
                        bound.truncate(1);
                        Codec::Sha2(bits as u16)
                    }
                    other => Codec::Sha2(other[3..].parse().unwrap_or(256)),
                };
                (Function::Codec(codec), SqlType::STRING)
            }
            "HEX" | "BIN" => {
                arity(1..=1)?;
                // HEX takes a string too.
                if name == "BIN" || !bound[0].ty.ty.is_string() {
                    self.expect_integer(&bound[0], args[0])?;
                }
                let codec = if name == "HEX" {
                    Codec::Hex
                } else {
                    Codec::Bin
                };
                (Function::Codec(codec), SqlType::STRING)
            }
            "LOCATE" | "INSTR" => {
                arity(if name == "INSTR" { 2..=2 } else { 2..=3 })?;
                strings(2)?;
                if name == "INSTR" {
                    bound.swap(0, 1);
                }
                if let Some(b) = bound.get(2) {
                    self.expect_integer(b, args[2])?;
                }
                (Function::Locate, SqlType::Int)
            }
            "JSON_VALUE" | "JSON_QUERY" | "JSON_EXISTS" => {
                arity(2..=2)?;
                strings(1)?;
                let Some(text) = literal_string(args[1]) else {
                    return Err(
                        self.unsupported(args[1], &format!("a {name} path that is not a literal"))
                    );
                };
                let path = JsonPath::parse(&text).map_err(|why| SqlError::Invalid {
                    at: at(args[1]),
                    message: format!("the JSON path '{text}' {why}"),
                })?;
                bound.truncate(1);
                let (function, ty) = match name {
                    "JSON_VALUE" => (JsonFunction::Value, SqlType::STRING),
                    "JSON_QUERY" => (JsonFunction::Query, SqlType::STRING),
                    _ => (JsonFunction::Exists, SqlType::Boolean),
                };
                if function != JsonFunction::Exists {
                    nullable = true;
                }
                (Function::Json(function, path), ty)
            }
            "ASCII" => {
                arity(1..=1)?;
                strings(1)?;
                (Function::Ascii, SqlType::Int)
            }
            "CHR" => {
                arity(1..=1)?;
                self.expect_integer(&bound[0], args[0])?;
                nullable = true;
                (Function::Chr, SqlType::STRING)
            }
            "ROUND" => {
                arity(1..=2)?;
                self.expect_numeric(&bound[0], args[0])?;
                let digits = match args.get(1) {
                    Some(a) => match literal_integer(a) {
                        Some(d) => d,
                        None => {
                            return Err(
                                self.unsupported(a, "ROUND's digits that are not a literal")
                            );
                        }
                    },
                    None => 0,
                };
                match &bound[0].ty.ty {
                    SqlType::Decimal { precision, scale } => {
                        let kept = digits.clamp(0, i64::from(*scale)) as u8;
                        let p = (*precision - *scale + kept + 1).min(38);
                        let ty = SqlType::Decimal {
                            precision: p,
                            scale: kept,
                        };
                        (Function::Round(Some(kept)), ty)
                    }
                    other => (Function::Round(None), other.clone()),
                }
            }
            "TO_TIMESTAMP_LTZ" => {
                arity(1..=2)?;
                self.expect_numeric(&bound[0], args[0])?;
                let precision = match args.get(1) {
                    None => 3,
                    Some(a) => match literal_integer(a) {
                        Some(p @ (0 | 3)) => p as u8,
                        _ => {
                            return Err(SqlError::Invalid {
                                at: at(a),
                                message: "TO_TIMESTAMP_LTZ's precision is 0 (seconds) or 3 \
                                          (milliseconds)"
                                    .into(),
                            });
                        }
                    },
                };
                let first = bound.into_iter().next().map(|b| b.expr);
                return Ok(typed(
                    Expr::Call {
                        function: Function::ToTimestampLtz(precision),
                        args: first.into_iter().collect(),
                    },
                    SqlType::TimestampLtz(3),
                    nullable,
                ));
            }
            "NULLIF" => {
                arity(2..=2)?;
                let ty = bound[0].ty.ty.clone();
                let mut it = bound.into_iter();
                let (a, b) = (it.next().map(|b| b.expr), it.next().map(|b| b.expr));
                return Ok(typed(
                    Expr::Call {
                        function: Function::NullIf,
                        args: a.into_iter().chain(b).collect(),
                    },
                    ty,
                    true,
                ));
            }
            "COALESCE" | "IFNULL" => {
                arity(if name == "IFNULL" {
                    2..=2
                } else {
                    1..=usize::MAX
                })?;
                let mut ty = SqlType::Null;
                for (b, a) in bound.iter().zip(args) {
                    ty = self.merge(&ty, &b.ty.ty, a)?;
                }
                let nullable = bound.iter().all(|b| b.ty.nullable);
                let exprs = bound.into_iter().map(|b| coerce(b.expr, &ty)).collect();
                return Ok(typed(Expr::Coalesce(exprs), ty, nullable));
            }
            "IF" => {
                arity(3..=3)?;
                self.expect_boolean(&bound[0], args[0])?;
                let ty = self.merge(&bound[1].ty.ty, &bound[2].ty.ty, args[2])?;
                let nullable = bound[1].ty.nullable || bound[2].ty.nullable;
                let mut it = bound.into_iter().map(|b| b.expr);
                let (c, a, b) = (it.next(), it.next(), it.next());
                let (Some(c), Some(a), Some(b)) = (c, a, b) else {
                    return Err(self.unsupported(whole, "IF"));
                };
                return Ok(typed(
                    Expr::Case {
                        branches: vec![(c, coerce(a, &ty))],
                        otherwise: Box::new(coerce(b, &ty)),
                    },
                    ty,
                    nullable,
                ));
            }
            _ => {
                return Err(SqlError::unknown(
                    at(whole),
                    "function",
                    name,
                    FUNCTIONS.iter().copied(),
                ));
            }
        };
        Ok(typed(
            Expr::Call {
                function,
                args: bound.into_iter().map(|b| b.expr).collect(),
            },
            ty,
            nullable,
        ))
    }

    /// The common type of `a` and `b`, or an error at `expr` (the one that does not fit).
    fn merge(&self, a: &SqlType, b: &SqlType, expr: &ast::Expr) -> Result<SqlType> {
        common_type(a, b).ok_or_else(|| SqlError::Invalid {
            at: at(expr),
            message: format!("{b} does not go with {a}: the results must have one type"),
        })
    }

    /// The pieces of a literal Java date `pattern` argument of `function`.
    fn literal_date_pattern(
        &self,
        pattern: &ast::Expr,
        function: &str,
    ) -> Result<Vec<super::functions::DatePiece>> {
        let Some(text) = literal_string(pattern) else {
            return Err(self.unsupported(
                pattern,
                &format!("a {function} pattern that is not a literal"),
            ));
        };
        date_pattern(&text).map_err(|why| SqlError::Invalid {
            at: at(pattern),
            message: format!("the pattern '{text}' {why}"),
        })
    }

    /// `Ok` if `e` is a time (`TIMESTAMP`, `TIMESTAMP_LTZ` or `DATE`).
    fn expect_time(&self, e: &Typed, expr: &ast::Expr) -> Result<()> {
        self.expect(
            e,
            expr,
            |t| t.is_time() || *t == SqlType::Date,
            "a TIMESTAMP, TIMESTAMP_LTZ or DATE",
        )
    }

    /// The regex a literal `pattern` argument of `function` compiles to.
    fn literal_regex(&self, pattern: &ast::Expr, function: &str) -> Result<regex::Regex> {
        let Some(text) = literal_string(pattern) else {
            return Err(self.unsupported(
                pattern,
                &format!("a {function} regex that is not a literal"),
            ));
        };
        regex::Regex::new(&text).map_err(|e| SqlError::Invalid {
            at: at(pattern),
            message: format!("the regex '{text}' does not compile: {e}"),
        })
    }

    fn expect_numeric(&self, e: &Typed, expr: &ast::Expr) -> Result<()> {
        self.expect(e, expr, SqlType::is_numeric, "a number")
    }

    fn expect_integer(&self, e: &Typed, expr: &ast::Expr) -> Result<()> {
        let integer = |t: &SqlType| {
            matches!(
                t,
                SqlType::TinyInt | SqlType::SmallInt | SqlType::Int | SqlType::BigInt
            )
        };
        self.expect(e, expr, integer, "an integer")
    }

    fn expect_string(&self, e: &Typed, expr: &ast::Expr) -> Result<()> {
        self.expect(e, expr, SqlType::is_string, "a string")
    }

    fn expect_boolean(&self, e: &Typed, expr: &ast::Expr) -> Result<()> {
        self.expect(e, expr, |t| *t == SqlType::Boolean, "a BOOLEAN")
    }

    /// `Ok` if `e`'s type is `wanted` (as `fits` tells) or `NULL` (which fits every type).
    fn expect(
        &self,
        e: &Typed,
        expr: &ast::Expr,
        fits: impl Fn(&SqlType) -> bool,
        wanted: &str,
    ) -> Result<()> {
        if fits(&e.ty.ty) || e.ty.ty == SqlType::Null {
            Ok(())
        } else {
            Err(SqlError::Invalid {
                at: at(expr),
                message: format!("'{expr}' is {}, where {wanted} is expected", e.ty.ty),
            })
        }
    }

    fn unsupported(&self, expr: &ast::Expr, what: &str) -> SqlError {
        SqlError::Unsupported {
            at: at(expr),
            what: format!("{what} ('{expr}')"),
            supported: format!(
                "columns, literals, arithmetic, comparisons, AND/OR/NOT, IS [NOT] NULL, \
                 BETWEEN, IN, LIKE, CASE, CAST and the functions {} are",
                FUNCTIONS.join(", ")
            ),
        }
    }
}

/// The functions called without parentheses (`CURRENT_TIMESTAMP`).
const NILADIC: &[&str] = &[
    "CURRENT_TIMESTAMP",
    "LOCALTIMESTAMP",
    "CURRENT_ROW_TIMESTAMP",
    "CURRENT_DATE",
];

/// The two sides of a comparison made comparable as Flink's implicit casts make them: text
/// compared with a time is read as one (`ts > '2020-01-01 00:00:00'`), and a `DATE` compared
/// with a `TIMESTAMP` is its midnight.
fn comparable(l: Typed, r: Typed) -> (Typed, Typed) {
    let time = |t: &SqlType| t.is_time() || *t == SqlType::Date;
    let cast = |e: Typed, to: &SqlType| Typed {
        expr: Expr::Cast {
            expr: Box::new(e.expr),
            to: to.clone(),
            try_cast: false,
        },
        ty: DataType {
            ty: to.clone(),
            nullable: e.ty.nullable,
        },
    };
    let (a, b) = (l.ty.ty.clone(), r.ty.ty.clone());
    match (&a, &b) {
        (x, y) if time(x) && y.is_string() => (l, cast(r, x)),
        (x, y) if x.is_string() && time(y) => (cast(l, y), r),
        (SqlType::Date, y) if y.is_time() => (cast(l, y), r),
        (x, SqlType::Date) if x.is_time() => (l, cast(r, x)),
        _ => (l, r),
    }
}

/// The built-in functions by name, for errors and suggestions (and `SHOW FUNCTIONS`).
pub(crate) const FUNCTIONS: &[&str] = &[
    "ABS",
    "ACOS",
    "ASCII",
    "ASIN",
    "ATAN",
    "ATAN2",
    "BIN",
    "CHAR_LENGTH",
    "CHR",
    "COALESCE",
    "CONCAT",
    "CONCAT_WS",
    "COS",
    "COSH",
    "COT",
    "COUNT_CHAR",
    "CURRENT_DATE",
    "CURRENT_TIMESTAMP",
    "DATE_FORMAT",
    "DEGREES",
    "E",
    "EXP",
    "FROM_BASE64",
    "FROM_UNIXTIME",
    "GREATEST",
    "HEX",
    "HOUR",
    "IF",
    "IFNULL",
    "INITCAP",
    "INSTR",
    "JSON_EXISTS",
    "JSON_QUERY",
    "JSON_VALUE",
    "LEAST",
    "LEFT",
    "LN",
    "LOCALTIMESTAMP",
    "LOCATE",
    "LOG",
    "LOG10",
    "LOG2",
    "LOWER",
    "LPAD",
    "LTRIM",
    "MD5",
    "MINUTE",
    "MOD",
    "NOW",
    "NULLIF",
    "PI",
    "POSITION",
    "POWER",
    "PROCTIME",
    "RADIANS",
    "RAND",
    "RAND_INTEGER",
    "REGEXP_EXTRACT",
    "REGEXP_REPLACE",
    "REPEAT",
    "REPLACE",
    "REVERSE",
    "RIGHT",
    "ROUND",
    "RPAD",
    "RTRIM",
    "SECOND",
    "SHA2",
    "SHA224",
    "SHA256",
    "SHA384",
    "SHA512",
    "SIGN",
    "SIN",
    "SINH",
    "SPLIT_INDEX",
    "SQRT",
    "SUBSTRING",
    "TAN",
    "TANH",
    "TIMESTAMPADD",
    "TIMESTAMPDIFF",
    "TO_BASE64",
    "TO_DATE",
    "TO_TIMESTAMP",
    "TO_TIMESTAMP_LTZ",
    "TRIM",
    "TRUNCATE",
    "UNIX_TIMESTAMP",
    "UPPER",
    "UUID",
];

/// `expr` as a value of `ty` (a branch of a `CASE` whose results widen).
pub(crate) fn coerce(expr: Expr, ty: &SqlType) -> Expr {
    match (&expr, ty) {
        (Expr::Literal(Value::Null), _) => expr,
        (_, SqlType::Decimal { .. } | SqlType::Double | SqlType::BigInt) => Expr::Cast {
            expr: Box::new(expr),
            to: ty.clone(),
            try_cast: false,
        },
        _ => expr,
    }
}

/// The text of a string literal.
pub(crate) fn literal_string(expr: &ast::Expr) -> Option<String> {
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        ast::Expr::Nested(inner) => literal_string(inner),
        _ => None,
    }
}

/// The value of an integer literal (a negative one too).
pub(crate) fn literal_integer(expr: &ast::Expr) -> Option<i64> {
    match expr {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        ast::Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => literal_integer(expr).map(|n| -n),
        _ => None,
    }
}

/// A literal's value and type, as Flink types it: an integer literal is an `INT` if it fits,
/// else a `BIGINT`; `1.5` is a `DECIMAL(2, 1)`; `1e3` a `DOUBLE`; `'abc'` a string.
/// The field of a time that `EXTRACT` reads, or the unit `FLOOR`/`CEIL` round to.
fn time_field(field: &ast::DateTimeField) -> Option<TimeField> {
    use ast::DateTimeField as F;
    Some(match field {
        F::Year | F::Years => TimeField::Year,
        F::Quarter => TimeField::Quarter,
        F::Month | F::Months => TimeField::Month,
        F::Week(_) | F::Weeks => TimeField::Week,
        F::Day | F::Days => TimeField::Day,
        F::DayOfWeek | F::Dow => TimeField::DayOfWeek,
        F::DayOfYear | F::Doy => TimeField::DayOfYear,
        F::Hour | F::Hours => TimeField::Hour,
        F::Minute | F::Minutes => TimeField::Minute,
        F::Second | F::Seconds => TimeField::Second,
        F::Millisecond | F::Milliseconds => TimeField::Millisecond,
        _ => return None,
    })
}

/// The milliseconds of a day-time interval literal: `INTERVAL '4' SECOND`, `'1.5' SECOND`,
/// `'10' MINUTE`, `'2' HOUR`, `'1' DAY`, `'250' MILLISECOND` (as Flink, one unit).
fn interval_millis(interval: &ast::Interval, here: Position) -> Result<i64> {
    use ast::DateTimeField as F;
    let bad = |why: String| SqlError::Invalid {
        at: here,
        message: format!("the interval '{interval}' {why}"),
    };
    let text = match interval.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::Number(s, _) => s.trim().to_string(),
            other => return Err(bad(format!("has the value {other}, not a quoted number"))),
        },
        other => return Err(bad(format!("has the value {other}, not a quoted number"))),
    };
    if interval.last_field.is_some() {
        return Err(SqlError::Unsupported {
            at: here,
            what: format!("the interval '{interval}'"),
            supported: "intervals of one unit (DAY, HOUR, MINUTE, SECOND, MILLISECOND) are".into(),
        });
    }
    let unit: f64 = match &interval.leading_field {
        Some(F::Day | F::Days) => 86_400_000.0,
        Some(F::Hour | F::Hours) => 3_600_000.0,
        Some(F::Minute | F::Minutes) => 60_000.0,
        Some(F::Second | F::Seconds) | None => 1_000.0,
        Some(F::Millisecond | F::Milliseconds) => 1.0,
        Some(other) => {
            return Err(SqlError::Unsupported {
                at: here,
                what: format!("an interval in {other}"),
                supported: "DAY, HOUR, MINUTE, SECOND and MILLISECOND intervals are".into(),
            });
        }
    };
    let n: f64 = text
        .parse()
        .map_err(|_| bad(format!("has '{text}', which is not a number")))?;
    Ok((n * unit).round() as i64)
}

fn literal(v: &ast::Value, here: Position) -> Result<Typed> {
    Ok(match v {
        ast::Value::Number(text, _) => {
            if text.contains(['e', 'E']) {
                let d: f64 = text.parse().map_err(|_| bad_number(text, here))?;
                typed(Expr::Literal(Value::Double(d)), SqlType::Double, false)
            } else if let Some((whole, fraction)) = text.split_once('.') {
                let scale = fraction.len();
                let precision = (whole.trim_start_matches('0').len() + scale).max(1);
                if precision > 38 {
                    return Err(bad_number(text, here));
                }
                let digits = super::parse_decimal(text, scale as u8)
                    .ok_or_else(|| bad_number(text, here))?;
                typed(
                    Expr::Literal(Value::Decimal(digits, scale as u8)),
                    SqlType::Decimal {
                        precision: precision as u8,
                        scale: scale as u8,
                    },
                    false,
                )
            } else if let Ok(i) = text.parse::<i32>() {
                typed(Expr::Literal(Value::Int(i)), SqlType::Int, false)
            } else if let Ok(i) = text.parse::<i64>() {
                typed(Expr::Literal(Value::BigInt(i)), SqlType::BigInt, false)
            } else {
                return Err(bad_number(text, here));
            }
        }
        ast::Value::SingleQuotedString(s) => typed(
            Expr::Literal(Value::String(s.clone())),
            SqlType::VarChar(s.chars().count().max(1) as u32),
            false,
        ),
        ast::Value::Boolean(b) => typed(Expr::Literal(Value::Boolean(*b)), SqlType::Boolean, false),
        ast::Value::Null => typed(Expr::Literal(Value::Null), SqlType::Null, true),
        other => {
            return Err(SqlError::Unsupported {
                at: here,
                what: format!("the literal {other}"),
                supported: "numbers, 'strings', TRUE, FALSE and NULL are".into(),
            });
        }
    })
}

fn bad_number(text: &str, here: Position) -> SqlError {
    SqlError::Invalid {
        at: here,
        message: format!("the number {text} does not fit Flink's numeric types"),
    }
}

/// The type `data_type` names, for a value of it (a cast, a literal, a `RETURNING`): refused
/// at `at` as `what` where Hummer has no values of it.
fn value_type(
    data_type: &ast::DataType,
    at: Position,
    what: impl FnOnce() -> String,
) -> Result<DataType> {
    from_sqlparser(data_type)
        .filter(|t| t.ty.without_values().is_none())
        .ok_or_else(|| SqlError::Unsupported {
            at,
            what: what(),
            supported: crate::types::SUPPORTED_TYPES.into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::FlinkDialect;
    use crate::schema::Column;
    use sqlparser::parser::Parser;

    fn schema() -> Schema {
        let col = |name: &str, ty: SqlType, nullable: bool| Column {
            name: name.into(),
            ty: DataType { ty, nullable },
        };
        Schema::new(vec![
            col("i", SqlType::Int, false),
            col("b", SqlType::BigInt, true),
            col(
                "d",
                SqlType::Decimal {
                    precision: 10,
                    scale: 2,
                },
                true,
            ),
            col("f", SqlType::Double, true),
            col("s", SqlType::STRING, true),
        ])
    }

    fn row() -> Vec<Value> {
        vec![
            Value::Int(7),
            Value::BigInt(10),
            Value::Decimal(1250, 2),
            Value::Double(0.5),
            Value::String("Hummer".into()),
        ]
    }

    fn bound(text: &str) -> Result<Typed> {
        let mut parser = Parser::new(&FlinkDialect).try_with_sql(text).unwrap();
        bind(&parser.parse_expr().unwrap(), &schema())
    }

    fn eval(text: &str) -> Value {
        let t = bound(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        t.expr
            .eval(&row())
            .unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn a_time_moves_by_an_interval_and_nothing_else() {
        let ts = |text: &str| {
            let mut parser = Parser::new(&FlinkDialect).try_with_sql(text).unwrap();
            let schema = Schema::new(vec![Column {
                name: "t".into(),
                ty: DataType::nullable(SqlType::Timestamp(3)),
            }]);
            bind(&parser.parse_expr().unwrap(), &schema)
        };
        let row = [Value::Timestamp(10_000)];
        for (text, expected) in [
            ("t - INTERVAL '4' SECOND", 6_000),
            ("t + INTERVAL '1.5' SECOND", 11_500),
            ("t - INTERVAL '1' MINUTE", -50_000),
            ("t + INTERVAL '2' HOUR", 7_210_000),
            ("t + INTERVAL '250' MILLISECOND", 10_250),
        ] {
            let bound = ts(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(bound.ty.ty, SqlType::Timestamp(3), "{text}");
            assert_eq!(
                bound.expr.eval(&row).unwrap(),
                Value::Timestamp(expected),
                "{text}"
            );
        }
        let err = ts("t - 4").expect_err("a number is not an interval");
        assert!(err.to_string().contains("an INTERVAL is expected"), "{err}");
        assert!(ts("t - INTERVAL 'x' SECOND").is_err());
    }

    #[test]
    fn arithmetic_follows_flinks_types() {
        assert_eq!(eval("i / 2"), Value::Int(3));
        assert_eq!(bound("i / 2").unwrap().ty.ty, SqlType::Int);
        assert_eq!(eval("i + b"), Value::BigInt(17));
        assert_eq!(eval("2147483647 + 1"), Value::Int(i32::MIN));
        assert_eq!(eval("d * 2"), Value::Decimal(2500, 2));
        assert_eq!(bound("d * 2").unwrap().ty.ty.to_string(), "DECIMAL(21, 2)");
        assert_eq!(
            bound("0.908 * b").unwrap().ty.ty.to_string(),
            "DECIMAL(23, 3)"
        );
        assert_eq!(eval("d + 1.5"), Value::Decimal(1400, 2));
        assert_eq!(eval("d / 4").to_string(), "3.1250000000000");
        assert_eq!(eval("f * 2"), Value::Double(1.0));
        assert_eq!(eval("MOD(i, 4)"), Value::Int(3));
        assert_eq!(eval("-i"), Value::Int(-7));
        let zero = bound("i / 0").unwrap();
        assert_eq!(
            zero.expr.eval(&row()).unwrap_err().to_string(),
            "division by zero"
        );
    }

    #[test]
    fn three_valued_logic_and_null_propagation() {
        assert_eq!(eval("NULL + 1"), Value::Null);
        assert_eq!(eval("i > 5 AND NULL"), Value::Null);
        assert_eq!(eval("i < 5 AND NULL"), Value::Boolean(false));
        assert_eq!(eval("i > 5 OR NULL"), Value::Boolean(true));
        assert_eq!(eval("NULL IS NULL"), Value::Boolean(true));
        assert_eq!(eval("(i = NULL) IS TRUE"), Value::Boolean(false));
        assert_eq!(eval("i IN (1, NULL)"), Value::Null);
        assert_eq!(eval("i IN (7, NULL)"), Value::Boolean(true));
        assert_eq!(eval("i NOT IN (1, 2)"), Value::Boolean(true));
        assert_eq!(eval("i BETWEEN 7 AND b"), Value::Boolean(true));
        assert_eq!(eval("COALESCE(NULL, b, 3)"), Value::BigInt(10));
        assert_eq!(eval("NULLIF(i, 7)"), Value::Null);
    }

    #[test]
    fn strings_case_and_casts() {
        assert_eq!(eval("UPPER(s) || '!'"), Value::String("HUMMER!".into()));
        assert_eq!(
            eval("SUBSTRING(s FROM 2 FOR 3)"),
            Value::String("umm".into())
        );
        assert_eq!(eval("CHAR_LENGTH(s)"), Value::Int(6));
        assert_eq!(eval("s LIKE 'H%r'"), Value::Boolean(true));
        assert_eq!(eval("s NOT LIKE '_u%'"), Value::Boolean(false));
        assert_eq!(eval("TRIM(BOTH 'H' FROM s)"), Value::String("ummer".into()));
        assert_eq!(
            eval("CASE WHEN i > 10 THEN 'big' WHEN i > 5 THEN 'mid' ELSE 'small' END"),
            Value::String("mid".into())
        );
        assert_eq!(eval("CASE i WHEN 7 THEN b ELSE 1 END"), Value::BigInt(10));
        assert_eq!(eval("CAST('42' AS INT) + 1"), Value::Int(43));
        assert_eq!(eval("CAST(d AS INT)"), Value::Int(12));
        assert_eq!(eval("CAST(i AS STRING)"), Value::String("7".into()));
        assert_eq!(
            eval("CAST('2023-01-01 00:00:01' AS TIMESTAMP(3))"),
            Value::Timestamp(1_672_531_201_000)
        );
        assert_eq!(eval("TRY_CAST('x' AS INT)"), Value::Null);
        // JSON_VALUE .. RETURNING: the value as the type, NULL where it is not one.
        assert_eq!(
            eval(r#"JSON_VALUE('{"a": 12}', '$.a' RETURNING INT) + 1"#),
            Value::Int(13)
        );
        assert_eq!(
            eval(r#"JSON_VALUE('{"a": "x"}', '$.a' RETURNING INT)"#),
            Value::Null
        );
        assert_eq!(eval("TO_TIMESTAMP_LTZ(b, 3)"), Value::TimestampLtz(10));
        assert_eq!(eval("TO_TIMESTAMP_LTZ(i, 0)"), Value::TimestampLtz(7000));
        assert_eq!(
            bound("TO_TIMESTAMP_LTZ(b, 3)").unwrap().ty.ty,
            SqlType::TimestampLtz(3)
        );
        assert!(bound("TO_TIMESTAMP_LTZ(b, 2)").is_err());
        let bad = bound("CAST('x' AS INT)").unwrap();
        assert!(
            bad.expr
                .eval(&row())
                .unwrap_err()
                .to_string()
                .contains("cannot cast 'x' to INT")
        );
    }

    #[test]
    fn wrong_expressions_are_refused_with_where_and_what() {
        let e = bound("pric + 1").unwrap_err().to_string();
        assert_eq!(e, "line 1, column 1: column 'pric' not found");
        let e = bound("i + ss").unwrap_err().to_string();
        assert_eq!(
            e,
            "line 1, column 5: column 'ss' not found; did you mean 's'?"
        );
        let e = bound("s + 1").unwrap_err().to_string();
        assert!(
            e.contains("'s' is STRING, where a number is expected"),
            "{e}"
        );
        let e = bound("UPPERR(s)").unwrap_err().to_string();
        assert!(
            e.contains("function 'UPPERR' not found; did you mean 'UPPER'?"),
            "{e}"
        );
        let e = bound("s = 1").unwrap_err().to_string();
        assert!(e.contains("cannot compare STRING with INT"), "{e}");
        let e = bound("SUBSTRING(s, 1, 2, 3)").unwrap_err().to_string();
        assert!(e.contains("SUBSTRING takes 2 to 3 arguments, not 4"), "{e}");
    }
}
