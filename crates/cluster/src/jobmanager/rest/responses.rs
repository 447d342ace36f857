//! The REST API's answers, one type per shape.
//!
//! They exist so that every key of an answer is written down once, as a field, and not again
//! in each handler ([`super`]) that builds the answer: the dashboard
//! ([`crate::jobmanager::dashboard`]), the tests and users read these keys by name. The keys
//! are Flink's REST API's where Flink has the endpoint (`slots-total`, `start-time`,
//! `slotsNumber`, `trigger_timestamp`), so each type says how its fields are spelt on the wire
//! (`kebab-case`, `camelCase`, or as they are). A test below reads the dashboard's script and
//! checks that every key it reads is a key of one of these.

use serde::{Deserialize, Serialize};

use crate::checkpoint::coordinator::{CheckpointStats, CheckpointStatus};
use crate::error::ErrorKind;
use crate::execution::controller::ExceptionRecord;
use crate::jobmanager::monitor::MonitorRecord;
use crate::jobmanager::scheduling_log::{MigrationRecord, RoundRecord};
use crate::protocol::{JobId, JobStatus};
use crate::types::Timestamp;

/// The answer of every call that fails: what went wrong.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// The reasons, one sentence each.
    pub errors: Vec<String>,
}

/// `GET /overview`: the cluster in numbers.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct OverviewResponse {
    /// Registered TaskManagers.
    pub taskmanagers: usize,
    /// Slots of all TaskManagers.
    pub slots_total: usize,
    /// Slots no job holds.
    pub slots_available: usize,
    /// Jobs running or being deployed.
    pub jobs_running: usize,
    /// Jobs waiting for slots.
    pub jobs_waiting: usize,
    /// Jobs restarting after a failure.
    pub jobs_restarting: usize,
    /// Jobs that finished.
    pub jobs_finished: usize,
    /// Jobs cancelled.
    pub jobs_cancelled: usize,
    /// Jobs that failed.
    pub jobs_failed: usize,
    /// The scheduler's name.
    pub scheduler: String,
    /// Time the scheduler has spent deciding, milliseconds.
    pub scheduler_time_ms: f64,
    /// CPU utilisation of the cluster, `0..=1`, weighted by cores (`None` without samples).
    pub cpu: Option<f64>,
    /// Memory utilisation of the cluster, `0..=1`, weighted by memory (`None` without samples).
    pub memory: Option<f64>,
    /// CPU cores of the TaskManagers with samples.
    pub cores_total: f64,
    /// Memory of the TaskManagers with samples, bytes.
    pub memory_bytes_total: f64,
    /// The JobManager's clock, milliseconds since the Unix epoch.
    pub now: u64,
}

/// `GET /taskmanagers`: every registered TaskManager.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TaskManagersResponse {
    /// The TaskManagers.
    pub taskmanagers: Vec<TaskManagerRow>,
}

/// One TaskManager of `GET /taskmanagers`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskManagerRow {
    /// Its id.
    pub id: String,
    /// Its slots.
    pub slots_number: usize,
    /// Its slots no job holds.
    pub free_slots: usize,
    /// Its CPU cores, as registered.
    pub cores: usize,
    /// Its memory, bytes, as registered.
    pub memory_bytes: u64,
    /// Its address for data connections.
    pub data_host: String,
    /// CPU utilisation of its latest sample, `0..=1`.
    pub cpu_load: f64,
    /// Memory utilisation of its latest sample, `0..=1`.
    pub memory_load: f64,
    /// Milliseconds since its last heartbeat.
    pub time_since_last_heartbeat_ms: u64,
    /// Jobs waiting in its queue.
    pub waiting_jobs: usize,
    /// Its RFTS region (`UP`, `LP`, `NS`, `DS`), with a scheduler that assesses one.
    pub region: Option<String>,
    /// Its RFTS load, with a scheduler that assesses one.
    pub load: Option<f64>,
    /// The workers of unfinished jobs on it.
    pub workers: Vec<WorkerRow>,
}

/// One worker of a TaskManager in `GET /taskmanagers`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerRow {
    /// Its job.
    pub job: JobId,
    /// The job's name.
    pub name: String,
    /// Slots it holds.
    pub slots: usize,
    /// Subtasks of the job placed on the TaskManager.
    pub subtasks: usize,
}

/// `GET /jobs`: every job the JobManager keeps.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JobsResponse {
    /// The jobs.
    pub jobs: Vec<JobRow>,
}

/// One job of `GET /jobs`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobRow {
    /// Its id.
    pub id: JobId,
    /// Its name.
    pub name: String,
    /// Its state.
    pub status: JobStatus,
    /// When it was submitted, milliseconds since the Unix epoch.
    pub start_time: u64,
    /// When it ended, milliseconds since the Unix epoch.
    pub end_time: Option<u64>,
    /// Milliseconds from submission to its end, or to now.
    pub duration: u64,
    /// Restarts after failures.
    pub restarts: u32,
    /// Whether it is a streaming job.
    pub streaming: bool,
}

/// `GET /jobs/{id}`: one job with its vertices and edges.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct JobDetails {
    /// Its id.
    pub jid: JobId,
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: JobStatus,
    /// When it was submitted, milliseconds since the Unix epoch.
    pub start_time: u64,
    /// When it ended, milliseconds since the Unix epoch.
    pub end_time: Option<u64>,
    /// Milliseconds from submission to its end, or to now.
    pub duration: u64,
    /// The JobManager's clock, milliseconds since the Unix epoch.
    pub now: u64,
    /// Why it failed.
    pub error: Option<String>,
    /// The kind of the root cause of its failure.
    pub error_kind: Option<ErrorKind>,
    /// Whether it is a streaming job.
    pub streaming: bool,
    /// Its current attempt.
    pub attempt: u32,
    /// Its vertices (operator chains), by index.
    pub vertices: Vec<VertexDetails>,
    /// Its edges between vertices.
    pub edges: Vec<EdgeDetails>,
    /// The TaskManager of every subtask.
    pub placement: Vec<String>,
    /// The TaskManager whose queue holds it while it waits.
    #[serde(rename = "queuedOn")]
    pub queued_on: Option<String>,
    /// Its priority in queues.
    pub priority: i32,
    /// Restarts after failures.
    pub restarts: u32,
    /// The SQL statement it runs, if it is a SQL job.
    pub sql: Option<String>,
}

/// One vertex of `GET /jobs/{id}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VertexDetails {
    /// Its index.
    pub id: usize,
    /// Its (chain) name.
    pub name: String,
    /// The operators chained in it.
    pub operators: Vec<String>,
    /// Its parallelism.
    pub parallelism: usize,
    /// Its job's state.
    pub status: JobStatus,
    /// Its subtasks' counters, summed.
    pub metrics: VertexCounters,
    /// The least watermark of its subtasks, once each has one.
    pub watermark: Option<Timestamp>,
    /// Its subtasks.
    pub subtasks: Vec<SubtaskDetails>,
}

/// The counters of a vertex in `GET /jobs/{id}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VertexCounters {
    /// Records read.
    pub read_records: u64,
    /// Records written into shuffles.
    pub write_records: u64,
    /// Share of its subtasks' time spent waiting on full output channels, `0..=1`.
    pub backpressure_ratio: f64,
    /// Share of its subtasks' time spent working, `0..=1`.
    pub busy_ratio: f64,
    /// Nanoseconds its subtasks spent working.
    pub busy_ns: u64,
    /// Nanoseconds its subtasks spent waiting for input.
    pub idle_ns: u64,
    /// Nanoseconds its subtasks spent waiting for space in full output channels.
    pub backpressured_ns: u64,
}

/// One subtask of a vertex in `GET /jobs/{id}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SubtaskDetails {
    /// Its index in the vertex.
    pub subtask: usize,
    /// The TaskManager it runs on.
    pub taskmanager: String,
    /// Records read.
    pub read_records: u64,
    /// Records written into shuffles.
    pub write_records: u64,
    /// Nanoseconds spent working.
    pub busy_ns: u64,
    /// Nanoseconds spent waiting for input.
    pub idle_ns: u64,
    /// Nanoseconds spent waiting for space in full output channels.
    pub backpressured_ns: u64,
    /// Its current watermark, once it has one.
    pub watermark: Option<Timestamp>,
    /// Keyed state entries in memory, of tables with a disk tier (with a budget for state).
    pub state_in_memory: u64,
    /// Keyed state entries on disk.
    pub state_on_disk: u64,
    /// Bytes of its state files on disk.
    pub state_disk_bytes: u64,
    /// Bytes its tables have written to disk.
    pub state_bytes_written: u64,
    /// Share of the look-ups past memory that found the key on disk (`None` before any).
    pub state_disk_hit_ratio: Option<f64>,
    /// Bytes of operator state its last checkpoint snapshot wrote (a delta's, for
    /// incremental state).
    pub checkpointed_size: u64,
}

/// One edge of `GET /jobs/{id}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EdgeDetails {
    /// The producing vertex.
    pub source: usize,
    /// The consuming vertex.
    pub target: usize,
    /// How records are distributed (`FORWARD`, `HASH`, `REBALANCE`, …).
    pub partitioning: String,
}

/// `GET /jobs/{id}/plan`: the job's vertices, after Flink's plan.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PlanResponse {
    /// The plan.
    pub plan: Plan,
}

/// The plan in `GET /jobs/{id}/plan`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Plan {
    /// The job's id.
    pub jid: JobId,
    /// The job's name.
    pub name: String,
    /// Its vertices.
    pub nodes: Vec<PlanNode>,
}

/// One vertex of the plan in `GET /jobs/{id}/plan`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PlanNode {
    /// Its index.
    pub id: usize,
    /// Its (chain) name.
    pub description: String,
    /// Its parallelism.
    pub parallelism: usize,
}

/// `GET /jobs/{id}/exceptions`: a job's failures, after Flink's: the latest root cause and
/// the history, newest first.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ExceptionsResponse {
    /// The root cause of the latest failure.
    pub root_exception: Option<String>,
    /// When the latest failure was reported, milliseconds since the Unix epoch.
    pub timestamp: Option<u64>,
    /// The failures, newest first.
    pub history: Vec<ExceptionRow>,
}

/// One failure in `GET /jobs/{id}/exceptions`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ExceptionRow {
    /// When it was reported, milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// The attempt that failed.
    pub attempt: u32,
    /// What went wrong at the bottom.
    pub root_cause: String,
    /// The whole error as reported.
    pub exception: String,
    /// The operator it is attributed to.
    pub operator: Option<String>,
    /// The operator's subtask.
    pub subtask: Option<usize>,
    /// The TaskManager whose worker reported it.
    pub taskmanager: Option<String>,
    /// What the job did after it.
    pub outcome: ExceptionOutcome,
}

/// What a job did after a failure, in `GET /jobs/{id}/exceptions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExceptionOutcome {
    /// It restarted.
    Restarted,
    /// It failed for good.
    Failed,
}

impl From<&ExceptionRecord> for ExceptionRow {
    fn from(e: &ExceptionRecord) -> Self {
        ExceptionRow {
            timestamp: e.at_ms,
            attempt: e.attempt,
            root_cause: e.root_cause.clone(),
            exception: e.error.clone(),
            operator: e.operator.clone(),
            subtask: e.subtask,
            taskmanager: e.task_manager.clone(),
            outcome: if e.restarted {
                ExceptionOutcome::Restarted
            } else {
                ExceptionOutcome::Failed
            },
        }
    }
}

/// `GET /jobs/{id}/checkpoints`: a job's checkpoint statistics, after Flink's: counts, the
/// latest completed and failed checkpoint, and the history (newest first).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CheckpointsResponse {
    /// Checkpoints by status.
    pub counts: CheckpointCounts,
    /// The latest completed and failed checkpoints.
    pub latest: LatestCheckpoints,
    /// Every checkpoint kept, newest first.
    pub history: Vec<CheckpointRow>,
}

/// The counts of `GET /jobs/{id}/checkpoints`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CheckpointCounts {
    /// Checkpoints completed.
    pub completed: usize,
    /// Checkpoints failed.
    pub failed: usize,
    /// Checkpoints being taken.
    pub in_progress: usize,
    /// All checkpoints kept.
    pub total: usize,
    /// The job's restarts.
    pub restarts: u32,
}

/// The latest checkpoints of `GET /jobs/{id}/checkpoints`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LatestCheckpoints {
    /// The latest completed checkpoint.
    pub completed: Option<CheckpointRow>,
    /// The latest failed checkpoint.
    pub failed: Option<CheckpointRow>,
}

/// One checkpoint of `GET /jobs/{id}/checkpoints` (Flink's keys, in `snake_case`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointRow {
    /// Its id.
    pub id: u64,
    /// Its status.
    pub status: CheckpointState,
    /// Whether it is the job's final checkpoint.
    pub is_final: bool,
    /// When it was triggered, milliseconds since the Unix epoch.
    pub trigger_timestamp: u64,
    /// Trigger to completion (or to failure), milliseconds.
    pub end_to_end_duration: u64,
    /// Bytes of state it holds: written for it, and shared with earlier checkpoints.
    pub state_size: u64,
    /// Bytes written for it (Flink's incremental `checkpointed_size`).
    pub checkpointed_size: u64,
    /// Longest barrier alignment of any task, milliseconds.
    pub alignment_duration: u64,
    /// Longest synchronous part of any task's snapshot, milliseconds.
    pub sync_duration: u64,
    /// Writing the state and the metadata to storage, milliseconds.
    pub write_duration: u64,
    /// Why it failed.
    pub failure_message: Option<String>,
}

/// The status of a checkpoint in `GET /jobs/{id}/checkpoints`, as Flink spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckpointState {
    /// Triggered, not every task has acknowledged.
    InProgress,
    /// Complete and stored.
    Completed,
    /// Given up.
    Failed,
}

impl From<&CheckpointStats> for CheckpointRow {
    fn from(c: &CheckpointStats) -> Self {
        let (status, failure_message) = match &c.status {
            CheckpointStatus::InProgress => (CheckpointState::InProgress, None),
            CheckpointStatus::Completed => (CheckpointState::Completed, None),
            CheckpointStatus::Failed(why) => (CheckpointState::Failed, Some(why.clone())),
        };
        CheckpointRow {
            id: c.id,
            status,
            is_final: c.is_final,
            trigger_timestamp: c.triggered_at_ms,
            end_to_end_duration: c.duration_ms,
            state_size: c.size_bytes + c.shared_bytes,
            checkpointed_size: c.size_bytes,
            alignment_duration: c.alignment_ms,
            sync_duration: c.sync_ms,
            write_duration: c.write_ms,
            failure_message,
        }
    }
}

/// `POST /jobs/{id}/savepoints` and `POST /jobs/{id}/stop`: where the savepoint is.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SavepointResponse {
    /// The savepoint's directory.
    pub location: String,
}

/// `PATCH /jobs/{id}`: the cancellation is accepted; nothing more to say (`{}`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CancelResponse {}

/// One element of `GET /jobs/{id}/vertices/{vertex}/watermarks`, a Flink metric:
/// `{"id": "<subtask>.currentInputWatermark", "value": "<ms>"}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MetricValue {
    /// `<subtask>.<metric name>`.
    pub id: String,
    /// The value, as text.
    pub value: String,
}

/// One element of `GET /jobs/{id}/vertices/{vertex}/partitions`: a partition a source subtask
/// reads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PartitionRow {
    /// The subtask.
    pub subtask: usize,
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Records read from it and handed on.
    pub records_consumed: u64,
    /// The next offset to read.
    pub offset: i64,
    /// The partition's end when last fetched.
    pub end_offset: i64,
    /// Records in it not read yet.
    pub lag: i64,
}

/// `GET /scheduling`: the scheduler's view: its queues, and with RFTS every TaskManager's
/// region and load, the migrations it made and its rounds over time.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SchedulingResponse {
    /// The scheduler's name.
    pub scheduler: String,
    /// Rebalancing rounds so far.
    pub rebalance_round: u64,
    /// Time the scheduler has spent deciding, milliseconds.
    pub scheduler_time_ms: f64,
    /// The cluster's RFTS load, with a scheduler that assesses one.
    pub cluster_load: Option<f64>,
    /// Every TaskManager as the scheduler sees it now.
    pub taskmanagers: Vec<SchedulingTaskManager>,
    /// The jobs in the queue every TaskManager takes from.
    pub shared_queue: Vec<JobId>,
    /// The migrations kept, newest first.
    pub migrations: Vec<MigrationRow>,
    /// The rounds kept, oldest first.
    pub history: Vec<RoundRow>,
}

/// One TaskManager of `GET /scheduling`, as the scheduler sees it now.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchedulingTaskManager {
    /// Its id.
    pub id: String,
    /// Its slots.
    pub slots: usize,
    /// Slots used by running jobs.
    pub used: usize,
    /// The jobs waiting in its queue.
    pub waiting: Vec<JobId>,
    /// Its RFTS region, with a scheduler that assesses one.
    pub region: Option<String>,
    /// Its RFTS load, with a scheduler that assesses one.
    pub load: Option<f64>,
}

/// One migration of `GET /scheduling`: a waiting job moved between queues.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MigrationRow {
    /// When, milliseconds since the Unix epoch.
    pub at: u64,
    /// The rebalancing round that moved it.
    pub round: u64,
    /// The job.
    pub job: JobId,
    /// The TaskManager it left.
    pub from: String,
    /// The TaskManager it went to.
    pub to: String,
}

impl From<&MigrationRecord> for MigrationRow {
    fn from(m: &MigrationRecord) -> Self {
        MigrationRow {
            at: m.at_ms,
            round: m.round,
            job: m.job.clone(),
            from: m.from.clone(),
            to: m.to.clone(),
        }
    }
}

/// One rebalancing round of `GET /scheduling`: the cluster as it saw it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RoundRow {
    /// When, milliseconds since the Unix epoch.
    pub at: u64,
    /// The round.
    pub round: u64,
    /// The cluster's load.
    pub cluster_load: f64,
    /// Every TaskManager.
    pub taskmanagers: Vec<RoundTaskManager>,
}

/// One TaskManager of a round in `GET /scheduling`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RoundTaskManager {
    /// Its id.
    pub id: String,
    /// Its RFTS region.
    pub region: String,
    /// Its RFTS load.
    pub load: f64,
    /// Jobs waiting in its queue.
    pub waiting: usize,
}

impl From<&RoundRecord> for RoundRow {
    fn from(r: &RoundRecord) -> Self {
        RoundRow {
            at: r.at_ms,
            round: r.round,
            cluster_load: r.cluster_load,
            taskmanagers: r
                .task_managers
                .iter()
                .map(|t| RoundTaskManager {
                    id: t.id.clone(),
                    region: t.region.name().to_string(),
                    load: t.load,
                    waiting: t.waiting,
                })
                .collect(),
        }
    }
}

/// `GET /taskmanagers/{id}/monitor`: a TaskManager's monitor samples, oldest first.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MonitorResponse {
    /// The TaskManager.
    pub id: String,
    /// Its samples, oldest first.
    pub samples: Vec<MonitorRecord>,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    use super::*;

    /// The dashboard's script, whose reads of REST answers are checked against the types.
    const APP_JS: &str = include_str!("../dashboard/app.js");

    /// Names the key scan finds in `app.js` that are no REST key (whitespace-separated): the
    /// browser's JavaScript and DOM API, and the dashboard's own objects. Every one must still
    /// be found in `app.js`, and none may be a response key, so that this list hides nothing.
    const NOT_RESPONSE_KEYS: &[&str] = &[
        // JavaScript and the DOM.
        "activeElement addEventListener borderColor classList createElement createElementNS \
         firstChild flatMap fontFamily forEach getAttribute getContext getDate getFullYear \
         getHours getItem getMinutes getMonth getSeconds getTime hasAttribute indexOf \
         insertBefore isArray isConnected isFinite isInteger localeCompare measureText \
         nextSibling padStart parentNode preventDefault querySelector querySelectorAll \
         removeAttribute removeItem replaceChildren replaceState scrollIntoView scrollTo \
         setAttribute setItem statusText textContent toFixed toISOString toLowerCase",
        // An HTTP header the dashboard sends.
        "Content-Type",
        // The dashboard's own state: polling, the rates it derives, the elements it keeps.
        "authDismissed authNeeded authPaused cpuNow dotGroup lastOk memNow rate-in rate-out \
         rateIn rateOut refreshActions renderActions timeoutMs wmLine",
    ];

    /// The keys `js` reads: in bracket notation after a value (`x['key']`, `x["key"]`), and
    /// the dotted properties with a camelCase name (`.slotsNumber`; not the spread `...xs`).
    fn dashboard_reads(js: &str) -> BTreeSet<&str> {
        let bytes = js.as_bytes();
        let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
        let mut reads = BTreeSet::new();
        for (i, &c) in bytes.iter().enumerate() {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + 1).copied();
            match (c, before, after) {
                (b'[', Some(b), Some(quote @ (b'\'' | b'"')))
                    if ident(b) || b == b')' || b == b']' =>
                {
                    let key = &js[i + 2..];
                    if let Some(end) = key.find(quote as char)
                        && key[end + 1..].starts_with(']')
                    {
                        reads.insert(&key[..end]);
                    }
                }
                (b'.', b, Some(first)) if b != Some(b'.') && first.is_ascii_lowercase() => {
                    let name = &js[i + 1..];
                    let end = name.bytes().position(|c| !ident(c)).unwrap_or(name.len());
                    if name[..end].bytes().any(|c| c.is_ascii_uppercase()) {
                        reads.insert(&name[..end]);
                    }
                }
                _ => {}
            }
        }
        reads
    }

    /// `value` as JSON, with its type's name; checked to read back as the same JSON.
    fn sample<T: Serialize + DeserializeOwned>(value: T) -> (&'static str, Value) {
        let name = std::any::type_name::<T>();
        let json = serde_json::to_value(&value).expect("a response serializes");
        let back: T = serde_json::from_value(json.clone())
            .unwrap_or_else(|e| panic!("{name} does not read back: {e}"));
        assert_eq!(
            serde_json::to_value(&back).ok(),
            Some(json.clone()),
            "{name}"
        );
        (name, json)
    }

    fn checkpoint() -> CheckpointRow {
        CheckpointRow::from(&CheckpointStats {
            status: CheckpointStatus::Failed("full disk".into()),
            ..CheckpointStats::triggered(1, 0, false)
        })
    }

    /// One answer of every shape, every vector with an element and every option set, so that
    /// every key is seen.
    fn samples() -> Vec<(&'static str, Value)> {
        vec![
            sample(ErrorResponse {
                errors: vec!["no job with id x".into()],
            }),
            sample(OverviewResponse {
                cpu: Some(0.5),
                memory: Some(0.5),
                ..Default::default()
            }),
            sample(TaskManagersResponse {
                taskmanagers: vec![TaskManagerRow {
                    region: Some("DS".into()),
                    load: Some(0.5),
                    workers: vec![WorkerRow::default()],
                    ..Default::default()
                }],
            }),
            sample(JobsResponse {
                jobs: vec![JobRow {
                    id: "job".into(),
                    name: "job".into(),
                    status: JobStatus::Running,
                    start_time: 0,
                    end_time: Some(0),
                    duration: 0,
                    restarts: 0,
                    streaming: true,
                }],
            }),
            sample(JobDetails {
                jid: "job".into(),
                name: "job".into(),
                state: JobStatus::Running,
                start_time: 0,
                end_time: Some(0),
                duration: 0,
                now: 0,
                error: Some("boom".into()),
                error_kind: Some(ErrorKind::Operator),
                streaming: true,
                attempt: 0,
                vertices: vec![VertexDetails {
                    id: 0,
                    name: "Source".into(),
                    operators: vec!["Source".into()],
                    parallelism: 1,
                    status: JobStatus::Running,
                    metrics: VertexCounters::default(),
                    watermark: Some(0),
                    subtasks: vec![SubtaskDetails {
                        watermark: Some(0),
                        state_disk_hit_ratio: Some(0.5),
                        ..Default::default()
                    }],
                }],
                edges: vec![EdgeDetails::default()],
                placement: vec!["tm".into()],
                queued_on: Some("tm".into()),
                priority: 0,
                restarts: 0,
                sql: Some("INSERT INTO t SELECT 1".into()),
            }),
            sample(PlanResponse {
                plan: Plan {
                    nodes: vec![PlanNode::default()],
                    ..Default::default()
                },
            }),
            sample(ExceptionsResponse {
                root_exception: Some("boom".into()),
                timestamp: Some(0),
                history: vec![ExceptionRow {
                    timestamp: 0,
                    attempt: 0,
                    root_cause: "boom".into(),
                    exception: "boom".into(),
                    operator: Some("Map".into()),
                    subtask: Some(0),
                    taskmanager: Some("tm".into()),
                    outcome: ExceptionOutcome::Restarted,
                }],
            }),
            sample(CheckpointsResponse {
                counts: CheckpointCounts::default(),
                latest: LatestCheckpoints {
                    completed: Some(checkpoint()),
                    failed: Some(checkpoint()),
                },
                history: vec![checkpoint()],
            }),
            sample(SavepointResponse::default()),
            sample(CancelResponse {}),
            sample(vec![MetricValue::default()]),
            sample(vec![PartitionRow::default()]),
            sample(SchedulingResponse {
                cluster_load: Some(0.5),
                taskmanagers: vec![SchedulingTaskManager {
                    waiting: vec!["job".into()],
                    region: Some("DS".into()),
                    load: Some(0.5),
                    ..Default::default()
                }],
                shared_queue: vec!["job".into()],
                migrations: vec![MigrationRow::default()],
                history: vec![RoundRow {
                    taskmanagers: vec![RoundTaskManager::default()],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            sample(MonitorResponse {
                id: "tm".into(),
                samples: vec![MonitorRecord {
                    task_manager: "tm".into(),
                    at_ms: 0,
                    sample: crate::scheduler::rfts::NodeSample {
                        cores: 1.0,
                        cpu: 0.5,
                        memory: 0.5,
                        total_memory: 1.0,
                    },
                }],
            }),
        ]
    }

    /// Adds the keys of the objects in `value` (at `path`) to `keys`; panics at an empty array
    /// or a `null`, behind which a sample would hide keys.
    fn collect_keys(path: &str, value: &Value, keys: &mut BTreeSet<String>) {
        match value {
            Value::Object(fields) => {
                for (key, value) in fields {
                    keys.insert(key.clone());
                    collect_keys(&format!("{path}.{key}"), value, keys);
                }
            }
            Value::Array(items) => {
                assert!(!items.is_empty(), "the sample has an empty array at {path}");
                for item in items {
                    collect_keys(&format!("{path}[]"), item, keys);
                }
            }
            Value::Null => panic!("the sample has a null at {path}"),
            _ => {}
        }
    }

    #[test]
    fn the_dashboard_lists_every_job_status_by_its_wire_name() {
        let line = APP_JS
            .lines()
            .find(|l| l.trim_start().starts_with("const JOB_STATES = ["))
            .expect("app.js declares JOB_STATES");
        let listed: Vec<String> = line
            .split('\'')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        let wire: Vec<String> = JobStatus::ALL
            .iter()
            .map(|s| serde_json::to_value(s).map(|v| v.as_str().unwrap_or("").to_string()))
            .collect::<Result<_, _>>()
            .expect("a status serializes");
        assert_eq!(listed, wire);
    }

    #[test]
    fn every_key_the_dashboard_reads_is_a_response_key() {
        let mut keys = BTreeSet::new();
        for (name, answer) in samples() {
            collect_keys(name, &answer, &mut keys);
        }
        let reads = dashboard_reads(APP_JS);
        let not_response_keys: BTreeSet<&str> = NOT_RESPONSE_KEYS
            .iter()
            .flat_map(|names| names.split_whitespace())
            .collect();
        // The scan works: it finds keys read in brackets and dotted ones.
        for key in ["slots-total", "slotsNumber", "timeSinceLastHeartbeatMs"] {
            assert!(reads.contains(key), "the scan missed {key}: {reads:?}");
        }
        let unknown: Vec<_> = reads
            .iter()
            // A key that is a path is the dashboard's: it keeps the answers by REST path.
            .filter(|k| !k.starts_with('/'))
            .filter(|k| !keys.contains(**k) && !not_response_keys.contains(**k))
            .collect();
        assert!(
            unknown.is_empty(),
            "app.js reads {unknown:?}, which no REST answer has (a renamed field? a name of the \
             dashboard's own belongs in NOT_RESPONSE_KEYS)"
        );
        let stale: Vec<_> = not_response_keys
            .iter()
            .filter(|k| !reads.contains(**k) || keys.contains(**k))
            .collect();
        assert!(
            stale.is_empty(),
            "NOT_RESPONSE_KEYS lists {stale:?}, which app.js no longer reads or which is a \
             response key"
        );
    }
}
