//! A SQL session: the catalog and the options a script's statements build up, and what each
//! statement does to them.
//!
//! `SET` takes Flink's option names. The options Hummer applies are checked when set (a bad
//! value is refused with what it takes); options of Flink's planner that have no meaning
//! here (`table.optimizer.distinct-agg.split.enabled`, say) are accepted with a one-line
//! note, as a script written for Flink must run unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use hummer_api::StreamExecutionEnvironment;
use hummer_checkpoint::coordinator::CheckpointConfig;
use hummer_execution::restart_strategy::RestartStrategy;
use sqlparser::ast;

use crate::catalog::{Catalog, View};
use crate::connector;
use crate::error::{Position, Result, SqlError};
use crate::lower::per_key::MiniBatch;
use crate::plan::reuse::Reuse;
use crate::plan::{plan_query, plan_result};
use crate::script::split;
use crate::statement::{self, ColumnKind, ObjectKind, SUPPORTED_STATEMENTS, Statement};
use crate::tableau::Table;

/// How the client shows a query's result: Flink's `op` column of each change's kind in
/// streaming mode; only the cells in batch mode, whose result is a final table.
#[derive(Clone, Copy, Debug)]
struct Shown {
    with_op: bool,
}

impl Shown {
    /// The header over `schema`'s columns.
    fn header(self, schema: &crate::schema::Schema) -> Vec<String> {
        let op = self.with_op.then(|| "op".to_string());
        op.into_iter()
            .chain(schema.columns.iter().map(|c| c.name.clone()))
            .collect()
    }

    /// A change of rows of `schema`: its kind, then its cells (an interval as Flink shows
    /// one).
    fn row(self, schema: &crate::schema::Schema, change: &crate::changelog::Change) -> Vec<String> {
        let op = self.with_op.then(|| change.kind.short().to_string());
        let cell = |(value, column): (&crate::value::Value, &crate::schema::Column)| match (
            value,
            &column.ty.ty,
        ) {
            (crate::value::Value::BigInt(ms), crate::types::SqlType::Interval) => {
                crate::value::interval_text(*ms)
            }
            _ => value.to_string(),
        };
        op.into_iter()
            .chain(change.row.iter().zip(&schema.columns).map(cell))
            .collect()
    }
}

/// What a statement gives back to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A line of information (`[INFO] ...`).
    Info(String),
    /// A result table.
    Table(Table),
    /// The client is to end (`QUIT`).
    Quit,
    /// What there was to show has been shown as it came (a query's rows, to a
    /// [`LiveResult`]).
    Shown,
}

/// Where a bare query's rows go while it runs: the interactive client's view of a result
/// (an updating table, or Flink's tableau of changes), instead of one table at the end.
pub trait LiveResult {
    /// The query started: its columns (`op`, the change's kind, first).
    fn start(&mut self, header: &[String]);
    /// Rows that came, each its kind and cells.
    fn rows(&mut self, rows: Vec<Vec<String>>);
    /// Whether the user asked to stop the query (Ctrl-C); asked while it runs.
    fn stop_requested(&mut self) -> bool;
    /// The query ended after `count` rows (`cancelled`: the user stopped it).
    fn end(&mut self, count: usize, cancelled: bool);
    /// Whether a query whose sources all end is shown as one table at its end instead
    /// (a script's query: only one that never ends is shown as it comes).
    fn bounded_as_table(&self) -> bool {
        false
    }
}

/// A directory whose finished part files a job run here leaves hidden, and the job's token
/// that names them (see `text_file_sink::publish`).
/// The files an `INSERT` run here leaves for the session to publish: the table's directory,
/// the job's token, and whether they replace the table's files (`INSERT OVERWRITE`).
type Published = (std::path::PathBuf, String, bool);

/// An option Hummer applies, and what its value must be: its key and the check of a value.
type KnownOption = (&'static str, fn(&str) -> std::result::Result<(), String>);

/// The options a script may set that Hummer applies.
const OPTIONS: &[KnownOption] = &[
    ("parallelism.default", |v| positive(v).map(|_| ())),
    ("table.local-time-zone", |v| {
        crate::zone::parse(v).map(|_| ())
    }),
    ("execution.checkpointing.interval", |v| {
        parse_duration(v).map(|_| ())
    }),
    ("state.checkpoints.dir", non_empty),
    ("execution.savepoint.path", non_empty),
    ("restart-strategy.type", |v| one_of(v, RESTART_STRATEGIES)),
    ("restart-strategy.fixed-delay.attempts", |v| {
        count(v).map(|_| ())
    }),
    ("restart-strategy.fixed-delay.delay", |v| {
        parse_duration(v).map(|_| ())
    }),
    (
        "restart-strategy.failure-rate.max-failures-per-interval",
        |v| positive(v).map(|_| ()),
    ),
    ("restart-strategy.failure-rate.failure-rate-interval", |v| {
        parse_duration(v).map(|_| ())
    }),
    ("restart-strategy.failure-rate.delay", |v| {
        parse_duration(v).map(|_| ())
    }),
    ("restart-strategy.exponential-delay.initial-backoff", |v| {
        parse_duration(v).map(|_| ())
    }),
    ("restart-strategy.exponential-delay.max-backoff", |v| {
        parse_duration(v).map(|_| ())
    }),
    (
        "restart-strategy.exponential-delay.backoff-multiplier",
        |v| hummer_execution::restart_strategy::multiplier(v).map(|_| ()),
    ),
    (
        "restart-strategy.exponential-delay.reset-backoff-threshold",
        |v| parse_duration(v).map(|_| ()),
    ),
    (
        "restart-strategy.exponential-delay.attempts-before-reset-backoff",
        |v| positive(v).map(|_| ()),
    ),
    ("pipeline.name", non_empty),
    ("table.dml-sync", |v| boolean(v).map(|_| ())),
    ("table.exec.mini-batch.enabled", |v| boolean(v).map(|_| ())),
    ("table.exec.mini-batch.allow-latency", |v| {
        parse_duration(v).map(|_| ())
    }),
    ("table.exec.mini-batch.size", |v| positive(v).map(|_| ())),
    ("table.optimizer.reuse-source-enabled", |v| {
        boolean(v).map(|_| ())
    }),
    ("table.optimizer.reuse-sub-plan-enabled", |v| {
        boolean(v).map(|_| ())
    }),
    ("execution.runtime-mode", |v| {
        one_of(v, &["streaming", "batch", "automatic"])
    }),
    ("sql-client.execution.result-mode", |v| {
        one_of(v, &["table", "changelog", "tableau"])
    }),
];

/// The values of `restart-strategy.type`, as Flink names them.
const RESTART_STRATEGIES: &[&str] = &[
    "none",
    "off",
    "disable",
    "fixed-delay",
    "fixeddelay",
    "failure-rate",
    "failurerate",
    "exponential-delay",
    "exponentialdelay",
];

/// `Ok` if `v` is one of `allowed` (in any case).
fn one_of(v: &str, allowed: &[&str]) -> std::result::Result<(), String> {
    if allowed.iter().any(|a| a.eq_ignore_ascii_case(v)) {
        return Ok(());
    }
    let quoted: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
    let (last, rest) = quoted.split_last().expect("a non-empty list");
    Err(format!("it is {} or {last}", rest.join(", ")))
}

/// The environment variable that hands a cluster job's workers the statements they run:
/// the session's definitions (`SET`, `CREATE ..`) and the job's own statement. A worker is
/// Hummer itself started as `hummer sql` by a TaskManager: it plans the same job from them
/// and runs its share, so no program is compiled for a SQL job.
pub const SCRIPT_ENV: &str = "HUMMER_SQL_SCRIPT";

/// A session: what the statements so far created and set.
#[derive(Debug, Clone, Default)]
pub struct Session {
    /// Tables, views and functions.
    pub catalog: Catalog,
    /// The options set, by key.
    pub options: BTreeMap<String, String>,
    /// The JobManager the session's jobs are submitted to (`None`: `HUMMER_JOBMANAGER`, else
    /// an embedded local cluster).
    pub jobmanager: Option<String>,
    /// The text of the statements that defined the session so far (what a worker replays).
    definitions: String,
    /// The statement being run, while it runs.
    current: Option<String>,
    /// The statement set being collected (`BEGIN STATEMENT SET` .. `END`), if one is.
    statement_set: Option<StatementSet>,
}

/// The `INSERT`s of a statement set, run as one job at its `END`.
#[derive(Debug, Clone, Default)]
struct StatementSet {
    /// Its statements' texts so far, `;`-terminated: what a cluster's workers replay.
    script: String,
    /// Each `INSERT` with where it is.
    inserts: Vec<(ast::Statement, Position)>,
}

impl Session {
    /// A new session without tables or options.
    pub fn new() -> Self {
        Session::default()
    }

    /// Runs every statement of `script` in order, handing each outcome to `show`; stops at
    /// the first error (nothing after it runs) or at `QUIT`.
    pub fn run_script(&mut self, script: &str, show: impl FnMut(&Outcome)) -> Result<()> {
        self.run_script_live(script, show, None)
    }

    /// As [`Session::run_script`], with a bare query's rows shown by `live` as they come.
    pub fn run_script_live(
        &mut self,
        script: &str,
        mut show: impl FnMut(&Outcome),
        mut live: Option<&mut dyn LiveResult>,
    ) -> Result<()> {
        for text in split(script)? {
            let parsed = statement::parse(&text)?;
            let defines = matches!(
                parsed,
                Statement::Set(Some(_))
                    | Statement::Reset(_)
                    | Statement::CreateTable(_)
                    | Statement::CreateView { .. }
                    | Statement::CreateFunction { .. }
            );
            self.current = Some(text.text.clone());
            let outcome = match (parsed, live.as_deref_mut()) {
                // (A query in a statement set is refused there.)
                (Statement::Query(query, at), Some(view)) if !self.has_open_statement_set() => {
                    self.select_live(&query, at, view)
                }
                (parsed, _) => self.execute(parsed),
            };
            self.current = None;
            let outcome = outcome.map_err(|e| e.within(text.start))?;
            if defines {
                self.definitions.push_str(&text.text);
                self.definitions.push_str(";\n");
            }
            show(&outcome);
            if outcome == Outcome::Quit {
                break;
            }
        }
        Ok(())
    }

    /// Registers a scalar function written in Rust as `name`: the session's queries call it
    /// by that name (or by the name a `CREATE FUNCTION f AS 'name'` gives it), Flink's
    /// `createTemporarySystemFunction`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hummer_sql::Session;
    /// use hummer_sql::expr::udf::ScalarUdf;
    /// use hummer_sql::types::SqlType;
    /// use hummer_sql::value::Value;
    ///
    /// let mut session = Session::new();
    /// session.register_function(
    ///     "com.example.Twice",
    ///     Arc::new(ScalarUdf::new([SqlType::BigInt], SqlType::BigInt, |args| match args {
    ///         [Value::BigInt(n)] => Ok(Value::BigInt(2 * n)),
    ///         _ => Ok(Value::Null),
    ///     })),
    /// );
    /// session
    ///     .run_script("CREATE FUNCTION twice AS 'com.example.Twice';", |_| {})
    ///     .unwrap();
    /// ```
    pub fn register_function(
        &mut self,
        name: &str,
        function: std::sync::Arc<dyn crate::expr::udf::ScalarFunction>,
    ) {
        self.catalog.register_function(name, function);
    }

    /// Whether a statement set is open (`BEGIN STATEMENT SET` without its `END` yet).
    pub fn has_open_statement_set(&self) -> bool {
        self.statement_set.is_some()
    }

    /// Runs one statement; positions in its errors are relative to the statement.
    pub fn execute(&mut self, statement: Statement) -> Result<Outcome> {
        let functions = self.catalog.functions().clone();
        crate::expr::udf::in_scope(&functions, || self.execute_in_scope(statement))
    }

    /// [`Session::execute`] with the catalog's functions in scope.
    fn execute_in_scope(&mut self, statement: Statement) -> Result<Outcome> {
        if self.statement_set.is_some() {
            return self.in_statement_set(statement);
        }
        match statement {
            Statement::Set(None) => Ok(Outcome::Table(Table {
                header: vec!["key".into(), "value".into()],
                rows: self
                    .options
                    .iter()
                    .map(|(k, v)| vec![k.clone(), v.clone()])
                    .collect(),
            })),
            Statement::Set(Some((key, value))) => self.set(key, value),
            Statement::Reset(None) => {
                self.options.clear();
                self.options_changed();
                Ok(info(
                    "All session properties have been set to their default values.",
                ))
            }
            Statement::Reset(Some(key)) => {
                self.options.remove(&key);
                self.options_changed();
                Ok(info(&format!("Session property '{key}' has been reset.")))
            }
            Statement::CreateTable(table) => {
                crate::expr::udf::in_scope(self.catalog.functions(), || {
                    connector::check_declaration(&table)
                })?;
                self.catalog.create_table(*table)?;
                Ok(info("Execute statement succeeded."))
            }
            Statement::CreateView {
                name,
                columns,
                query,
                if_not_exists,
                at,
            } => {
                self.catalog
                    .create_view(name, View { columns, query }, if_not_exists, at)?;
                Ok(info("Execute statement succeeded."))
            }
            Statement::CreateFunction {
                name,
                class,
                system,
                if_not_exists,
                at,
            } => {
                self.catalog
                    .create_function(name, class, system, if_not_exists, at)?;
                Ok(info("Execute statement succeeded."))
            }
            Statement::Drop {
                kind,
                name,
                if_exists,
                at,
            } => {
                self.catalog.drop(kind, &name, if_exists, at)?;
                Ok(info("Execute statement succeeded."))
            }
            Statement::Show(kind) => {
                let header = match kind {
                    ObjectKind::Table => "table name",
                    ObjectKind::View => "view name",
                    ObjectKind::Function => "function name",
                };
                let mut names: Vec<String> = self.catalog.names(kind).map(str::to_string).collect();
                if kind == ObjectKind::Table {
                    // Flink lists views among the tables.
                    names.extend(self.catalog.names(ObjectKind::View).map(str::to_string));
                    names.sort();
                }
                if kind == ObjectKind::Function {
                    // The session's functions, then the built-in ones, as Flink lists both.
                    names.extend(crate::expr::bind::FUNCTIONS.iter().map(|f| f.to_string()));
                }
                Ok(Outcome::Table(Table::column(header, names)))
            }
            Statement::Describe { name, at } => self.describe(&name, at),
            Statement::Help => Ok(info(&format!(
                "Hummer runs Flink SQL: {SUPPORTED_STATEMENTS}."
            ))),
            Statement::Quit => Ok(Outcome::Quit),
            Statement::Insert(insert, at) => self.insert(&insert, at),
            Statement::BeginStatementSet(first) => {
                self.statement_set = Some(StatementSet::default());
                self.record_in_statement_set();
                match first {
                    Some((insert, at)) => self.add_to_statement_set(*insert, at),
                    None => Ok(info("Begin a statement set.")),
                }
            }
            Statement::End => Err(SqlError::Invalid {
                at: Position::new(1, 1),
                message: "END without BEGIN STATEMENT SET".into(),
            }),
            Statement::Query(query, at) => self.select(&query, at),
            Statement::Explain(inner) => self.explain(*inner),
        }
    }

    /// An environment for one job of this session, as its options say.
    fn environment(&self) -> StreamExecutionEnvironment {
        let env = StreamExecutionEnvironment::local();
        if let Some(p) = self.parallelism() {
            env.set_parallelism(p);
        }
        env.set_runtime_mode(self.runtime_mode());
        if let Some(interval) = self.checkpoint_interval() {
            match self.options.get("state.checkpoints.dir") {
                Some(dir) => {
                    env.set_checkpoint_config(CheckpointConfig::new(interval, local_or_url(dir)))
                }
                None => env.enable_checkpointing(interval),
            };
        }
        if let Some(strategy) = self.restart_strategy() {
            env.set_restart_strategy(strategy);
        }
        if let Some(path) = self.options.get("execution.savepoint.path") {
            env.set_restore_from(Some(local_or_url(path)));
        }
        if self.jobmanager.is_some() {
            env.set_jobmanager(self.jobmanager.clone());
        }
        if let Some(statement) = &self.current {
            env.set_worker_env(SCRIPT_ENV, &format!("{}{statement};\n", self.definitions));
            env.set_sql(statement.trim());
        }
        env
    }

    /// How a query's result is shown in this session's mode.
    fn shown(&self) -> Shown {
        Shown {
            with_op: !self.catalog.batch(),
        }
    }

    /// `execution.runtime-mode`: streaming by default, as Flink's SQL client.
    fn runtime_mode(&self) -> hummer_api::RuntimeMode {
        use hummer_api::RuntimeMode;
        match self
            .options
            .get("execution.runtime-mode")
            .map(|m| m.to_ascii_lowercase())
            .as_deref()
        {
            Some("batch") => RuntimeMode::Batch,
            Some("automatic") => RuntimeMode::Automatic,
            _ => RuntimeMode::Streaming,
        }
    }

    fn job_name(&self, default: String) -> String {
        self.options
            .get("pipeline.name")
            .cloned()
            .unwrap_or(default)
    }

    /// Appends the statement being run to the open statement set's script.
    fn record_in_statement_set(&mut self) {
        if let (Some(set), Some(text)) = (&mut self.statement_set, &self.current) {
            set.script.push_str(text);
            set.script.push_str(";\n");
        }
    }

    /// Adds `insert` to the open statement set, planned first so that an error shows where
    /// it is.
    fn add_to_statement_set(&mut self, insert: ast::Statement, at: Position) -> Result<Outcome> {
        let scratch = StreamExecutionEnvironment::local();
        self.plan_insert_onto(&scratch, &insert, at)?;
        if let Some(set) = &mut self.statement_set {
            set.inserts.push((insert, at));
        }
        Ok(info("Add SQL update statement to the statement set."))
    }

    /// A statement while a statement set is open: an `INSERT` is planned (so that an error
    /// shows where it is) and added; `END` runs them all as one job; anything else is refused.
    fn in_statement_set(&mut self, statement: Statement) -> Result<Outcome> {
        match statement {
            Statement::Insert(insert, at) => {
                self.record_in_statement_set();
                self.add_to_statement_set(*insert, at)
            }
            Statement::End => {
                let set = self.statement_set.take().unwrap_or_default();
                if set.inserts.is_empty() {
                    return Ok(info("No statement in the statement set, skip submit."));
                }
                self.current = Some(format!("{}END", set.script));
                let env = self.environment();
                let (mut targets, mut published) = (Vec::new(), Vec::new());
                for (insert, at) in &set.inserts {
                    let (target, files) = self.plan_insert_onto(&env, insert, *at)?;
                    targets.push(target);
                    published.extend(files);
                }
                let name = self.job_name(format!("insert-into_{}", targets.join("_")));
                self.run_insert_job(&env, &name, &published)
            }
            other => Err(SqlError::Unsupported {
                at: Position::new(1, 1),
                what: format!(
                    "{} in a statement set",
                    match other {
                        Statement::BeginStatementSet(_) => "another BEGIN STATEMENT SET",
                        Statement::Query(..) => "a query",
                        _ => "this statement",
                    }
                ),
                supported: "INSERT INTO statements, then END, are".into(),
            }),
        }
    }

    /// `INSERT INTO table query`: in the embedded cluster, runs the job to its end (a bounded
    /// input); on a cluster, submits it and prints its id, or waits for its end with
    /// `table.dml-sync` (as Flink's client).
    fn insert(&mut self, insert: &ast::Statement, at: Position) -> Result<Outcome> {
        let (env, target, published) = self.plan_insert(insert, at)?;
        let name = self.job_name(format!("insert-into_{target}"));
        self.run_insert_job(&env, &name, published.as_slice())
    }

    /// Runs the job of `INSERT`s planned onto `env`: to its end locally, else submitted
    /// (waited for with `table.dml-sync`). The files the job left in `published` are made
    /// visible if it succeeded, removed if it failed: a failed job leaves no part of its
    /// output, as Flink's.
    fn run_insert_job(
        &self,
        env: &StreamExecutionEnvironment,
        name: &str,
        published: &[Published],
    ) -> Result<Outcome> {
        use hummer_connectors::text_file_sink::{discard, publish, publish_replacing};
        let sync = self
            .options
            .get("table.dml-sync")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if env.runs_in_process() || StreamExecutionEnvironment::is_cluster_worker() || sync {
            let result = env.execute(name);
            for (dir, token, overwrite) in published {
                match &result {
                    Ok(_) if *overwrite => publish_replacing(dir, token)?,
                    Ok(_) => publish(dir, token)?,
                    // The job's error is the one to report.
                    Err(_) => {
                        let _ = discard(dir, token);
                    }
                }
            }
            result?;
            return Ok(info("Complete execution of the SQL update statement."));
        }
        let client = env.execute_async(name)?;
        Ok(info(&format!(
            "Submitting SQL update statement to the cluster...\n[INFO] SQL update statement has \
             been successfully submitted to the cluster:\nJob ID: {}",
            client.job_id().unwrap_or("-")
        )))
    }

    /// `EXPLAIN` of an `INSERT` or a query: its result's columns and whether it updates,
    /// then the job's operator graph (the stream graph, the fused job graph, the subtasks),
    /// without running it.
    fn explain(&mut self, statement: Statement) -> Result<Outcome> {
        let (env, planned) = match statement {
            Statement::Insert(insert, at) => {
                let env = self.plan_insert(&insert, at)?.0;
                let ast::Statement::Insert(i) = insert.as_ref() else {
                    return Err(SqlError::Unsupported {
                        at,
                        what: "this statement".into(),
                        supported: SUPPORTED_STATEMENTS.into(),
                    });
                };
                let source = i.source.as_deref().ok_or_else(|| SqlError::Unsupported {
                    at,
                    what: "this INSERT form".into(),
                    supported: "INSERT INTO table SELECT .. is".into(),
                })?;
                // The query's own plan, for its columns (the job is `env`'s).
                let scratch = StreamExecutionEnvironment::local();
                (env, plan_result(&self.catalog, &scratch, source, at)?)
            }
            Statement::Query(query, at) => {
                let env = self.environment();
                let planned = plan_result(&self.catalog, &env, &query, at)?;
                let _ = planned.rows().collect();
                (env, planned)
            }
            _ => {
                return Err(SqlError::Unsupported {
                    at: Position::new(1, 1),
                    what: "EXPLAIN of this statement".into(),
                    supported: "EXPLAIN of an INSERT or a query is".into(),
                });
            }
        };
        let mut text = String::from("== Result ==\n");
        for c in &planned.schema.columns {
            text.push_str(&format!("{} {}\n", c.name, c.ty));
        }
        match &planned.updated_by {
            Some(node) => text.push_str(&format!("updating (+I/-U/+U/-D), by {node}\n")),
            None => text.push_str("append-only (+I)\n"),
        }
        text.push_str("\n== Operators ==\n");
        text.push_str(&env.explain()?);
        Ok(Outcome::Info(text))
    }

    /// The job of an `INSERT INTO`, planned on an environment of its own: its target, and the
    /// files the job leaves for [`Session::run_insert_job`] to publish when it has succeeded
    /// (a `filesystem` table's, for a job run here to its end).
    fn plan_insert_onto(
        &mut self,
        env: &StreamExecutionEnvironment,
        insert: &ast::Statement,
        at: Position,
    ) -> Result<(String, Option<Published>)> {
        let ast::Statement::Insert(insert) = insert else {
            return Err(SqlError::Unsupported {
                at,
                what: "this statement".into(),
                supported: SUPPORTED_STATEMENTS.into(),
            });
        };
        let (ast::TableObject::TableName(name), Some(source)) = (&insert.table, &insert.source)
        else {
            return Err(SqlError::Unsupported {
                at,
                what: "this INSERT form".into(),
                supported: "INSERT INTO table SELECT .. is".into(),
            });
        };
        if !insert.columns.is_empty() {
            return Err(SqlError::Unsupported {
                at,
                what: "an INSERT column list".into(),
                supported: "INSERT INTO table SELECT .. (all the table's columns, in order) is"
                    .into(),
            });
        }
        let target = name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.clone())
            .unwrap_or_default();
        let table = self.catalog.table(&target, at)?.clone();
        let planned = plan_result(&self.catalog, env, source, at)?;
        let runs_here = env.runs_in_process() && !StreamExecutionEnvironment::is_cluster_worker();
        let token = runs_here.then(hummer_connectors::text_file_sink::job_token);
        let published = connector::write(&planned, &table, token.as_deref())?;
        // INSERT OVERWRITE replaces a filesystem table's files once the job has succeeded, in
        // batch mode only, as Flink's filesystem sink.
        if insert.overwrite && (!self.catalog.batch() || published.is_none()) {
            return Err(SqlError::Unsupported {
                at,
                what: format!("INSERT OVERWRITE of '{target}' here"),
                supported: "INSERT OVERWRITE of a 'filesystem' table in batch mode \
                            ('execution.runtime-mode' = 'batch'), run by this client, is \
                            (Flink's streaming mode does not support overwrite)"
                    .into(),
            });
        }
        Ok((
            target,
            published
                .zip(token)
                .map(|(dir, token)| (dir, token, insert.overwrite)),
        ))
    }

    /// Plans `INSERT INTO table query` onto an environment of its own.
    fn plan_insert(
        &mut self,
        insert: &ast::Statement,
        at: Position,
    ) -> Result<(StreamExecutionEnvironment, String, Option<Published>)> {
        let env = self.environment();
        let (target, published) = self.plan_insert_onto(&env, insert, at)?;
        Ok((env, target, published))
    }

    /// A bare query run with its rows handed to `live` as they come; the user may stop it.
    fn select_live(
        &mut self,
        query: &ast::Query,
        at: Position,
        live: &mut dyn LiveResult,
    ) -> Result<Outcome> {
        let env = self.environment();
        let planned = plan_result(&self.catalog, &env, query, at)?;
        if live.bounded_as_table() && env.unbounded_sources().is_empty() {
            return self.collect_table(&env, &planned);
        }
        let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        planned.rows().add_sink(connector::Shared(buffer.clone()));
        let client = env.execute_async(&self.job_name("collect".into()))?;
        let shown = self.shown();
        live.start(&shown.header(&planned.schema));
        let (mut count, mut cancelled) = (0, false);
        loop {
            let finished = client.is_finished().unwrap_or(false);
            let changes: Vec<crate::changelog::Change> = std::mem::take(
                &mut *buffer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            if !changes.is_empty() {
                count += changes.len();
                live.rows(
                    changes
                        .iter()
                        .map(|c| shown.row(&planned.schema, c))
                        .collect(),
                );
            }
            if finished {
                break;
            }
            if !cancelled && live.stop_requested() {
                client.cancel();
                cancelled = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        match client.wait() {
            Err(hummer_types::error::HummerError::Cancelled) if cancelled => {}
            other => {
                other?;
            }
        }
        live.end(count, cancelled);
        Ok(Outcome::Shown)
    }

    /// A bare query: runs it and shows its rows, with Flink's `op` column.
    fn select(&mut self, query: &ast::Query, at: Position) -> Result<Outcome> {
        let env = self.environment();
        let planned = plan_result(&self.catalog, &env, query, at)?;
        self.collect_table(&env, &planned)
    }

    /// The rows of the query `planned` on `env`, run to its end, as one table.
    fn collect_table(
        &mut self,
        env: &StreamExecutionEnvironment,
        planned: &crate::plan::Planned,
    ) -> Result<Outcome> {
        let out = planned.rows().collect();
        let mut result = env.execute(&self.job_name("collect".into()))?;
        let rows = result.collected(&out)?;
        let shown = self.shown();
        Ok(Outcome::Table(Table {
            header: shown.header(&planned.schema),
            rows: rows.iter().map(|c| shown.row(&planned.schema, c)).collect(),
        }))
    }

    /// `SET key = value`: checked if Hummer applies the option, noted if it does not.
    fn set(&mut self, key: String, value: String) -> Result<Outcome> {
        let outcome = match OPTIONS.iter().find(|(known, _)| *known == key) {
            Some((_, check)) => {
                check(&value).map_err(|why| SqlError::Invalid {
                    at: Position::new(1, 1),
                    message: format!("'{value}' is not a value of '{key}': {why}"),
                })?;
                info("Execute statement succeeded.")
            }
            None => info(&format!(
                "Session property '{key}' is accepted and has no effect in Hummer (it applies \
                 options {}).",
                OPTIONS
                    .iter()
                    .map(|(known, _)| *known)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        self.options.insert(key, value);
        self.options_changed();
        Ok(outcome)
    }

    /// Gives the catalog what the session's options now say of planning (after a `SET` or a
    /// `RESET`).
    fn options_changed(&mut self) {
        self.catalog.set_mini_batch(self.mini_batch());
        crate::zone::set(
            self.options
                .get("table.local-time-zone")
                .and_then(|z| crate::zone::parse(z).ok())
                .unwrap_or(jiff::tz::TimeZone::UTC),
        );
        self.catalog
            .set_batch(self.runtime_mode() == hummer_api::RuntimeMode::Batch);
        let on = |key: &str| {
            self.options
                .get(key)
                .is_none_or(|v| boolean(v) != Ok(false))
        };
        self.catalog.set_reuse(Reuse {
            sources: on("table.optimizer.reuse-source-enabled"),
            sub_plans: on("table.optimizer.reuse-sub-plan-enabled"),
        });
    }

    /// The mini-batch of `table.exec.mini-batch.*`: `None` unless enabled; enabled, it needs
    /// a latency above zero and a size, as Flink's planner does.
    fn mini_batch(&self) -> std::result::Result<Option<MiniBatch>, String> {
        let get = |key: &str| self.options.get(key).map(String::as_str);
        if get("table.exec.mini-batch.enabled").is_none_or(|v| boolean(v) != Ok(true)) {
            return Ok(None);
        }
        let latency = get("table.exec.mini-batch.allow-latency")
            .and_then(|v| parse_duration(v).ok())
            .filter(|d| !d.is_zero())
            .ok_or(
                "'table.exec.mini-batch.allow-latency' must be set above 0 ms when \
                 'table.exec.mini-batch.enabled' is true",
            )?;
        let size = get("table.exec.mini-batch.size")
            .and_then(|v| positive(v).ok())
            .ok_or(
                "'table.exec.mini-batch.size' must be set above 0 when \
                 'table.exec.mini-batch.enabled' is true",
            )?;
        Ok(Some(MiniBatch { size, latency }))
    }

    /// `DESCRIBE name`, as Flink's client shows a table: name, type, null, key, extras,
    /// watermark.
    fn describe(&self, name: &str, at: Position) -> Result<Outcome> {
        let header = ["name", "type", "null", "key", "extras", "watermark"]
            .map(String::from)
            .to_vec();
        let null = |nullable: bool| if nullable { "TRUE" } else { "FALSE" }.to_string();
        if let Some(view) = self.catalog.view(name) {
            // A view's columns are its query's: planned on an environment of its own.
            let scratch = StreamExecutionEnvironment::local();
            let mut schema = plan_query(&self.catalog, &scratch, &view.query, at)?.schema;
            for (c, n) in schema.columns.iter_mut().zip(&view.columns) {
                c.name.clone_from(n);
            }
            let rows = schema
                .columns
                .iter()
                .map(|c| {
                    let blank = String::new;
                    vec![
                        c.name.clone(),
                        c.ty.ty.to_string(),
                        null(c.ty.nullable),
                        blank(),
                        blank(),
                        blank(),
                    ]
                })
                .collect();
            return Ok(Outcome::Table(Table { header, rows }));
        }
        let table = self.catalog.table(name, at)?;
        let (schema, _) = connector::table_schema(table)?;
        let rows = table
            .columns
            .iter()
            .zip(&schema.columns)
            .map(|(c, typed)| {
                let ty = typed.ty.ty.to_string();
                let null = null(typed.ty.nullable);
                let extras = match &c.kind {
                    ColumnKind::Physical(_) => String::new(),
                    ColumnKind::Computed(e) => format!("AS {e}"),
                };
                let key = if table.primary_key.contains(&c.name) {
                    format!("PRI({})", table.primary_key.join(", "))
                } else {
                    String::new()
                };
                let watermark = match &table.watermark {
                    Some(w) if w.column == c.name => w.expr.to_string(),
                    _ => String::new(),
                };
                vec![c.name.clone(), ty, null, key, extras, watermark]
            })
            .collect();
        Ok(Outcome::Table(Table { header, rows }))
    }

    /// The restart strategy `restart-strategy.*` set, with Flink's defaults for what is not
    /// (`None`: not set, the engine's default).
    pub fn restart_strategy(&self) -> Option<RestartStrategy> {
        let kind = self
            .options
            .get("restart-strategy.type")?
            .to_ascii_lowercase();
        let duration = |key: &str, default: Duration| {
            self.options
                .get(key)
                .and_then(|v| parse_duration(v).ok())
                .unwrap_or(default)
        };
        let number = |key: &str, default: u32| {
            self.options
                .get(key)
                .and_then(|v| count(v).ok())
                .unwrap_or(default)
        };
        let second = Duration::from_secs(1);
        Some(match kind.as_str() {
            "fixed-delay" | "fixeddelay" => RestartStrategy::FixedDelay {
                attempts: number("restart-strategy.fixed-delay.attempts", 1),
                delay: duration("restart-strategy.fixed-delay.delay", second),
            },
            "failure-rate" | "failurerate" => RestartStrategy::FailureRate {
                max_failures: number("restart-strategy.failure-rate.max-failures-per-interval", 1),
                interval: duration(
                    "restart-strategy.failure-rate.failure-rate-interval",
                    Duration::from_secs(60),
                ),
                delay: duration("restart-strategy.failure-rate.delay", second),
            },
            "exponential-delay" | "exponentialdelay" => {
                let key = |name: &str| format!("restart-strategy.exponential-delay.{name}");
                let RestartStrategy::ExponentialDelay {
                    initial_backoff,
                    max_backoff,
                    multiplier_milli,
                    reset_threshold,
                    attempts,
                } = RestartStrategy::exponential_delay()
                else {
                    return Some(RestartStrategy::exponential_delay());
                };
                RestartStrategy::ExponentialDelay {
                    initial_backoff: duration(&key("initial-backoff"), initial_backoff),
                    max_backoff: duration(&key("max-backoff"), max_backoff),
                    multiplier_milli: self
                        .options
                        .get(&key("backoff-multiplier"))
                        .and_then(|v| hummer_execution::restart_strategy::multiplier(v).ok())
                        .unwrap_or(multiplier_milli),
                    reset_threshold: duration(&key("reset-backoff-threshold"), reset_threshold),
                    attempts: number(&key("attempts-before-reset-backoff"), attempts),
                }
            }
            _ => RestartStrategy::None,
        })
    }

    /// The parallelism the session's jobs run at, if `parallelism.default` is set.
    pub fn parallelism(&self) -> Option<usize> {
        self.options
            .get("parallelism.default")
            .and_then(|v| positive(v).ok())
    }

    /// The checkpoint interval, if `execution.checkpointing.interval` is set.
    pub fn checkpoint_interval(&self) -> Option<Duration> {
        self.options
            .get("execution.checkpointing.interval")
            .and_then(|v| parse_duration(v).ok())
    }
}

fn info(message: &str) -> Outcome {
    Outcome::Info(format!("[INFO] {message}"))
}

fn positive(v: &str) -> std::result::Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("it is a whole number of at least 1".into()),
    }
}

fn count(v: &str) -> std::result::Result<u32, String> {
    v.trim()
        .parse::<u32>()
        .map_err(|_| "it is a whole number of at least 0".into())
}

/// A path option as the engine takes it: a `file://` URL as its local path, anything else
/// (a plain path, an `s3://` URL) as it is.
fn local_or_url(path: &str) -> std::path::PathBuf {
    path.strip_prefix("file://").unwrap_or(path).into()
}

fn boolean(v: &str) -> std::result::Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("it is 'true' or 'false'".into()),
    }
}

fn non_empty(v: &str) -> std::result::Result<(), String> {
    if v.trim().is_empty() {
        Err("it may not be empty".into())
    } else {
        Ok(())
    }
}

/// A duration as Flink writes one: a number and a unit (`10 s`, `500ms`, `1 min`, `2h`,
/// `1 d`; milliseconds without a unit).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || format!("'{text}' is not a duration such as '10 s', '500 ms' or '1 min'");
    let n: u64 = number.parse().map_err(|_| bad())?;
    let millis = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => n,
        "s" | "sec" | "secs" | "second" | "seconds" => n.saturating_mul(1000),
        "m" | "min" | "mins" | "minute" | "minutes" => n.saturating_mul(60_000),
        "h" | "hour" | "hours" => n.saturating_mul(3_600_000),
        "d" | "day" | "days" => n.saturating_mul(86_400_000),
        _ => return Err(bad()),
    };
    Ok(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(session: &mut Session, script: &str) -> Result<Vec<Outcome>> {
        let mut outcomes = Vec::new();
        session.run_script(script, |o| outcomes.push(o.clone()))?;
        Ok(outcomes)
    }

    #[test]
    fn ddl_builds_the_catalog_that_show_and_describe_list() {
        let mut s = Session::new();
        let out = run(
            &mut s,
            "CREATE TABLE bid (auction BIGINT NOT NULL, price BIGINT, ts TIMESTAMP(3),\n\
             WATERMARK FOR ts AS ts - INTERVAL '4' SECOND, PRIMARY KEY (auction) NOT ENFORCED)\n\
             WITH ('connector' = 'blackhole');\n\
             CREATE VIEW v AS SELECT auction FROM bid;\n\
             SHOW TABLES; DESCRIBE bid;",
        )
        .unwrap();
        assert_eq!(out.len(), 4);
        let Outcome::Table(tables) = &out[2] else {
            panic!("{:?}", out[2])
        };
        assert_eq!(tables.rows, [["bid"], ["v"]]);
        let Outcome::Table(columns) = &out[3] else {
            panic!("{:?}", out[3])
        };
        assert_eq!(
            columns.rows[0],
            ["auction", "BIGINT", "FALSE", "PRI(auction)", "", ""]
        );
        assert_eq!(columns.rows[2][5], "ts - INTERVAL '4' SECOND");
    }

    #[test]
    fn a_duplicate_or_unknown_name_is_refused_with_where_and_what() {
        let mut s = Session::new();
        let e = run(&mut s, "CREATE TABLE t (a INT);\nCREATE TABLE t (b INT)").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("line 2, column 1: a table or view named 't'"),
            "{e}"
        );
        let e = run(&mut s, "DESCRIBE tt").unwrap_err().to_string();
        assert_eq!(
            e,
            "line 1, column 10: table or view 'tt' not found; did you mean 't'?"
        );
        assert!(run(&mut s, "CREATE TABLE IF NOT EXISTS t (c INT)").is_ok());
    }

    #[test]
    fn options_hummer_applies_are_checked_and_others_are_noted() {
        let mut s = Session::new();
        run(
            &mut s,
            "SET 'parallelism.default' = '3'; SET 'execution.checkpointing.interval' = '10 s'",
        )
        .unwrap();
        assert_eq!(s.parallelism(), Some(3));
        assert_eq!(s.checkpoint_interval(), Some(Duration::from_secs(10)));
        let e = run(&mut s, "SET 'parallelism.default' = 'many'")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'many' is not a value of 'parallelism.default'"),
            "{e}"
        );
        let out = run(
            &mut s,
            "SET 'table.optimizer.distinct-agg.split.enabled' = 'true'",
        )
        .unwrap();
        let Outcome::Info(note) = &out[0] else {
            panic!()
        };
        assert!(note.contains("has no effect in Hummer"), "{note}");
    }

    #[test]
    fn a_mini_batch_needs_a_latency_and_a_size() {
        let mut s = Session::new();
        assert_eq!(s.mini_batch(), Ok(None));
        run(&mut s, "SET 'table.exec.mini-batch.enabled' = 'true'").unwrap();
        assert!(s.mini_batch().unwrap_err().contains("allow-latency"));
        run(&mut s, "SET 'table.exec.mini-batch.allow-latency' = '2s'").unwrap();
        assert!(s.mini_batch().unwrap_err().contains("mini-batch.size"));
        run(&mut s, "SET 'table.exec.mini-batch.size' = '500'").unwrap();
        let expected = MiniBatch {
            size: 500,
            latency: Duration::from_secs(2),
        };
        assert_eq!(s.mini_batch(), Ok(Some(expected)));
        assert!(run(&mut s, "SET 'table.exec.mini-batch.size' = '0'").is_err());
        run(&mut s, "SET 'table.exec.mini-batch.enabled' = 'false'").unwrap();
        assert_eq!(s.mini_batch(), Ok(None));
        run(&mut s, "SET 'table.exec.mini-batch.enabled' = 'true'").unwrap();
        run(&mut s, "RESET 'table.exec.mini-batch.enabled'").unwrap();
        assert!(matches!(
            s.catalog.mini_batch(Position::new(1, 1)),
            Ok(None)
        ));
    }

    #[test]
    fn reuse_follows_flinks_options_through_set_and_reset() {
        let mut s = Session::new();
        assert_eq!(s.catalog.reuse(), Reuse::default());
        run(
            &mut s,
            "SET 'table.optimizer.reuse-sub-plan-enabled' = 'false'",
        )
        .unwrap();
        assert!(!s.catalog.reuse().sub_plans);
        assert!(
            run(
                &mut s,
                "SET 'table.optimizer.reuse-source-enabled' = 'maybe'"
            )
            .is_err()
        );
        run(&mut s, "RESET").unwrap();
        assert_eq!(s.catalog.reuse(), Reuse::default());
    }

    #[test]
    fn durations_read_as_flink_writes_them() {
        for (text, ms) in [
            ("10 s", 10_000),
            ("500ms", 500),
            ("1 min", 60_000),
            ("2h", 7_200_000),
            ("250", 250),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
        assert!(parse_duration("ten seconds").is_err());
        assert!(parse_duration("5 fortnights").is_err());
    }
}
