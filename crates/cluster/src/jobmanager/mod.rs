//! The JobManager process: accepts TaskManagers, clients and workers, keeps its state
//! ([`state::JobManagerState`]: the cluster of [`cluster_state`], the jobs of [`jobs`], each
//! driven by its job controller, whose [`reactions`] return the effects the state applies),
//! and serves REST ([`rest`], secured by [`rest_security`]) and
//! the web dashboard ([`dashboard`]). Beside them: [`liveness`] (when a silent TaskManager
//! counts as lost), [`monitor`] (the TaskManagers' resource samples), [`scheduling_log`] (what
//! the scheduler decided, for the dashboard) and [`refusal`] (why a request is refused).
//!
//! With an HA directory (`--ha-dir`, see `crate::ha`) the JobManager first campaigns
//! for the lease: a standby waits, bound but not serving, until the leader's lease lapses,
//! then takes over the jobs of the job store. A leader checks its lease before every action
//! ([`lock`]) and stops if it was deposed.
//!
//! Every connection is served by its own task, with a mailbox (an unbounded channel) drained by
//! a writer task, so a slow peer delays only itself. A connection that sends a bad frame, a
//! wrong first message or another protocol version gets an error message and is closed; the
//! JobManager goes on serving the others.

pub mod cluster_state;
pub mod dashboard;
pub mod jobs;
pub mod liveness;
pub mod monitor;
pub mod reactions;
pub mod refusal;
pub mod rest;
pub mod rest_security;
pub mod scheduling_log;
pub mod state;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::channels::secure::Security;
use crate::error::{ErrorReport, HummerError, Result};
use crate::protocol::{Message, PROTOCOL_VERSION, Role, async_io};
use cluster_state::{ClusterState, TaskManagerEntry};
use state::JobManagerState;

/// Shared state of the JobManager.
pub type Shared = Arc<Mutex<JobManagerState>>;

/// How the JobManager runs.
#[derive(Clone, Debug)]
pub struct JobManagerConfig {
    /// RPC address (TaskManagers, clients, workers).
    pub rpc: SocketAddr,
    /// REST address, if any.
    pub rest: Option<SocketAddr>,
    /// A TaskManager silent for this long is declared lost.
    pub heartbeat_timeout: Duration,
    /// Where the monitor history is kept across restarts (in memory only if `None`).
    pub data_dir: Option<std::path::PathBuf>,
    /// Placement and queueing strategy: round-robin, fair, pull, genetic or rfts.
    pub scheduler: String,
    /// How often the scheduler may move waiting jobs (the RFTS paper: every monitor interval,
    /// 10 s).
    pub rebalance_interval: Duration,
    /// Where savepoints go when a request names no directory.
    pub savepoint_dir: Option<std::path::PathBuf>,
    /// The HA directory: with one, JobManagers elect a leader and a new leader takes over
    /// the jobs.
    pub ha_dir: Option<std::path::PathBuf>,
    /// How long a leader's lease lasts unless renewed.
    pub lease: Duration,
    /// Mutual TLS on every connection, or plaintext (then REST is plain HTTP too).
    pub security: Security,
    /// Who may call the REST API.
    pub rest_auth: rest_security::RestAuth,
}

/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The JobManager's state, to act on: with high availability, only while this JobManager
/// still leads (a deposed leader stops here, before it acts; see
/// `crate::ha::lease::Leadership::ensure`).
fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, JobManagerState> {
    let state = shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(leadership) = &state.leadership {
        leadership.ensure();
    }
    state
}

/// Runs a JobManager until the process ends. Prints `jobmanager listening on ADDR` once the
/// RPC port is bound (scripts and tests wait for that line).
pub async fn run(config: JobManagerConfig) -> Result<()> {
    let net = |addr: SocketAddr| {
        move |source| HummerError::Network {
            endpoint: addr.to_string(),
            source,
        }
    };
    let listener = TcpListener::bind(config.rpc)
        .await
        .map_err(net(config.rpc))?;
    let rpc = listener.local_addr().map_err(net(config.rpc))?;
    let rest_listener = match config.rest {
        Some(rest_addr) => {
            let l = TcpListener::bind(rest_addr).await.map_err(net(rest_addr))?;
            let bound = l.local_addr().map_err(net(rest_addr))?;
            Some((l, bound))
        }
        None => None,
    };
    let monitor = monitor::MonitorStore::open(config.data_dir.as_deref())?;
    let scheduler = crate::scheduler::by_name(&config.scheduler)?;
    let cluster = ClusterState::new(scheduler, monitor);
    let mut state = JobManagerState::new(rpc.to_string(), cluster, config.savepoint_dir.clone());
    if let Some(dir) = &config.ha_dir {
        let candidate = crate::ha::lease::Candidate::new(
            dir,
            format!("jobmanager-{}-{rpc}", std::process::id()),
            rpc.to_string(),
            rest_listener.as_ref().map(|(_, a)| a.to_string()),
            config.lease,
        )?;
        let leadership = Arc::new(candidate.campaign().await);
        let store = crate::ha::HaStore::open(dir)?;
        let resumed = state.take_over(store, leadership.clone())?;
        println!(
            "jobmanager leads (token {}), resuming {resumed} job(s)",
            leadership.token()
        );
        // Renewed from a thread of its own: a busy runtime (artifacts of hundreds of MB
        // being encoded) must not delay it past the lease.
        std::thread::Builder::new()
            .name("lease-renewal".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(leadership.renew_interval());
                    match leadership.renew() {
                        Ok(true) => {}
                        Ok(false) => leadership.step_down("another JobManager took the lease"),
                        Err(e) => tracing::warn!("cannot renew the lease: {e}"),
                    }
                }
            })
            .map_err(|e| crate::error::internal!("cannot start the lease renewal: {e}"))?;
    }

    let shared: Shared = Arc::new(Mutex::new(state));
    if let Some((rest_listener, bound)) = rest_listener {
        println!("jobmanager rest on {bound}");
        let app = rest::router(shared.clone())
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(config.rest_auth.clone()),
                rest_security::check_token,
            ))
            .merge(dashboard::router());
        let served = match config.security.tls() {
            Some(tls) => {
                let https = rest_security::TlsListener::new(rest_listener, bound, tls);
                tokio::spawn(async move { axum::serve(https, app).await })
            }
            None => tokio::spawn(async move { axum::serve(rest_listener, app).await }),
        };
        tokio::spawn(async move {
            if let Ok(Err(e)) = served.await {
                tracing::error!("REST server stopped: {e}");
            }
        });
    }
    tokio::spawn(monitor_heartbeats(shared.clone(), config.heartbeat_timeout));
    let recovering = shared.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(state::RECOVERY_TICK);
        loop {
            tick.tick().await;
            lock(&recovering).tick();
        }
    });
    let (rebalancing, every) = (shared.clone(), config.rebalance_interval);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
        loop {
            tick.tick().await;
            lock(&rebalancing).rebalance();
        }
    });
    println!("jobmanager listening on {rpc}");
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                continue;
            }
        };
        let (shared, security) = (shared.clone(), config.security.clone());
        tokio::spawn(async move {
            if let Err(e) = serve_connection(stream, &security, shared).await {
                tracing::warn!(%peer, "connection closed: {e}");
            }
        });
    }
}

/// Declares TaskManagers lost when they fall silent (the rule: [`liveness::Watchdog`]); fires
/// deferred job failures.
async fn monitor_heartbeats(shared: Shared, timeout: Duration) {
    let mut watchdog = liveness::Watchdog::new(timeout, Instant::now());
    let mut tick = tokio::time::interval(watchdog.period());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut state = lock(&shared);
        let now = Instant::now();
        if let Some(away) = watchdog.tick(now) {
            tracing::warn!(
                "the JobManager did not run for {away:?}: TaskManagers' silence counts from now"
            );
        }
        for tm in state.cluster.expired_task_managers(&watchdog, now) {
            state.task_manager_lost(&tm, &format!("no heartbeat for {timeout:?}"));
        }
        state.fire_deferred_failures();
    }
}

/// Starts the task writing a connection's mailbox into its socket.
fn spawn_writer(mut writer: impl AsyncWrite + Unpin + Send + 'static) -> UnboundedSender<Message> {
    let (tx, mut rx) = unbounded_channel::<Message>();
    tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if async_io::write(&mut writer, &m).await.is_err() {
                break;
            }
        }
    });
    tx
}

async fn serve_connection(stream: TcpStream, security: &Security, shared: Shared) -> Result<()> {
    let _ = stream.set_nodelay(true);
    let tls_peer = crate::channels::secure::peer_starts_tls(&stream)
        .await
        .map_err(|e| HummerError::Cluster(format!("no first bytes: {e}")))?;
    match (security.tls().is_some(), tls_peer) {
        (true, false) => {
            // Told in the plaintext protocol the peer speaks, so that it can say what to do.
            let msg = "this JobManager uses mutual TLS: give the client the cluster's TLS \
                       directory with --tls-dir DIR or HUMMER_TLS_DIR=DIR (`hummer cluster \
                       start` prints it)";
            // What the peer sent is drained (a little, undecoded) first: closing with unread
            // bytes would reset the connection before the peer reads the answer.
            let mut stream = stream;
            drain_briefly(&mut stream).await;
            let _ = async_io::write(&mut stream, &Message::Error(msg.into())).await;
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut stream).await;
            return Err(HummerError::Cluster(
                "a plaintext peer was refused (the cluster uses mutual TLS)".into(),
            ));
        }
        (false, true) => {
            return Err(HummerError::Cluster(
                "a TLS peer was refused: this JobManager runs without TLS (--insecure)".into(),
            ));
        }
        _ => {}
    }
    // A peer without the cluster's certificate is refused here, before any frame is read.
    let stream = security
        .accept_async(stream)
        .await
        .map_err(|e| HummerError::Cluster(format!("TLS handshake refused: {e}")))?;
    let (mut reader, writer) = tokio::io::split(stream);
    let mailbox = spawn_writer(writer);
    let hello = tokio::time::timeout(HELLO_TIMEOUT, async_io::read(&mut reader))
        .await
        .map_err(|_| HummerError::Cluster("no hello within 10 s".into()))?
        .map_err(|e| HummerError::Cluster(e.to_string()))?;
    let role = match hello {
        Message::Hello { version, role } if version == PROTOCOL_VERSION => role,
        Message::Hello { version, .. } => {
            let msg = format!(
                "protocol version {version} is not supported: this JobManager speaks version \
                 {PROTOCOL_VERSION}"
            );
            let _ = mailbox.send(Message::Error(msg.clone()));
            return Err(HummerError::Cluster(msg));
        }
        other => {
            let msg = format!("expected Hello, got {}", message_name(&other));
            let _ = mailbox.send(Message::Error(msg.clone()));
            return Err(HummerError::Cluster(msg));
        }
    };
    match role {
        Role::TaskManager(info) => serve_task_manager(reader, mailbox, shared, info).await,
        Role::Client => serve_client(reader, mailbox, shared).await,
        Role::Worker {
            job,
            task_manager,
            attempt,
        } => serve_worker(reader, mailbox, shared, job, task_manager, attempt).await,
    }
}

/// Reads and drops what a refused peer sends, at most 64 KiB and until it pauses for 100 ms.
async fn drain_briefly(stream: &mut TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut buffer = [0u8; 4096];
    let mut drained = 0;
    while drained < 64 << 10 {
        match tokio::time::timeout(Duration::from_millis(100), stream.read(&mut buffer)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => break,
        }
    }
}

fn message_name(m: &Message) -> String {
    let text = format!("{m:?}");
    text.split(['(', ' ', '{'])
        .next()
        .unwrap_or("?")
        .to_string()
}

async fn serve_task_manager(
    mut reader: impl AsyncRead + Unpin,
    mailbox: UnboundedSender<Message>,
    shared: Shared,
    info: crate::protocol::TaskManagerInfo,
) -> Result<()> {
    let id = info.id.clone();
    let running = info.running.clone();
    let heard = liveness::HeardClock::now();
    {
        let mut state = lock(&shared);
        if state.cluster.task_managers.contains_key(&id) {
            let msg = format!("a TaskManager with id {id} is already registered");
            let _ = mailbox.send(Message::Error(msg.clone()));
            return Err(HummerError::Cluster(msg));
        }
        tracing::info!(task_manager = %id, slots = info.slots, "TaskManager registered");
        state.cluster.task_managers.insert(
            id.clone(),
            TaskManagerEntry {
                info,
                mailbox: mailbox.clone(),
                heard: heard.clone(),
                resources: Default::default(),
                used_slots: 0,
            },
        );
    }
    {
        let state = lock(&shared);
        let _ = mailbox.send(Message::Registered(state.leader_token()));
        // Reconciliation: the workers it kept running are kept only if they are of a job's
        // current attempt placed there; every other one (an attempt of an earlier leader, or
        // one restarted while the TaskManager was away) is cancelled.
        for (job, attempt) in &running {
            let current = state.jobs.get(job).is_some_and(|j| {
                !j.is_terminal() && j.is_current(*attempt) && j.workers.contains_key(&id)
            });
            if !current {
                tracing::info!(task_manager = %id, job = %job, attempt, "cancelling a worker of an earlier attempt");
                let _ = mailbox.send(Message::CancelJob(job.clone()));
            }
        }
    }
    // Under the pull policy a new TaskManager takes waiting jobs at once.
    lock(&shared).start_waiting(&id);
    let result = loop {
        let message = match async_io::read(&mut reader).await {
            Ok(m) => m,
            Err(e) => break Err(HummerError::Cluster(e.to_string())),
        };
        // Heard now, however long the lock keeps this frame waiting.
        heard.stamp();
        let mut state = lock(&shared);
        match message {
            Message::Heartbeat(_) if !state.cluster.task_managers.contains_key(&id) => {
                // Declared lost (a missed heartbeat): close, so the TaskManager notices
                // instead of heartbeating into the void.
                let _ = mailbox.send(Message::Error(format!(
                    "TaskManager {id} was declared lost; register again"
                )));
                break Err(HummerError::Cluster(format!(
                    "heartbeat from TaskManager {id}, which was declared lost"
                )));
            }
            Message::Heartbeat(resources) => {
                // A rejected sample is logged by the store and kept from the scheduler; the
                // heartbeat itself still counts.
                let accepted = state.cluster.monitor.record(&id, &resources).is_ok();
                if let Some(tm) = state.cluster.task_managers.get_mut(&id)
                    && accepted
                {
                    tm.resources = resources;
                }
            }
            Message::WorkerExited {
                job,
                attempt,
                code,
                stderr_tail,
            } => {
                let (reported, current) = state.jobs.get(&job).map_or((false, false), |j| {
                    (
                        j.workers.get(&id).is_some_and(|w| w.finished),
                        j.is_current(attempt),
                    )
                });
                if current && !reported {
                    let why = match code {
                        Some(c) => format!("exit code {c}"),
                        None => "killed by a signal".to_string(),
                    };
                    // Its report may still be on its way on the worker's own connection.
                    state.defer_failure(
                        &job,
                        Some(&id),
                        attempt,
                        HummerError::Worker {
                            task_manager: id.clone(),
                            cause: Box::new(HummerError::Cluster(format!(
                                "the worker ended ({why}) without reporting: {}",
                                stderr_tail.trim()
                            ))),
                        },
                    );
                }
            }
            other => {
                let _ = mailbox.send(Message::Error(format!(
                    "unexpected {} from a TaskManager",
                    message_name(&other)
                )));
            }
        }
    };
    lock(&shared).task_manager_lost(&id, "its connection closed");
    result
}

async fn serve_client(
    mut reader: impl AsyncRead + Unpin,
    mailbox: UnboundedSender<Message>,
    shared: Shared,
) -> Result<()> {
    let _ = mailbox.send(Message::Welcome);
    loop {
        let message = match async_io::read(&mut reader).await {
            Ok(m) => m,
            Err(crate::protocol::FrameError::Io(e))
                if e.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                return Ok(());
            }
            Err(e) => {
                let _ = mailbox.send(Message::Error(e.to_string()));
                return Err(HummerError::Cluster(e.to_string()));
            }
        };
        let reply = match message {
            // Hashing and copying artifacts (tens of MB) must not hold the state lock or an
            // async worker thread: heartbeats would wait behind them.
            Message::UploadArtifact { sha256, bytes } => {
                let shared = shared.clone();
                tokio::task::spawn_blocking(move || store_artifact(&shared, sha256, bytes))
                    .await
                    .unwrap_or_else(|e| Message::Error(format!("upload failed: {e}")))
            }
            Message::FetchArtifact(sha) => {
                let artifact = lock(&shared).artifacts.get(&sha).cloned();
                match artifact {
                    Some(bytes) => tokio::task::spawn_blocking(move || Message::Artifact {
                        sha256: sha,
                        bytes: bytes.as_ref().clone(),
                    })
                    .await
                    .unwrap_or_else(|e| Message::Error(format!("fetch failed: {e}"))),
                    None => Message::Error(format!("artifact {sha} is unknown")),
                }
            }
            other => match handle_client_request(other, &mailbox, &shared) {
                Some(reply) => reply,
                None => continue,
            },
        };
        let _ = mailbox.send(reply);
    }
}

/// Checks an uploaded artifact's hash and stores it.
fn store_artifact(shared: &Shared, sha256: String, bytes: Vec<u8>) -> Message {
    let actual = hex::encode(Sha256::digest(&bytes));
    if actual != sha256 {
        return Message::Error(format!(
            "artifact hash mismatch: announced {sha256}, the bytes hash to {actual}"
        ));
    }
    // With high availability the binary is kept where a new leader finds it.
    let ha = lock(shared).ha_store().cloned();
    if let Some(ha) = ha
        && let Err(e) = ha.save_artifact(&sha256, &bytes)
    {
        return Message::Error(format!("cannot keep the artifact: {e}"));
    }
    lock(shared).artifacts.insert(sha256, Arc::new(bytes));
    Message::Ok
}

/// Handles one client request; `None` when the answer comes later (`WaitJob`).
fn handle_client_request(
    message: Message,
    mailbox: &UnboundedSender<Message>,
    shared: &Shared,
) -> Option<Message> {
    let mut state = lock(shared);
    Some(match message {
        Message::HasArtifact(sha) => {
            if state.artifacts.contains_key(&sha) {
                Message::Ok
            } else {
                Message::Error(format!("artifact {sha} is unknown"))
            }
        }
        Message::Submit(request) => match state.submit(request) {
            Ok(id) => Message::Submitted(id),
            Err(e) => Message::Error(e.to_string()),
        },
        Message::TriggerSavepoint { job, dir, stop } => {
            match state.request_savepoint(&job, dir, stop, mailbox.clone()) {
                // The answer comes when the savepoint's checkpoint completes.
                Ok(()) => return None,
                Err(e) => Message::Error(e.to_string()),
            }
        }
        Message::WaitJob(id) => match state.jobs.get_mut(&id) {
            Some(job) if job.is_terminal() => {
                Message::JobEnded(job.summary(), job.collected.clone())
            }
            Some(job) => {
                job.waiters.push(mailbox.clone());
                return None;
            }
            None => Message::Error(format!("no job with id {id}")),
        },
        Message::ListJobs => Message::Jobs(state.jobs.values().map(|j| j.summary()).collect()),
        Message::JobStatus(id) => match state.jobs.get(&id) {
            Some(job) => Message::Jobs(vec![job.summary()]),
            None => Message::Error(format!("no job with id {id}")),
        },
        Message::Cancel(id) => match state.jobs.get(&id) {
            Some(job) if job.is_terminal() => {
                Message::Error(format!("job {id} has already ended ({:?})", job.state()))
            }
            Some(_) => {
                state.end_job(&id, crate::protocol::JobStatus::Cancelled, None);
                Message::Ok
            }
            None => Message::Error(format!("no job with id {id}")),
        },
        other => Message::Error(format!("unexpected {} from a client", message_name(&other))),
    })
}

/// Copies a completed checkpoint out as a savepoint without holding the state lock (a
/// large checkpoint takes a while), then cancels the job if the savepoint was to stop it.
async fn write_savepoint(shared: &Shared, copy: reactions::SavepointCopy) {
    let (job, stop) = (copy.job.clone(), copy.stop);
    let written = tokio::task::spawn_blocking(move || copy.run())
        .await
        .unwrap_or(false);
    if written && stop {
        lock(shared).end_job(&job, crate::protocol::JobStatus::Cancelled, None);
    }
}

/// A worker's failure as it reported it: its root cause, under the operator and subtask it
/// named (so that the JobManager's exception history finds both).
fn worker_error(report: ErrorReport, operator: Option<(String, usize)>) -> HummerError {
    let cause = HummerError::Remote(report);
    match operator {
        Some((operator, subtask)) => HummerError::Operator {
            operator,
            subtask,
            cause: Box::new(cause),
        },
        None => cause,
    }
}

async fn serve_worker(
    mut reader: impl AsyncRead + Unpin,
    mailbox: UnboundedSender<Message>,
    shared: Shared,
    job: String,
    tm: String,
    attempt: u32,
) -> Result<()> {
    {
        let mut state = lock(&shared);
        let Some(entry) = state.jobs.get_mut(&job) else {
            let msg = format!("no job with id {job}");
            let _ = mailbox.send(Message::Error(msg.clone()));
            return Err(HummerError::Cluster(msg));
        };
        if entry.is_terminal() || !entry.is_current(attempt) {
            let msg = format!(
                "attempt {attempt} of job {job} is over (the job is {:?}, attempt {})",
                entry.state(),
                entry.controller.attempt()
            );
            let _ = mailbox.send(Message::CancelJob(job.clone()));
            return Err(HummerError::Cluster(msg));
        }
        match entry.workers.get_mut(&tm) {
            Some(w) => w.mailbox = Some(mailbox.clone()),
            None => {
                let msg = format!("job {job} has no worker on TaskManager {tm}");
                let _ = mailbox.send(Message::Error(msg.clone()));
                return Err(HummerError::Cluster(msg));
            }
        }
    }
    let _ = mailbox.send(Message::Welcome);
    loop {
        let message = match async_io::read(&mut reader).await {
            Ok(m) => m,
            // The worker process ended; its TaskManager reports how.
            Err(_) => return Ok(()),
        };
        let copy = on_worker_message(&mut lock(&shared), &job, &tm, attempt, message, &mailbox);
        if let Some(copy) = copy {
            write_savepoint(&shared, copy).await;
        }
    }
}

/// Acts on one message of a worker of `job`'s attempt `attempt` on `tm`; a savepoint's copy
/// to make comes back.
fn on_worker_message(
    state: &mut JobManagerState,
    job: &str,
    tm: &str,
    attempt: u32,
    message: Message,
    mailbox: &UnboundedSender<Message>,
) -> Option<reactions::SavepointCopy> {
    if state.jobs.get(job).is_none_or(|j| !j.is_current(attempt)) {
        // A report of an attempt that was restarted: its outcome no longer matters.
        return None;
    }
    match message {
        Message::Checkpoint { attempt, event } => {
            return state.checkpoint_event(job, attempt, event);
        }
        Message::WorkerReady { data_port } => state.worker_ready(job, tm, data_port),
        Message::WorkerProgress(vertices) => state.worker_progress(job, tm, vertices),
        Message::WorkerFinished {
            vertices,
            collected,
        } => state.worker_finished(job, tm, vertices, collected),
        Message::WorkerFailed { error, operator } => {
            let error = HummerError::Worker {
                task_manager: tm.to_string(),
                cause: Box::new(worker_error(error, operator)),
            };
            if error.is_secondary() {
                // Lost a peer: the peer's own report usually names the cause.
                state.defer_failure(job, None, attempt, error);
            } else {
                state.job_failed(job, error);
            }
        }
        other => {
            let _ = mailbox.send(Message::Error(format!(
                "unexpected {} from a worker",
                message_name(&other)
            )));
        }
    }
    None
}
