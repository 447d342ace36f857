//! WindowCount: the exactly-once reference job with event time.
//!
//! A replayable generator of `events` events over `keys` keys, out of order by up to
//! [`DISORDER_MS`] of event time (and watermarks that allow for it, so none is late), counted
//! per key in tumbling windows of [`WINDOW_MS`]: by the window operator
//! ([`Variant::Windows`]) or by a keyed process function with event-time timers
//! ([`Variant::Timers`]). Every result is a line `key window_start count` written through the
//! exactly-once file sink. [`verify`] checks the committed output against counts computed
//! from the generator's formula: every window of every key exactly once, with its exact
//! count, after any number of failures and restores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::api::StreamExecutionEnvironment;
use crate::connectors::generator::GeneratorSource;
use crate::error::{HummerError, Result};
use crate::event_count::{InjectedFailures, committed_rows};
use crate::operators::WatermarkStrategy;
use crate::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use crate::operators::window::{
    CountAggregate, TimeWindow, TumblingEventTimeWindows, WindowResult,
};
use crate::types::Timestamp;

/// Size of the tumbling windows, in event-time milliseconds.
pub const WINDOW_MS: i64 = 1_000;
/// How far out of order events are (and the watermarks' bound).
pub const DISORDER_MS: i64 = 40;

/// Event `i`: `(i, key, timestamp)`. Timestamps advance 1 ms per event, with a jitter of up to
/// [`DISORDER_MS`].
pub fn event(i: u64, keys: u64) -> (u64, u64, Timestamp) {
    let jitter = (i.wrapping_mul(2_654_435_761) % DISORDER_MS as u64) as i64;
    (i, i % keys, i as i64 + jitter)
}

/// How the windows are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `window(TumblingEventTimeWindows).aggregate(CountAggregate)`.
    Windows,
    /// A keyed process function counting per window, emitting from event-time timers.
    Timers,
}

/// The job's settings.
#[derive(Clone, Debug)]
pub struct WindowCount {
    /// Events in total.
    pub events: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Events per second in total (`None`: as fast as possible).
    pub rate: Option<f64>,
    /// Output directory of the exactly-once file sink.
    pub out: PathBuf,
    /// Window operator or timers.
    pub variant: Variant,
    /// Events at which the job panics (each once, before the window).
    pub fail_at: Vec<u64>,
    /// Marks an injected failure as done (`<file>.<event>`), across processes.
    pub fail_marker: Option<PathBuf>,
}

/// Counts per window with event-time timers: the state is the count of each open window.
#[derive(Clone)]
struct TimerCount;

impl KeyedProcessFunction<u64, (u64, u64, Timestamp)> for TimerCount {
    type State = BTreeMap<i64, u64>;
    type Out = WindowResult<u64, u64>;

    fn process_element(
        &mut self,
        e: (u64, u64, Timestamp),
        ctx: &mut ProcessContext<'_, '_, u64, BTreeMap<i64, u64>, WindowResult<u64, u64>>,
    ) {
        let start = e.2 - e.2.rem_euclid(WINDOW_MS);
        *ctx.state()
            .get_or_insert_with(BTreeMap::new)
            .entry(start)
            .or_insert(0) += 1;
        ctx.timer_service()
            .register_event_time_timer(start + WINDOW_MS - 1);
    }

    fn on_timer(
        &mut self,
        t: Timestamp,
        ctx: &mut ProcessContext<'_, '_, u64, BTreeMap<i64, u64>, WindowResult<u64, u64>>,
    ) {
        let start = t + 1 - WINDOW_MS;
        let key = *ctx.key();
        let count = ctx
            .state()
            .get_or_insert_with(BTreeMap::new)
            .remove(&start)
            .unwrap_or(0);
        if ctx.state().value().is_some_and(|m| m.is_empty()) {
            ctx.state().clear();
        }
        ctx.collect(WindowResult {
            key,
            window: TimeWindow::new(start, start + WINDOW_MS),
            value: count,
        });
    }
}

impl WindowCount {
    /// Adds the job to `env`.
    pub fn build(&self, env: &StreamExecutionEnvironment) -> Result<()> {
        if self.keys == 0 {
            return Err(HummerError::Config("keys must be at least 1".into()));
        }
        let keys = self.keys;
        let failures = InjectedFailures::new(self.fail_at.clone(), self.fail_marker.clone());
        let mut source = GeneratorSource::new(move |i| event(i, keys)).with_count(self.events);
        if let Some(rate) = self.rate {
            source = source.with_rate(rate);
        }
        // Watermarks per source split: after a restore at a lower parallelism a subtask reads
        // several splits, and one running ahead must not make the others' events late.
        let keyed = env
            .from_source(
                source,
                WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(
                    DISORDER_MS as u64,
                ))
                .with_timestamp_assigner(|e: &(u64, u64, Timestamp), _| e.2),
            )
            .name("Events")
            .map(move |e: (u64, u64, Timestamp)| {
                failures.at(e.0);
                e
            })
            .name("Fail")
            .key_by(|e: &(u64, u64, Timestamp)| e.1);
        let counts = match self.variant {
            Variant::Windows => keyed
                .window(TumblingEventTimeWindows::of(Duration::from_millis(
                    WINDOW_MS as u64,
                )))
                .aggregate(CountAggregate)
                .name("Window count"),
            Variant::Timers => keyed.process_function(TimerCount).name("Timer count"),
        };
        counts
            .map(
                |WindowResult {
                     key,
                     window: w,
                     value: n,
                 }: WindowResult<u64, u64>| format!("{key} {} {n}", w.start),
            )
            .name("Format")
            .write_text_file(&self.out)
            .name("Exactly-once file sink");
        Ok(())
    }
}

/// What the committed output of a WindowCount run holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// `(key, window start)` missing from the output (the first few).
    pub missing: Vec<(u64, i64)>,
    /// `(key, window start)` in the output more than once (the first few).
    pub duplicated: Vec<(u64, i64)>,
    /// `(key, window start, expected, got)` with a wrong count (the first few).
    pub wrong: Vec<(u64, i64, u64, u64)>,
    /// Output lines read.
    pub lines: u64,
}

impl Verdict {
    /// Every window once with its exact count.
    pub fn is_exactly_once(&self) -> bool {
        self.missing.is_empty() && self.duplicated.is_empty() && self.wrong.is_empty()
    }
}

/// The counts per `(key, window start)` of `events` events over `keys` keys.
pub fn reference(events: u64, keys: u64) -> BTreeMap<(u64, i64), u64> {
    let mut counts = BTreeMap::new();
    for i in 0..events {
        let (_, key, ts) = event(i, keys);
        *counts
            .entry((key, ts - ts.rem_euclid(WINDOW_MS)))
            .or_insert(0) += 1;
    }
    counts
}

/// Reads the committed part files of `out` and checks them against the reference.
pub fn verify(out: &Path, events: u64, keys: u64) -> Result<Verdict> {
    let expected = reference(events, keys);
    let mut got: BTreeMap<(u64, i64), Vec<u64>> = BTreeMap::new();
    let mut verdict = Verdict::default();
    committed_rows(out, "key window_start count", |[key, start, count], bad| {
        let key: u64 = key.parse().map_err(|_| bad())?;
        let start: i64 = start.parse().map_err(|_| bad())?;
        let count: u64 = count.parse().map_err(|_| bad())?;
        got.entry((key, start)).or_default().push(count);
        verdict.lines += 1;
        Ok(())
    })?;
    for (window, &n) in &expected {
        match got.get(window).map(Vec::as_slice) {
            None => verdict.missing.push(*window),
            Some([c]) if *c == n => {}
            Some([c]) => verdict.wrong.push((window.0, window.1, n, *c)),
            Some(_) => verdict.duplicated.push(*window),
        }
    }
    for (window, counts) in &got {
        if !expected.contains_key(window) {
            verdict
                .wrong
                .push((window.0, window.1, 0, counts.iter().sum()));
        }
    }
    verdict.missing.truncate(10);
    verdict.duplicated.truncate(10);
    verdict.wrong.truncate(10);
    Ok(verdict)
}
