//! Per-subtask counters, updated once per batch.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::{MIN_WATERMARK, Timestamp};

/// Records into and out of one subtask.
#[derive(Debug)]
pub struct SubtaskMetrics {
    /// Records taken from input channels (or produced by a source).
    pub records_in: AtomicU64,
    /// Records written into output channels.
    pub records_out: AtomicU64,
    /// Nanoseconds spent waiting for space in a full output channel (backpressure).
    pub backpressured_ns: AtomicU64,
    /// Nanoseconds spent parked with no input to work on (idle).
    pub idle_ns: AtomicU64,
    /// When the subtask started: its busy time is the rest of its life after idle and
    /// backpressured time.
    pub started: std::time::Instant,
    /// The subtask's current watermark (its inputs' minimum; a source's own).
    pub watermark: AtomicI64,
    /// Records that came too late for every window they belong to (later than the watermark
    /// plus the allowed lateness) and were dropped, or sent to a late-data side output.
    pub late_records: AtomicU64,
    /// A partitioned source's partitions (a Kafka reader's): where it is in each and how far
    /// behind the end. Updated by the reader a few times a second.
    pub partitions: std::sync::Mutex<Vec<PartitionMetrics>>,
    /// Its keyed state, where a budget for state gave its tables a disk tier.
    pub state: StateCounters,
    /// Bytes of operator state its last checkpoint snapshot wrote (a delta's, for
    /// incremental state).
    pub checkpointed_bytes: AtomicU64,
}

/// The keyed state of one subtask's tables that have a disk tier (with a budget for state),
/// kept by the tables as they change.
#[derive(Debug, Default)]
pub struct StateCounters {
    /// Entries in memory.
    pub in_memory: AtomicU64,
    /// Entries on disk.
    pub on_disk: AtomicU64,
    /// Bytes of its files on disk.
    pub disk_bytes: AtomicU64,
    /// Entries moved to disk so far (an entry moved twice counts twice).
    pub moved_out: AtomicU64,
    /// Bytes written to disk so far (spills and merges).
    pub bytes_written: AtomicU64,
    /// Look-ups of a key not in memory while the table had entries on disk.
    pub disk_lookups: AtomicU64,
    /// Of those, the ones that found the key on disk (and read it back).
    pub disk_hits: AtomicU64,
}

/// Where a source subtask is in one partition it reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PartitionMetrics {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Records read from it and handed on.
    pub consumed: u64,
    /// The next offset to read.
    pub next_offset: i64,
    /// The partition's end when last fetched (its high watermark).
    pub end_offset: i64,
}

impl PartitionMetrics {
    /// Records in the partition not read yet.
    pub fn lag(&self) -> i64 {
        (self.end_offset - self.next_offset).max(0)
    }
}

impl Default for SubtaskMetrics {
    fn default() -> Self {
        SubtaskMetrics {
            records_in: AtomicU64::new(0),
            records_out: AtomicU64::new(0),
            backpressured_ns: AtomicU64::new(0),
            idle_ns: AtomicU64::new(0),
            started: std::time::Instant::now(),
            watermark: AtomicI64::new(MIN_WATERMARK),
            late_records: AtomicU64::new(0),
            partitions: std::sync::Mutex::new(Vec::new()),
            state: StateCounters::default(),
            checkpointed_bytes: AtomicU64::new(0),
        }
    }
}

impl SubtaskMetrics {
    /// Counts `n` records received.
    #[inline]
    pub fn add_in(&self, n: usize) {
        self.records_in.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Records the subtask's current watermark.
    #[inline]
    pub fn set_watermark(&self, watermark: Timestamp) {
        self.watermark.store(watermark, Ordering::Relaxed);
    }

    /// Counts `n` records emitted.
    #[inline]
    pub fn add_out(&self, n: usize) {
        self.records_out.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts `waited` as idle time.
    #[inline]
    pub fn add_idle(&self, waited: std::time::Duration) {
        self.idle_ns
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The subtask's counters as they are now, as subtask `subtask` of its vertex.
    pub fn row(&self, subtask: usize) -> SubtaskRow {
        let backpressured_ns = self.backpressured_ns.load(Ordering::Relaxed);
        let idle_ns = self.idle_ns.load(Ordering::Relaxed);
        let alive = self.started.elapsed().as_nanos() as u64;
        SubtaskRow {
            subtask,
            task_manager: String::new(),
            records_in: self.records_in.load(Ordering::Relaxed),
            records_out: self.records_out.load(Ordering::Relaxed),
            busy_ns: alive.saturating_sub(idle_ns + backpressured_ns),
            idle_ns,
            backpressured_ns,
            state_in_memory: self.state.in_memory.load(Ordering::Relaxed),
            state_on_disk: self.state.on_disk.load(Ordering::Relaxed),
            state_disk_bytes: self.state.disk_bytes.load(Ordering::Relaxed),
            state_bytes_written: self.state.bytes_written.load(Ordering::Relaxed),
            state_disk_lookups: self.state.disk_lookups.load(Ordering::Relaxed),
            state_disk_hits: self.state.disk_hits.load(Ordering::Relaxed),
            checkpointed_bytes: self.checkpointed_bytes.load(Ordering::Relaxed),
        }
    }
}

/// The counters of one subtask, as reported (per vertex, in [`VertexMetrics::subtasks`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SubtaskRow {
    /// Its index in the vertex.
    pub subtask: usize,
    /// The TaskManager it runs on (set by the JobManager; empty in a local job).
    pub task_manager: String,
    /// Records read.
    pub records_in: u64,
    /// Records written into shuffles.
    pub records_out: u64,
    /// Nanoseconds spent working: neither idle nor backpressured.
    pub busy_ns: u64,
    /// Nanoseconds spent waiting for input.
    pub idle_ns: u64,
    /// Nanoseconds spent waiting for space in full output channels.
    pub backpressured_ns: u64,
    /// Keyed state entries in memory, of tables with a disk tier ([`StateCounters`]).
    #[serde(default)]
    pub state_in_memory: u64,
    /// Keyed state entries on disk.
    #[serde(default)]
    pub state_on_disk: u64,
    /// Bytes of its state files on disk.
    #[serde(default)]
    pub state_disk_bytes: u64,
    /// Bytes its tables wrote to disk so far.
    #[serde(default)]
    pub state_bytes_written: u64,
    /// Look-ups past memory while entries were on disk.
    #[serde(default)]
    pub state_disk_lookups: u64,
    /// Of those, the ones read back from disk.
    #[serde(default)]
    pub state_disk_hits: u64,
    /// Bytes of operator state its last checkpoint snapshot wrote.
    #[serde(default)]
    pub checkpointed_bytes: u64,
}

/// Totals of one job vertex, reported in [`crate::api::JobResult`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VertexMetrics {
    /// The vertex (chain) name.
    pub name: String,
    /// Its parallelism.
    pub parallelism: usize,
    /// Records read by all its subtasks.
    pub records_in: u64,
    /// Records written into shuffles by all its subtasks.
    pub records_out: u64,
    /// Nanoseconds its subtasks waited on full output channels, summed.
    #[serde(default)]
    pub backpressured_ns: u64,
    /// `(subtask, current watermark)` of each of its subtasks, by subtask.
    #[serde(default)]
    pub watermarks: Vec<(usize, Timestamp)>,
    /// `(subtask, late records dropped or sent to a side output)` of each of its subtasks.
    #[serde(default)]
    pub late_records: Vec<(usize, u64)>,
    /// `(subtask, partition)` of every partition a partitioned source's subtasks read
    /// (records consumed, offset, lag).
    #[serde(default)]
    pub partitions: Vec<(usize, PartitionMetrics)>,
    /// Every subtask's own counters, by subtask.
    #[serde(default)]
    pub subtasks: Vec<SubtaskRow>,
}

impl VertexMetrics {
    /// Adds the counters of the same vertex in another process (a cluster's other workers).
    pub fn merge(&mut self, other: &VertexMetrics) {
        self.records_in += other.records_in;
        self.records_out += other.records_out;
        self.backpressured_ns += other.backpressured_ns;
        self.watermarks.extend_from_slice(&other.watermarks);
        self.watermarks.sort_unstable();
        self.late_records.extend_from_slice(&other.late_records);
        self.late_records.sort_unstable();
        self.partitions.extend_from_slice(&other.partitions);
        self.partitions.sort_by(|a, b| {
            (a.0, &a.1.topic, a.1.partition).cmp(&(b.0, &b.1.topic, b.1.partition))
        });
        self.subtasks.extend_from_slice(&other.subtasks);
        self.subtasks.sort_by_key(|r| r.subtask);
    }

    /// The current watermark of subtask `subtask`, if it reported one.
    pub fn watermark_of(&self, subtask: usize) -> Option<Timestamp> {
        self.watermarks
            .iter()
            .find(|(s, _)| *s == subtask)
            .map(|(_, w)| *w)
    }

    /// Nanoseconds of all subtasks `(busy, idle, backpressured)`.
    pub fn time_split(&self) -> (u64, u64, u64) {
        self.subtasks.iter().fold((0, 0, 0), |(b, i, p), r| {
            (b + r.busy_ns, i + r.idle_ns, p + r.backpressured_ns)
        })
    }
}

/// Progress of a job's bounded inputs, for progress bars. Sources that know their size add it
/// to `bytes_total` when they are created and count `bytes_read` as they go.
#[derive(Default, Debug)]
pub struct JobProgress {
    /// Bytes of bounded input known so far.
    pub bytes_total: AtomicU64,
    /// Bytes of input consumed so far.
    pub bytes_read: AtomicU64,
}

impl JobProgress {
    /// Fraction of the known input consumed, in `[0, 1]`; `None` while no size is known.
    pub fn fraction(&self) -> Option<f64> {
        let total = self.bytes_total.load(Ordering::Relaxed);
        (total > 0)
            .then(|| (self.bytes_read.load(Ordering::Relaxed) as f64 / total as f64).min(1.0))
    }
}
