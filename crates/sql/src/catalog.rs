//! The session's catalog: the tables, views and functions that statements created, by name.
//!
//! Names are case-sensitive, as in Flink (`bid` and `Bid` are two tables); a name that does
//! not resolve is refused with the nearest existing one. Flink's default catalog and database
//! are the only ones, so `default_catalog.default_database.t` is `t`.

use std::collections::BTreeMap;

use crate::error::{Position, Result, SqlError};
use crate::expr::udf::{Functions, ScalarFunction};
use crate::lower::per_key::MiniBatch;
use crate::plan::reuse::Reuse;
use crate::statement::{ObjectKind, TableDefinition};

/// A view: a named query.
#[derive(Debug, Clone)]
pub struct View {
    /// Column names given to the query's columns, if any.
    pub columns: Vec<String>,
    /// The query.
    pub query: Box<sqlparser::ast::Query>,
}

/// What a session knows by name.
#[derive(Debug, Clone)]
pub struct Catalog {
    tables: BTreeMap<String, TableDefinition>,
    views: BTreeMap<String, View>,
    /// SQL name -> the class it was created with.
    functions: BTreeMap<String, String>,
    /// The functions registered in Rust, and what the created names stand for.
    udfs: Functions,
    /// The mini-batch an aggregation's updates go out in, if the session enabled it, or why
    /// its settings do not make one.
    mini_batch: std::result::Result<Option<MiniBatch>, String>,
    /// What a query reuses of what it names twice (the session's `table.optimizer.reuse-*`).
    reuse: Reuse,
    /// Queries run in batch mode (`execution.runtime-mode` = `batch`): a statement's result
    /// is its final table, not a changelog (see [`crate::plan::final_table`]).
    batch: bool,
}

/// How a query's aggregations send their results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AggregateSettings {
    /// The mini-batch their updates go out in, if the session enabled one.
    pub mini_batch: Option<MiniBatch>,
    /// Batch mode: a global aggregate over no rows still gives its one row.
    pub batch: bool,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            tables: BTreeMap::new(),
            views: BTreeMap::new(),
            functions: BTreeMap::new(),
            udfs: Functions::default(),
            mini_batch: Ok(None),
            reuse: Reuse::default(),
            batch: false,
        }
    }
}

impl Catalog {
    /// Adds a table; refused if a table or view of that name exists (unless `IF NOT EXISTS`,
    /// then the existing one stays).
    pub fn create_table(&mut self, table: TableDefinition) -> Result<()> {
        if self.exists(&table.name) {
            return match table.if_not_exists {
                true => Ok(()),
                false => Err(already_exists(table.at, &table.name)),
            };
        }
        self.tables.insert(table.name.clone(), table);
        Ok(())
    }

    /// Adds a view, as [`Catalog::create_table`].
    pub fn create_view(
        &mut self,
        name: String,
        view: View,
        if_not_exists: bool,
        at: Position,
    ) -> Result<()> {
        if self.exists(&name) {
            return match if_not_exists {
                true => Ok(()),
                false => Err(already_exists(at, &name)),
            };
        }
        self.views.insert(name, view);
        Ok(())
    }

    /// Names `class` as the SQL function `name`.
    pub fn create_function(
        &mut self,
        name: String,
        class: String,
        system: bool,
        if_not_exists: bool,
        at: Position,
    ) -> Result<()> {
        if self.functions.contains_key(&name) {
            return match if_not_exists {
                true => Ok(()),
                false => Err(SqlError::Invalid {
                    at,
                    message: format!("a function named '{name}' exists already"),
                }),
            };
        }
        self.udfs
            .create(&name, &class, system)
            .map_err(|message| SqlError::Invalid { at, message })?;
        self.functions.insert(name, class);
        Ok(())
    }

    /// Registers a function written in Rust as `name`: queries call it by that name, and
    /// `CREATE FUNCTION f AS 'name'` names it `f`.
    pub fn register_function(&mut self, name: &str, function: std::sync::Arc<dyn ScalarFunction>) {
        self.udfs.register(name, function);
    }

    /// Sets the mini-batch of aggregations (the session's `table.exec.mini-batch.*`), or why
    /// its settings are wrong (told when a query is planned, as Flink's planner tells it).
    pub fn set_mini_batch(&mut self, mini_batch: std::result::Result<Option<MiniBatch>, String>) {
        self.mini_batch = mini_batch;
    }

    /// The mini-batch of aggregations, if enabled; an error for a query at `at` if the
    /// session's settings do not make one.
    pub fn mini_batch(&self, at: Position) -> Result<Option<MiniBatch>> {
        self.mini_batch
            .clone()
            .map_err(|message| SqlError::Invalid { at, message })
    }

    /// How aggregations send their results: the mini-batch, and whether in batch mode.
    pub fn aggregate_settings(&self, at: Position) -> Result<AggregateSettings> {
        Ok(AggregateSettings {
            mini_batch: self.mini_batch(at)?,
            batch: self.batch,
        })
    }

    /// Sets what a query reuses (the session's `table.optimizer.reuse-*`).
    pub fn set_reuse(&mut self, reuse: Reuse) {
        self.reuse = reuse;
    }

    /// What a query reuses of what it names twice.
    pub fn reuse(&self) -> Reuse {
        self.reuse
    }

    /// Sets whether queries run in batch mode.
    pub fn set_batch(&mut self, batch: bool) {
        self.batch = batch;
    }

    /// Whether queries run in batch mode: a statement's result is then its final table.
    pub fn batch(&self) -> bool {
        self.batch
    }

    /// The functions a query can call beyond the built-in ones.
    pub fn functions(&self) -> &Functions {
        &self.udfs
    }

    /// Removes an object; an unknown one is refused unless `IF EXISTS`.
    pub fn drop(
        &mut self,
        kind: ObjectKind,
        name: &str,
        if_exists: bool,
        at: Position,
    ) -> Result<()> {
        let removed = match kind {
            ObjectKind::Table => self.tables.remove(name).is_some(),
            ObjectKind::View => self.views.remove(name).is_some(),
            ObjectKind::Function => {
                self.udfs.drop(name);
                self.functions.remove(name).is_some()
            }
        };
        if removed || if_exists {
            return Ok(());
        }
        Err(SqlError::unknown(
            at,
            kind_name(kind),
            name,
            self.names(kind),
        ))
    }

    /// The table `name`.
    pub fn table(&self, name: &str, at: Position) -> Result<&TableDefinition> {
        self.tables
            .get(name)
            .ok_or_else(|| self.not_found(name, at))
    }

    /// The table `name` where a table it must be, not a view (the right side of a lookup
    /// or temporal join): a view is refused as `what(name)` says, with what is `supported`.
    pub fn table_not_view(
        &self,
        name: &str,
        at: Position,
        what: impl FnOnce(&str) -> String,
        supported: &str,
    ) -> Result<&TableDefinition> {
        if self.view(name).is_some() {
            return Err(SqlError::Unsupported {
                at,
                what: what(name),
                supported: supported.into(),
            });
        }
        self.table(name, at)
    }

    /// The view `name`, if there is one.
    pub fn view(&self, name: &str) -> Option<&View> {
        self.views.get(name)
    }

    /// The class of function `name`, if it was created.
    pub fn function(&self, name: &str) -> Option<&str> {
        self.functions.get(name).map(String::as_str)
    }

    /// The names of the objects of `kind`, sorted.
    pub fn names(&self, kind: ObjectKind) -> impl Iterator<Item = &str> {
        let names: Box<dyn Iterator<Item = &String>> = match kind {
            ObjectKind::Table => Box::new(self.tables.keys()),
            ObjectKind::View => Box::new(self.views.keys()),
            ObjectKind::Function => Box::new(self.functions.keys()),
        };
        names.map(String::as_str)
    }

    /// A table or view `name` that does not exist, with the nearest that does.
    pub fn not_found(&self, name: &str, at: Position) -> SqlError {
        let candidates = self
            .tables
            .keys()
            .chain(self.views.keys())
            .map(String::as_str);
        SqlError::unknown(at, "table or view", name, candidates)
    }

    fn exists(&self, name: &str) -> bool {
        self.tables.contains_key(name) || self.views.contains_key(name)
    }
}

fn already_exists(at: Position, name: &str) -> SqlError {
    SqlError::Invalid {
        at,
        message: format!(
            "a table or view named '{name}' exists already (CREATE .. IF NOT EXISTS keeps it)"
        ),
    }
}

fn kind_name(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Table => "table",
        ObjectKind::View => "view",
        ObjectKind::Function => "function",
    }
}
