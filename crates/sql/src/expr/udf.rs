//! Scalar functions written in Rust and called from SQL by name (Flink's user-defined
//! `ScalarFunction`s).
//!
//! A program registers a function on its session ([`crate::Session::register_function`]);
//! a query calls it by that name, or by the name a `CREATE FUNCTION name AS 'class'` gives
//! it, where `class` is the name it was registered under (a Flink script's Java class name
//! can be registered as it is). Nexmark's `count_char` (class
//! `com.github.nexmark.flink.udf.CountChar`) is built in, so a script that creates it runs
//! unchanged.
//!
//! The functions a statement sees are put in scope while it is planned ([`in_scope`]): the
//! binder, deep inside the planner and the connectors' computed columns, finds them there
//! without every planning step carrying the catalog.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::expr::bind::common_type;
use crate::expr::{EvalError, cast};
use crate::types::{DataType, SqlType};
use crate::value::Value;

/// A scalar function: a value of values, row by row.
///
/// ```
/// use hummer_sql::expr::udf::ScalarFunction;
/// use hummer_sql::types::{DataType, SqlType};
/// use hummer_sql::value::Value;
///
/// /// `twice(n)`: 2n.
/// struct Twice;
///
/// impl ScalarFunction for Twice {
///     fn result_type(&self, args: &[DataType]) -> Result<DataType, String> {
///         match args {
///             [a] if a.ty == SqlType::BigInt => Ok(DataType::nullable(SqlType::BigInt)),
///             _ => Err("it takes one BIGINT".into()),
///         }
///     }
///     fn eval(&self, args: &[Value]) -> Result<Value, String> {
///         match args {
///             [Value::BigInt(n)] => Ok(Value::BigInt(2 * n)),
///             _ => Ok(Value::Null),
///         }
///     }
/// }
/// assert_eq!(Twice.eval(&[Value::BigInt(4)]), Ok(Value::BigInt(8)));
/// ```
pub trait ScalarFunction: Send + Sync + 'static {
    /// The type of the result for arguments of types `args`, or why they are not taken
    /// (shown with the call's position before anything runs).
    fn result_type(&self, args: &[DataType]) -> Result<DataType, String>;

    /// The result for `args`, of the types [`ScalarFunction::result_type`] accepted; an
    /// error fails the job naming the row.
    fn eval(&self, args: &[Value]) -> Result<Value, String>;
}

/// A function with a fixed signature from a closure: arguments of other types are cast to
/// the declared ones where SQL casts them implicitly (`INT` to `BIGINT`, ...), a `NULL`
/// argument makes the result `NULL` without calling it.
///
/// ```
/// use hummer_sql::expr::udf::{ScalarFunction, ScalarUdf};
/// use hummer_sql::types::{DataType, SqlType};
/// use hummer_sql::value::Value;
///
/// let add = ScalarUdf::new([SqlType::BigInt, SqlType::BigInt], SqlType::BigInt, |args| {
///     match args {
///         [Value::BigInt(a), Value::BigInt(b)] => Ok(Value::BigInt(a + b)),
///         _ => Err("two BIGINTs".into()),
///     }
/// });
/// let int = DataType::nullable(SqlType::Int);
/// assert!(add.result_type(&[int.clone(), int]).is_ok());
/// assert_eq!(add.eval(&[Value::Int(2), Value::BigInt(3)]), Ok(Value::BigInt(5)));
/// assert_eq!(add.eval(&[Value::Null, Value::BigInt(3)]), Ok(Value::Null));
/// ```
pub struct ScalarUdf<F> {
    params: Vec<SqlType>,
    result: SqlType,
    f: F,
}

impl<F> ScalarUdf<F>
where
    F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
{
    /// `f` over arguments of types `params`, giving a `result`.
    pub fn new(params: impl IntoIterator<Item = SqlType>, result: SqlType, f: F) -> Self {
        ScalarUdf {
            params: params.into_iter().collect(),
            result,
            f,
        }
    }
}

impl<F> ScalarFunction for ScalarUdf<F>
where
    F: Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
{
    fn result_type(&self, args: &[DataType]) -> Result<DataType, String> {
        let signature = || {
            let names: Vec<String> = self.params.iter().map(ToString::to_string).collect();
            format!("({})", names.join(", "))
        };
        if args.len() != self.params.len() {
            return Err(format!(
                "it takes {} arguments {}, not {}",
                self.params.len(),
                signature(),
                args.len()
            ));
        }
        for (i, (arg, param)) in args.iter().zip(&self.params).enumerate() {
            if common_type(&arg.ty, param).as_ref() != Some(param) {
                return Err(format!(
                    "its argument {} is {}, which does not cast to {param} {}",
                    i + 1,
                    arg.ty,
                    signature()
                ));
            }
        }
        Ok(DataType::nullable(self.result.clone()))
    }

    fn eval(&self, args: &[Value]) -> Result<Value, String> {
        if args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        let args = args
            .iter()
            .zip(&self.params)
            .map(|(v, ty)| cast(v.clone(), ty).map_err(|e| e.0))
            .collect::<Result<Vec<_>, _>>()?;
        (self.f)(&args)
    }
}

/// A registered function as a call holds it: its name, for plans and errors, and itself.
#[derive(Clone)]
pub struct Udf {
    /// The name it was called by.
    pub name: String,
    /// The function.
    pub function: Arc<dyn ScalarFunction>,
}

impl Udf {
    /// The function on `args`: its error, or its panic, as the error of the call that names
    /// the function (the operator then names the row and fails the job).
    pub fn call(&self, args: &[Value]) -> Result<Value, EvalError> {
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.function.eval(args)));
        match result {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(EvalError(format!(
                "the function '{}' failed: {e}",
                self.name
            ))),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".into());
                Err(EvalError(format!(
                    "the function '{}' panicked: {message}",
                    self.name
                )))
            }
        }
    }
}

impl fmt::Debug for Udf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Udf({})", self.name)
    }
}

/// The functions registered on a session, by name (case-insensitive, as SQL names
/// functions), and the names `CREATE FUNCTION` gave them.
#[derive(Clone, Default)]
pub struct Functions {
    registered: BTreeMap<String, Arc<dyn ScalarFunction>>,
    /// SQL name (lower case) -> the registered name or built-in function it stands for, and
    /// whether it is a system function.
    created: BTreeMap<String, (Target, bool)>,
}

/// What a created function stands for.
#[derive(Clone, Debug)]
enum Target {
    /// A built-in function, by its SQL name.
    BuiltIn(&'static str),
    /// A registered function, by the name it was registered under.
    Registered(String),
}

/// The class of Nexmark's `count_char`, which is built in.
pub const COUNT_CHAR_CLASS: &str = "com.github.nexmark.flink.udf.CountChar";

impl fmt::Debug for Functions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Functions")
            .field("registered", &self.registered.keys().collect::<Vec<_>>())
            .field("created", &self.created)
            .finish()
    }
}

/// What a function name resolves to in the scope.
pub(crate) enum Resolved {
    /// A built-in function under another name.
    BuiltIn(&'static str),
    /// A registered function.
    Registered(Udf),
}

impl Functions {
    /// Registers `function` as `name` (replacing one of that name).
    pub fn register(&mut self, name: &str, function: Arc<dyn ScalarFunction>) {
        self.registered.insert(name.to_lowercase(), function);
    }

    /// Names `class` as the SQL function `name`: a registered function's name, or
    /// `count_char`'s class; anything else is refused with the names there are.
    ///
    /// As Flink resolves a name: a system function (`system`, and every registered one)
    /// before a built-in function of its name, a catalog function after it.
    pub fn create(&mut self, name: &str, class: &str, system: bool) -> Result<(), String> {
        let target = if class == COUNT_CHAR_CLASS {
            Target::BuiltIn("COUNT_CHAR")
        } else if self.registered.contains_key(&class.to_lowercase()) {
            Target::Registered(class.to_lowercase())
        } else {
            let mut known: Vec<&str> = self.registered.keys().map(String::as_str).collect();
            known.push(COUNT_CHAR_CLASS);
            return Err(format!(
                "no function is registered as '{class}' (registered: {}; a Rust program \
                 registers one with Session::register_function)",
                known.join(", ")
            ));
        };
        self.created.insert(name.to_lowercase(), (target, system));
        Ok(())
    }

    /// Forgets the SQL name `name` that `CREATE FUNCTION` gave.
    pub fn drop(&mut self, name: &str) {
        self.created.remove(&name.to_lowercase());
    }

    fn resolve(&self, name: &str) -> Option<Resolved> {
        let name = name.to_lowercase();
        let built_in = super::bind::FUNCTIONS
            .iter()
            .any(|f| f.eq_ignore_ascii_case(&name));
        let registered = match self.created.get(&name) {
            // A catalog function of a built-in's name: the built-in goes first.
            Some((_, false)) if built_in => return None,
            Some((Target::BuiltIn(builtin), _)) => return Some(Resolved::BuiltIn(builtin)),
            Some((Target::Registered(r), _)) => r,
            None => &name,
        };
        self.registered.get(registered).map(|f| {
            Resolved::Registered(Udf {
                name: name.clone(),
                function: f.clone(),
            })
        })
    }
}

thread_local! {
    static SCOPE: RefCell<Functions> = RefCell::new(Functions::default());
}

/// Runs `plan` with `functions` in scope for the binder (restored after, also on a panic).
pub fn in_scope<R>(functions: &Functions, plan: impl FnOnce() -> R) -> R {
    struct Restore(Option<Functions>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(previous) = self.0.take() {
                SCOPE.with(|s| *s.borrow_mut() = previous);
            }
        }
    }
    let previous = SCOPE.with(|s| s.replace(functions.clone()));
    let _restore = Restore(Some(previous));
    plan()
}

/// What the function `name` is in the scope, if it is a registered or created one.
pub(crate) fn resolve(name: &str) -> Option<Resolved> {
    SCOPE.with(|s| s.borrow().resolve(name))
}
