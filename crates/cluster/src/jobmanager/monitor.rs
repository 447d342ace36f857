//! The JobManager's record of the TaskManagers' monitor samples.
//!
//! Every TaskManager samples its cores, CPU and memory utilisation and total memory at its
//! monitor interval (10 s by default, as in the RFTS paper) and sends the latest sample with
//! each heartbeat. A sample that is not physically possible (utilisation outside `0..=1` or
//! NaN, no cores, no memory) is rejected with a logged reason and never reaches a scheduler.
//! Accepted samples are kept per TaskManager (the last [`HISTORY`]) and, with a data directory,
//! appended to `monitor.jsonl` there, which a restarted JobManager reads back. (The paper keeps
//! them in MongoDB; an append-only local file is the embedded store here.) The appends are made
//! by a thread of their own: a sample is recorded under the JobManager's state lock, and a
//! write that the kernel holds back (writeback under a busy disk) must not stall heartbeats.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{HummerError, Result};
use crate::protocol::Resources;
use crate::scheduler::rfts::NodeSample;

/// Samples kept per TaskManager in memory.
pub const HISTORY: usize = 1000;

/// One accepted sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MonitorRecord {
    /// TaskManager id.
    pub task_manager: String,
    /// Milliseconds since the Unix epoch when the JobManager received it.
    pub at_ms: u64,
    /// The sample.
    pub sample: NodeSample,
}

/// Monitor history of all TaskManagers ever seen.
#[derive(Default)]
pub struct MonitorStore {
    history: BTreeMap<String, VecDeque<MonitorRecord>>,
    last_seq: HashMap<String, u64>,
    rejected: u64,
    file: Option<Appender>,
}

/// Appends lines to a file from a thread of its own; dropping it writes what was sent first.
struct Appender {
    lines: Option<std::sync::mpsc::Sender<String>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Appender {
    fn start(path: PathBuf, mut file: File) -> Result<Appender> {
        let (lines, received) = std::sync::mpsc::channel::<String>();
        let writer = std::thread::Builder::new()
            .name("monitor-store".into())
            .spawn(move || {
                for line in received {
                    if let Err(e) = writeln!(file, "{line}") {
                        tracing::warn!(
                            "cannot persist a monitor sample to {}: {e}",
                            path.display()
                        );
                    }
                }
            })
            .map_err(|e| crate::error::internal!("cannot start the monitor store's writer: {e}"))?;
        Ok(Appender {
            lines: Some(lines),
            writer: Some(writer),
        })
    }

    fn append(&self, line: String) {
        if let Some(lines) = &self.lines {
            let _ = lines.send(line);
        }
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        drop(self.lines.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

use crate::types::epoch_ms as now_ms;

impl MonitorStore {
    /// A store persisted in `dir` (created if missing) and loaded from it, or in memory only.
    pub fn open(dir: Option<&Path>) -> Result<MonitorStore> {
        let mut store = MonitorStore::default();
        let Some(dir) = dir else {
            return Ok(store);
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| HummerError::io("cannot create data directory", dir, e))?;
        let path = dir.join("monitor.jsonl");
        if let Ok(f) = File::open(&path) {
            for (n, line) in BufReader::new(f).lines().enumerate() {
                let line = line.map_err(|e| HummerError::io("cannot read", &path, e))?;
                match serde_json::from_str::<MonitorRecord>(&line) {
                    Ok(r) => store.keep(r),
                    // A torn last line after a crash: skip it, say so.
                    Err(e) => tracing::warn!("{}: line {} skipped: {e}", path.display(), n + 1),
                }
            }
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| HummerError::io("cannot open", &path, e))?;
        // After a torn last line, start the next record on a line of its own.
        let ends_cleanly = std::fs::read(&path)
            .map(|b| b.last().is_none_or(|&c| c == b'\n'))
            .unwrap_or(true);
        if !ends_cleanly {
            writeln!(file).map_err(|e| HummerError::io("cannot write", &path, e))?;
        }
        store.file = Some(Appender::start(path, file)?);
        Ok(store)
    }

    fn keep(&mut self, record: MonitorRecord) {
        let h = self.history.entry(record.task_manager.clone()).or_default();
        if h.len() == HISTORY {
            h.pop_front();
        }
        h.push_back(record);
    }

    /// Records the sample a heartbeat carried, once per sample number. Returns the reason if
    /// the sample was rejected.
    pub fn record(
        &mut self,
        task_manager: &str,
        resources: &Resources,
    ) -> Result<(), crate::scheduler::rfts::BadSample> {
        // Sample 0 stands for "none yet"; a repeated number is a sample already recorded.
        if resources.seq == 0 || self.last_seq.get(task_manager) == Some(&resources.seq) {
            return Ok(());
        }
        self.last_seq
            .insert(task_manager.to_string(), resources.seq);
        if let Err(reason) = resources.sample.validate() {
            self.rejected += 1;
            tracing::warn!(%task_manager, "monitor report rejected: {reason}");
            return Err(reason);
        }
        let record = MonitorRecord {
            task_manager: task_manager.to_string(),
            at_ms: now_ms(),
            sample: resources.sample.clone(),
        };
        if let Some(file) = &self.file
            && let Ok(line) = serde_json::to_string(&record)
        {
            file.append(line);
        }
        self.keep(record);
        Ok(())
    }

    /// The samples of one TaskManager, oldest first.
    pub fn history(&self, task_manager: &str) -> Vec<MonitorRecord> {
        self.history
            .get(task_manager)
            .map(|h| h.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every TaskManager with samples.
    pub fn task_managers(&self) -> Vec<String> {
        self.history.keys().cloned().collect()
    }

    /// The latest sample of a TaskManager.
    pub fn latest(&self, task_manager: &str) -> Option<&MonitorRecord> {
        self.history.get(task_manager).and_then(|h| h.back())
    }

    /// Reports rejected so far.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cpu: f64) -> Resources {
        Resources {
            seq: (cpu * 1000.0) as u64 + 1,
            sample: NodeSample {
                cores: 2.0,
                cpu,
                memory: 0.5,
                total_memory: 1e9,
            },
        }
    }

    #[test]
    fn keeps_valid_samples_once_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = MonitorStore::open(Some(dir.path())).unwrap();
        store.record("tm-1", &sample(0.25)).unwrap();
        store.record("tm-1", &sample(0.25)).unwrap(); // the same sample again: kept once
        store.record("tm-1", &sample(0.5)).unwrap();
        let mut bad = sample(0.75);
        bad.sample.cpu = f64::NAN;
        assert!(
            store
                .record("tm-1", &bad)
                .unwrap_err()
                .to_string()
                .contains("utilisation")
        );
        assert_eq!(store.rejected(), 1);
        assert_eq!(store.history("tm-1").len(), 2);
        drop(store);
        // A torn line at the end (a crash mid-write) is skipped.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("monitor.jsonl"))
            .unwrap();
        write!(f, "{{\"task_manager\": \"tm-1\", \"at_").unwrap();
        drop(f);
        let reopened = MonitorStore::open(Some(dir.path())).unwrap();
        let h = reopened.history("tm-1");
        assert_eq!(h.len(), 2);
        assert_eq!(h[1].sample.cpu, 0.5);
    }
}
