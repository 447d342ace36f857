//! REST API with JSON, shaped after Flink's: `GET /overview`, `/taskmanagers`, `/jobs`,
//! `/jobs/{id}`, `/jobs/{id}/plan`, `/jobs/{id}/checkpoints`, `/jobs/{id}/exceptions`,
//! `/scheduling`; `PATCH /jobs/{id}` to cancel, `POST /jobs/{id}/savepoints` and
//! `POST /jobs/{id}/stop`. The dashboard ([`super::dashboard`]) reads only these.

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::jobmanager::{Shared, lock};
use crate::protocol::JobState;
use crate::scheduler::rfts::Assessment;

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

type Reply = (StatusCode, Json<Value>);

fn not_found(id: &str) -> Reply {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"errors": [format!("no job with id {id}")]})),
    )
}

async fn overview(State(shared): State<Shared>) -> Json<Value> {
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
    let count = |s: JobState| state.jobs.values().filter(|j| j.state() == s).count();
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
    Json(json!({
        "taskmanagers": state.cluster.task_managers.len(),
        "slots-total": slots,
        "slots-available": slots - used.min(slots),
        "jobs-running": count(JobState::Running) + count(JobState::Deploying),
        "jobs-waiting": count(JobState::Waiting),
        "jobs-restarting": count(JobState::Restarting),
        "jobs-finished": count(JobState::Finished),
        "jobs-cancelled": count(JobState::Cancelled),
        "jobs-failed": count(JobState::Failed),
        "scheduler": state.cluster.scheduler.name(),
        "scheduler-time-ms": state.cluster.scheduler_time.as_secs_f64() * 1e3,
        "cpu": cpu,
        "memory": weighted(memory_used, memory),
        "cores-total": cores,
        "memory-bytes-total": memory,
        "now": crate::types::epoch_ms(),
    }))
}

/// The RFTS region of the `i`-th TaskManager (in the order the scheduler assessed them).
fn region(assessment: &Option<Assessment>, i: usize) -> Option<&'static str> {
    assessment.as_ref()?.region.get(i).map(|r| r.name())
}

/// The RFTS load of the `i`-th TaskManager.
fn load(assessment: &Option<Assessment>, i: usize) -> Option<f64> {
    assessment.as_ref()?.load.get(i).copied()
}

async fn task_managers(State(shared): State<Shared>) -> Json<Value> {
    let state = lock(&shared);
    let loads = state.cluster.loads(|j| state.jobs.priority(j));
    let assessment = state.cluster.scheduler.assess(&loads);
    let tms: Vec<Value> = state
        .cluster
        .task_managers
        .values()
        .enumerate()
        .map(|(i, t)| {
            let workers: Vec<Value> = state
                .jobs
                .values()
                .filter(|j| !j.is_terminal())
                .filter_map(|j| {
                    let w = j.workers.get(&t.info.id)?;
                    let subtasks = j.placement.iter().filter(|p| **p == t.info.id).count();
                    Some(json!({
                        "job": j.id,
                        "name": j.request.name,
                        "slots": w.slots,
                        "subtasks": subtasks,
                    }))
                })
                .collect();
            json!({
                "id": t.info.id,
                "slotsNumber": t.info.slots,
                "freeSlots": t.info.slots.saturating_sub(t.used_slots),
                "cores": t.info.cores,
                "memoryBytes": t.info.memory_bytes,
                "dataHost": t.info.data_host,
                "cpuLoad": t.resources.sample.cpu,
                "memoryLoad": t.resources.sample.memory,
                "timeSinceLastHeartbeatMs": t.heard.elapsed().as_millis() as u64,
                "waitingJobs": state.cluster.queues.get(&t.info.id).map_or(0, Vec::len),
                "region": region(&assessment, i),
                "load": load(&assessment, i),
                "workers": workers,
            })
        })
        .collect();
    Json(json!({ "taskmanagers": tms }))
}

async fn jobs(State(shared): State<Shared>) -> Json<Value> {
    let state = lock(&shared);
    let jobs: Vec<Value> = state
        .jobs
        .values()
        .map(|j| {
            json!({
                "id": j.id,
                "name": j.request.name,
                "status": j.state(),
                "start-time": j.submitted_at_ms,
                "end-time": j.ended_at_ms(),
                "duration": j.duration_ms(),
                "restarts": j.controller.restarts(),
                "streaming": j.request.streaming,
            })
        })
        .collect();
    Json(json!({ "jobs": jobs }))
}

async fn job(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    let state = lock(&shared);
    let Some(j) = state.jobs.get(&id) else {
        return not_found(&id);
    };
    let totals = j.vertex_totals();
    let duration_ms = j.duration_ms();
    let topology = &j.request.topology;
    let watermark = |w: crate::types::Timestamp| (w != crate::types::MIN_WATERMARK).then_some(w);
    let vertices: Vec<Value> = j
        .request
        .vertices
        .iter()
        .zip(&j.parallelism)
        .enumerate()
        .map(|(i, (v, p))| {
            let m = totals.get(i);
            // Share of its subtasks' time spent waiting on full output channels.
            let elapsed_ns = (duration_ms as f64 * 1e6 * *p as f64).max(1.0);
            let ratio = m.map_or(0.0, |m| (m.backpressured_ns as f64 / elapsed_ns).min(1.0));
            let (busy, idle, backpressured) = m.map_or((0, 0, 0), |m| m.time_split());
            let alive = (busy + idle + backpressured).max(1);
            let subtasks: Vec<Value> = m
                .map(|m| m.subtasks.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|r| {
                    json!({
                        "subtask": r.subtask,
                        "taskmanager": r.task_manager,
                        "read-records": r.records_in,
                        "write-records": r.records_out,
                        "busy-ns": r.busy_ns,
                        "idle-ns": r.idle_ns,
                        "backpressured-ns": r.backpressured_ns,
                        "watermark": m.and_then(|m| m.watermark_of(r.subtask)).and_then(watermark),
                    })
                })
                .collect();
            json!({
                "id": i,
                "name": v.name,
                "operators": topology.vertices.get(i).cloned().unwrap_or_else(|| vec![v.name.clone()]),
                "parallelism": p,
                "status": j.state(),
                "metrics": {
                    "read-records": m.map_or(0, |m| m.records_in),
                    "write-records": m.map_or(0, |m| m.records_out),
                    "backpressure-ratio": ratio,
                    "busy-ratio": busy as f64 / alive as f64,
                    "busy-ns": busy,
                    "idle-ns": idle,
                    "backpressured-ns": backpressured,
                },
                "watermark": m.and_then(|m| m.watermarks.iter().map(|(_, w)| *w).min()).and_then(watermark),
                "subtasks": subtasks,
            })
        })
        .collect();
    let edges: Vec<Value> = topology
        .edges
        .iter()
        .map(|e| {
            json!({
                "source": e.source,
                "target": e.target,
                "partitioning": topology.partitioning_with(e, &j.parallelism),
            })
        })
        .collect();
    (
        StatusCode::OK,
        Json(json!({
            "jid": j.id,
            "name": j.request.name,
            "state": j.state(),
            "start-time": j.submitted_at_ms,
            "end-time": j.ended_at_ms(),
            "duration": duration_ms,
            "now": crate::types::epoch_ms(),
            "error": j.error.as_ref().map(|e| &e.message),
            "error-kind": j.error.as_ref().map(|e| e.kind),
            "streaming": j.request.streaming,
            "attempt": j.controller.attempt(),
            "vertices": vertices,
            "edges": edges,
            "placement": j.placement,
            "queuedOn": j.queued_on,
            "priority": j.request.priority,
            "restarts": j.controller.restarts(),
        })),
    )
}

/// A job's failures, after Flink's `/jobs/:jobid/exceptions`: the latest root cause, and the
/// history (newest first), each with its root cause, operator, subtask and TaskManager.
async fn exceptions(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    let state = lock(&shared);
    let Some(j) = state.jobs.get(&id) else {
        return not_found(&id);
    };
    let history = j.controller.exceptions();
    let latest = history.last();
    let rows: Vec<Value> = history
        .iter()
        .rev()
        .map(|e| {
            json!({
                "timestamp": e.at_ms,
                "attempt": e.attempt,
                "root-cause": e.root_cause,
                "exception": e.error,
                "operator": e.operator,
                "subtask": e.subtask,
                "taskmanager": e.task_manager,
                "outcome": if e.restarted { "RESTARTED" } else { "FAILED" },
            })
        })
        .collect();
    (
        StatusCode::OK,
        Json(json!({
            "root-exception": latest.map(|e| &e.root_cause),
            "timestamp": latest.map(|e| e.at_ms),
            "history": rows,
        })),
    )
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
) -> Reply {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    take_savepoint(&shared, &id, body.target_directory, body.cancel_job).await
}

/// `POST /jobs/{id}/stop`: a savepoint, then the job is cancelled.
async fn stop(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    body: Option<Json<SavepointBody>>,
) -> Reply {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    take_savepoint(&shared, &id, body.target_directory, true).await
}

async fn take_savepoint(
    shared: &Shared,
    id: &str,
    dir: Option<std::path::PathBuf>,
    stop: bool,
) -> Reply {
    use crate::jobmanager::refusal::Refusal;
    use crate::protocol::Message;
    let (reply, mut answer) = tokio::sync::mpsc::unbounded_channel();
    if let Err(refusal) = lock(shared).request_savepoint(id, dir, stop, reply) {
        let status = match refusal {
            Refusal::NoSuchJob(_) => StatusCode::NOT_FOUND,
            _ => StatusCode::CONFLICT,
        };
        return (status, Json(json!({"errors": [refusal.to_string()]})));
    }
    match tokio::time::timeout(SAVEPOINT_WAIT, answer.recv()).await {
        Ok(Some(Message::Savepoint(location))) => (
            StatusCode::OK,
            Json(json!({"location": location.display().to_string()})),
        ),
        Ok(Some(Message::Error(why))) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"errors": [why]})),
        ),
        Ok(other) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(
                json!({"errors": [format!("the savepoint of job {id} ended without an answer ({other:?})")]}),
            ),
        ),
        Err(_) => (
            StatusCode::GATEWAY_TIMEOUT,
            Json(
                json!({"errors": [format!("the savepoint of job {id} took longer than {SAVEPOINT_WAIT:?}; it may still complete")]}),
            ),
        ),
    }
}

/// The scheduler's view: its name, the queues, and with RFTS every TaskManager's region and
/// load, the migrations it made and its rounds over time.
async fn scheduling(State(shared): State<Shared>) -> Json<Value> {
    let state = lock(&shared);
    let cluster = &state.cluster;
    let loads = cluster.loads(|j| state.jobs.priority(j));
    let assessment = cluster.scheduler.assess(&loads);
    let tms: Vec<Value> = loads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({
                "id": t.id,
                "slots": t.slots,
                "used": t.used,
                "waiting": t.waiting.iter().map(|(job, _)| job).collect::<Vec<_>>(),
                "region": region(&assessment, i),
                "load": load(&assessment, i),
            })
        })
        .collect();
    let migrations: Vec<Value> = cluster
        .scheduling
        .migrations()
        .rev()
        .map(|m| json!({"at": m.at_ms, "round": m.round, "job": m.job, "from": m.from, "to": m.to}))
        .collect();
    let history: Vec<Value> = cluster
        .scheduling
        .rounds()
        .map(|r| {
            let tms: Vec<Value> = r
                .task_managers
                .iter()
                .map(|t| json!({"id": t.id, "region": t.region.name(), "load": t.load, "waiting": t.waiting}))
                .collect();
            json!({"at": r.at_ms, "round": r.round, "cluster-load": r.cluster_load, "taskmanagers": tms})
        })
        .collect();
    Json(json!({
        "scheduler": cluster.scheduler.name(),
        "rebalance-round": cluster.rebalance_round,
        "scheduler-time-ms": cluster.scheduler_time.as_secs_f64() * 1e3,
        "cluster-load": assessment.as_ref().map(|a| a.cluster_load),
        "taskmanagers": tms,
        "shared-queue": cluster.shared_queue,
        "migrations": migrations,
        "history": history,
    }))
}

/// A job's checkpoint statistics, after Flink's `/jobs/:jobid/checkpoints`: counts, the latest
/// completed and failed checkpoint, and the history (newest first).
async fn checkpoints(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    use crate::checkpoint::coordinator::CheckpointStatus;
    let state = lock(&shared);
    let Some(j) = state.jobs.get(&id) else {
        return not_found(&id);
    };
    let history = j.summary().checkpoints;
    let row = |c: &crate::checkpoint::coordinator::CheckpointStats| {
        let (status, failure) = match &c.status {
            CheckpointStatus::InProgress => ("IN_PROGRESS", None),
            CheckpointStatus::Completed => ("COMPLETED", None),
            CheckpointStatus::Failed(why) => ("FAILED", Some(why.clone())),
        };
        json!({
            "id": c.id,
            "status": status,
            "is_final": c.is_final,
            "trigger_timestamp": c.triggered_at_ms,
            "end_to_end_duration": c.duration_ms,
            "state_size": c.size_bytes,
            "alignment_duration": c.alignment_ms,
            "sync_duration": c.sync_ms,
            "write_duration": c.write_ms,
            "failure_message": failure,
        })
    };
    let count = |s: fn(&CheckpointStatus) -> bool| history.iter().filter(|c| s(&c.status)).count();
    let latest =
        |s: fn(&CheckpointStatus) -> bool| history.iter().rev().find(|c| s(&c.status)).map(row);
    let completed = |s: &CheckpointStatus| *s == CheckpointStatus::Completed;
    let failed = |s: &CheckpointStatus| matches!(s, CheckpointStatus::Failed(_));
    let in_progress = |s: &CheckpointStatus| *s == CheckpointStatus::InProgress;
    (
        StatusCode::OK,
        Json(json!({
            "counts": {
                "completed": count(completed),
                "failed": count(failed),
                "in_progress": count(in_progress),
                "total": history.len(),
                "restarts": j.controller.restarts(),
            },
            "latest": {
                "completed": latest(completed),
                "failed": latest(failed),
            },
            "history": history.iter().rev().map(row).collect::<Vec<_>>(),
        })),
    )
}

/// The rows `rows` makes of the metrics of vertex `vertex` of job `id`, as a JSON array; or
/// the 404 that says which is missing.
fn vertex_rows(
    shared: &Shared,
    id: &str,
    vertex: usize,
    rows: impl FnOnce(&crate::types::metrics::VertexMetrics) -> Vec<Value>,
) -> Reply {
    let metrics = {
        let state = lock(shared);
        let Some(j) = state.jobs.get(id) else {
            return not_found(id);
        };
        j.vertex_totals().into_iter().nth(vertex)
    };
    match metrics {
        Some(v) => (StatusCode::OK, Json(Value::Array(rows(&v)))),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({"errors": [format!("job {id} has no vertex {vertex}")]})),
        ),
    }
}

/// The current watermark of every subtask of a job vertex, in Flink's shape:
/// `[{"id": "<subtask>.currentInputWatermark", "value": "<ms>"}]` (`-9223372036854775808` before
/// the first watermark, `9223372036854775807` after the end of the input), followed by the
/// late records each subtask dropped or sent to a side output
/// (`{"id": "<subtask>.numLateRecordsDropped", "value": "<n>"}`, Flink's metric name).
async fn watermarks(
    State(shared): State<Shared>,
    Path((id, vertex)): Path<(String, usize)>,
) -> Reply {
    vertex_rows(&shared, &id, vertex, |v| {
        v.watermarks
            .iter()
            .map(|(subtask, w)| json!({"id": format!("{subtask}.currentInputWatermark"), "value": w.to_string()}))
            .chain(v.late_records.iter().map(|(subtask, n)| {
                json!({"id": format!("{subtask}.numLateRecordsDropped"), "value": n.to_string()})
            }))
            .collect()
    })
}

/// The partitions a source vertex reads (a Kafka source's): per subtask and partition the
/// records consumed, the next offset, the partition's end and the lag.
async fn partitions(
    State(shared): State<Shared>,
    Path((id, vertex)): Path<(String, usize)>,
) -> Reply {
    vertex_rows(&shared, &id, vertex, |v| {
        v.partitions
            .iter()
            .map(|(subtask, p)| {
                json!({
                    "subtask": subtask,
                    "topic": p.topic,
                    "partition": p.partition,
                    "records-consumed": p.consumed,
                    "offset": p.next_offset,
                    "end-offset": p.end_offset,
                    "lag": p.lag(),
                })
            })
            .collect()
    })
}

async fn plan(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    let state = lock(&shared);
    let Some(j) = state.jobs.get(&id) else {
        return not_found(&id);
    };
    let nodes: Vec<Value> = j
        .request
        .vertices
        .iter()
        .zip(&j.parallelism)
        .enumerate()
        .map(|(i, (v, p))| json!({"id": i, "description": v.name, "parallelism": p}))
        .collect();
    (
        StatusCode::OK,
        Json(json!({"plan": {"jid": j.id, "name": j.request.name, "nodes": nodes}})),
    )
}

async fn cancel(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    let mut state = lock(&shared);
    match state.jobs.get(&id).map(|j| j.state()) {
        None => not_found(&id),
        Some(s) if s.is_terminal() => (
            StatusCode::CONFLICT,
            Json(json!({"errors": [format!("job {id} has already ended ({s:?})")]})),
        ),
        Some(_) => {
            state.end_job(&id, JobState::Cancelled, None);
            (StatusCode::ACCEPTED, Json(json!({})))
        }
    }
}

/// The monitor samples of one TaskManager (also of one no longer registered), oldest first.
async fn monitor_history(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    let state = lock(&shared);
    let history = state.cluster.monitor.history(&id);
    if history.is_empty() && !state.cluster.task_managers.contains_key(&id) {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"errors": [format!("no monitor samples of TaskManager {id}")]})),
        );
    }
    (
        StatusCode::OK,
        Json(json!({ "id": id, "samples": history })),
    )
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
        JobState::Waiting,
        JobState::Deploying,
        JobState::Running,
        JobState::Finished,
        JobState::Failed,
        JobState::Cancelled,
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
    let per_tm = |f: fn(&crate::scheduler::rfts::NodeSample) -> f64| {
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
    gauge(
        "hummer_taskmanager_cpu_utilisation",
        "CPU utilisation, 0 to 1.",
        per_tm(|s| s.cpu),
    );
    gauge(
        "hummer_taskmanager_memory_utilisation",
        "Memory utilisation, 0 to 1.",
        per_tm(|s| s.memory),
    );
    gauge(
        "hummer_taskmanager_cores",
        "CPU cores.",
        per_tm(|s| s.cores),
    );
    gauge(
        "hummer_taskmanager_memory_bytes",
        "Total memory.",
        per_tm(|s| s.total_memory),
    );
    (
        StatusCode::OK,
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        out,
    )
}
