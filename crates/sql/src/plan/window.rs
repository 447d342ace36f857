//! Windows in event time: Flink's window table functions (`TUMBLE`, `HOP`, `CUMULATE`,
//! `SESSION` in `FROM TABLE(..)`) and the legacy group windows (`GROUP BY TUMBLE(ts, ..)`),
//! lowered onto Hummer's window operator.
//!
//! A window table function adds `window_start`, `window_end` and `window_time` to its
//! table's columns. Grouped by `window_start` and `window_end` it is a window aggregation: the
//! rows are keyed by the other group keys, assigned to windows by the record's event time
//! (its rowtime), and each window's aggregates are emitted once, when the watermark passes
//! its end (an append-only result, as Flink's `WindowAggregate`). Anywhere else the rows are
//! copied once per window they fall in, with the three columns filled (Flink's
//! `WindowTableFunction`).

use std::time::Duration;

use hummer_api::{DataStream, KeyedStream};
use hummer_operators::window::{
    AggregateFunction, CumulativeEventTimeWindows, EventTimeSessionWindows,
    ProcessingTimeSessionWindows, SlidingEventTimeWindows, SlidingProcessingTimeWindows,
    TimeWindow, TumblingEventTimeWindows, TumblingProcessingTimeWindows, WindowAssigner,
    WindowResult,
};
use sqlparser::ast::{self, Spanned};

use super::{Planned, at_span};
use crate::changelog::Change;
use crate::dialect::{table_argument, table_partition};
use crate::error::{Position, Result, SqlError};
use crate::expr::bind::bind;
use crate::lower::group_aggregate::{GroupAggregate, GroupState};
use crate::lower::rowtime::Rowtime;
use crate::schema::{Column, Schema};
use crate::types::{DataType, SqlType};
use crate::value::{Row, Value};

/// The names of the columns a window table function adds, in order.
pub const WINDOW_COLUMNS: [&str; 3] = ["window_start", "window_end", "window_time"];

/// A window kind with its sizes, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSpec {
    /// `TUMBLE(.., size [, offset])`.
    Tumble {
        /// The window's length.
        size: i64,
        /// The shift of the windows from the epoch.
        offset: i64,
    },
    /// `HOP(.., slide, size [, offset])`.
    Hop {
        /// How often a window starts.
        slide: i64,
        /// The window's length.
        size: i64,
        /// The shift of the windows from the epoch.
        offset: i64,
    },
    /// `CUMULATE(.., step, size [, offset])`.
    Cumulate {
        /// How much a window grows at a time.
        step: i64,
        /// The window's largest length.
        size: i64,
        /// The shift of the windows from the epoch.
        offset: i64,
    },
    /// `SESSION(.., gap)`.
    Session {
        /// The time without rows that closes a session.
        gap: i64,
    },
}

/// A window table function not yet applied: the rows are the table's, and the columns
/// from `first_column` on are the window's (see [`WINDOW_COLUMNS`]).
#[derive(Clone, Debug)]
pub struct PendingWindow {
    /// The window.
    pub spec: WindowSpec,
    /// The index of `window_start` in the planned schema.
    pub first_column: usize,
    /// The time column the windows are on.
    pub rowtime: usize,
    /// The windows are in processing time (on a `PROCTIME()` column), not event time.
    pub processing_time: bool,
    /// `SESSION(TABLE t PARTITION BY ..)`: the columns sessions are kept apart by.
    pub partition: Vec<usize>,
}

fn ms(d: i64) -> Duration {
    Duration::from_millis(d.max(0) as u64)
}

fn refuse(what: String, at: Position) -> SqlError {
    SqlError::Unsupported {
        at,
        what,
        supported: "TUMBLE(TABLE t, DESCRIPTOR(rowtime), size [, offset]), HOP(.., slide, size \
                    [, offset]), CUMULATE(.., step, size [, offset]) and SESSION(TABLE t \
                    [PARTITION BY cols], DESCRIPTOR(rowtime), gap) in event time are"
            .into(),
    }
}

/// The milliseconds of an interval argument.
pub(crate) fn interval(arg: &ast::Expr) -> Result<i64> {
    let bound = bind(arg, &Schema::default())?;
    match (bound.ty.ty, bound.expr.eval(&[])) {
        (SqlType::Interval, Ok(Value::BigInt(ms))) if ms > 0 => Ok(ms),
        (ty, _) => Err(SqlError::Invalid {
            at: at_span(arg.span()),
            message: format!("'{arg}' is {ty}, where a positive INTERVAL is expected"),
        }),
    }
}

impl WindowSpec {
    /// The window of function `name` with the interval arguments `args` (after the table and
    /// the time column).
    pub fn of(name: &str, args: &[&ast::Expr], at: Position) -> Result<WindowSpec> {
        let n: Vec<i64> = args.iter().map(|a| interval(a)).collect::<Result<_>>()?;
        let spec = match (name, n.as_slice()) {
            ("TUMBLE", [size]) => WindowSpec::Tumble {
                size: *size,
                offset: 0,
            },
            ("TUMBLE", [size, offset]) => WindowSpec::Tumble {
                size: *size,
                offset: *offset,
            },
            ("HOP", [slide, size]) => WindowSpec::Hop {
                slide: *slide,
                size: *size,
                offset: 0,
            },
            ("HOP", [slide, size, offset]) => WindowSpec::Hop {
                slide: *slide,
                size: *size,
                offset: *offset,
            },
            ("CUMULATE", [step, size, rest @ ..]) if rest.len() <= 1 => {
                if size % step != 0 {
                    return Err(SqlError::Invalid {
                        at,
                        message: format!(
                            "CUMULATE's size ({size} ms) must be a multiple of its step \
                             ({step} ms)"
                        ),
                    });
                }
                WindowSpec::Cumulate {
                    step: *step,
                    size: *size,
                    offset: rest.first().copied().unwrap_or(0),
                }
            }
            ("SESSION", [gap]) => WindowSpec::Session { gap: *gap },
            _ => {
                return Err(refuse(
                    format!("{name} with {} interval arguments", n.len()),
                    at,
                ));
            }
        };
        Ok(spec)
    }

    /// The windows a row at `t` falls in (not for sessions, which merge).
    fn assign(&self, t: i64, out: &mut Vec<TimeWindow>) {
        match *self {
            WindowSpec::Tumble { size, offset } => TumblingEventTimeWindows::of(ms(size))
                .with_offset(ms(offset))
                .assign(t, out),
            WindowSpec::Hop {
                slide,
                size,
                offset,
            } => SlidingEventTimeWindows::of(ms(size), ms(slide))
                .with_offset(ms(offset))
                .assign(t, out),
            WindowSpec::Cumulate { step, size, offset } => {
                CumulativeEventTimeWindows::of(ms(step), ms(size))
                    .with_offset(ms(offset))
                    .assign(t, out)
            }
            WindowSpec::Session { gap } => out.push(TimeWindow::new(t, t.saturating_add(gap))),
        }
    }

    /// The aggregates of `keyed` rows per window, as results of Hummer's window operator,
    /// in event time or processing time, on the wall clock or not, as `clock` says.
    pub fn aggregate<KS>(
        &self,
        keyed: &KeyedStream<Change, Row, KS>,
        agg: GroupAggregate,
        clock: WindowClock,
        at: Position,
    ) -> Result<DataStream<WindowResult<Row, Row>>>
    where
        KS: Fn(&Change) -> Row + Clone + Send + Sync + 'static,
    {
        fn aggregated<A: WindowAssigner, KS>(
            keyed: &KeyedStream<Change, Row, KS>,
            assigner: A,
            agg: GroupAggregate,
            wall_clock: bool,
        ) -> DataStream<WindowResult<Row, Row>>
        where
            KS: Fn(&Change) -> Row + Clone + Send + Sync + 'static,
        {
            if wall_clock {
                keyed
                    .window(OnWallClock(assigner))
                    .aggregate(WindowAggregate(agg))
            } else {
                keyed.window(assigner).aggregate(WindowAggregate(agg))
            }
        }
        let (p, w) = (clock.processing_time, clock.wall_clock);
        Ok(match *self {
            WindowSpec::Tumble { size, offset } if p => aggregated(
                keyed,
                TumblingProcessingTimeWindows::of(ms(size)).with_offset(ms(offset)),
                agg,
                w,
            ),
            WindowSpec::Tumble { size, offset } => aggregated(
                keyed,
                TumblingEventTimeWindows::of(ms(size)).with_offset(ms(offset)),
                agg,
                w,
            ),
            WindowSpec::Hop {
                slide,
                size,
                offset,
            } if p => aggregated(
                keyed,
                SlidingProcessingTimeWindows::of(ms(size), ms(slide)).with_offset(ms(offset)),
                agg,
                w,
            ),
            WindowSpec::Hop {
                slide,
                size,
                offset,
            } => aggregated(
                keyed,
                SlidingEventTimeWindows::of(ms(size), ms(slide)).with_offset(ms(offset)),
                agg,
                w,
            ),
            WindowSpec::Cumulate { .. } if p => {
                return Err(refuse("CUMULATE in processing time".into(), at));
            }
            WindowSpec::Cumulate { step, size, offset } => aggregated(
                keyed,
                CumulativeEventTimeWindows::of(ms(step), ms(size)).with_offset(ms(offset)),
                agg,
                w,
            ),
            WindowSpec::Session { gap } if p => aggregated(
                keyed,
                ProcessingTimeSessionWindows::with_gap(ms(gap)),
                agg,
                w,
            ),
            WindowSpec::Session { gap } => {
                aggregated(keyed, EventTimeSessionWindows::with_gap(ms(gap)), agg, w)
            }
        })
    }
}

/// A `GROUP BY`'s aggregates as a window's aggregate function.
#[derive(Clone)]
struct WindowAggregate(GroupAggregate);

impl AggregateFunction<Change> for WindowAggregate {
    type Acc = GroupState;
    type Out = Row;
    fn create_accumulator(&self) -> GroupState {
        self.0.new_state()
    }
    fn add(&self, change: &Change, acc: &mut GroupState) {
        let sign = if change.kind.retracts() { -1 } else { 1 };
        // Only a value out of its type's range fails here; the runtime fails the job naming
        // the operator and subtask.
        if let Err(e) = self.0.fold(acc, &change.row, sign) {
            panic!("{e}");
        }
    }
    fn get_result(&self, acc: &GroupState) -> Row {
        match self.0.results(acc) {
            Ok(row) => row,
            Err(e) => panic!("{e}"),
        }
    }
    fn merge(&self, a: GroupState, b: GroupState) -> GroupState {
        self.0.merge(a, b)
    }
}

/// `FROM TABLE(f(TABLE t [PARTITION BY ..], DESCRIPTOR(col), ..))`: `input` is `t` planned;
/// the result has its columns and the three window columns, the window pending.
pub fn table_function(
    f: &ast::Function,
    batch: bool,
    input: impl FnOnce(&str, Position) -> Result<Planned>,
) -> Result<Planned> {
    let at = at_span(f.span());
    let name = f.name.to_string().to_uppercase();
    if !matches!(name.as_str(), "TUMBLE" | "HOP" | "CUMULATE" | "SESSION") {
        return Err(refuse(format!("the table function {name}"), at));
    }
    let ast::FunctionArguments::List(list) = &f.args else {
        return Err(refuse(format!("{name} without arguments"), at));
    };
    let args = arguments(&name, &list.args, at)?;
    let [table, descriptor, rest @ ..] = args.as_slice() else {
        return Err(refuse(
            format!("{name} with fewer than three arguments"),
            at,
        ));
    };
    let Some(table_name) = table_argument(table) else {
        return Err(refuse(format!("'{table}' as {name}'s table"), at));
    };
    let planned = input(&table_name, at_span(table.span()))?;
    if let Some(updated_by) = &planned.updated_by {
        return Err(refuse(
            format!("{name} over an updating input (updated by {updated_by})"),
            at,
        ));
    }
    let time_column = match descriptor {
        ast::Expr::Function(d) if d.name.to_string().eq_ignore_ascii_case("DESCRIPTOR") => {
            match &d.args {
                ast::FunctionArguments::List(l) => match l.args.as_slice() {
                    [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(c))] => {
                        super::aggregate::column_name(c)
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    };
    let Some(time_column) = time_column else {
        return Err(refuse(
            format!("'{descriptor}' as {name}'s time column"),
            at,
        ));
    };
    let column = planned
        .schema
        .index_of(&time_column, at_span(descriptor.span()))?;
    // In batch mode any time column is a window's time, as in Flink's batch SQL: the rows
    // are stamped with it, and the end of the input's final watermark closes every window.
    let planned = if batch
        && planned.rowtime != Some(column)
        && planned.proctime != Some(column)
        && planned.schema.columns[column].ty.ty.is_time()
    {
        let rows = planned
            .rows()
            .transform("Rowtime: batch window time", move |_| {
                Ok(Rowtime { column, delay: 0 })
            });
        Planned {
            input: rows,
            pending: None,
            scan: None,
            rowtime: Some(column),
            ..planned
        }
    } else {
        planned
    };
    let processing_time = planned.proctime == Some(column);
    if planned.rowtime != Some(column) && !processing_time {
        return Err(SqlError::Invalid {
            at: at_span(descriptor.span()),
            message: format!(
                "the column '{time_column}' is not a time attribute of '{table_name}' (a \
                 window's time column is the rowtime its table declares with WATERMARK FOR, or a \
                 PROCTIME() column{})",
                match planned.rowtime {
                    Some(r) => format!(": '{}'", planned.schema.columns[r].name),
                    None => ", and it declares none".into(),
                }
            ),
        });
    }
    let spec = WindowSpec::of(&name, rest, at)?;
    // As Flink's window table function (its windows are slices of the slide); a legacy
    // GROUP BY HOP(..) takes any size.
    if let WindowSpec::Hop { slide, size, .. } = spec
        && size % slide != 0
    {
        return Err(SqlError::Invalid {
            at,
            message: format!(
                "HOP table function based aggregate requires size must be an integral multiple \
                 of slide, but got size {size} ms and slide {slide} ms"
            ),
        });
    }
    let partition_columns = table_partition(table);
    if !partition_columns.is_empty() && name != "SESSION" {
        return Err(refuse(format!("PARTITION BY in {name}"), at));
    }
    let partition = partition_columns
        .iter()
        .map(|c| planned.schema.index_of(&c.value, at_span(c.span)))
        .collect::<Result<Vec<_>>>()?;
    let first_column = planned.schema.columns.len();
    let mut columns = planned.schema.columns.clone();
    let wall_clock = is_instant(&planned.schema, column);
    for c in WINDOW_COLUMNS {
        columns.push(Column {
            name: c.into(),
            ty: DataType::not_null(window_column_type(c == "window_time", wall_clock)),
        });
    }
    Ok(Planned {
        schema: Schema::new(columns),
        window: Some(PendingWindow {
            spec,
            first_column,
            rowtime: column,
            processing_time,
            partition,
        }),
        ..planned
    })
}

/// The parameters of each window table function, in order, as Flink names them.
fn parameters(name: &str) -> &'static [&'static str] {
    match name {
        "TUMBLE" => &["DATA", "TIMECOL", "SIZE", "OFFSET"],
        "HOP" => &["DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"],
        "CUMULATE" => &["DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"],
        _ => &["DATA", "TIMECOL", "GAP"],
    }
}

/// A window table function's arguments in the order of its parameters: positional, or all
/// named (`TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL ..)`).
fn arguments<'a>(
    name: &str,
    args: &'a [ast::FunctionArg],
    at: Position,
) -> Result<Vec<&'a ast::Expr>> {
    let named = |a: &'a ast::FunctionArg| match a {
        ast::FunctionArg::Named {
            name,
            arg: ast::FunctionArgExpr::Expr(e),
            ..
        } => Some((name.value.to_uppercase(), e)),
        _ => None,
    };
    if args.iter().any(|a| named(a).is_none()) {
        return args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(refuse(format!("the argument {other}"), at)),
            })
            .collect();
    }
    let given: Vec<(String, &ast::Expr)> = args.iter().filter_map(named).collect();
    let parameters = parameters(name);
    if let Some((unknown, _)) = given
        .iter()
        .find(|(n, _)| !parameters.contains(&n.as_str()))
    {
        return Err(refuse(
            format!(
                "the argument {unknown} of {name} (its parameters are {})",
                parameters.join(", ")
            ),
            at,
        ));
    }
    // In the parameters' order, up to the last one given (an optional OFFSET may be left out).
    let mut ordered = Vec::new();
    for p in parameters {
        match given.iter().find(|(n, _)| n == p) {
            Some((_, e)) => ordered.push(*e),
            None if ordered.len() == given.len() => break,
            None => return Err(refuse(format!("{name} without its argument {p}"), at)),
        }
    }
    Ok(ordered)
}

/// `planned` with its pending window table function applied row by row: each row once per
/// window it falls in, with the window's columns filled (sessions are refused: they merge,
/// and only an aggregation over them is supported).
pub fn materialize(planned: Planned, at: Position) -> Result<Planned> {
    let Some(window) = planned.window.clone() else {
        return Ok(planned);
    };
    if matches!(window.spec, WindowSpec::Session { .. }) {
        return Err(refuse(
            "SESSION windows other than in a GROUP BY window_start, window_end".into(),
            at,
        ));
    }
    let wall_clock = is_instant(&planned.schema, window.rowtime);
    let rows = planned
        .rows()
        .flat_map(move |c: Change| {
            let Some(t) = c.row[window.rowtime].time_millis() else {
                return Vec::new();
            };
            let mut windows = Vec::new();
            if wall_clock {
                window.spec.assign(crate::zone::to_local(t), &mut windows);
                wall_clock_to_instants(&mut windows);
            } else {
                window.spec.assign(t, &mut windows);
            }
            windows
                .into_iter()
                .map(|w| {
                    let mut row = c.row.clone();
                    row.extend(window_values(&w, wall_clock));
                    Change { kind: c.kind, row }
                })
                .collect::<Vec<_>>()
        })
        .name("WindowTableFunction");
    if window.processing_time {
        // Processing-time windows have no watermark to close them by.
        return Ok(Planned {
            input: rows,
            pending: None,
            scan: None,
            window: None,
            ..planned
        });
    }
    // Each row is now in one window: its bounds are known (a window Top-N, a cascading
    // window aggregation and a window join read them), and its time attribute is the
    // window's `window_time`, as in Flink; the rows carry it, so that an aggregation by the
    // bounds gathers each window's rows whatever the projections in between. It is never
    // before the row's own time, so no row becomes late.
    let window_time = window.first_column + 2;
    let rows = rows.transform("Rowtime: window_time", move |_| {
        Ok(Rowtime {
            column: window_time,
            delay: 0,
        })
    });
    Ok(Planned {
        input: rows,
        pending: None,
        scan: None,
        window: None,
        window_bounds: Some((window.first_column, window.first_column + 1)),
        rowtime: Some(window_time),
        ..planned
    })
}

/// A window's `window_start`, `window_end` and `window_time` (its last millisecond); on the
/// wall clock (a window over a `TIMESTAMP_LTZ`), the bounds as wall-clock times in the
/// session's zone and the time an instant, as Flink gives them.
pub fn window_values(w: &TimeWindow, wall_clock: bool) -> [Value; 3] {
    if wall_clock {
        return [
            Value::Timestamp(crate::zone::to_local(w.start)),
            Value::Timestamp(crate::zone::to_local(w.end)),
            Value::TimestampLtz(w.end - 1),
        ];
    }
    [
        Value::Timestamp(w.start),
        Value::Timestamp(w.end),
        Value::Timestamp(w.end - 1),
    ]
}

/// The type of a window's `window_start`/`window_end` (`time` false) or `window_time`:
/// `TIMESTAMP(3)`, but the time of a window over instants is a `TIMESTAMP_LTZ(3)`.
pub fn window_column_type(time: bool, wall_clock: bool) -> SqlType {
    if time && wall_clock {
        SqlType::TimestampLtz(3)
    } else {
        SqlType::Timestamp(3)
    }
}

/// Whether column `column` of `schema` holds instants (`TIMESTAMP_LTZ`, `PROCTIME()`): the
/// windows over it are laid on the session's wall clock.
pub fn is_instant(schema: &Schema, column: usize) -> bool {
    matches!(schema.columns[column].ty.ty, SqlType::TimestampLtz(_))
}

/// What a window's time is: processing or event time, and instants whose windows are laid on
/// the session's wall clock (a day from local midnight) or wall-clock times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowClock {
    /// Processing time (`PROCTIME()`), not event time.
    pub processing_time: bool,
    /// The time is an instant (`TIMESTAMP_LTZ`).
    pub wall_clock: bool,
}

/// Windows of wall-clock times made windows of the instants they are in the session's zone.
fn wall_clock_to_instants(windows: &mut [TimeWindow]) {
    for w in windows {
        *w = TimeWindow::new(
            crate::zone::from_local(w.start),
            crate::zone::from_local(w.end),
        );
    }
}

/// `A`'s windows laid on the session's wall clock: a time is assigned as its wall-clock time,
/// and each window's bounds are the instants its wall-clock bounds are.
#[derive(Clone, Debug)]
struct OnWallClock<A>(A);

impl<A: WindowAssigner> WindowAssigner for OnWallClock<A> {
    fn assign(&self, timestamp: hummer_types::Timestamp, out: &mut Vec<TimeWindow>) {
        let from = out.len();
        self.0.assign(crate::zone::to_local(timestamp), out);
        wall_clock_to_instants(&mut out[from..]);
    }
    fn is_event_time(&self) -> bool {
        self.0.is_event_time()
    }
    fn is_merging(&self) -> bool {
        self.0.is_merging()
    }
    fn describe(&self) -> String {
        format!("{} on the session's wall clock", self.0.describe())
    }
}
