//! REST API with JSON, shaped after Flink's: `GET /overview`, `/taskmanagers`, `/jobs`,
//! `/jobs/{id}`, `/jobs/{id}/plan`, `/jobs/{id}/checkpoints`, `/jobs/{id}/exceptions`,
//! `/scheduling`; `PATCH /jobs/{id}` to cancel, `POST /jobs/{id}/savepoints` and
//! `POST /jobs/{id}/stop`. The dashboard ([`super::dashboard`]) reads only these.
//!
//! Every answer is one of the types of [`responses`]; every failure is a [`RestError`],
//! answered as an [`ErrorResponse`] with the status the error calls for. `GET /metrics` is
//! Prometheus text.

pub mod responses;

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::jobmanager::jobs::JobEntry;
use crate::jobmanager::refusal::Refusal;
use crate::jobmanager::{Shared, lock};
use crate::protocol::{JobId, JobStatus};
use crate::scheduler::parallelism::VertexRequest;
use crate::scheduler::rfts::Assessment;
use responses::*;

/// The REST routes over the JobManager's state.
pub fn router(shared: Shared) -> Router {
    Router::new()
        .route("/overview", get(overview))
        .route("/taskmanagers", get(task_managers))
        .route("/jobs", get(jobs))
        .route("/jobs/{id}", get(job).patch(cancel))
        .route("/jobs/{id}/plan", get(plan))
        .route("/jobs/{id}/checkpoints", get(checkpoints))
        .route("/jobs/{id}/exceptions", get(exceptions))
        .route("/jobs/{id}/savepoints", post(savepoint))
        .route("/jobs/{id}/stop", post(stop))
        .route("/scheduling", get(scheduling))
        .route("/jobs/{id}/vertices/{vertex}/watermarks", get(watermarks))
        .route("/jobs/{id}/vertices/{vertex}/partitions", get(partitions))
        .route("/taskmanagers/{id}/monitor", get(monitor_history))
        .route("/metrics", get(prometheus))
        .with_state(shared)
}

/// Why a REST call fails. Answered as an [`ErrorResponse`] with [`RestError::status`].
#[derive(Debug, thiserror::Error)]
pub enum RestError {
    /// The JobManager refuses the request: no such job, or a savepoint it cannot take.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A vertex index past the job's vertices.
    #[error("job {job} has no vertex {vertex}")]
    NoSuchVertex {
        /// The job.
        job: JobId,
        /// The index asked for.
        vertex: usize,
    },
    /// A cancellation of a job that has ended.
    #[error("job {job} has already ended ({state:?})")]
    Ended {
        /// The job.
        job: JobId,
        /// How it ended.
        state: JobStatus,
    },
    /// A TaskManager the monitor has never heard of.
    #[error("no monitor samples of TaskManager {0}")]
    NoMonitorSamples(String),
    /// The savepoint failed; the reason.
    #[error("{0}")]
    SavepointFailed(String),
    /// The savepoint's reply closed, or was a message that is no answer to it.
    #[error("the savepoint of job {job} ended without an answer ({answer})")]
    SavepointUnanswered {
        /// The job.
        job: JobId,
        /// What came instead.
        answer: String,
    },
    /// The savepoint took longer than the call waits.
    #[error("the savepoint of job {job} took longer than {waited:?}; it may still complete")]
    SavepointTimeout {
        /// The job.
        job: JobId,
        /// How long the call waited.
        waited: std::time::Duration,
    },
    /// A call without the REST token it needs ([`super::rest_security`]).
    #[error("this call needs the cluster's REST token: Authorization: Bearer <token>")]
    Unauthorized,
}

impl RestError {
    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        match self {
            RestError::Refused(Refusal::NoSuchJob(_))
            | RestError::NoSuchVertex { .. }
            | RestError::NoMonitorSamples(_) => StatusCode::NOT_FOUND,
            RestError::Refused(_) | RestError::Ended { .. } => StatusCode::CONFLICT,
            RestError::SavepointFailed(_) | RestError::SavepointUnanswered { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            RestError::SavepointTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            RestError::Unauthorized => StatusCode::UNAUTHORIZED,
        }
    }
}

impl IntoResponse for RestError {
    /// Every error answer: the status, and the error's text as an [`ErrorResponse`].
    fn into_response(self) -> Response {
        let errors = vec![self.to_string()];
        (self.status(), Json(ErrorResponse { errors })).into_response()
    }
}

/// What a handler answers: the response, or the error.
type Answer<T> = Result<Json<T>, RestError>;

/// The error of a job id no job has.
fn no_such_job(id: &str) -> RestError {
    Refusal::NoSuchJob(id.to_string()).into()
}

async fn overview(State(shared): State<Shared>) -> Json<OverviewResponse> {
    let state = lock(&shared);
    let slots: usize = state
        .cluster
        .task_managers
        .values()
        .map(|t| t.info.slots)
        .sum();
    let used: usize = state
        .cluster
        .task_managers
        .values()
        .map(|t| t.used_slots)
        .sum();
    let count = |s: JobStatus| state.jobs.values().filter(|j| j.state() == s).count();
    // The cluster's utilisation: the TaskManagers' latest samples weighted by their cores
    // (CPU) and their memory.
    let samples: Vec<_> = state
        .cluster
        .task_managers
        .keys()
        .filter_map(|tm| state.cluster.monitor.latest(tm))
        .map(|r| &r.sample)
        .collect();
    let cores: f64 = samples.iter().map(|s| s.cores).sum();
    let memory: f64 = samples.iter().map(|s| s.total_memory).sum();
    let weighted = |part: f64, whole: f64| (whole > 0.0).then(|| part / whole);
    let cpu = weighted(samples.iter().map(|s| s.cpu * s.cores).sum(), cores);
    let memory_used: f64 = samples.iter().map(|s| s.memory * s.total_memory).sum();
    Json(OverviewResponse {
        taskmanagers: state.cluster.task_managers.len(),
        slots_total: slots,
        slots_available: slots - used.min(slots),
        jobs_running: count(JobStatus::Running) + count(JobStatus::Deploying),
        jobs_waiting: count(JobStatus::Created),
        jobs_restarting: count(JobStatus::Restarting),
        jobs_finished: count(JobStatus::Finished),
        jobs_cancelled: count(JobStatus::Cancelled),
        jobs_failed: count(JobStatus::Failed),
        scheduler: state.cluster.scheduler.name().to_string(),
        scheduler_time_ms: state.cluster.scheduler_time.as_secs_f64() * 1e3,
        cpu,
        memory: weighted(memory_used, memory),
        cores_total: cores,
        memory_bytes_total: memory,
        now: crate::types::epoch_ms(),
    })
}

/// The RFTS region of the `i`-th TaskManager (in the order the scheduler assessed them).
fn region(assessment: &Option<Assessment>, i: usize) -> Option<String> {
    assessment
        .as_ref()?
        .region
        .get(i)
        .map(|r| r.name().to_string())
}

/// The RFTS load of the `i`-th TaskManager.
fn load(assessment: &Option<Assessment>, i: usize) -> Option<f64> {
    assessment.as_ref()?.load.get(i).copied()
}

async fn task_managers(State(shared): State<Shared>) -> Json<TaskManagersResponse> {
    let state = lock(&shared);
    let loads = state.cluster.loads(|j| state.jobs.priority(j));
    let assessment = state.cluster.scheduler.assess(&loads);
    let taskmanagers = state
        .cluster
        .task_managers
        .values()
        .enumerate()
        .map(|(i, t)| {
            let workers = state
                .jobs
                .values()
                .filter(|j| !j.is_terminal())
                .filter_map(|j| {
                    let w = j.workers.get(&t.info.id)?;
                    Some(WorkerRow {
                        job: j.id.clone(),
                        name: j.request.name.clone(),
                        slots: w.slots,
                        subtasks: j.placement.iter().filter(|p| **p == t.info.id).count(),
                    })
                })
                .collect();
            TaskManagerRow {
                id: t.info.id.clone(),
                slots_number: t.info.slots,
                free_slots: t.info.slots.saturating_sub(t.used_slots),
                cores: t.info.cores,
                memory_bytes: t.info.memory_bytes,
                data_host: t.info.data_host.clone(),
                cpu_load: t.resources.sample.cpu,
                memory_load: t.resources.sample.memory,
                time_since_last_heartbeat_ms: t.heard.elapsed().as_millis() as u64,
                waiting_jobs: state.cluster.queues.get(&t.info.id).map_or(0, Vec::len),
                region: region(&assessment, i),
                load: load(&assessment, i),
                workers,
            }
        })
        .collect();
    Json(TaskManagersResponse { taskmanagers })
}

async fn jobs(State(shared): State<Shared>) -> Json<JobsResponse> {
    let state = lock(&shared);
    let jobs = state
        .jobs
        .values()
        .map(|j| JobRow {
            id: j.id.clone(),
            name: j.request.name.clone(),
            status: j.state(),
            start_time: j.submitted_at_ms,
            end_time: j.ended_at_ms(),
            duration: j.duration_ms(),
            restarts: j.controller.restarts(),
            streaming: j.request.streaming,
        })
        .collect();
    Json(JobsResponse { jobs })
}

/// A job's vertices, each with its index and the parallelism decided for it.
fn vertices_of(j: &JobEntry) -> impl Iterator<Item = (usize, (&VertexRequest, &usize))> {
    j.request.vertices.iter().zip(&j.parallelism).enumerate()
}

async fn job(State(shared): State<Shared>, Path(id): Path<String>) -> Answer<JobDetails> {
    let state = lock(&shared);
    let j = state.jobs.get(&id).ok_or_else(|| no_such_job(&id))?;
    let totals = j.vertex_totals();
    let duration_ms = j.duration_ms();
    let topology = &j.request.topology;
    let watermark = |w: crate::types::Timestamp| (w != crate::types::MIN_WATERMARK).then_some(w);
    let vertices = vertices_of(j)
        .map(|(i, (v, p))| {
            let m = totals.get(i);
            // Share of its subtasks' time spent waiting on full output channels.
            let elapsed_ns = (duration_ms as f64 * 1e6 * *p as f64).max(1.0);
            let ratio = m.map_or(0.0, |m| (m.backpressured_ns as f64 / elapsed_ns).min(1.0));
            let (busy, idle, backpressured) = m.map_or((0, 0, 0), |m| m.time_split());
            let alive = (busy + idle + backpressured).max(1);
            let subtasks = m
                .map(|m| m.subtasks.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|r| SubtaskDetails {
                    subtask: r.subtask,
                    taskmanager: r.task_manager.clone(),
                    read_records: r.records_in,
                    write_records: r.records_out,
                    busy_ns: r.busy_ns,
                    idle_ns: r.idle_ns,
                    backpressured_ns: r.backpressured_ns,
                    watermark: m
                        .and_then(|m| m.watermark_of(r.subtask))
                        .and_then(watermark),
                    state_in_memory: r.state_in_memory,
                    state_on_disk: r.state_on_disk,
                    state_disk_bytes: r.state_disk_bytes,
                    state_bytes_written: r.state_bytes_written,
                    state_disk_hit_ratio: (r.state_disk_lookups > 0)
                        .then(|| r.state_disk_hits as f64 / r.state_disk_lookups as f64),
                    checkpointed_size: r.checkpointed_bytes,
                })
                .collect();
            VertexDetails {
                id: i,
                name: v.name.clone(),
                operators: topology
                    .vertices
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| vec![v.name.clone()]),
                parallelism: *p,
                status: j.state(),
                metrics: VertexCounters {
                    read_records: m.map_or(0, |m| m.records_in),
                    write_records: m.map_or(0, |m| m.records_out),
                    backpressure_ratio: ratio,
                    busy_ratio: busy as f64 / alive as f64,
                    busy_ns: busy,
                    idle_ns: idle,
                    backpressured_ns: backpressured,
                },
                watermark: m
                    .and_then(|m| m.watermarks.iter().map(|(_, w)| *w).min())
                    .and_then(watermark),
                subtasks,
            }
        })
        .collect();
    let edges = topology
        .edges
        .iter()
        .map(|e| EdgeDetails {
            source: e.source,
            target: e.target,
            partitioning: topology.partitioning_with(e, &j.parallelism),
        })
        .collect();
    Ok(Json(JobDetails {
        jid: j.id.clone(),
        name: j.request.name.clone(),
        state: j.state(),
        start_time: j.submitted_at_ms,
        end_time: j.ended_at_ms(),
        duration: duration_ms,
        now: crate::types::epoch_ms(),
        error: j.error.as_ref().map(|e| e.message.clone()),
        error_kind: j.error.as_ref().map(|e| e.kind),
        streaming: j.request.streaming,
        attempt: j.controller.attempt(),
        vertices,
        edges,
        placement: j.placement.clone(),
        queued_on: j.queued_on.clone(),
        priority: j.request.priority,
        restarts: j.controller.restarts(),
        sql: j.request.sql.clone(),
    }))
}

/// A job's failures, after Flink's `/jobs/:jobid/exceptions`: the latest root cause, and the
/// history (newest first), each with its root cause, operator, subtask and TaskManager.
async fn exceptions(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Answer<ExceptionsResponse> {
    let state = lock(&shared);
    let j = state.jobs.get(&id).ok_or_else(|| no_such_job(&id))?;
    let history = j.controller.exceptions();
    let latest = history.last();
    Ok(Json(ExceptionsResponse {
        root_exception: latest.map(|e| e.root_cause.clone()),
        timestamp: latest.map(|e| e.at_ms),
        history: history.iter().rev().map(ExceptionRow::from).collect(),
    }))
}

/// What a savepoint request may say.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct SavepointBody {
    /// Where the savepoint goes (the JobManager's savepoint directory if absent).
    #[serde(rename = "target-directory")]
    target_directory: Option<std::path::PathBuf>,
    /// Cancel the job once the savepoint is taken.
    #[serde(rename = "cancel-job")]
    cancel_job: bool,
}

/// How long a REST call waits for a savepoint to complete.
const SAVEPOINT_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// `POST /jobs/{id}/savepoints`: takes a savepoint (and with `cancel-job`, stops the job after
/// it); answers with its location once it is complete.
async fn savepoint(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    body: Option<Json<SavepointBody>>,
) -> Answer<SavepointResponse> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    take_savepoint(&shared, &id, body.target_directory, body.cancel_job).await
}

/// `POST /jobs/{id}/stop`: a savepoint, then the job is cancelled.
async fn stop(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    body: Option<Json<SavepointBody>>,
) -> Answer<SavepointResponse> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    take_savepoint(&shared, &id, body.target_directory, true).await
}

async fn take_savepoint(
    shared: &Shared,
    id: &str,
    dir: Option<std::path::PathBuf>,
    stop: bool,
) -> Answer<SavepointResponse> {
    use crate::protocol::Message;
    let (reply, mut answer) = tokio::sync::mpsc::unbounded_channel();
    lock(shared).request_savepoint(id, dir, stop, reply)?;
    match tokio::time::timeout(SAVEPOINT_WAIT, answer.recv()).await {
        Ok(Some(Message::Savepoint(location))) => Ok(Json(SavepointResponse {
            location: location.display().to_string(),
        })),
        Ok(Some(Message::Error(why))) => Err(RestError::SavepointFailed(why)),
        Ok(other) => Err(RestError::SavepointUnanswered {
            job: id.to_string(),
            answer: format!("{other:?}"),
        }),
        Err(_) => Err(RestError::SavepointTimeout {
            job: id.to_string(),
            waited: SAVEPOINT_WAIT,
        }),
    }
}

/// The scheduler's view: its name, the queues, and with RFTS every TaskManager's region and
/// load, the migrations it made and its rounds over time.
async fn scheduling(State(shared): State<Shared>) -> Json<SchedulingResponse> {
    let state = lock(&shared);
    let cluster = &state.cluster;
    let loads = cluster.loads(|j| state.jobs.priority(j));
    let assessment = cluster.scheduler.assess(&loads);
    let taskmanagers = loads
        .iter()
        .enumerate()
        .map(|(i, t)| SchedulingTaskManager {
            id: t.id.clone(),
            slots: t.slots,
            used: t.used,
            waiting: t.waiting.iter().map(|(job, _)| job.clone()).collect(),
            region: region(&assessment, i),
            load: load(&assessment, i),
        })
        .collect();
    Json(SchedulingResponse {
        scheduler: cluster.scheduler.name().to_string(),
        rebalance_round: cluster.rebalance_round,
        scheduler_time_ms: cluster.scheduler_time.as_secs_f64() * 1e3,
        cluster_load: assessment.as_ref().map(|a| a.cluster_load),
        taskmanagers,
        shared_queue: cluster.shared_queue.clone(),
        migrations: cluster
            .scheduling
            .migrations()
            .rev()
            .map(MigrationRow::from)
            .collect(),
        history: cluster.scheduling.rounds().map(RoundRow::from).collect(),
    })
}

/// A job's checkpoint statistics, after Flink's `/jobs/:jobid/checkpoints`: counts, the latest
/// completed and failed checkpoint, and the history (newest first).
async fn checkpoints(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Answer<CheckpointsResponse> {
    use crate::checkpoint::coordinator::CheckpointStatus;
    let state = lock(&shared);
    let j = state.jobs.get(&id).ok_or_else(|| no_such_job(&id))?;
    let history = j.summary().checkpoints;
    let count = |s: fn(&CheckpointStatus) -> bool| history.iter().filter(|c| s(&c.status)).count();
    let latest = |s: fn(&CheckpointStatus) -> bool| {
        history
            .iter()
            .rev()
            .find(|c| s(&c.status))
            .map(CheckpointRow::from)
    };
    let completed = |s: &CheckpointStatus| *s == CheckpointStatus::Completed;
    let failed = |s: &CheckpointStatus| matches!(s, CheckpointStatus::Failed(_));
    let in_progress = |s: &CheckpointStatus| *s == CheckpointStatus::InProgress;
    Ok(Json(CheckpointsResponse {
        counts: CheckpointCounts {
            completed: count(completed),
            failed: count(failed),
            in_progress: count(in_progress),
            total: history.len(),
            restarts: j.controller.restarts(),
        },
        latest: LatestCheckpoints {
            completed: latest(completed),
            failed: latest(failed),
        },
        history: history.iter().rev().map(CheckpointRow::from).collect(),
    }))
}

/// The rows `rows` makes of the metrics of vertex `vertex` of job `id`; or the 404 that says
/// which is missing.
fn vertex_rows<T>(
    shared: &Shared,
    id: &str,
    vertex: usize,
    rows: impl FnOnce(&crate::types::metrics::VertexMetrics) -> Vec<T>,
) -> Answer<Vec<T>> {
    let metrics = {
        let state = lock(shared);
        let j = state.jobs.get(id).ok_or_else(|| no_such_job(id))?;
        j.vertex_totals().into_iter().nth(vertex)
    };
    let v = metrics.ok_or_else(|| RestError::NoSuchVertex {
        job: id.to_string(),
        vertex,
    })?;
    Ok(Json(rows(&v)))
}

/// The current watermark of every subtask of a job vertex, in Flink's shape:
/// `[{"id": "<subtask>.currentInputWatermark", "value": "<ms>"}]` (`-9223372036854775808` before
/// the first watermark, `9223372036854775807` after the end of the input), followed by the
/// late records each subtask dropped or sent to a side output
/// (`{"id": "<subtask>.numLateRecordsDropped", "value": "<n>"}`, Flink's metric name).
async fn watermarks(
    State(shared): State<Shared>,
    Path((id, vertex)): Path<(String, usize)>,
) -> Answer<Vec<MetricValue>> {
    vertex_rows(&shared, &id, vertex, |v| {
        let metric = |subtask: &usize, name: &str, value: String| MetricValue {
            id: format!("{subtask}.{name}"),
            value,
        };
        v.watermarks
            .iter()
            .map(|(subtask, w)| metric(subtask, "currentInputWatermark", w.to_string()))
            .chain(
                v.late_records
                    .iter()
                    .map(|(subtask, n)| metric(subtask, "numLateRecordsDropped", n.to_string())),
            )
            .collect()
    })
}

/// The partitions a source vertex reads (a Kafka source's): per subtask and partition the
/// records consumed, the next offset, the partition's end and the lag.
async fn partitions(
    State(shared): State<Shared>,
    Path((id, vertex)): Path<(String, usize)>,
) -> Answer<Vec<PartitionRow>> {
    vertex_rows(&shared, &id, vertex, |v| {
        v.partitions
            .iter()
            .map(|(subtask, p)| PartitionRow {
                subtask: *subtask,
                topic: p.topic.clone(),
                partition: p.partition,
                records_consumed: p.consumed,
                offset: p.next_offset,
                end_offset: p.end_offset,
                lag: p.lag(),
            })
            .collect()
    })
}

async fn plan(State(shared): State<Shared>, Path(id): Path<String>) -> Answer<PlanResponse> {
    let state = lock(&shared);
    let j = state.jobs.get(&id).ok_or_else(|| no_such_job(&id))?;
    let nodes = vertices_of(j)
        .map(|(i, (v, p))| PlanNode {
            id: i,
            description: v.name.clone(),
            parallelism: *p,
        })
        .collect();
    Ok(Json(PlanResponse {
        plan: Plan {
            jid: j.id.clone(),
            name: j.request.name.clone(),
            nodes,
        },
    }))
}

async fn cancel(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<CancelResponse>), RestError> {
    let mut state = lock(&shared);
    let s = state
        .jobs
        .get(&id)
        .map(|j| j.state())
        .ok_or_else(|| no_such_job(&id))?;
    if s.is_terminal() {
        return Err(RestError::Ended { job: id, state: s });
    }
    state.end_job(&id, JobStatus::Cancelled, None);
    Ok((StatusCode::ACCEPTED, Json(CancelResponse {})))
}

/// The monitor samples of one TaskManager (also of one no longer registered), oldest first.
async fn monitor_history(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Answer<MonitorResponse> {
    let state = lock(&shared);
    let samples = state.cluster.monitor.history(&id);
    if samples.is_empty() && !state.cluster.task_managers.contains_key(&id) {
        return Err(RestError::NoMonitorSamples(id));
    }
    Ok(Json(MonitorResponse { id, samples }))
}
/// Prometheus text exposition of the cluster and the latest monitor samples.
async fn prometheus(
    State(shared): State<Shared>,
) -> (
    StatusCode,
    [(axum::http::HeaderName, &'static str); 1],
    String,
) {
    use std::fmt::Write;
    let state = lock(&shared);
    let mut out = String::new();
    let mut gauge = |name: &str, help: &str, rows: Vec<(String, f64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    gauge(
        "hummer_taskmanagers",
        "Registered TaskManagers.",
        vec![(String::new(), state.cluster.task_managers.len() as f64)],
    );
    let states = [
        JobStatus::Created,
        JobStatus::Deploying,
        JobStatus::Running,
        JobStatus::Finished,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];
    gauge(
        "hummer_jobs",
        "Jobs by state.",
        states
            .iter()
            .map(|s| {
                let n = state.jobs.values().filter(|j| j.state() == *s).count();
                (format!("{{state=\"{s:?}\"}}"), n as f64)
            })
            .collect(),
    );
    let (mut watermarks, mut late) = (Vec::new(), Vec::new());
    let (mut state_entries, mut state_bytes) = (Vec::new(), Vec::new());
    let (mut state_written, mut state_hits) = (Vec::new(), Vec::new());
    let mut checkpointed = Vec::new();
    let (mut lag, mut consumed) = (Vec::new(), Vec::new());
    for j in state.jobs.values().filter(|j| !j.is_terminal()) {
        for (v, totals) in j.vertex_totals().iter().enumerate() {
            let labels =
                |subtask| format!("{{job=\"{}\",vertex=\"{v}\",subtask=\"{subtask}\"}}", j.id);
            for (subtask, w) in &totals.watermarks {
                watermarks.push((labels(*subtask), *w as f64));
            }
            for (subtask, n) in &totals.late_records {
                late.push((labels(*subtask), *n as f64));
            }
            for r in totals.subtasks.iter().filter(|r| r.checkpointed_bytes > 0) {
                checkpointed.push((labels(r.subtask), r.checkpointed_bytes as f64));
            }
            for r in totals
                .subtasks
                .iter()
                .filter(|r| r.state_on_disk + r.state_in_memory > 0)
            {
                let tier = |t: &str| {
                    format!(
                        "{{job=\"{}\",vertex=\"{v}\",subtask=\"{}\",tier=\"{t}\"}}",
                        j.id, r.subtask
                    )
                };
                state_entries.push((tier("memory"), r.state_in_memory as f64));
                state_entries.push((tier("disk"), r.state_on_disk as f64));
                state_bytes.push((labels(r.subtask), r.state_disk_bytes as f64));
                state_written.push((labels(r.subtask), r.state_bytes_written as f64));
                if r.state_disk_lookups > 0 {
                    let ratio = r.state_disk_hits as f64 / r.state_disk_lookups as f64;
                    state_hits.push((labels(r.subtask), ratio));
                }
            }
            for (subtask, p) in &totals.partitions {
                let labels = format!(
                    "{{job=\"{}\",vertex=\"{v}\",subtask=\"{subtask}\",topic=\"{}\",partition=\"{}\"}}",
                    j.id, p.topic, p.partition
                );
                lag.push((labels.clone(), p.lag() as f64));
                consumed.push((labels, p.consumed as f64));
            }
        }
    }
    gauge(
        "hummer_job_vertex_watermark",
        "Current watermark of each subtask of a running job, in epoch milliseconds.",
        watermarks,
    );
    gauge(
        "hummer_job_vertex_late_records",
        "Records of each subtask of a running job that came later than the watermark plus the \
         allowed lateness (dropped, or sent to a late-data side output).",
        late,
    );
    gauge(
        "hummer_checkpointed_bytes",
        "Bytes of operator state each subtask's last checkpoint snapshot wrote (a delta's, \
         for incremental state).",
        checkpointed,
    );
    gauge(
        "hummer_state_entries",
        "Keyed state entries of each subtask of a running job with a budget for state, in \
         memory and on disk (tables with a disk tier).",
        state_entries,
    );
    gauge(
        "hummer_state_disk_bytes",
        "Bytes of each subtask's keyed state files on disk.",
        state_bytes,
    );
    gauge(
        "hummer_state_bytes_written",
        "Bytes each subtask's keyed tables have written to disk (spills and merges).",
        state_written,
    );
    gauge(
        "hummer_state_disk_hit_ratio",
        "Share of each subtask's look-ups past memory that found the key on disk.",
        state_hits,
    );
    gauge(
        "hummer_source_partition_lag",
        "Records of a source partition (a Kafka topic's) that its subtask has not read yet.",
        lag,
    );
    gauge(
        "hummer_source_partition_records_consumed",
        "Records a source subtask has read from one of its partitions.",
        consumed,
    );
    gauge(
        "hummer_monitor_reports_rejected",
        "Monitor reports rejected as impossible.",
        vec![(String::new(), state.cluster.monitor.rejected() as f64)],
    );
    let latest: Vec<_> = state
        .cluster
        .monitor
        .task_managers()
        .into_iter()
        .filter_map(|tm| state.cluster.monitor.latest(&tm).cloned())
        .collect();
    type SampleField = fn(&crate::scheduler::rfts::NodeSample) -> f64;
    let per_tm = |f: SampleField| {
        latest
            .iter()
            .map(|r| {
                (
                    format!("{{taskmanager=\"{}\"}}", r.task_manager),
                    f(&r.sample),
                )
            })
            .collect::<Vec<_>>()
    };
    let per_tm_gauges: [(&str, &str, SampleField); 4] = [
        (
            "hummer_taskmanager_cpu_utilisation",
            "CPU utilisation, 0 to 1.",
            |s| s.cpu,
        ),
        (
            "hummer_taskmanager_memory_utilisation",
            "Memory utilisation, 0 to 1.",
            |s| s.memory,
        ),
        ("hummer_taskmanager_cores", "CPU cores.", |s| s.cores),
        ("hummer_taskmanager_memory_bytes", "Total memory.", |s| {
            s.total_memory
        }),
    ];
    for (name, help, value) in per_tm_gauges {
        gauge(name, help, per_tm(value));
    }
    (
        StatusCode::OK,
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        out,
    )
}
