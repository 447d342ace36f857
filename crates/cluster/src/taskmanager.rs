//! The TaskManager process: registers its slots with the JobManager, heartbeats with a resource
//! sample, and runs the workers of the jobs placed on it.
//!
//! A deployed job's binary is fetched from the JobManager once and cached under its sha256
//! (checked after download), then started as a worker process with the job's arguments and the
//! deploy spec in its environment. A worker that crashes fails its job, never the TaskManager:
//! its exit code and the tail of its stderr go to the JobManager.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::client::ClusterClient;
use crate::error::{HummerError, Result, internal};
use crate::protocol::{
    DeploySpec, Message, PROTOCOL_VERSION, Resources, Role, TaskManagerInfo, async_io,
};
use crate::scheduler::rfts::NodeSample;

/// How a TaskManager runs.
#[derive(Clone, Debug)]
pub struct TaskManagerConfig {
    /// JobManager RPC address.
    pub jobmanager: String,
    /// Slots offered (default: CPU cores).
    pub slots: usize,
    /// Host its workers bind data listeners to.
    pub data_host: String,
    /// Further data networks: (name, this host's address on it).
    pub data_networks: Vec<(String, String)>,
    /// Where job binaries are cached.
    pub cache_dir: PathBuf,
    /// Interval between heartbeats.
    pub heartbeat_interval: Duration,
    /// Interval between monitor samples (sent with the heartbeats).
    pub monitor_interval: Duration,
    /// CPU cores this TaskManager may use (a cgroup quota it puts itself and its workers
    /// under); its monitor then reports these cores and its own processes' CPU use against
    /// them, so TaskManagers sharing a host look like the different nodes they emulate.
    pub cpu_quota: Option<f64>,
    /// How long it keeps trying to register again after losing its JobManager.
    pub reconnect_timeout: Duration,
    /// Mutual TLS on every connection, or plaintext; its workers get the same.
    pub security: crate::channels::secure::Security,
    /// The memory budget for keyed state of all its slots, in bytes (`--state-memory`): a
    /// worker gets the share of the slots its job holds here. `None`: state in memory.
    pub state_memory: Option<u64>,
    /// Where its workers' disk tiers keep their files (`--state-dir`).
    pub state_dir: Option<PathBuf>,
}

impl TaskManagerConfig {
    /// A worker's share of the state budget: the budget over the slots, times the slots its
    /// job holds here (the most subtasks of one vertex placed on this TaskManager, as slot
    /// sharing puts one subtask of each vertex in a slot).
    fn state_memory_of(&self, spec: &DeploySpec) -> Option<u64> {
        let budget = self.state_memory?;
        let mut offset = 0;
        let mut slots = 1;
        for &parallelism in &spec.vertex_parallelism {
            let here = (spec.placement.iter().skip(offset).take(parallelism))
                .filter(|tm| **tm == spec.task_manager)
                .count();
            slots = slots.max(here);
            offset += parallelism;
        }
        Some(budget / self.slots.max(1) as u64 * slots.min(self.slots) as u64)
    }
}

/// The workers of this TaskManager by job and attempt: a kill switch once started, `None` while the job's
/// binary is still being fetched (a cancel then stops the start).
type Workers = Arc<Mutex<HashMap<(String, u32), Option<oneshot::Sender<()>>>>>;

/// Runs a TaskManager. When its JobManager goes (the connection ends, or with an HA address
/// another leader takes the lease) it keeps its workers running and registers again, with the
/// same id, slots and the workers it runs, with the JobManager it finds then (the same
/// address, or the new leader of the HA directory), which keeps or cancels those workers. It
/// gives up, stopping its workers, when no JobManager takes it for `reconnect_timeout`
/// (10 s before the first registration).
pub async fn run(config: TaskManagerConfig) -> Result<()> {
    let id = format!("{}-{}", config.data_host, std::process::id());
    std::fs::create_dir_all(&config.cache_dir)
        .map_err(|e| HummerError::io("cannot create artifact cache", &config.cache_dir, e))?;
    if let Some(quota) = config.cpu_quota {
        limit_cpu(quota)?;
    }
    let latest = Arc::new(Mutex::new(Resources::default()));
    let sampled = latest.clone();
    let monitor_interval = config.monitor_interval;
    let cores = config
        .cpu_quota
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()) as f64);
    let worker_pids: WorkerPids = Arc::default();
    let pids = worker_pids.clone();
    let own_tree = config.cpu_quota;
    tokio::spawn(async move {
        let mut sampler = CpuSampler {
            own_tree: own_tree.map(|q| (q, pids)),
            ..CpuSampler::default()
        };
        let mut tick = tokio::time::interval(monitor_interval);
        for seq in 1.. {
            tick.tick().await;
            let sample = NodeSample {
                cores,
                cpu: sampler.sample(),
                memory: memory_used_fraction(),
                total_memory: memory_total() as f64,
            };
            if let Ok(mut l) = sampled.lock() {
                *l = Resources { seq, sample };
            }
        }
    });
    let mut node = Node {
        id,
        config,
        latest,
        workers: Arc::default(),
        worker_pids,
        highest_token: 0,
    };
    let mut registered_once = false;
    let mut alone_since = Instant::now();
    loop {
        match node.session(&mut registered_once).await {
            Ok(()) => alone_since = Instant::now(),
            Err(e) => tracing::debug!("no JobManager session: {e}"),
        }
        let limit = if registered_once {
            node.config.reconnect_timeout
        } else {
            FIRST_REGISTRATION_TIMEOUT
        };
        if alone_since.elapsed() >= limit {
            node.stop_workers();
            return Err(HummerError::Cluster(format!(
                "no JobManager at {} took this TaskManager for {limit:?}",
                node.config.jobmanager
            )));
        }
        tokio::time::sleep(RECONNECT_PAUSE).await;
    }
}

/// How long a TaskManager tries to register the first time.
const FIRST_REGISTRATION_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause between two attempts to reach a JobManager.
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);
/// How often a TaskManager with an HA address looks for a new leader in the lease.
const LEASE_WATCH: Duration = Duration::from_millis(250);

/// What a TaskManager keeps across its JobManager sessions.
struct Node {
    id: String,
    config: TaskManagerConfig,
    latest: Arc<Mutex<Resources>>,
    workers: Workers,
    worker_pids: WorkerPids,
    /// The highest leader token seen: deploys of older leaders are refused.
    highest_token: u64,
}

impl Node {
    fn stop_workers(&self) {
        if let Ok(mut w) = self.workers.lock() {
            for kill in w.drain().filter_map(|(_, k)| k) {
                let _ = kill.send(());
            }
        }
    }

    /// One registration with a JobManager, until it is lost. `Ok` once it was registered.
    async fn session(&mut self, registered_once: &mut bool) -> Result<()> {
        let address = crate::ha::resolve(&self.config.jobmanager)?;
        let net = |source| HummerError::Network {
            endpoint: address.clone(),
            source,
        };
        let stream = TcpStream::connect(&address).await.map_err(net)?;
        let _ = stream.set_nodelay(true);
        let stream = self
            .config
            .security
            .connect_async(stream)
            .await
            .map_err(net)?;
        let (mut reader, mut writer) = tokio::io::split(stream);
        let running: Vec<(String, u32)> = self
            .workers
            .lock()
            .map(|w| w.keys().cloned().collect())
            .unwrap_or_default();
        let info = TaskManagerInfo {
            id: self.id.clone(),
            slots: self.config.slots,
            cores: self.config.cpu_quota.map_or_else(
                || std::thread::available_parallelism().map_or(1, |n| n.get()),
                |q| q.ceil() as usize,
            ),
            memory_bytes: memory_total(),
            data_host: self.config.data_host.clone(),
            data_networks: self.config.data_networks.clone(),
            running,
        };
        let cluster = |e: crate::protocol::FrameError| HummerError::Cluster(e.to_string());
        async_io::write(
            &mut writer,
            &Message::Hello {
                version: PROTOCOL_VERSION,
                role: Role::TaskManager(info),
            },
        )
        .await
        .map_err(cluster)?;
        let token = match async_io::read(&mut reader).await.map_err(cluster)? {
            Message::Registered(token) => token,
            Message::Welcome => 0,
            Message::Error(e) => {
                return Err(HummerError::Cluster(format!("registration refused: {e}")));
            }
            other => return Err(HummerError::Cluster(format!("unexpected {other:?}"))),
        };
        if token < self.highest_token {
            return Err(HummerError::Cluster(format!(
                "JobManager {address} leads with token {token}, older than {} seen before",
                self.highest_token
            )));
        }
        self.highest_token = token;
        *registered_once = true;
        println!("taskmanager {} registered with {address}", self.id);

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Message>();
        let writing = tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if async_io::write(&mut writer, &m).await.is_err() {
                    break;
                }
            }
        });
        let (heartbeat, interval, latest) = (
            tx.clone(),
            self.config.heartbeat_interval,
            self.latest.clone(),
        );
        let heartbeating = tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            loop {
                tick.tick().await;
                let resources = latest.lock().map(|l| l.clone()).unwrap_or_default();
                if heartbeat.send(Message::Heartbeat(resources)).is_err() {
                    break;
                }
            }
        });
        // Its workers reach the JobManager this TaskManager registered with.
        let session_config = TaskManagerConfig {
            jobmanager: address.clone(),
            ..self.config.clone()
        };
        let watch_lease = crate::ha::ha_dir(&self.config.jobmanager).is_some();
        let mut lease_tick = tokio::time::interval(LEASE_WATCH);
        let end = loop {
            let message = tokio::select! {
                m = async_io::read(&mut reader) => m,
                _ = lease_tick.tick(), if watch_lease => {
                    if let Some(newer) = self.newer_leader(token) {
                        break format!("a new leader took the lease (token {newer})");
                    }
                    continue;
                }
            };
            match message {
                Ok(Message::Deploy(spec)) if spec.leader_token < self.highest_token => {
                    tracing::warn!(
                        job = %spec.job,
                        "refusing a deploy of an old leader (token {} < {})",
                        spec.leader_token,
                        self.highest_token
                    );
                }
                Ok(Message::Deploy(spec)) => {
                    if let Ok(mut w) = self.workers.lock() {
                        w.insert((spec.job.clone(), spec.attempt), None);
                    }
                    let (config, tx, workers) =
                        (session_config.clone(), tx.clone(), self.workers.clone());
                    let pids = self.worker_pids.clone();
                    tokio::spawn(async move { deploy(spec, config, tx, workers, pids).await });
                }
                Ok(Message::CancelJob(job)) => {
                    // A started worker is killed; one still starting is not started.
                    let kills: Vec<_> = self
                        .workers
                        .lock()
                        .map(|mut w| {
                            let attempts: Vec<_> =
                                w.keys().filter(|(j, _)| *j == job).cloned().collect();
                            attempts.iter().filter_map(|k| w.remove(k)).collect()
                        })
                        .unwrap_or_default();
                    for kill in kills.into_iter().flatten() {
                        let _ = kill.send(());
                    }
                }
                Ok(Message::Error(e)) => tracing::warn!("JobManager: {e}"),
                Ok(other) => tracing::warn!("unexpected message from the JobManager: {other:?}"),
                Err(e) => break e.to_string(),
            }
        };
        heartbeating.abort();
        writing.abort();
        eprintln!(
            "taskmanager {}: lost the JobManager at {address} ({end}); its workers keep \
             running while it registers again",
            self.id
        );
        Ok(())
    }

    /// The token of a leader newer than `token` in the lease of the HA address, if any.
    fn newer_leader(&self, token: u64) -> Option<u64> {
        let dir = crate::ha::ha_dir(&self.config.jobmanager)?;
        let lease = crate::ha::lease::read_lease(dir).ok()??;
        (lease.token > token).then_some(lease.token)
    }
}

/// Bytes of a worker's stderr kept for the failure report.
const STDERR_TAIL: usize = 2000;

/// Fetches the artifact if needed, starts the worker, reports its end.
async fn deploy(
    mut spec: DeploySpec,
    config: TaskManagerConfig,
    jm: UnboundedSender<Message>,
    workers: Workers,
    pids: WorkerPids,
) {
    // The worker reaches the JobManager the way this TaskManager does (behind NAT, in a VM,
    // the JobManager's own view of its address is no use).
    spec.jobmanager = config.jobmanager.clone();
    let job = spec.job.clone();
    let key = (spec.job.clone(), spec.attempt);
    let report = |code: Option<i32>, stderr_tail: String| {
        let _ = jm.send(Message::WorkerExited {
            job: job.clone(),
            attempt: spec.attempt,
            code,
            stderr_tail,
        });
    };
    let binary = match ensure_artifact(&spec.request.artifact, &config).await {
        Ok(path) => path,
        Err(e) => return report(Some(-1), format!("cannot get the job binary: {e}")),
    };
    let spec_json = match serde_json::to_string(&spec) {
        Ok(j) => j,
        Err(e) => return report(Some(-1), format!("cannot encode the deploy spec: {e}")),
    };
    // Cancelled while the binary was being fetched: the entry is gone.
    if !workers
        .lock()
        .map(|w| w.contains_key(&key))
        .unwrap_or(false)
    {
        return report(None, "cancelled before the worker started".into());
    }
    let mut command = tokio::process::Command::new(&binary);
    if let Some(bytes) = config.state_memory_of(&spec) {
        command.env(crate::STATE_MEMORY_ENV, bytes.to_string());
    }
    if let Some(dir) = &config.state_dir {
        command.env(crate::STATE_DIR_ENV, dir);
    }
    let mut child = match command
        .args(&spec.request.args)
        .envs(spec.request.env.iter().map(|(k, v)| (k, v)))
        .env(crate::WORKER_ENV, spec_json)
        .envs(config.security.env())
        // As the client saw it: a program that branches on it builds the same graph.
        .env(crate::JOBMANAGER_ENV, &spec.jobmanager)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return report(Some(-1), format!("cannot start {}: {e}", binary.display())),
    };
    let pid = child.id();
    if let (Some(pid), Ok(mut p)) = (pid, pids.lock()) {
        p.insert(pid);
    }
    let (kill_tx, kill_rx) = oneshot::channel();
    let cancelled_meanwhile = match workers.lock() {
        Ok(mut w) => match w.get_mut(&key) {
            Some(slot) => {
                *slot = Some(kill_tx);
                false
            }
            None => true,
        },
        Err(_) => false,
    };
    if cancelled_meanwhile {
        let _ = child.kill().await;
    }
    let mut stderr = child.stderr.take();
    let tail = tokio::spawn(async move {
        // Keep the last bytes only: a chatty worker must not fill the TaskManager's memory.
        let mut tail: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 4096];
        if let Some(s) = stderr.as_mut() {
            while let Ok(n) = s.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
        }
        // Lossy: the cut may fall inside a multi-byte character.
        String::from_utf8_lossy(&tail).to_string()
    });
    let status = tokio::select! {
        status = child.wait() => status,
        _ = kill_rx => {
            let _ = child.kill().await;
            child.wait().await
        }
    };
    if let Ok(mut w) = workers.lock() {
        w.remove(&key);
    }
    if let (Some(pid), Ok(mut p)) = (pid, pids.lock()) {
        p.remove(&pid);
    }
    // A worker that failed or was killed did not remove its state on disk.
    if let Some(pid) = pid {
        let dir = config.state_dir.clone();
        let _ = tokio::task::spawn_blocking(move || {
            crate::state::disk_tier::remove_dirs_of_process(dir.as_deref(), pid)
        })
        .await;
    }
    let tail = tail.await.unwrap_or_default();
    match status {
        Ok(s) => report(s.code(), tail),
        Err(e) => report(None, format!("cannot wait for the worker: {e}")),
    }
}

/// The path of a cached artifact, fetched from the JobManager on first use.
async fn ensure_artifact(sha256: &str, config: &TaskManagerConfig) -> Result<PathBuf> {
    let path = config.cache_dir.join(sha256);
    if path.exists() {
        return Ok(path);
    }
    let (jm, sha, security) = (
        config.jobmanager.clone(),
        sha256.to_string(),
        config.security.clone(),
    );
    let bytes = tokio::task::spawn_blocking(move || {
        ClusterClient::connect_with(&jm, &security)?.fetch_artifact(&sha)
    })
    .await
    .map_err(|e| internal!("{e}"))??;
    let (dir, sha, target) = (config.cache_dir.clone(), sha256.to_string(), path.clone());
    tokio::task::spawn_blocking(move || store_artifact(&dir, &sha, &target, &bytes))
        .await
        .map_err(|e| internal!("{e}"))??;
    Ok(path)
}

/// Checks a downloaded artifact's hash and stores it executable under `target`.
fn store_artifact(
    dir: &std::path::Path,
    sha256: &str,
    target: &std::path::Path,
    bytes: &[u8],
) -> Result<()> {
    let actual = hex::encode(Sha256::digest(bytes));
    if actual != sha256 {
        return Err(HummerError::Cluster(format!(
            "artifact hash mismatch: expected {sha256}, the downloaded bytes hash to {actual}"
        )));
    }
    // Unique per download: two deploys of one binary may fetch it at the same time.
    static DOWNLOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = DOWNLOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{sha256}.{}.{n}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| HummerError::io("cannot write artifact", &tmp, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| HummerError::io("cannot make artifact executable", &tmp, e))?;
    }
    std::fs::rename(&tmp, target).map_err(|e| HummerError::io("cannot store artifact", target, e))
}

/// Process ids of the running workers.
type WorkerPids = Arc<Mutex<std::collections::HashSet<u32>>>;

/// CPU utilisation between two samples: of the host from `/proc/stat`, or, with a CPU quota,
/// of this TaskManager's own processes against the quota.
#[derive(Default)]
struct CpuSampler {
    last: Option<(u64, u64)>,
    own_tree: Option<(f64, WorkerPids)>,
    last_own: Option<(f64, Instant)>,
}

impl CpuSampler {
    fn sample(&mut self) -> f64 {
        if let Some((quota, pids)) = &self.own_tree {
            let pids: Vec<u32> = pids
                .lock()
                .map(|p| p.iter().copied().collect())
                .unwrap_or_default();
            let used = own_cpu_seconds(&pids);
            let now = Instant::now();
            let result = match self.last_own {
                Some((u0, t0)) => (used - u0).max(0.0) / (now - t0).as_secs_f64().max(1e-6) / quota,
                None => 0.0,
            };
            self.last_own = Some((used, now));
            return result.clamp(0.0, 1.0);
        }
        let Some((busy, total)) = read_cpu_times() else {
            return 0.0;
        };
        let result = match self.last {
            Some((b0, t0)) if total > t0 => (busy - b0.min(busy)) as f64 / (total - t0) as f64,
            _ => 0.0,
        };
        self.last = Some((busy, total));
        result.clamp(0.0, 1.0)
    }
}

/// CPU seconds used by this process (with its reaped children) and the live workers.
fn own_cpu_seconds(workers: &[u32]) -> f64 {
    let ticks = |path: String, with_children: bool| -> u64 {
        let Ok(stat) = std::fs::read_to_string(path) else {
            return 0;
        };
        // Fields after the command name (which may contain spaces); utime is field 14.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(4)
            .filter_map(|v| v.parse().ok())
            .collect();
        let own = f.first().copied().unwrap_or(0) + f.get(1).copied().unwrap_or(0);
        let children = f.get(2).copied().unwrap_or(0) + f.get(3).copied().unwrap_or(0);
        if with_children { own + children } else { own }
    };
    let mut total = ticks("/proc/self/stat".into(), true);
    for pid in workers {
        total += ticks(format!("/proc/{pid}/stat"), false);
    }
    // Clock ticks: 100 per second on Linux.
    total as f64 / 100.0
}

/// Puts this process (and so the workers it starts) under a CPU quota of `cores`, in a cgroup
/// of its own (cgroup v1 `cpu` controller, or v2).
fn limit_cpu(cores: f64) -> Result<()> {
    if !(cores.is_finite() && cores > 0.0) {
        return Err(HummerError::Config(format!(
            "--cpu-quota {cores}: must be a positive number of cores"
        )));
    }
    let period: u64 = 100_000;
    let quota = (cores * period as f64) as u64;
    let pid = std::process::id();
    let v1 = PathBuf::from("/sys/fs/cgroup/cpu");
    let (dir, settings): (PathBuf, Vec<(&str, String)>) = if v1.join("cpu.cfs_quota_us").exists() {
        (
            v1.join(format!("hummer-tm-{pid}")),
            vec![
                ("cpu.cfs_period_us", period.to_string()),
                ("cpu.cfs_quota_us", quota.to_string()),
            ],
        )
    } else {
        (
            PathBuf::from(format!("/sys/fs/cgroup/hummer-tm-{pid}")),
            vec![("cpu.max", format!("{quota} {period}"))],
        )
    };
    std::fs::create_dir_all(&dir).map_err(|e| HummerError::io("cannot create cgroup", &dir, e))?;
    for (file, value) in settings {
        let path = dir.join(file);
        std::fs::write(&path, value)
            .map_err(|e| HummerError::io("cannot set cgroup limit", &path, e))?;
    }
    let procs = dir.join("cgroup.procs");
    std::fs::write(&procs, pid.to_string())
        .map_err(|e| HummerError::io("cannot join cgroup", &procs, e))?;
    Ok(())
}

fn read_cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = values.iter().sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

fn meminfo(field: &str) -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    info.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

fn memory_total() -> u64 {
    meminfo("MemTotal:").unwrap_or(0)
}

fn memory_used_fraction() -> f64 {
    match (meminfo("MemTotal:"), meminfo("MemAvailable:")) {
        (Some(t), Some(a)) if t > 0 => (t - a.min(t)) as f64 / t as f64,
        _ => 0.0,
    }
}
