//! EventCount: the exactly-once reference job.
//!
//! A replayable generator of `events` numbered events (optionally rate-limited) over `keys`
//! keys; a keyed counter (its count is keyed state) emits `event key count` for every event;
//! the lines go to the exactly-once file sink. With checkpoints on, the committed output of a
//! job that failed and recovered any number of times holds every event exactly once, and per
//! key the counts `1..=n`: [`verify`] checks exactly that. `fail_at` makes the counter panic at
//! those events, once each per `fail_marker` file (so a restarted process does not fail again).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::api::StreamExecutionEnvironment;
use crate::connectors::generator::GeneratorSource;
use crate::error::{HummerError, Result};
use crate::operators::Collector;
use crate::state::ValueState;

/// The job's settings.
#[derive(Clone, Debug)]
pub struct EventCount {
    /// Events in total.
    pub events: u64,
    /// Distinct keys (`event % keys`).
    pub keys: u64,
    /// Events per second in total (`None`: as fast as possible).
    pub rate: Option<f64>,
    /// Output directory of the exactly-once file sink.
    pub out: PathBuf,
    /// Events at which the counter panics (each once).
    pub fail_at: Vec<u64>,
    /// Marks an injected failure as done (`<file>.<event>`), across processes.
    pub fail_marker: Option<PathBuf>,
}

impl EventCount {
    /// Adds the job to `env`.
    pub fn build(&self, env: &StreamExecutionEnvironment) -> Result<()> {
        if self.keys == 0 {
            return Err(HummerError::Config("keys must be at least 1".into()));
        }
        let keys = self.keys;
        let failures = InjectedFailures::new(self.fail_at.clone(), self.fail_marker.clone());
        let mut source = GeneratorSource::new(|i| i).with_count(self.events);
        if let Some(rate) = self.rate {
            source = source.with_rate(rate);
        }
        let events = env.add_source(source).name("Events");
        count_events(&events, keys, failures)
            .name("Count")
            .write_text_file(&self.out)
            .name("Exactly-once file sink");
        Ok(())
    }
}

/// The counter of the job (shared with the Kafka variant, `kafka_count`): per key `e % keys`
/// a count in keyed state, and a line `event key count` per event.
pub(crate) fn count_events(
    events: &crate::api::DataStream<u64>,
    keys: u64,
    failures: InjectedFailures,
) -> crate::api::DataStream<String> {
    events.key_by(move |e: &u64| e % keys).process(
        move |key: &u64, e: u64, count: &mut ValueState<u64>, out: &mut Collector<String>| {
            failures.at(e);
            let n = count.get_or_insert_with(|| 0);
            *n += 1;
            out.collect(format!("{e} {key} {n}"));
        },
    )
}

/// Panics injected into a job at chosen events, each once: per `marker` file across
/// processes (a restarted worker does not fail again), else per job run.
#[derive(Clone)]
pub(crate) struct InjectedFailures {
    at: std::sync::Arc<Vec<u64>>,
    marker: Option<PathBuf>,
    fired: std::sync::Arc<Vec<std::sync::atomic::AtomicBool>>,
}

impl InjectedFailures {
    pub(crate) fn new(at: Vec<u64>, marker: Option<PathBuf>) -> Self {
        let fired = at.iter().map(|_| Default::default()).collect();
        InjectedFailures {
            at: std::sync::Arc::new(at),
            marker,
            fired: std::sync::Arc::new(fired),
        }
    }

    /// Panics if `event` is one to fail at and this is the first time.
    pub(crate) fn at(&self, event: u64) {
        if let Some(i) = self.at.iter().position(|f| *f == event) {
            let first = match &self.marker {
                Some(m) => claim(m, event),
                None => !self.fired[i].swap(true, std::sync::atomic::Ordering::SeqCst),
            };
            if first {
                panic!("injected failure at event {event}");
            }
        }
    }
}

/// True for the first caller (of any process) that claims `marker.<event>`.
fn claim(marker: &Path, event: u64) -> bool {
    let path = PathBuf::from(format!("{}.{event}", marker.display()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .is_ok()
}

/// What the committed output of an EventCount run holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Events missing from the output (the first few).
    pub lost: Vec<u64>,
    /// Events in the output more than once (the first few).
    pub duplicated: Vec<u64>,
    /// Keys whose counts are not exactly `1..=n`.
    pub bad_counts: Vec<u64>,
    /// Output lines read.
    pub lines: u64,
}

impl Verdict {
    /// Nothing lost, nothing duplicated, every count once.
    pub fn is_exactly_once(&self) -> bool {
        self.lost.is_empty() && self.duplicated.is_empty() && self.bad_counts.is_empty()
    }
}

/// Calls `row` with the three space-separated fields of every line of the committed part
/// files (`part-*`) of `out`, and a maker of the error that names the file, line and the
/// `shape` expected; a line without three fields is that error.
pub(crate) fn committed_rows(
    out: &Path,
    shape: &str,
    mut row: impl FnMut([&str; 3], &dyn Fn() -> HummerError) -> Result<()>,
) -> Result<()> {
    let entries =
        std::fs::read_dir(out).map_err(|e| HummerError::io("cannot list output", out, e))?;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("part-") {
            continue;
        }
        let path = entry.path();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| HummerError::io("cannot read output", &path, e))?;
        for (n, line) in text.lines().enumerate() {
            let bad = || HummerError::BadInput {
                input: path.display().to_string(),
                reason: format!("line {} is not '{shape}': {line:?}", n + 1),
            };
            let f: Vec<&str> = line.split(' ').collect();
            let [a, b, c] = f[..] else {
                return Err(bad());
            };
            row([a, b, c], &bad)?;
        }
    }
    Ok(())
}

/// Reads the committed part files of `out` and checks them against `events` and `keys`.
pub fn verify(out: &Path, events: u64, keys: u64) -> Result<Verdict> {
    let mut tally = Tally::new(events, keys);
    committed_rows(out, "event key count", |[e, key, count], bad| {
        if tally.add(e, key, count) {
            Ok(())
        } else {
            Err(bad())
        }
    })?;
    Ok(tally.verdict())
}

/// Checks `event key count` rows as they are read (from files or a topic).
pub struct Tally {
    events: u64,
    keys: u64,
    seen: Vec<u32>,
    counts: BTreeMap<u64, Vec<u64>>,
    lines: u64,
}

impl Tally {
    /// A tally of the output of `events` events over `keys` keys.
    pub fn new(events: u64, keys: u64) -> Tally {
        Tally {
            events,
            keys: keys.max(1),
            seen: vec![0; events as usize],
            counts: BTreeMap::new(),
            lines: 0,
        }
    }

    /// Adds a row; `false` if it is not one of the job's rows.
    pub fn add(&mut self, e: &str, key: &str, count: &str) -> bool {
        let (Ok(e), Ok(key), Ok(count)) = (e.parse::<u64>(), key.parse::<u64>(), count.parse())
        else {
            return false;
        };
        if e >= self.events || key != e % self.keys {
            return false;
        }
        self.seen[e as usize] += 1;
        self.counts.entry(key).or_default().push(count);
        self.lines += 1;
        true
    }

    /// What the rows added hold.
    pub fn verdict(self) -> Verdict {
        let mut verdict = Verdict {
            lines: self.lines,
            ..Verdict::default()
        };
        verdict.lost = (0..self.events)
            .filter(|&e| self.seen[e as usize] == 0)
            .take(10)
            .collect();
        verdict.duplicated = (0..self.events)
            .filter(|&e| self.seen[e as usize] > 1)
            .take(10)
            .collect();
        for (key, mut ns) in self.counts {
            ns.sort_unstable();
            if !ns.iter().copied().eq(1..=ns.len() as u64) {
                verdict.bad_counts.push(key);
            }
        }
        verdict
    }
}
