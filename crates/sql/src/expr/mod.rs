//! Scalar expressions: a `sqlparser` expression bound to a row's columns and typed by
//! Flink's rules ([`bind`]), then evaluated once per row ([`Expr::eval`]).
//!
//! Semantics are Flink's: `NULL` in gives `NULL` out (but `AND`, `OR`, `IS NULL`, `CASE`
//! and `COALESCE` follow three-valued logic); integer arithmetic wraps on overflow as Java's
//! does, and an integer division by zero fails the job; `INT / INT` is an `INT`; a filter
//! keeps a row only where its condition is `TRUE`.

pub mod bind;
mod calendar;
mod codec;
mod functions;
mod json_path;
mod kernel;
mod math;
pub mod udf;

use crate::types::{DataType, SqlType};
use crate::value::{Value, align};

pub use functions::Function;
pub use kernel::Compiled;

/// What an expression's evaluation refused (a division by zero, a bad cast).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

/// An arithmetic operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    /// `+`.
    Add,
    /// `-`.
    Subtract,
    /// `*`.
    Multiply,
    /// `/`.
    Divide,
    /// `%`, `MOD`.
    Modulo,
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// `=`.
    Eq,
    /// `<>`.
    NotEq,
    /// `<`.
    Lt,
    /// `<=`.
    LtEq,
    /// `>`.
    Gt,
    /// `>=`.
    GtEq,
}

/// A bound expression.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A constant.
    Literal(Value),
    /// The row's column at this index.
    Column(usize),
    /// `NOT e`.
    Not(Box<Expr>),
    /// `-e`.
    Negate(Box<Expr>),
    /// `a op b`, computed in `ty`.
    Arith {
        /// The operator.
        op: Arith,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
        /// The result's type (the operands are computed in it).
        ty: SqlType,
    },
    /// A field of a `ROW` value (`person.id`), `NULL` for a `NULL` row.
    Field {
        /// The row.
        row: Box<Expr>,
        /// The field's index.
        index: usize,
    },
    /// A time moved by an interval (`ts - INTERVAL '4' SECOND`): a `TIMESTAMP` or
    /// `TIMESTAMP_LTZ` of the same kind.
    ShiftTime {
        /// The time.
        time: Box<Expr>,
        /// The interval, in milliseconds.
        by: Box<Expr>,
        /// `-` rather than `+`.
        subtract: bool,
    },
    /// `a op b`.
    Compare {
        /// The comparison.
        op: Compare,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// `a AND b AND ..`.
    And(Vec<Expr>),
    /// `a OR b OR ..`.
    Or(Vec<Expr>),
    /// `e IS NULL` (`negated`: `IS NOT NULL`).
    IsNull(Box<Expr>, bool),
    /// `e [NOT] IN (list)`.
    InList {
        /// The value.
        expr: Box<Expr>,
        /// The list.
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `CASE WHEN c THEN r .. ELSE e END` (a `CASE x WHEN v` is bound to `x = v` conditions).
    Case {
        /// Conditions and their results, in order.
        branches: Vec<(Expr, Expr)>,
        /// The `ELSE` result (`NULL` without one).
        otherwise: Box<Expr>,
    },
    /// `COALESCE(a, b, ..)`: the first that is not `NULL`.
    Coalesce(Vec<Expr>),
    /// `CAST(e AS ty)`; `TRY_CAST` gives `NULL` where `CAST` fails.
    Cast {
        /// The value.
        expr: Box<Expr>,
        /// The type it becomes.
        to: SqlType,
        /// `TRY_CAST`.
        try_cast: bool,
    },
    /// A built-in function.
    Call {
        /// The function.
        function: Function,
        /// Its arguments.
        args: Vec<Expr>,
    },
}

/// An expression and its type.
#[derive(Clone, Debug)]
pub struct Typed {
    /// The expression.
    pub expr: Expr,
    /// Its type.
    pub ty: DataType,
}

impl Expr {
    /// Whether this is `PROCTIME()`: what it computes is a processing-time attribute.
    pub fn is_proctime(&self) -> bool {
        matches!(
            self,
            Expr::Call {
                function: Function::ProcTime,
                ..
            }
        )
    }

    /// Calls `f` with every column the expression reads.
    pub fn columns(&self, f: &mut impl FnMut(usize)) {
        self.visit(&mut |e| {
            if let Expr::Column(i) = e {
                f(*i);
            }
        });
    }

    /// Whether the expression gives one value for one row: it calls no random function
    /// (`RAND()`, `UUID()`), so computing it twice gives the same, and a projection of it may
    /// be substituted into the expressions that read it.
    pub fn is_deterministic(&self) -> bool {
        let mut deterministic = true;
        self.visit(&mut |e| {
            if let Expr::Call {
                function: Function::Random(_),
                ..
            } = e
            {
                deterministic = false;
            }
        });
        deterministic
    }

    /// Calls `f` with the expression and every expression inside it.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Column(_) | Expr::Literal(_) => {}
            Expr::Not(e) | Expr::Negate(e) | Expr::IsNull(e, _) => e.visit(f),
            Expr::Field { row: e, .. } | Expr::Cast { expr: e, .. } => e.visit(f),
            Expr::Arith { left, right, .. } | Expr::Compare { left, right, .. } => {
                left.visit(f);
                right.visit(f);
            }
            Expr::ShiftTime { time, by, .. } => {
                time.visit(f);
                by.visit(f);
            }
            Expr::And(es) | Expr::Or(es) | Expr::Coalesce(es) | Expr::Call { args: es, .. } => {
                es.iter().for_each(|e| e.visit(f));
            }
            Expr::InList { expr, list, .. } => {
                expr.visit(f);
                list.iter().for_each(|e| e.visit(f));
            }
            Expr::Case {
                branches,
                otherwise,
            } => {
                for (c, r) in branches {
                    c.visit(f);
                    r.visit(f);
                }
                otherwise.visit(f);
            }
        }
    }

    /// The expression with each column `i` replaced by `columns[i]` (an expression over the
    /// rows a projection `columns` reads); a column out of range stays `NULL`, as it reads.
    pub fn substitute(&self, columns: &[Expr]) -> Expr {
        let sub = |e: &Expr| Box::new(e.substitute(columns));
        let all = |es: &[Expr]| es.iter().map(|e| e.substitute(columns)).collect();
        match self {
            Expr::Column(i) => columns
                .get(*i)
                .cloned()
                .unwrap_or(Expr::Literal(Value::Null)),
            Expr::Literal(_) => self.clone(),
            Expr::Not(e) => Expr::Not(sub(e)),
            Expr::Negate(e) => Expr::Negate(sub(e)),
            Expr::Arith {
                op,
                left,
                right,
                ty,
            } => Expr::Arith {
                op: *op,
                left: sub(left),
                right: sub(right),
                ty: ty.clone(),
            },
            Expr::Field { row, index } => Expr::Field {
                row: sub(row),
                index: *index,
            },
            Expr::ShiftTime { time, by, subtract } => Expr::ShiftTime {
                time: sub(time),
                by: sub(by),
                subtract: *subtract,
            },
            Expr::Compare { op, left, right } => Expr::Compare {
                op: *op,
                left: sub(left),
                right: sub(right),
            },
            Expr::And(terms) => Expr::And(all(terms)),
            Expr::Or(terms) => Expr::Or(all(terms)),
            Expr::IsNull(e, negated) => Expr::IsNull(sub(e), *negated),
            Expr::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: sub(expr),
                list: all(list),
                negated: *negated,
            },
            Expr::Case {
                branches,
                otherwise,
            } => Expr::Case {
                branches: branches
                    .iter()
                    .map(|(c, r)| (c.substitute(columns), r.substitute(columns)))
                    .collect(),
                otherwise: sub(otherwise),
            },
            Expr::Coalesce(es) => Expr::Coalesce(all(es)),
            Expr::Cast { expr, to, try_cast } => Expr::Cast {
                expr: sub(expr),
                to: to.clone(),
                try_cast: *try_cast,
            },
            Expr::Call { function, args } => Expr::Call {
                function: function.clone(),
                args: all(args),
            },
        }
    }

    /// The value of the expression on `row`.
    pub fn eval(&self, row: &[Value]) -> Result<Value, EvalError> {
        Ok(match self {
            Expr::Literal(v) => v.clone(),
            Expr::Column(i) => row.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Not(e) => match e.eval(row)? {
                Value::Boolean(b) => Value::Boolean(!b),
                _ => Value::Null,
            },
            Expr::Negate(e) => negate(e.eval(row)?),
            Expr::Arith {
                op,
                left,
                right,
                ty,
            } => arith(*op, left.eval(row)?, right.eval(row)?, ty)?,
            Expr::Compare { op, left, right } => {
                let (a, b) = (left.eval(row)?, right.eval(row)?);
                if a.is_null() || b.is_null() {
                    Value::Null
                } else {
                    Value::Boolean(compare(*op, &a, &b))
                }
            }
            // A column's field is read in place: only the field is copied, not the row.
            Expr::Field { row: r, index } => match r.as_ref() {
                Expr::Column(c) => match &row[*c] {
                    Value::Row(fields) => fields.get(*index).cloned().unwrap_or(Value::Null),
                    _ => Value::Null,
                },
                other => match other.eval(row)? {
                    Value::Row(mut fields) if *index < fields.len() => fields.swap_remove(*index),
                    _ => Value::Null,
                },
            },
            Expr::ShiftTime { time, by, subtract } => {
                let (t, d) = (time.eval(row)?, by.eval(row)?);
                let Value::BigInt(d) = d else {
                    return Ok(Value::Null);
                };
                let d = if *subtract { d.wrapping_neg() } else { d };
                match t {
                    Value::Timestamp(t) => Value::Timestamp(t.wrapping_add(d)),
                    Value::TimestampLtz(t) => Value::TimestampLtz(t.wrapping_add(d)),
                    // A date moves by the interval's whole days, as Flink's.
                    Value::Date(days) => i32::try_from(i64::from(days) + d / crate::value::DAY_MS)
                        .map_or(Value::Null, Value::Date),
                    _ => Value::Null,
                }
            }
            Expr::And(terms) => connective(terms, row, false)?,
            Expr::Or(terms) => connective(terms, row, true)?,
            Expr::IsNull(e, negated) => Value::Boolean(e.eval(row)?.is_null() != *negated),
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let v = expr.eval(row)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut unknown = false;
                for item in list {
                    let item = item.eval(row)?;
                    if item.is_null() {
                        unknown = true;
                    } else if item == v {
                        return Ok(Value::Boolean(!negated));
                    }
                }
                if unknown {
                    Value::Null
                } else {
                    Value::Boolean(*negated)
                }
            }
            Expr::Case {
                branches,
                otherwise,
            } => {
                for (condition, result) in branches {
                    if matches!(condition.eval(row)?, Value::Boolean(true)) {
                        return result.eval(row);
                    }
                }
                otherwise.eval(row)?
            }
            Expr::Coalesce(args) => {
                for a in args {
                    let v = a.eval(row)?;
                    if !v.is_null() {
                        return Ok(v);
                    }
                }
                Value::Null
            }
            Expr::Cast { expr, to, try_cast } => match cast(expr.eval(row)?, to) {
                Ok(v) => v,
                Err(_) if *try_cast => Value::Null,
                Err(e) => return Err(e),
            },
            // Up to three arguments on the stack: a call costs no allocation per row.
            Expr::Call { function, args } => match args.as_slice() {
                [] => function.call(&[])?,
                [a] => function.call(&[a.eval(row)?])?,
                [a, b] => function.call(&[a.eval(row)?, b.eval(row)?])?,
                [a, b, c] => function.call(&[a.eval(row)?, b.eval(row)?, c.eval(row)?])?,
                _ => {
                    let values = args
                        .iter()
                        .map(|a| a.eval(row))
                        .collect::<Result<Vec<_>, _>>()?;
                    function.call(&values)?
                }
            },
        })
    }

    /// True if the expression is `TRUE` on `row` (a filter's rule: `NULL` and `FALSE` drop).
    pub fn holds(&self, row: &[Value]) -> Result<bool, EvalError> {
        Ok(matches!(self.eval(row)?, Value::Boolean(true)))
    }
}

/// `AND` (`wins` false) or `OR` (`wins` true) in three-valued logic: a term that is `wins`
/// decides, else `NULL` if any term is `NULL`, else `!wins`.
fn connective(terms: &[Expr], row: &[Value], wins: bool) -> Result<Value, EvalError> {
    let mut unknown = false;
    for t in terms {
        match t.eval(row)? {
            Value::Boolean(b) if b == wins => return Ok(Value::Boolean(wins)),
            Value::Boolean(_) => {}
            _ => unknown = true,
        }
    }
    Ok(if unknown {
        Value::Null
    } else {
        Value::Boolean(!wins)
    })
}

fn negate(v: Value) -> Value {
    match v {
        Value::Int(i) => Value::Int(i.wrapping_neg()),
        Value::BigInt(i) => Value::BigInt(i.wrapping_neg()),
        Value::Double(d) => Value::Double(-d),
        Value::Decimal(d, s) => Value::Decimal(-d, s),
        _ => Value::Null,
    }
}

/// An integer as a value of `ty` (`TINYINT`, `SMALLINT` or `INT`, all held as `i32`): its
/// low 8, 16 or 32 bits, as Java's narrowing casts and arithmetic wrap.
pub(crate) fn narrow(n: i64, ty: &SqlType) -> i32 {
    match ty {
        SqlType::TinyInt => i32::from(n as i8),
        SqlType::SmallInt => i32::from(n as i16),
        _ => n as i32,
    }
}

/// `a op b` in the result type `ty` (both operands are numbers of a kind that widens to it).
pub(crate) fn arith(op: Arith, a: Value, b: Value, ty: &SqlType) -> Result<Value, EvalError> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    Ok(match ty {
        // INT arithmetic wraps at 32 bits as Java's does: the low 32 bits of the 64-bit
        // wrapping result (for division too: only MIN / -1 overflows, to MIN either way);
        // TINYINT and SMALLINT at 8 and 16.
        SqlType::TinyInt | SqlType::SmallInt | SqlType::Int => {
            let (x, y) = (narrow(as_i64(&a), ty), narrow(as_i64(&b), ty));
            Value::Int(narrow(integer_arith(op, i64::from(x), i64::from(y))?, ty))
        }
        SqlType::BigInt => Value::BigInt(integer_arith(op, as_i64(&a), as_i64(&b))?),
        SqlType::Decimal { precision, scale } => decimal_arith(op, &a, &b, *precision, *scale)?,
        _ => {
            let (x, y) = (as_f64(&a), as_f64(&b));
            Value::Double(match op {
                Arith::Add => x + y,
                Arith::Subtract => x - y,
                Arith::Multiply => x * y,
                Arith::Divide => x / y,
                Arith::Modulo => x % y,
            })
        }
    })
}

/// Java's `long` arithmetic: wrapping, and a division by zero fails.
fn integer_arith(op: Arith, x: i64, y: i64) -> Result<i64, EvalError> {
    Ok(match op {
        Arith::Add => x.wrapping_add(y),
        Arith::Subtract => x.wrapping_sub(y),
        Arith::Multiply => x.wrapping_mul(y),
        Arith::Divide => x.wrapping_div(nonzero(y)?),
        Arith::Modulo => x.wrapping_rem(nonzero(y)?),
    })
}

/// `y` if it is not zero (a division's divisor); Java's integer division by zero fails.
fn nonzero<T: PartialEq + Default>(y: T) -> Result<T, EvalError> {
    if y == T::default() {
        Err(division_by_zero())
    } else {
        Ok(y)
    }
}

fn division_by_zero() -> EvalError {
    EvalError("division by zero".into())
}

/// A decimal result of `precision` and `scale`; `NULL` if it does not fit (Flink's rule for
/// a decimal overflow).
fn decimal_arith(
    op: Arith,
    a: &Value,
    b: &Value,
    precision: u8,
    scale: u8,
) -> Result<Value, EvalError> {
    let ((x, sx), (y, sy)) = (as_decimal(a), as_decimal(b));
    let exact = match op {
        Arith::Add | Arith::Subtract => {
            let (x, y) = align(x, sx, y, sy);
            let s = sx.max(sy);
            let sum = if op == Arith::Add {
                x.checked_add(y)
            } else {
                x.checked_sub(y)
            };
            sum.map(|d| (d, s))
        }
        Arith::Multiply => x.checked_mul(y).map(|d| (d, sx + sy)),
        Arith::Divide | Arith::Modulo => {
            if y == 0 {
                return Err(division_by_zero());
            }
            if op == Arith::Modulo {
                let (x, y) = align(x, sx, y, sy);
                Some((x % y, sx.max(sy)))
            } else {
                // x / y at `scale` digits, rounded half up: x * 10^(scale + sy - sx) / y.
                let shift = i32::from(scale) + i32::from(sy) - i32::from(sx);
                let numerator = if shift >= 0 {
                    x.checked_mul(10i128.checked_pow(shift as u32).unwrap_or(i128::MAX))
                } else {
                    Some(x / 10i128.pow((-shift) as u32))
                };
                numerator.map(|n| (round_div(n, y), scale))
            }
        }
    };
    Ok(match exact.and_then(|(d, s)| rescale(d, s, scale)) {
        Some(d) if fits(d, precision) => Value::Decimal(d, scale),
        _ => Value::Null,
    })
}

/// `n / d` rounded half away from zero.
pub(crate) fn round_div(n: i128, d: i128) -> i128 {
    let (q, r) = (n / d, n % d);
    if r.abs() * 2 >= d.abs() {
        q + if (n < 0) == (d < 0) { 1 } else { -1 }
    } else {
        q
    }
}

/// Digits at scale `from` as digits at scale `to` (rounded half up when digits are lost).
pub fn rescale(d: i128, from: u8, to: u8) -> Option<i128> {
    if to >= from {
        d.checked_mul(10i128.checked_pow(u32::from(to - from))?)
    } else {
        Some(round_div(d, 10i128.pow(u32::from(from - to))))
    }
}

/// Whether `d` has at most `precision` digits.
pub fn fits(d: i128, precision: u8) -> bool {
    d.unsigned_abs() < 10u128.pow(u32::from(precision.min(38)))
}

fn as_i64(v: &Value) -> i64 {
    match *v {
        Value::Int(i) => i64::from(i),
        Value::BigInt(i) => i,
        Value::Double(d) => d as i64,
        Value::Decimal(d, s) => (d / 10i128.pow(u32::from(s))) as i64,
        _ => 0,
    }
}

/// A number as a double (NaN for what is not a number).
pub(crate) fn as_f64(v: &Value) -> f64 {
    match *v {
        Value::Int(i) => f64::from(i),
        Value::BigInt(i) => i as f64,
        Value::Double(d) => d,
        Value::Decimal(d, s) => d as f64 / 10f64.powi(i32::from(s)),
        _ => f64::NAN,
    }
}

fn as_decimal(v: &Value) -> (i128, u8) {
    match *v {
        Value::Int(i) => (i128::from(i), 0),
        Value::BigInt(i) => (i128::from(i), 0),
        Value::Decimal(d, s) => (d, s),
        _ => (0, 0),
    }
}

pub(crate) fn compare(op: Compare, a: &Value, b: &Value) -> bool {
    op.holds(a.cmp(b))
}

impl Compare {
    /// Whether the comparison holds of two values in `order`.
    fn holds(self, order: std::cmp::Ordering) -> bool {
        match self {
            Compare::Eq => order.is_eq(),
            Compare::NotEq => order.is_ne(),
            Compare::Lt => order.is_lt(),
            Compare::LtEq => order.is_le(),
            Compare::Gt => order.is_gt(),
            Compare::GtEq => order.is_ge(),
        }
    }
}

/// `CAST(v AS to)` as Flink casts: numbers between kinds (a fraction truncated toward zero
/// into an integer), strings to numbers, booleans and timestamps and back; a string that is
/// not one fails (`TRY_CAST` gives `NULL`).
pub fn cast(v: Value, to: &SqlType) -> Result<Value, EvalError> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    let bad = |v: &Value| EvalError(format!("cannot cast '{v}' to {to}"));
    Ok(match to {
        SqlType::TinyInt | SqlType::SmallInt | SqlType::Int => match &v {
            // As Java's `Byte.parseByte` and `Short.parseShort`: out of range fails.
            Value::String(s) => Value::Int(
                s.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| i64::from(narrow(*n, to)) == *n)
                    .map(|n| narrow(n, to))
                    .ok_or_else(|| bad(&v))?,
            ),
            Value::Boolean(b) => Value::Int(i32::from(*b)),
            // As Java's `(int) d`: a DOUBLE out of range is the nearest INT (then narrowed).
            Value::Double(d) => Value::Int(narrow(i64::from(*d as i32), to)),
            n => Value::Int(narrow(as_i64(n), to)),
        },
        SqlType::BigInt => match &v {
            Value::String(s) => Value::BigInt(s.trim().parse().map_err(|_| bad(&v))?),
            Value::Boolean(b) => Value::BigInt(i64::from(*b)),
            Value::Timestamp(ms) | Value::TimestampLtz(ms) => Value::BigInt(ms.div_euclid(1000)),
            n => Value::BigInt(as_i64(n)),
        },
        SqlType::Float | SqlType::Double => match &v {
            Value::String(s) => Value::Double(s.trim().parse().map_err(|_| bad(&v))?),
            Value::Boolean(b) => Value::Double(f64::from(u8::from(*b))),
            n => Value::Double(as_f64(n)),
        },
        SqlType::Decimal { precision, scale } => {
            let digits = match &v {
                Value::String(s) => parse_decimal(s.trim(), *scale).ok_or_else(|| bad(&v))?,
                Value::Double(d) => (d * 10f64.powi(i32::from(*scale))).round() as i128,
                n => {
                    let (d, s) = as_decimal(n);
                    rescale(d, s, *scale).ok_or_else(|| bad(&v))?
                }
            };
            if fits(digits, *precision) {
                Value::Decimal(digits, *scale)
            } else {
                Value::Null
            }
        }
        SqlType::Boolean => match &v {
            Value::Boolean(b) => Value::Boolean(*b),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" => Value::Boolean(true),
                "false" => Value::Boolean(false),
                _ => return Err(bad(&v)),
            },
            n => Value::Boolean(as_f64(n) != 0.0),
        },
        // As Flink's: cut to a VARCHAR's length, cut or padded with spaces to a CHAR's.
        SqlType::VarChar(n) => Value::String(cut_to(v.to_string(), *n)),
        SqlType::Char(n) => {
            let mut s = cut_to(v.to_string(), *n);
            let short = (*n as usize).saturating_sub(s.chars().count());
            s.extend(std::iter::repeat_n(' ', short));
            Value::String(s)
        }
        SqlType::Date => match &v {
            Value::String(s) => Value::Date(crate::value::parse_date(s).ok_or_else(|| bad(&v))?),
            Value::Date(d) => Value::Date(*d),
            Value::Timestamp(_) | Value::TimestampLtz(_) => Value::Date(
                i32::try_from(
                    v.wall_millis()
                        .unwrap_or_default()
                        .div_euclid(crate::value::DAY_MS),
                )
                .map_err(|_| bad(&v))?,
            ),
            _ => return Err(bad(&v)),
        },
        SqlType::Timestamp(_) | SqlType::TimestampLtz(_) => {
            // An instant stays itself as an instant; everything else is a wall clock, read
            // in (or, for an instant made a wall clock, shown in) the session's zone.
            let wall = match &v {
                Value::String(s) => crate::value::parse_timestamp(s).ok_or_else(|| bad(&v))?,
                Value::TimestampLtz(ms) if matches!(to, SqlType::TimestampLtz(_)) => {
                    return Ok(Value::TimestampLtz(*ms));
                }
                Value::Timestamp(_) | Value::TimestampLtz(_) | Value::Date(_) => {
                    v.wall_millis().unwrap_or_default()
                }
                _ => return Err(bad(&v)),
            };
            if matches!(to, SqlType::Timestamp(_)) {
                Value::Timestamp(wall)
            } else {
                Value::TimestampLtz(crate::zone::from_local(wall))
            }
        }
        _ => return Err(bad(&v)),
    })
}

/// `s` cut to its first `n` characters.
fn cut_to(s: String, n: u32) -> String {
    match s.char_indices().nth(n as usize) {
        Some((byte, _)) => s[..byte].to_string(),
        None => s,
    }
}

/// A decimal's text (`-12.5`) as digits at `scale`, rounded half up; `None` if it is not one.
pub fn parse_decimal(text: &str, scale: u8) -> Option<i128> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let all: String = whole.chars().chain(fraction.chars()).collect();
    let value: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
    let d = rescale(value, u8::try_from(fraction.len()).ok()?, scale)?;
    Some(if negative { -d } else { d })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every arithmetic operator (also for the kernels' tests).
    pub(super) fn ops() -> impl Strategy<Value = Arith> {
        prop_oneof![
            Just(Arith::Add),
            Just(Arith::Subtract),
            Just(Arith::Multiply),
            Just(Arith::Divide),
            Just(Arith::Modulo),
        ]
    }

    proptest! {
        /// INT arithmetic is Java's: wrapping, truncating division, a remainder with the
        /// dividend's sign, and an error on division by zero.
        #[test]
        fn int_arithmetic_is_javas(
            a in prop_oneof![any::<i32>(), Just(i32::MIN)],
            b in prop_oneof![any::<i32>(), Just(-1), Just(0)],
            op in ops(),
        ) {
            let got = arith(op, Value::Int(a), Value::Int(b), &SqlType::Int);
            let expected = match op {
                Arith::Add => Some(a.wrapping_add(b)),
                Arith::Subtract => Some(a.wrapping_sub(b)),
                Arith::Multiply => Some(a.wrapping_mul(b)),
                Arith::Divide => (b != 0).then(|| (i64::from(a) / i64::from(b)) as i32),
                Arith::Modulo => (b != 0).then(|| (i64::from(a) % i64::from(b)) as i32),
            };
            match expected {
                Some(v) => prop_assert_eq!(got.unwrap(), Value::Int(v)),
                None => prop_assert!(got.is_err()),
            }
        }

        /// TINYINT and SMALLINT are Java's `byte` and `short`: a cast of a number keeps its
        /// low 8 or 16 bits, arithmetic wraps there, and a string out of range fails.
        #[test]
        fn tinyint_and_smallint_are_javas_byte_and_short(
            n in any::<i64>(),
            a in any::<i8>(),
            b in any::<i8>(),
            op in ops(),
        ) {
            prop_assert_eq!(cast(Value::BigInt(n), &SqlType::TinyInt).unwrap(), Value::Int(i32::from(n as i8)));
            prop_assert_eq!(cast(Value::BigInt(n), &SqlType::SmallInt).unwrap(), Value::Int(i32::from(n as i16)));
            let text = Value::String(n.to_string());
            match i8::try_from(n) {
                Ok(v) => prop_assert_eq!(cast(text, &SqlType::TinyInt).unwrap(), Value::Int(v.into())),
                Err(_) => prop_assert!(cast(text, &SqlType::TinyInt).is_err()),
            }
            let got = arith(op, Value::Int(a.into()), Value::Int(b.into()), &SqlType::TinyInt);
            let expected = match op {
                Arith::Add => Some(a.wrapping_add(b)),
                Arith::Subtract => Some(a.wrapping_sub(b)),
                Arith::Multiply => Some(a.wrapping_mul(b)),
                Arith::Divide => (b != 0).then(|| a.wrapping_div(b)),
                Arith::Modulo => (b != 0).then(|| a.wrapping_rem(b)),
            };
            match expected {
                Some(v) => prop_assert_eq!(got.unwrap(), Value::Int(v.into())),
                None => prop_assert!(got.is_err()),
            }
        }

        /// Decimal sums and products are exact (against the rational value in i128), and
        /// `NULL` where the result does not fit its precision.
        #[test]
        fn decimal_sums_and_products_are_exact(
            x in -10_000_000i64..10_000_000, sx in 0u8..4,
            y in -10_000_000i64..10_000_000, sy in 0u8..4,
            multiply in any::<bool>(),
        ) {
            let (op, scale) = if multiply { (Arith::Multiply, sx + sy) } else { (Arith::Add, sx.max(sy)) };
            let precision = 12;
            let got = arith(op, Value::Decimal(x.into(), sx), Value::Decimal(y.into(), sy), &SqlType::Decimal { precision, scale });
            let exact: i128 = if multiply {
                i128::from(x) * i128::from(y)
            } else {
                let (a, b) = align(x.into(), sx, y.into(), sy);
                a + b
            };
            let expected = if fits(exact, precision) { Value::Decimal(exact, scale) } else { Value::Null };
            let got = got.unwrap();
            prop_assert!(matches!((&got, &expected), (Value::Null, Value::Null)) || got == expected, "{:?} vs {:?}", got, expected);
            if let (Value::Decimal(_, s), Value::Decimal(..)) = (&got, &expected) {
                prop_assert_eq!(*s, scale);
            }
        }

        /// A decimal's text parses to the digits that print back as the same text.
        #[test]
        fn decimal_text_round_trips(d in -1_000_000_000i64..1_000_000_000, scale in 0u8..6) {
            let text = Value::Decimal(d.into(), scale).to_string();
            prop_assert_eq!(parse_decimal(&text, scale), Some(i128::from(d)));
        }
    }
}
