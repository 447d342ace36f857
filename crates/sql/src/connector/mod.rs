//! The connectors a table's `WITH ('connector' = ..)` names, with Flink's option names:
//! reading a table into a stream of rows, and writing a stream of rows into a table.
//!
//! Here: `filesystem` (formats `csv`, `json` and `debezium-json`; source and sink), `kafka`
//! and `upsert-kafka` (source and sink), `nexmark` and `datagen` (sources), `print` and
//! `blackhole` (sinks).
//! A table's computed columns are computed right after its scan, so a query sees every
//! column of the table in declaration order.

use std::fmt;

pub mod column_use;
mod datagen;
mod kafka;
mod nexmark;
mod options;
mod subtask_rows;
mod table_files;
mod watermark;

pub use datagen::DataGen;
pub use nexmark::NexmarkEvents;
pub use table_files::{TableFiles, list_files};
pub use watermark::{EventTime, RowtimeNotNull};

use hummer_api::{DataStream, StreamExecutionEnvironment};
use hummer_connectors::text_file_sink::TextFileSink;
use hummer_operators::OperatorContext;
use hummer_operators::sink::{DiscardingSink, Sink, SinkWriter};

use crate::changelog::Change;
use crate::error::{Result, SqlError};
use crate::expr::bind::bind;
use crate::format::{Encoder, Format};
use crate::lower::Calc;
use crate::lower::calc::Named;
use crate::lower::changelog_normalize::ChangelogNormalize;
use crate::lower::per_key::PerKey;
use crate::plan::Planned;
use crate::schema::{Column, Schema};
use crate::statement::{ColumnKind, TableDefinition};
use crate::value::Row;
use column_use::ColumnUse;

/// The connectors, for errors.
const CONNECTORS: &str = "'filesystem' (formats 'csv', 'json' and 'debezium-json'), 'kafka', \
     'upsert-kafka', 'nexmark' and 'datagen' (read), 'print' and 'blackhole' (written) are";

/// The `Calc` that casts the query's columns to the types of the table's columns where they
/// differ (`None` where none does), as Flink's `INSERT` casts implicitly; a column whose
/// type does not go into its column is refused before anything runs, as Flink refuses it.
fn into_columns(query: &Schema, target: &Schema, table: &TableDefinition) -> Result<Option<Calc>> {
    use crate::expr::Expr;
    use crate::types::IntoColumn;
    let mut casts = false;
    let mut projection = Vec::with_capacity(target.columns.len());
    for (i, (from, to)) in query.columns.iter().zip(&target.columns).enumerate() {
        let expr = match from.ty.ty.into_column(&to.ty.ty) {
            IntoColumn::AsItIs => Expr::Column(i),
            IntoColumn::Cast => {
                casts = true;
                Expr::Cast {
                    expr: Box::new(Expr::Column(i)),
                    to: to.ty.ty.clone(),
                    try_cast: false,
                }
            }
            IntoColumn::Refused => {
                let listed = |s: &Schema| {
                    s.columns
                        .iter()
                        .map(|c| format!("{}: {}", c.name, c.ty))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(SqlError::Invalid {
                    at: table.at,
                    message: format!(
                        "Column types of query result and sink for '{}' do not match: \
                         incompatible types for sink column '{}' at position {i} ({} into \
                         {}; cast it in the query).\nQuery schema: [{}]\nSink schema: [{}]",
                        table.name,
                        to.name,
                        from.ty,
                        to.ty,
                        listed(query),
                        listed(target)
                    ),
                });
            }
        };
        projection.push(Named {
            expr,
            text: to.name.clone(),
        });
    }
    Ok(casts.then(|| Calc::new(None, projection)))
}

/// The table's physical columns (what its connector reads or writes).
pub fn physical_schema(table: &TableDefinition) -> Schema {
    Schema::new(
        table
            .columns
            .iter()
            .filter_map(|c| match &c.kind {
                ColumnKind::Physical(ty) => Some(Column {
                    name: c.name.clone(),
                    ty: ty.clone(),
                }),
                ColumnKind::Computed(_) => None,
            })
            .collect(),
    )
}

/// Every column of the table, and the `Calc` that computes them from the physical ones
/// (`None` without computed columns).
pub fn table_schema(table: &TableDefinition) -> Result<(Schema, Option<Calc>)> {
    let physical = physical_schema(table);
    if physical.columns.len() == table.columns.len() {
        return Ok((physical, None));
    }
    let mut columns = Vec::with_capacity(table.columns.len());
    let mut projection = Vec::with_capacity(table.columns.len());
    for c in &table.columns {
        let (ty, expr, text) = match &c.kind {
            ColumnKind::Physical(_) => {
                let i = physical.index_of(&c.name, c.at)?;
                (
                    physical.columns[i].ty.clone(),
                    crate::expr::Expr::Column(i),
                    c.name.clone(),
                )
            }
            ColumnKind::Computed(e) => {
                let bound = bind(e, &physical)?;
                (bound.ty, bound.expr, e.to_string())
            }
        };
        columns.push(Column {
            name: c.name.clone(),
            ty,
        });
        projection.push(Named { expr, text });
    }
    let calc = Calc::new(None, projection);
    Ok((Schema::new(columns), Some(calc)))
}

/// Checks what a `CREATE TABLE` declares, as Flink checks it before the table is created:
/// its computed columns bind, and its watermark is on a time column.
pub fn check_declaration(table: &TableDefinition) -> Result<()> {
    let (schema, _) = table_schema(table)?;
    if let Some(w) = &table.watermark {
        EventTime::bind(w, &schema)?;
    }
    Ok(())
}

/// The option `key` of `table`, which its connector needs.
fn required<'a>(table: &'a TableDefinition, key: &str) -> Result<&'a str> {
    table
        .options
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| SqlError::Invalid {
            at: table.at,
            message: format!("the table '{}' needs the option '{key}'", table.name),
        })
}

/// The `path` of a `filesystem` table as a local path: a plain path or a `file://` URL, as
/// Flink takes them.
fn local_path(table: &TableDefinition) -> Result<std::path::PathBuf> {
    let path = required(table, "path")?;
    if let Some(local) = path.strip_prefix("file://") {
        return Ok(local.into());
    }
    match path.split_once("://") {
        Some((scheme, _)) => Err(SqlError::Unsupported {
            at: table.at,
            what: format!("the path '{path}' of table '{}'", table.name),
            supported: format!("local paths and file:// URLs are (not {scheme}://)"),
        }),
        None => Ok(path.into()),
    }
}

/// The connector of `table`, its options checked (every read and write goes through here).
fn connector(table: &TableDefinition) -> Result<&str> {
    let connector = required(table, "connector")?;
    options::check(table, connector)?;
    Ok(connector)
}

/// A table read: its changes (inserts, unless the table is a changelog), its columns, what
/// its scan reads if it can skip columns, and the node that makes it updating if it is.
#[derive(Clone)]
pub struct Scan {
    /// The table's changes, every column (computed ones included).
    pub changes: DataStream<Change>,
    /// Its columns.
    pub schema: Schema,
    /// The columns the query reads of a scan that decodes only those.
    pub column_use: Option<ColumnUse>,
    /// The node that makes the table updating (a changelog source), for a sink's refusal.
    pub updated_by: Option<String>,
}

/// Reads `table` into a stream of its changes, with event time where the table declares a
/// watermark: inserts of its rows, or the changes of a changelog (`debezium-json`,
/// `upsert-kafka`, normalized by key as Flink's `ChangelogNormalize` does).
pub fn scan(env: &StreamExecutionEnvironment, table: &TableDefinition) -> Result<Scan> {
    let (schema, computed) = table_schema(table)?;
    let event_time = match &table.watermark {
        Some(w) => Some(EventTime::bind(w, &schema)?),
        None => None,
    };
    // The rowtime and what the watermark reads are read whatever the query reads.
    let used = ColumnUse::new(schema.columns.len());
    if let Some(e) = &event_time {
        let mut time_columns = vec![false; schema.columns.len()];
        time_columns[e.rowtime] = true;
        e.watermark.columns(&mut |c| time_columns[c] = true);
        used.mark(&time_columns);
    }
    let mut column_use = None;
    // A source of rows with every column, with the table's event time if it has one (and
    // no row without it).
    fn from<S: hummer_connectors::Source<Row>>(
        env: &StreamExecutionEnvironment,
        source: S,
        event_time: Option<(EventTime, RowtimeNotNull)>,
    ) -> DataStream<Row> {
        match event_time {
            Some((event_time, check)) => env
                .from_source(source, event_time.strategy())
                .transform("RowtimeNotNull", move |_| Ok(check.clone())),
            None => env.add_source(source),
        }
    }
    let event_time = event_time.map(|e| {
        let check = RowtimeNotNull {
            column: e.rowtime,
            name: schema.columns[e.rowtime].name.clone(),
            table: table.name.clone(),
            used: None,
        };
        (e, check)
    });
    let connector = connector(table)?;
    let (rows, changelog) = match connector {
        "filesystem" => {
            let format = Format::of(table, "format")?;
            let changelog = format.takes_updates();
            let source = TableFiles {
                table: table.name.clone(),
                path: local_path(table)?,
                format,
                physical: physical_schema(table),
                computed,
                used: used.clone(),
                decoded: None,
            };
            let event_time = event_time.map(|(e, check)| {
                let used = (!changelog).then(|| used.clone());
                (e, RowtimeNotNull { used, ..check })
            });
            if !changelog {
                column_use = Some(used);
            }
            (from(env, source, event_time), changelog)
        }
        "nexmark" => {
            let source = NexmarkEvents::of(table, &physical_schema(table), computed)?;
            (from(env, source, event_time), false)
        }
        "datagen" => {
            let source = DataGen::of(table, &physical_schema(table), computed)?;
            (from(env, source, event_time), false)
        }
        "kafka" => {
            let changelog = kafka::takes_updates(table)?;
            (
                from(env, kafka::source(table, false)?, event_time),
                changelog,
            )
        }
        "upsert-kafka" => (from(env, kafka::source(table, true)?, event_time), true),
        other => {
            return Err(SqlError::Unsupported {
                at: table.at,
                what: format!("reading the connector '{other}' of table '{}'", table.name),
                supported: "reading 'filesystem', 'kafka', 'upsert-kafka', 'nexmark' and \
                            'datagen' is"
                    .into(),
            });
        }
    };
    let name = &table.name;
    if !changelog {
        return Ok(Scan {
            changes: rows.map(Change::insert).name(&format!("Rows: {name}")),
            schema,
            column_use,
            updated_by: None,
        });
    }
    let width = schema.columns.len();
    let changes = rows
        .flat_map(move |row: Row| crate::changelog::uncarry(row, width))
        .name(&format!("Changes: {name}"));
    let fields: Vec<&str> = schema.columns.iter().map(|c| c.name.as_str()).collect();
    let scan_node = format!(
        "TableSourceScan(table=[[default_catalog, default_database, {name}]], fields=[{}])",
        fields.join(", ")
    );
    if connector != "upsert-kafka" {
        return Ok(Scan {
            changes,
            schema,
            column_use,
            updated_by: Some(scan_node),
        });
    }
    let key = table
        .primary_key
        .iter()
        .map(|k| schema.index_of(k, table.at))
        .collect::<Result<Vec<_>>>()?;
    let description = format!("ChangelogNormalize(key=[{}])", table.primary_key.join(", "));
    let normalize = ChangelogNormalize { key: key.clone() };
    let changes = changes
        .key_by(move |c: &Change| -> Row { key.iter().map(|&i| c.row[i].clone()).collect() })
        .transform(&description, move |_| Ok(PerKey::new(normalize.clone())));
    Ok(Scan {
        changes,
        schema,
        column_use,
        updated_by: Some(description),
    })
}

/// The source of a lookup join's table (`JOIN t FOR SYSTEM_TIME AS OF left.proctime`): a
/// bounded `filesystem` table, which a lookup join reads whole in each subtask.
pub fn lookup_source(table: &TableDefinition) -> Result<TableFiles> {
    match connector(table)? {
        "filesystem" if !Format::of(table, "format")?.takes_updates() => {
            let (schema, computed) = table_schema(table)?;
            let used = ColumnUse::new(schema.columns.len());
            used.mark_all();
            Ok(TableFiles {
                table: table.name.clone(),
                path: local_path(table)?,
                format: Format::of(table, "format")?,
                physical: physical_schema(table),
                computed,
                used,
                decoded: None,
            })
        }
        other => Err(SqlError::Unsupported {
            at: table.at,
            what: format!(
                "a processing-time temporal join with the '{other}' table '{}' (a changelog \
                 cannot be a lookup table)",
                table.name
            ),
            supported: "lookup joins with bounded 'filesystem' tables (read whole by each \
                        subtask) and event-time temporal joins with versioned tables are"
                .into(),
        }),
    }
}

/// Writes the query's rows into `table`: a sink that takes only inserts (`csv`) refuses an
/// updating query before anything runs, naming the operator that updates, as Flink does.
/// With a `job_token` (a job the caller runs to its end), a `filesystem` table's finished
/// files stay hidden until the caller publishes them (`text_file_sink::publish`) or discards
/// them: the directory it returns.
pub fn write(
    planned: &Planned,
    table: &TableDefinition,
    job_token: Option<&str>,
) -> Result<Option<std::path::PathBuf>> {
    let schema = &planned.schema;
    let target = physical_schema(table);
    if target.columns.len() != schema.columns.len() {
        return Err(SqlError::Invalid {
            at: table.at,
            message: format!(
                "the query has {} columns and the table '{}' {}",
                schema.columns.len(),
                table.name,
                target.columns.len()
            ),
        });
    }
    let rows = match into_columns(schema, &target, table)? {
        Some(calc) => planned.rows_through(calc, &format!("Calc: into {}", table.name)),
        None => planned.rows(),
    };
    let inserts_only = |format: &str| match &planned.updated_by {
        Some(node) => Err(SqlError::Invalid {
            at: table.at,
            message: format!(
                "Table sink '{}' doesn't support consuming update changes which is produced \
                 by node {node} (its format '{format}' takes inserts only; 'debezium-json' \
                 takes updates)",
                table.name
            ),
        }),
        None => Ok(()),
    };
    match connector(table)? {
        "filesystem" => {
            let path = local_path(table)?;
            let format = Format::of(table, "format")?;
            if !format.takes_updates() {
                inserts_only(format.name())?;
            }
            let encoder = Encoder::new(format, &target);
            // Rows are encoded straight into the part file's buffer: no string per row.
            // INSERT INTO adds to the table's files, as Flink's (no INSERT OVERWRITE).
            let sink =
                TextFileSink::with_encoder(&path, move |c: &Change, line| encoder.encode(c, line));
            rows.add_sink(match job_token {
                Some(token) => sink.published_by_caller(token),
                None => sink.appending(),
            });
            return Ok(job_token.map(|_| path));
        }
        "print" => {
            let mut sink = hummer_connectors::print::PrintSink::default();
            if let Some(id) = table.options.get("print-identifier") {
                sink = sink.with_identifier(id.clone());
            }
            if table
                .options
                .get("standard-error")
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
            {
                sink = sink.to_stderr();
            }
            rows.map(|c: Change| Printed(c.printed()))
                .name(&format!("Print: {}", table.name))
                .add_sink(sink);
        }
        "blackhole" => {
            rows.add_sink(DiscardingSink);
        }
        "kafka" => {
            if !kafka::takes_updates(table)? {
                inserts_only(kafka::value_format(table)?.name())?;
            }
            rows.add_sink(kafka::sink(table, &target, false)?);
        }
        "upsert-kafka" => {
            rows.add_sink(kafka::sink(table, &target, true)?);
        }
        other => {
            return Err(SqlError::Unsupported {
                at: table.at,
                what: format!("the connector '{other}' of table '{}'", table.name),
                supported: CONNECTORS.into(),
            });
        }
    }
    Ok(None)
}

/// A row as Flink's `print` connector shows it: `+I[1, abc]`, `-U[..]`.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Printed(String);

impl fmt::Debug for Printed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A sink that appends the changes to a shared buffer, for a reader beside the job (the
/// interactive client's live results).
#[derive(Clone)]
pub struct Shared(pub std::sync::Arc<std::sync::Mutex<Vec<Change>>>);

impl Sink<Change> for Shared {
    fn name(&self) -> String {
        "Live results".into()
    }
    fn create_writer(
        &self,
        _: &OperatorContext,
    ) -> hummer_types::error::Result<Box<dyn SinkWriter<Change>>> {
        Ok(Box::new(self.clone()))
    }
}

impl SinkWriter<Change> for Shared {
    fn write_batch(&mut self, batch: &mut Vec<Change>) -> hummer_types::error::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .append(batch);
        Ok(())
    }
}
