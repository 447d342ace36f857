//! REST API with JSON, shaped after Flink's: `GET /overview`, `/taskmanagers`, `/jobs`,
//! `/jobs/{id}`, `/jobs/{id}/plan`, `/jobs/{id}/checkpoints`, and `PATCH /jobs/{id}` to
//! cancel.

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::{Value, json};

use crate::cluster::jobmanager::{Shared, lock};
use crate::cluster::protocol::JobState;

/// The REST routes over the JobManager's state.
pub fn router(shared: Shared) -> Router {
    Router::new()
        .route("/overview", get(overview))
        .route("/taskmanagers", get(task_managers))
        .route("/jobs", get(jobs))
        .route("/jobs/{id}", get(job).patch(cancel))
        .route("/jobs/{id}/plan", get(plan))
        .route("/jobs/{id}/checkpoints", get(checkpoints))
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
    Json(json!({
        "taskmanagers": state.cluster.task_managers.len(),
        "slots-total": slots,
        "slots-available": slots - used.min(slots),
        "jobs-running": count(JobState::Running) + count(JobState::Deploying),
        "jobs-waiting": count(JobState::Waiting),
        "jobs-finished": count(JobState::Finished),
        "jobs-cancelled": count(JobState::Cancelled),
        "jobs-failed": count(JobState::Failed),
        "scheduler": state.cluster.scheduler.name(),
        "scheduler-time-ms": state.cluster.scheduler_time.as_secs_f64() * 1e3,
    }))
}

async fn task_managers(State(shared): State<Shared>) -> Json<Value> {
    let state = lock(&shared);
    let tms: Vec<Value> = state
        .cluster
        .task_managers
        .values()
        .map(|t| {
            json!({
                "id": t.info.id,
                "slotsNumber": t.info.slots,
                "freeSlots": t.info.slots.saturating_sub(t.used_slots),
                "cores": t.info.cores,
                "memoryBytes": t.info.memory_bytes,
                "dataHost": t.info.data_host,
                "cpuLoad": t.resources.sample.cpu,
                "memoryLoad": t.resources.sample.memory,
                "timeSinceLastHeartbeatMs": t.last_heartbeat.elapsed().as_millis() as u64,
                "waitingJobs": state.cluster.queues.get(&t.info.id).map_or(0, Vec::len),
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
        .map(|j| json!({"id": j.id, "name": j.request.name, "status": j.state()}))
        .collect();
    Json(json!({ "jobs": jobs }))
}

async fn job(State(shared): State<Shared>, Path(id): Path<String>) -> Reply {
    let state = lock(&shared);
    let Some(j) = state.jobs.get(&id) else {
        return not_found(&id);
    };
    let summary = j.summary();
    let vertices: Vec<Value> = j
        .request
        .vertices
        .iter()
        .zip(&j.parallelism)
        .enumerate()
        .map(|(i, (v, p))| {
            let name = &v.name;
            let m = summary.vertices.get(i);
            // Share of its subtasks' time spent waiting on full output channels.
            let elapsed_ns = (summary.duration_ms as f64 * 1e6 * *p as f64).max(1.0);
            let ratio = m.map_or(0.0, |m| (m.backpressured_ns as f64 / elapsed_ns).min(1.0));
            json!({
                "id": i,
                "name": name,
                "parallelism": p,
                "status": j.state(),
                "metrics": {
                    "read-records": m.map_or(0, |m| m.records_in),
                    "write-records": m.map_or(0, |m| m.records_out),
                    "backpressure-ratio": ratio,
                },
            })
        })
        .collect();
    (
        StatusCode::OK,
        Json(json!({
            "jid": j.id,
            "name": j.request.name,
            "state": j.state(),
            "duration": summary.duration_ms,
            "error": summary.error,
            "vertices": vertices,
            "placement": j.placement,
            "queuedOn": j.queued_on,
            "priority": j.request.priority,
            "restarts": summary.restarts,
        })),
    )
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
