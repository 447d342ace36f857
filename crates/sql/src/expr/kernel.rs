//! Compiled expressions: the shapes most rows meet (integer and time arithmetic, comparisons,
//! `AND`/`OR`/`NOT`, `CASE` over them, the casts of a table's computed time columns) turned
//! into kernels that work on plain integers instead of [`Value`]s.
//!
//! Why: the tree interpreter ([`Expr::eval`]) moves a `Result<Value, _>` through every node,
//! and a Nexmark scan evaluates a few such expressions per row (the computed rowtime, the
//! watermark, a filter), which made them a third of a simple query's time.
//!
//! The interpreter stays the one definition of what an expression means. A kernel computes
//! only what it was compiled for; whatever else it meets (a value of another type, a division
//! by zero, an error) makes it answer [`Slow`], and the row is evaluated again by the
//! interpreter, which gives the value or the error. So the two cannot disagree, and a
//! property test checks that they do not.

use super::{Arith, Compare, EvalError, Expr, Function, integer_arith};
use crate::types::SqlType;
use crate::value::Value;

/// An expression with its kernel, if it has one: evaluate through this.
#[derive(Clone, Debug)]
pub struct Compiled {
    expr: Expr,
    kernel: Kernel,
}

#[derive(Clone, Debug)]
enum Kernel {
    Number(Number),
    Boolean(Boolean),
    Interpret,
}

impl Compiled {
    /// `expr` with the kernel of its shape (or the interpreter alone).
    pub fn new(expr: &Expr) -> Compiled {
        // A kernel that meets what it was not compiled for hands the row to the interpreter,
        // which computes it again: of a random expression, another value.
        if !expr.is_deterministic() {
            return Compiled {
                expr: expr.clone(),
                kernel: Kernel::Interpret,
            };
        }
        let kernel = match Number::compile(expr) {
            Some(n) => Kernel::Number(n),
            None => match Boolean::compile(expr, Position::Returned) {
                Some(b) => Kernel::Boolean(b),
                None => Kernel::Interpret,
            },
        };
        Compiled {
            expr: expr.clone(),
            kernel,
        }
    }

    /// The expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The value on `row`, as [`Expr::eval`] gives it.
    #[inline]
    pub fn eval(&self, row: &[Value]) -> Result<Value, EvalError> {
        match &self.kernel {
            Kernel::Number(n) => match n.eval(row) {
                Ok(Some(x)) => return Ok(x.value()),
                Ok(None) => return Ok(Value::Null),
                Err(Slow) => {}
            },
            Kernel::Boolean(b) => match b.eval(row) {
                Ok(Some(x)) => return Ok(Value::Boolean(x)),
                Ok(None) => return Ok(Value::Null),
                Err(Slow) => {}
            },
            Kernel::Interpret => {}
        }
        self.expr.eval(row)
    }

    /// True if the expression is `TRUE` on `row`, as [`Expr::holds`] says.
    #[inline]
    pub fn holds(&self, row: &[Value]) -> Result<bool, EvalError> {
        if let Kernel::Boolean(b) = &self.kernel
            && let Ok(x) = b.eval(row)
        {
            return Ok(x == Some(true));
        }
        self.expr.holds(row)
    }
}

/// The kernel met something it was not compiled for: the interpreter decides.
#[derive(Debug)]
struct Slow;

/// What a kernel gives: a value, `NULL` (`None`), or [`Slow`].
type Step<T> = Result<Option<T>, Slow>;

/// The integer-like types a [`Number`] kernel computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    BigInt,
    Timestamp,
    TimestampLtz,
}

impl Kind {
    fn is_integer(self) -> bool {
        matches!(self, Kind::Int | Kind::BigInt)
    }
}

/// An integer-like value: its type and its `i64` (milliseconds for times).
#[derive(Clone, Copy, Debug)]
struct Num {
    kind: Kind,
    v: i64,
}

impl Num {
    fn of(value: &Value) -> Step<Num> {
        let (kind, v) = match *value {
            Value::Null => return Ok(None),
            Value::Int(v) => (Kind::Int, i64::from(v)),
            Value::BigInt(v) => (Kind::BigInt, v),
            Value::Timestamp(v) => (Kind::Timestamp, v),
            Value::TimestampLtz(v) => (Kind::TimestampLtz, v),
            _ => return Err(Slow),
        };
        Ok(Some(Num { kind, v }))
    }

    fn value(self) -> Value {
        match self.kind {
            Kind::Int => Value::Int(self.v as i32),
            Kind::BigInt => Value::BigInt(self.v),
            Kind::Timestamp => Value::Timestamp(self.v),
            Kind::TimestampLtz => Value::TimestampLtz(self.v),
        }
    }
}

/// A kernel whose value is an integer or a time.
#[derive(Clone, Debug)]
enum Number {
    Constant(Num),
    Null,
    Column(usize),
    /// `INT` (`int32`) or `BIGINT` arithmetic on integers.
    Arith {
        op: Arith,
        left: Box<Number>,
        right: Box<Number>,
        int32: bool,
    },
    /// A time moved by a constant interval (milliseconds).
    Shift {
        time: Box<Number>,
        by: i64,
    },
    /// `CAST(e AS TIMESTAMP | TIMESTAMP_LTZ)` of a time.
    ToTime {
        time: Box<Number>,
        ltz: bool,
    },
    /// `CAST(e AS BIGINT | INT)` of an integer.
    ToInteger {
        number: Box<Number>,
        int32: bool,
    },
    /// `TO_TIMESTAMP_LTZ(n, precision)` of an integer: `n * unit` milliseconds.
    Epoch {
        number: Box<Number>,
        unit: i64,
    },
}

impl Number {
    fn compile(expr: &Expr) -> Option<Number> {
        let sub = |e: &Expr| Number::compile(e).map(Box::new);
        Some(match expr {
            Expr::Literal(Value::Null) => Number::Null,
            Expr::Literal(v) => Number::Constant(Num::of(v).ok()??),
            Expr::Column(i) => Number::Column(*i),
            Expr::Arith {
                op,
                left,
                right,
                ty,
            } => Number::Arith {
                op: *op,
                left: sub(left)?,
                right: sub(right)?,
                // TINYINT and SMALLINT wrap at 8 and 16 bits: the general path.
                int32: match ty {
                    SqlType::Int => true,
                    SqlType::BigInt => false,
                    _ => return None,
                },
            },
            Expr::ShiftTime { time, by, subtract } => match by.as_ref() {
                Expr::Literal(Value::BigInt(d)) => Number::Shift {
                    time: sub(time)?,
                    by: if *subtract { d.wrapping_neg() } else { *d },
                },
                _ => return None,
            },
            Expr::Cast {
                expr,
                to,
                try_cast: _,
            } => match to {
                SqlType::Timestamp(_) | SqlType::TimestampLtz(_) => Number::ToTime {
                    time: sub(expr)?,
                    ltz: matches!(to, SqlType::TimestampLtz(_)),
                },
                SqlType::BigInt => Number::ToInteger {
                    number: sub(expr)?,
                    int32: false,
                },
                SqlType::Int => Number::ToInteger {
                    number: sub(expr)?,
                    int32: true,
                },
                _ => return None,
            },
            Expr::Call {
                function: Function::ToTimestampLtz(precision),
                args,
            } if args.len() == 1 => Number::Epoch {
                number: sub(&args[0])?,
                unit: if *precision == 0 { 1000 } else { 1 },
            },
            _ => return None,
        })
    }

    #[inline]
    fn eval(&self, row: &[Value]) -> Step<Num> {
        match self {
            Number::Constant(n) => Ok(Some(*n)),
            Number::Null => Ok(None),
            Number::Column(i) => row.get(*i).map_or(Ok(None), Num::of),
            Number::Arith {
                op,
                left,
                right,
                int32,
            } => {
                let (a, b) = (left.eval(row)?, right.eval(row)?);
                let (Some(a), Some(b)) = (a, b) else {
                    return Ok(None);
                };
                if !a.kind.is_integer() || !b.kind.is_integer() {
                    return Err(Slow);
                }
                let v = if *int32 {
                    let v = integer_arith(*op, a.v as i32 as i64, b.v as i32 as i64);
                    Num {
                        kind: Kind::Int,
                        v: i64::from(v.map_err(|_| Slow)? as i32),
                    }
                } else {
                    Num {
                        kind: Kind::BigInt,
                        v: integer_arith(*op, a.v, b.v).map_err(|_| Slow)?,
                    }
                };
                Ok(Some(v))
            }
            Number::Shift { time, by } => Ok(match time.eval(row)? {
                Some(t) if !t.kind.is_integer() => Some(Num {
                    kind: t.kind,
                    v: t.v.wrapping_add(*by),
                }),
                _ => None,
            }),
            Number::ToTime { time, ltz } => match time.eval(row)? {
                None => Ok(None),
                Some(t) if t.kind.is_integer() => Err(Slow),
                // Between an instant and a wall clock, in the session's zone.
                Some(t) => Ok(Some(match (t.kind, *ltz) {
                    (Kind::TimestampLtz, false) => Num {
                        kind: Kind::Timestamp,
                        v: crate::zone::to_local(t.v),
                    },
                    (Kind::TimestampLtz, true) => t,
                    (_, true) => Num {
                        kind: Kind::TimestampLtz,
                        v: crate::zone::from_local(t.v),
                    },
                    (_, false) => Num {
                        kind: Kind::Timestamp,
                        v: t.v,
                    },
                })),
            },
            Number::ToInteger { number, int32 } => match number.eval(row)? {
                None => Ok(None),
                Some(n) if !n.kind.is_integer() => Err(Slow),
                Some(n) if *int32 => Ok(Some(Num {
                    kind: Kind::Int,
                    v: i64::from(n.v as i32),
                })),
                Some(n) => Ok(Some(Num {
                    kind: Kind::BigInt,
                    v: n.v,
                })),
            },
            Number::Epoch { number, unit } => match number.eval(row)? {
                None => Ok(None),
                Some(n) if !n.kind.is_integer() => Err(Slow),
                Some(n) => Ok(Some(Num {
                    kind: Kind::TimestampLtz,
                    v: n.v.saturating_mul(*unit),
                })),
            },
        }
    }
}

/// Where a boolean kernel stands: its value is the expression's own (`Returned`), or only
/// `TRUE` matters and anything else counts as `NULL` (`Nested`: a term of `AND`/`OR`, under
/// `NOT`, a `CASE` condition), where the interpreter may compute a part of it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Returned,
    Nested,
}

/// A kernel whose value is a boolean.
#[derive(Clone, Debug)]
enum Boolean {
    Constant(Option<bool>),
    Column(usize),
    Compare {
        op: Compare,
        left: Number,
        right: Number,
    },
    Not(Box<Boolean>),
    /// `AND` (`wins` false) or `OR` (`wins` true).
    Connective {
        terms: Vec<Boolean>,
        wins: bool,
    },
    IsNull {
        number: Number,
        negated: bool,
    },
    Case {
        branches: Vec<(Boolean, Boolean)>,
        otherwise: Box<Boolean>,
    },
    /// A part the interpreter computes (in a nested position only: a value that is not a
    /// boolean counts as `NULL` there, as it does for the interpreter).
    Interpret(Expr),
}

impl Boolean {
    fn compile(expr: &Expr, at: Position) -> Option<Boolean> {
        let nested = |e: &Expr| Boolean::compile(e, Position::Nested);
        let compiled = match expr {
            Expr::Literal(Value::Boolean(b)) => Some(Boolean::Constant(Some(*b))),
            Expr::Literal(Value::Null) => Some(Boolean::Constant(None)),
            Expr::Column(i) => Some(Boolean::Column(*i)),
            Expr::Compare { op, left, right } => Number::compile(left)
                .zip(Number::compile(right))
                .map(|(left, right)| Boolean::Compare {
                    op: *op,
                    left,
                    right,
                }),
            Expr::Not(e) => nested(e).map(|e| Boolean::Not(Box::new(e))),
            Expr::And(terms) | Expr::Or(terms) => terms
                .iter()
                .map(nested)
                .collect::<Option<Vec<_>>>()
                .map(|terms| Boolean::Connective {
                    terms,
                    wins: matches!(expr, Expr::Or(_)),
                }),
            Expr::IsNull(e, negated) => Number::compile(e).map(|number| Boolean::IsNull {
                number,
                negated: *negated,
            }),
            Expr::Case {
                branches,
                otherwise,
            } => {
                let branches = branches
                    .iter()
                    .map(|(c, r)| Some((nested(c)?, Boolean::compile(r, at)?)))
                    .collect::<Option<Vec<_>>>();
                branches
                    .zip(Boolean::compile(otherwise, at))
                    .map(|(branches, otherwise)| Boolean::Case {
                        branches,
                        otherwise: Box::new(otherwise),
                    })
            }
            _ => None,
        };
        match (compiled, at) {
            (Some(b), _) => Some(b),
            (None, Position::Nested) => Some(Boolean::Interpret(expr.clone())),
            (None, Position::Returned) => None,
        }
    }

    #[inline]
    fn eval(&self, row: &[Value]) -> Step<bool> {
        match self {
            Boolean::Constant(b) => Ok(*b),
            Boolean::Column(i) => match row.get(*i) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Boolean(b)) => Ok(Some(*b)),
                Some(_) => Err(Slow),
            },
            Boolean::Compare { op, left, right } => {
                let (a, b) = (left.eval(row)?, right.eval(row)?);
                let (Some(a), Some(b)) = (a, b) else {
                    return Ok(None);
                };
                let comparable = a.kind.is_integer() && b.kind.is_integer() || a.kind == b.kind;
                if !comparable {
                    return Err(Slow);
                }
                Ok(Some(op.holds(a.v.cmp(&b.v))))
            }
            Boolean::Not(e) => Ok(e.eval(row)?.map(|b| !b)),
            Boolean::Connective { terms, wins } => {
                let mut unknown = false;
                for t in terms {
                    match t.eval(row)? {
                        Some(b) if b == *wins => return Ok(Some(*wins)),
                        Some(_) => {}
                        None => unknown = true,
                    }
                }
                Ok(if unknown { None } else { Some(!wins) })
            }
            Boolean::IsNull { number, negated } => {
                Ok(Some(number.eval(row)?.is_none() != *negated))
            }
            Boolean::Case {
                branches,
                otherwise,
            } => {
                for (condition, result) in branches {
                    if condition.eval(row)? == Some(true) {
                        return result.eval(row);
                    }
                }
                otherwise.eval(row)
            }
            Boolean::Interpret(e) => match e.eval(row) {
                Ok(Value::Boolean(b)) => Ok(Some(b)),
                Ok(_) => Ok(None),
                Err(_) => Err(Slow),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Values of the kinds kernels compute in, and some they do not.
    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            (-3i32..3).prop_map(Value::Int),
            prop_oneof![-3i64..3, Just(i64::MAX), Just(i64::MIN)].prop_map(Value::BigInt),
            (-2000i64..2000).prop_map(Value::Timestamp),
            (-2000i64..2000).prop_map(Value::TimestampLtz),
            any::<bool>().prop_map(Value::Boolean),
            Just(Value::Double(1.5)),
            Just(Value::String("7".into())),
        ]
    }

    fn compare() -> impl Strategy<Value = Compare> {
        prop_oneof![
            Just(Compare::Eq),
            Just(Compare::NotEq),
            Just(Compare::Lt),
            Just(Compare::LtEq),
            Just(Compare::Gt),
            Just(Compare::GtEq),
        ]
    }

    fn integer_type() -> impl Strategy<Value = SqlType> {
        prop_oneof![
            Just(SqlType::Int),
            Just(SqlType::BigInt),
            Just(SqlType::Double)
        ]
    }

    fn time_type() -> impl Strategy<Value = SqlType> {
        prop_oneof![
            Just(SqlType::Timestamp(3)),
            Just(SqlType::TimestampLtz(3)),
            Just(SqlType::BigInt),
            Just(SqlType::Int),
            Just(SqlType::STRING),
        ]
    }

    /// Random expressions over four columns, of the shapes kernels take and of others.
    fn expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            (0usize..5).prop_map(Expr::Column),
            value().prop_map(Expr::Literal),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            let boxed = || inner.clone().prop_map(Box::new);
            prop_oneof![
                (super::super::tests::ops(), boxed(), boxed(), integer_type()).prop_map(
                    |(op, left, right, ty)| {
                        Expr::Arith {
                            op,
                            left,
                            right,
                            ty,
                        }
                    }
                ),
                (compare(), boxed(), boxed()).prop_map(|(op, left, right)| Expr::Compare {
                    op,
                    left,
                    right
                }),
                (boxed(), -5000i64..5000, any::<bool>()).prop_map(|(time, d, subtract)| {
                    Expr::ShiftTime {
                        time,
                        by: Box::new(Expr::Literal(Value::BigInt(d))),
                        subtract,
                    }
                }),
                (boxed(), time_type(), any::<bool>())
                    .prop_map(|(expr, to, try_cast)| { Expr::Cast { expr, to, try_cast } }),
                (inner.clone(), 0u8..4).prop_map(|(e, p)| Expr::Call {
                    function: Function::ToTimestampLtz(p),
                    args: vec![e],
                }),
                boxed().prop_map(Expr::Not),
                prop::collection::vec(inner.clone(), 1..4).prop_map(Expr::And),
                prop::collection::vec(inner.clone(), 1..4).prop_map(Expr::Or),
                (boxed(), any::<bool>()).prop_map(|(e, n)| Expr::IsNull(e, n)),
                (
                    prop::collection::vec((inner.clone(), inner.clone()), 1..3),
                    boxed()
                )
                    .prop_map(|(branches, otherwise)| Expr::Case {
                        branches,
                        otherwise,
                    }),
                boxed().prop_map(Expr::Negate),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// A compiled expression gives what the interpreter gives, value or error, and
        /// holds where it holds.
        #[test]
        fn compiled_expressions_agree_with_the_interpreter(
            e in expr(),
            row in prop::collection::vec(value(), 5),
        ) {
            // Debug text, so that NaN from both sides counts as the same value.
            let compiled = Compiled::new(&e);
            prop_assert_eq!(format!("{:?}", compiled.eval(&row)), format!("{:?}", e.eval(&row)));
            prop_assert_eq!(compiled.holds(&row), e.holds(&row));
        }
    }

    /// The property above is about kernels only if many of its expressions have one, and
    /// many of their evaluations finish without the interpreter.
    #[test]
    fn most_generated_expressions_run_in_kernels() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut kernels, mut fast) = (0, 0);
        for _ in 0..2000 {
            let e = expr()
                .new_tree(&mut runner)
                .expect("an expression")
                .current();
            let row = prop::collection::vec(value(), 5)
                .new_tree(&mut runner)
                .expect("a row")
                .current();
            let compiled = Compiled::new(&e);
            match &compiled.kernel {
                Kernel::Number(n) => {
                    kernels += 1;
                    fast += usize::from(n.eval(&row).is_ok());
                }
                Kernel::Boolean(b) => {
                    kernels += 1;
                    fast += usize::from(b.eval(&row).is_ok());
                }
                Kernel::Interpret => {}
            }
        }
        assert!(
            kernels > 600 && fast > 300,
            "{kernels} kernels, {fast} fast"
        );
    }

    #[test]
    fn a_tables_computed_rowtime_and_its_watermark_have_kernels() {
        // CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)) - INTERVAL '4' SECOND
        let rowtime = Expr::Cast {
            expr: Box::new(Expr::Call {
                function: Function::ToTimestampLtz(3),
                args: vec![Expr::Column(0)],
            }),
            to: SqlType::Timestamp(3),
            try_cast: false,
        };
        let watermark = Expr::ShiftTime {
            time: Box::new(rowtime.clone()),
            by: Box::new(Expr::Literal(Value::BigInt(4000))),
            subtract: true,
        };
        for e in [&rowtime, &watermark] {
            assert!(matches!(Compiled::new(e).kernel, Kernel::Number(_)));
        }
        let row = [Value::BigInt(10_000)];
        assert_eq!(
            Compiled::new(&watermark).eval(&row),
            Ok(Value::Timestamp(6_000))
        );
    }
}
