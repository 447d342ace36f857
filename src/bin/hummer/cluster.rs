//! Cluster commands: `jobmanager`, `taskmanager`, `cluster start|stop`, `list`, `status`,
//! `cancel`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hummer::channels::secure::{REST_TOKEN, Security, make_cluster_certificates};
use hummer::cluster::client::ClusterClient;
use hummer::cluster::jobmanager::rest_security::RestAuth;
use hummer::cluster::jobmanager::{self, JobManagerConfig};
use hummer::cluster::protocol::JobSummary;
use hummer::cluster::taskmanager::{self, TaskManagerConfig};

#[derive(clap::Args)]
pub struct JobManagerArgs {
    /// RPC address for TaskManagers, clients and workers.
    #[arg(long, default_value = "127.0.0.1:6123")]
    rpc: SocketAddr,
    /// REST address.
    #[arg(long, default_value = "127.0.0.1:8081")]
    rest: SocketAddr,
    #[command(flatten)]
    options: JobManagerOptions,
    #[command(flatten)]
    security: SecurityArgs,
}

/// What a JobManager can be told besides its addresses and security: also taken by
/// `hummer cluster start`, which passes them on ([`JobManagerOptions::to_args`]).
#[derive(clap::Args, Debug, PartialEq)]
#[command(next_help_heading = "JobManager options")]
pub struct JobManagerOptions {
    /// Milliseconds without a heartbeat after which a TaskManager is declared lost.
    #[arg(long, default_value_t = 5000)]
    heartbeat_timeout_ms: u64,
    /// Directory keeping the TaskManagers' monitor history across restarts.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Placement and queueing of waiting jobs: round-robin (Flink's default), fair (the queue
    /// with the fewest jobs per slot), pull (one shared queue, free slots take from it), genetic
    /// (waiting jobs re-assigned by a genetic algorithm) or rfts (round-robin, then waiting jobs
    /// moved from overloaded to idle TaskManagers, as in the RFTS paper).
    #[arg(long, default_value = "round-robin", value_parser = ["round-robin", "fair", "pull", "genetic", "rfts"])]
    scheduler: String,
    /// Milliseconds between the scheduler's chances to move waiting jobs.
    #[arg(long, default_value_t = 10_000)]
    rebalance_interval_ms: u64,
    /// Where savepoints go when `hummer savepoint` names no directory.
    #[arg(long)]
    savepoint_dir: Option<PathBuf>,
    /// High availability: a directory on shared storage holding the leader's lease and the
    /// job store. JobManagers started with the same one elect a leader; the others stand by
    /// and take over its jobs when its lease lapses. TaskManagers and clients then use
    /// `--jobmanager ha:DIR`.
    #[arg(long)]
    ha_dir: Option<PathBuf>,
    /// Milliseconds a leader's lease lasts unless renewed (renewed every third of it).
    #[arg(long, default_value_t = 5000)]
    lease_ms: u64,
    /// A file holding the REST API's bearer token (default with `--tls-dir`: its
    /// `rest-token`). Every REST call that changes something needs it.
    #[arg(long)]
    rest_token_file: Option<PathBuf>,
    /// Reads of the REST API need the token too.
    #[arg(long)]
    rest_token_for_reads: bool,
}

impl JobManagerOptions {
    /// The command-line arguments that give a `hummer jobmanager` these options.
    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            flag("heartbeat-timeout-ms", self.heartbeat_timeout_ms),
            flag("scheduler", &self.scheduler),
            flag("rebalance-interval-ms", self.rebalance_interval_ms),
            flag("lease-ms", self.lease_ms),
        ];
        for (name, path) in [
            ("data-dir", &self.data_dir),
            ("savepoint-dir", &self.savepoint_dir),
            ("ha-dir", &self.ha_dir),
            ("rest-token-file", &self.rest_token_file),
        ] {
            if let Some(path) = path {
                args.push(flag(name, path.display()));
            }
        }
        if self.rest_token_for_reads {
            args.push("--rest-token-for-reads".into());
        }
        args
    }
}

/// `--name=value`.
fn flag(name: &str, value: impl std::fmt::Display) -> String {
    format!("--{name}={value}")
}

/// How a cluster process secures its connections: one of the two is required.
#[derive(clap::Args)]
pub struct SecurityArgs {
    /// The cluster's TLS directory (`hummer cluster certs --dir DIR`): mutual TLS on the
    /// control, data and artifact connections, HTTPS for REST.
    #[arg(long, conflicts_with = "insecure")]
    tls_dir: Option<PathBuf>,
    /// Plaintext connections without authentication (for a trusted network only).
    #[arg(long)]
    insecure: bool,
}

impl SecurityArgs {
    fn security(&self, role: &str) -> Result<Security> {
        match (&self.tls_dir, self.insecure) {
            (Some(dir), _) => Ok(Security::load(dir)?),
            (None, true) => {
                tracing::warn!(
                    "{role}: --insecure: connections are plaintext and unauthenticated; anyone \
                     who reaches its ports can run code on the cluster"
                );
                Ok(Security::Plaintext)
            }
            (None, false) => bail!(
                "the {role} needs --tls-dir DIR (mutual TLS; `hummer cluster certs --dir DIR` \
                 makes one) or --insecure (plaintext, unauthenticated)"
            ),
        }
    }
}

#[derive(clap::Args)]
pub struct TaskManagerArgs {
    /// The JobManager's RPC address, or `ha:DIR` for the leader of the HA directory DIR.
    #[arg(long, env = "HUMMER_JOBMANAGER")]
    jobmanager: String,
    /// Task slots (default: CPU cores).
    #[arg(long)]
    slots: Option<usize>,
    /// Address (host or IP) the workers' data listeners bind to.
    #[arg(long, default_value = "127.0.0.1")]
    data_addr: String,
    /// Directory caching job binaries.
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    #[command(flatten)]
    options: TaskManagerOptions,
    #[command(flatten)]
    security: SecurityArgs,
}

/// What a TaskManager can be told besides its JobManager, slots, address, cache and
/// security: also taken by `hummer cluster start`, which passes them on
/// ([`TaskManagerOptions::to_args`]).
#[derive(clap::Args, Debug, PartialEq)]
#[command(next_help_heading = "TaskManager options")]
pub struct TaskManagerOptions {
    /// A further data network, NAME=ADDR (repeatable): jobs choose one with `--data-net NAME`.
    #[arg(long = "data-net", value_name = "NAME=ADDR")]
    data_nets: Vec<String>,
    /// Milliseconds between heartbeats.
    #[arg(long, default_value_t = 1000)]
    heartbeat_interval_ms: u64,
    /// Milliseconds between monitor samples (CPU, memory), sent with the heartbeats.
    #[arg(long, default_value_t = 10_000)]
    monitor_interval_ms: u64,
    /// Limit this TaskManager and its workers to this many CPU cores (a cgroup; needs root),
    /// and report CPU against it: emulates a smaller node on a shared host.
    #[arg(long)]
    cpu_quota: Option<f64>,
    /// Milliseconds it keeps trying to register again after losing its JobManager (its
    /// workers keep running meanwhile).
    #[arg(long, default_value_t = 300_000)]
    reconnect_timeout_ms: u64,
    #[command(flatten)]
    state: crate::state_args::StateArgs,
}

impl TaskManagerOptions {
    /// The command-line arguments that give a `hummer taskmanager` these options.
    fn to_args(&self) -> Vec<String> {
        let mut args: Vec<String> = self.data_nets.iter().map(|n| flag("data-net", n)).collect();
        args.extend([
            flag("heartbeat-interval-ms", self.heartbeat_interval_ms),
            flag("monitor-interval-ms", self.monitor_interval_ms),
            flag("reconnect-timeout-ms", self.reconnect_timeout_ms),
        ]);
        if let Some(quota) = self.cpu_quota {
            args.push(flag("cpu-quota", quota));
        }
        args.extend(self.state.to_args());
        args
    }
}

#[derive(clap::Args)]
pub struct ClientArgs {
    /// The JobManager's RPC address, or `ha:DIR` for the leader of the HA directory DIR.
    #[arg(long, env = "HUMMER_JOBMANAGER", default_value = "127.0.0.1:6123")]
    jobmanager: String,
    /// The cluster's TLS directory (its certificates), for a cluster with mutual TLS
    /// (default: `HUMMER_TLS_DIR`).
    #[arg(long)]
    tls_dir: Option<PathBuf>,
}

impl ClientArgs {
    /// A connection to the JobManager, secured as `--tls-dir` or the environment says.
    fn connect(&self) -> Result<ClusterClient> {
        let security = match &self.tls_dir {
            Some(dir) => Security::load(dir)?,
            None => Security::of_process()?,
        };
        Ok(ClusterClient::connect_with(&self.jobmanager, &security)?)
    }
}

#[derive(clap::Args)]
pub struct JobArgs {
    /// The job's id.
    id: String,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(clap::Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    action: ClusterAction,
}

// Parsed once per process: the size of `Start` costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand)]
enum ClusterAction {
    /// Start a JobManager and N TaskManagers (on 127.0.0.2, 127.0.0.3, ...) in the background.
    Start {
        /// Plaintext without authentication instead of mutual TLS.
        #[arg(long)]
        insecure: bool,
        /// Number of TaskManagers.
        #[arg(long, default_value_t = 3)]
        taskmanagers: usize,
        /// Slots per TaskManager.
        #[arg(long, default_value_t = 2)]
        slots: usize,
        /// Directory for logs, pids and the cluster's addresses.
        #[arg(long, default_value = "hummer-cluster")]
        dir: PathBuf,
        #[command(flatten)]
        jobmanager: JobManagerOptions,
        #[command(flatten)]
        taskmanager: TaskManagerOptions,
    },
    /// Make a cluster CA, a node certificate and a REST token in DIR, for `--tls-dir DIR` on
    /// every JobManager, TaskManager and client (`HUMMER_TLS_DIR=DIR`).
    Certs {
        /// The directory (it must not hold a CA yet).
        #[arg(long)]
        dir: PathBuf,
        /// Further host names or IP addresses the node certificate is valid for (HTTPS
        /// clients of REST check it; `hummer.cluster`, `localhost` and `127.0.0.1` always).
        #[arg(long = "host")]
        hosts: Vec<String>,
    },
    /// Stop the cluster started in DIR.
    Stop {
        /// The directory given to `start`.
        #[arg(long, default_value = "hummer-cluster")]
        dir: PathBuf,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn jobmanager(args: JobManagerArgs) -> Result<()> {
    let options = args.options;
    let config = JobManagerConfig {
        rpc: args.rpc,
        rest: Some(args.rest),
        heartbeat_timeout: Duration::from_millis(options.heartbeat_timeout_ms),
        data_dir: options.data_dir,
        scheduler: options.scheduler,
        rebalance_interval: Duration::from_millis(options.rebalance_interval_ms),
        savepoint_dir: options.savepoint_dir,
        ha_dir: options.ha_dir,
        lease: Duration::from_millis(options.lease_ms.max(100)),
        rest_auth: RestAuth {
            token: rest_token(&options.rest_token_file, &args.security.tls_dir)?,
            for_reads: options.rest_token_for_reads,
        },
        security: args.security.security("jobmanager")?,
    };
    runtime()?.block_on(jobmanager::run(config))?;
    Ok(())
}

/// The REST token: from `file`, else the `rest-token` of the TLS directory if it has one.
fn rest_token(file: &Option<PathBuf>, tls_dir: &Option<PathBuf>) -> Result<Option<String>> {
    let path = match (file, tls_dir) {
        (Some(f), _) => f.clone(),
        (None, Some(dir)) if dir.join(REST_TOKEN).exists() => dir.join(REST_TOKEN),
        _ => return Ok(None),
    };
    let token = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the REST token {}", path.display()))?;
    let token = token.trim();
    if token.is_empty() {
        bail!("the REST token file {} is empty", path.display());
    }
    Ok(Some(token.to_string()))
}

pub fn taskmanager(args: TaskManagerArgs) -> Result<()> {
    let slots = args
        .slots
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if slots == 0 {
        bail!("--slots must be at least 1");
    }
    let cache_dir = args
        .cache_dir
        .unwrap_or_else(|| std::env::temp_dir().join("hummer-artifacts"));
    let options = args.options;
    let data_networks = options
        .data_nets
        .iter()
        .map(|n| match n.split_once('=') {
            Some((name, addr)) if !name.is_empty() && !addr.is_empty() => {
                Ok((name.to_string(), addr.to_string()))
            }
            _ => bail!("--data-net must be NAME=ADDR, got '{n}'"),
        })
        .collect::<Result<Vec<_>>>()?;
    let config = TaskManagerConfig {
        jobmanager: args.jobmanager,
        slots,
        data_host: args.data_addr,
        data_networks,
        cache_dir,
        heartbeat_interval: Duration::from_millis(options.heartbeat_interval_ms.max(10)),
        monitor_interval: Duration::from_millis(options.monitor_interval_ms.max(100)),
        cpu_quota: options.cpu_quota,
        reconnect_timeout: Duration::from_millis(options.reconnect_timeout_ms),
        security: args.security.security("taskmanager")?,
        state_memory: options.state.state_memory,
        state_dir: options.state.state_dir.clone(),
    };
    runtime()?.block_on(taskmanager::run(config))?;
    Ok(())
}

fn print_jobs(jobs: &[JobSummary]) {
    println!("{:<18} {:<10} {:>10}  name", "id", "state", "ms");
    for j in jobs {
        println!(
            "{:<18} {:<10} {:>10}  {}",
            j.id,
            format!("{:?}", j.state),
            j.duration_ms,
            j.name
        );
        if let Some(e) = &j.error {
            println!("    error: {e}");
        }
    }
}

pub fn list(args: ClientArgs) -> Result<()> {
    let jobs = args.connect()?.list()?;
    print_jobs(&jobs);
    Ok(())
}

pub fn status(args: JobArgs) -> Result<()> {
    let job = args.client.connect()?.status(&args.id)?;
    print_jobs(std::slice::from_ref(&job));
    for v in &job.vertices {
        println!(
            "    {} (parallelism {}): {} records in, {} out",
            v.name, v.parallelism, v.records_in, v.records_out
        );
    }
    if job.restarts > 0 {
        println!("  restarts: {}", job.restarts);
    }
    if !job.checkpoints.is_empty() {
        println!("  checkpoints (newest last):");
        println!(
            "    {:>6}  {:<24} {:>10} {:>12} {:>11} {:>9} {:>9}  status",
            "id", "triggered (UTC)", "duration", "size", "alignment", "sync", "write"
        );
        let shown = job.checkpoints.len().saturating_sub(20);
        for c in &job.checkpoints[shown..] {
            println!(
                "    {:>6}  {:<24} {:>8}ms {:>12} {:>9}ms {:>7}ms {:>7}ms  {}",
                c.id,
                format_utc_ms(c.triggered_at_ms),
                c.duration_ms,
                format_bytes(c.size_bytes),
                c.alignment_ms,
                c.sync_ms,
                c.write_ms,
                match &c.status {
                    hummer::checkpoint::coordinator::CheckpointStatus::InProgress =>
                        "in progress".to_string(),
                    hummer::checkpoint::coordinator::CheckpointStatus::Completed =>
                        if c.is_final {
                            "completed (final)".into()
                        } else {
                            "completed".into()
                        },
                    hummer::checkpoint::coordinator::CheckpointStatus::Failed(why) =>
                        format!("failed: {why}"),
                }
            );
        }
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct SavepointArgs {
    /// The job's id.
    id: String,
    /// Directory to put the savepoint in (default: the JobManager's --savepoint-dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(clap::Args)]
pub struct StopArgs {
    /// The job's id.
    id: String,
    /// Take a savepoint first, then stop the job.
    #[arg(long)]
    savepoint: bool,
    /// Directory to put the savepoint in (default: the JobManager's --savepoint-dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[command(flatten)]
    client: ClientArgs,
}

/// `hummer savepoint ID`: prints the savepoint's path.
pub fn savepoint(args: SavepointArgs) -> Result<()> {
    let dir = args.dir.map(std::path::absolute).transpose()?;
    let path = args.client.connect()?.savepoint(&args.id, dir, false)?;
    println!("savepoint {}", path.display());
    Ok(())
}

/// `hummer stop ID [--savepoint]`.
pub fn stop(args: StopArgs) -> Result<()> {
    let mut client = args.client.connect()?;
    if args.savepoint {
        let dir = args.dir.map(std::path::absolute).transpose()?;
        let path = client.savepoint(&args.id, dir, true)?;
        println!("stopped {} with savepoint {}", args.id, path.display());
    } else {
        client.cancel(&args.id)?;
        println!("stopped {}", args.id);
    }
    Ok(())
}

pub fn cancel(args: JobArgs) -> Result<()> {
    args.client.connect()?.cancel(&args.id)?;
    println!("cancelled {}", args.id);
    Ok(())
}

pub fn local_cluster(args: ClusterArgs) -> Result<()> {
    match args.action {
        ClusterAction::Start {
            insecure,
            taskmanagers,
            slots,
            dir,
            jobmanager,
            taskmanager,
        } => start_cluster(
            &LocalCluster {
                taskmanagers,
                slots,
                insecure,
                jobmanager,
                taskmanager,
            },
            &dir,
        ),
        ClusterAction::Certs { dir, hosts } => {
            make_cluster_certificates(&dir, &hosts)?;
            println!(
                "cluster certificates in {0}: use --tls-dir {0} on JobManagers and TaskManagers, \
                 HUMMER_TLS_DIR={0} for clients; the REST token is {0}/{REST_TOKEN}",
                dir.display()
            );
            Ok(())
        }
        ClusterAction::Stop { dir } => stop_cluster(&dir),
    }
}

/// Waits until `log` holds a line starting with `prefix`; returns the rest of that line.
fn wait_for_line(log: &Path, prefix: &str, timeout: Duration) -> Result<String> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(f) = std::fs::File::open(log) {
            for line in BufReader::new(f).lines().map_while(|l| l.ok()) {
                if let Some(rest) = line.strip_prefix(prefix) {
                    return Ok(rest.trim().to_string());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("no '{prefix}' in {} within {timeout:?}", log.display())
}

fn spawn_logged(args: &[String], log: &Path) -> Result<u32> {
    let exe = std::env::current_exe().context("cannot find the hummer executable")?;
    let out =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let err = out.try_clone()?;
    let child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .context("cannot start a cluster process")?;
    Ok(child.id())
}

/// What `hummer cluster start` was asked for.
struct LocalCluster {
    taskmanagers: usize,
    slots: usize,
    insecure: bool,
    jobmanager: JobManagerOptions,
    taskmanager: TaskManagerOptions,
}

fn start_cluster(cluster: &LocalCluster, dir: &Path) -> Result<()> {
    let (taskmanagers, slots, insecure) = (cluster.taskmanagers, cluster.slots, cluster.insecure);
    if taskmanagers == 0 || taskmanagers > 250 {
        bail!("--taskmanagers must be between 1 and 250");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Mutual TLS unless asked otherwise: the cluster's certificates in DIR/tls, made once.
    let tls = dir.join("tls");
    let security: Vec<String> = if insecure {
        vec!["--insecure".into()]
    } else {
        if !tls.join(hummer::channels::secure::CA_CERT).exists() {
            make_cluster_certificates(&tls, &[])?;
        }
        vec!["--tls-dir".into(), tls.display().to_string()]
    };
    let mut pids = Vec::new();
    let jm_log = dir.join("jobmanager.log");
    let mut jm_args: Vec<String> = [
        "jobmanager",
        "--rpc",
        "127.0.0.1:0",
        "--rest",
        "127.0.0.1:0",
    ]
    .map(String::from)
    .to_vec();
    jm_args.extend(cluster.jobmanager.to_args());
    jm_args.extend(security.iter().cloned());
    pids.push(spawn_logged(&jm_args, &jm_log)?);
    let rpc = wait_for_line(&jm_log, "jobmanager listening on ", Duration::from_secs(10))?;
    let rest = wait_for_line(&jm_log, "jobmanager rest on ", Duration::from_secs(10))?;
    for i in 0..taskmanagers {
        let log = dir.join(format!("taskmanager-{i}.log"));
        let host = format!("127.0.0.{}", i + 2);
        pids.push(spawn_logged(
            &[
                "taskmanager".to_string(),
                "--jobmanager".into(),
                rpc.clone(),
                "--slots".into(),
                slots.to_string(),
                "--data-addr".into(),
                host,
                "--cache-dir".into(),
                dir.join(format!("cache-{i}")).display().to_string(),
            ]
            .into_iter()
            .chain(cluster.taskmanager.to_args())
            .chain(security.iter().cloned())
            .collect::<Vec<_>>(),
            &log,
        )?);
        wait_for_line(&log, "taskmanager ", Duration::from_secs(15))?;
    }
    let pid_list: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
    std::fs::write(dir.join("pids"), pid_list.join("\n"))?;
    std::fs::write(dir.join("jobmanager"), &rpc)?;
    if insecure {
        println!(
            "cluster started (plaintext): jobmanager {rpc}, rest http://{rest}, {taskmanagers} taskmanagers"
        );
    } else {
        println!(
            "cluster started (mutual TLS): jobmanager {rpc}, rest https://{rest} (CA {0}/ca.pem, \
             token {0}/{REST_TOKEN}), {taskmanagers} taskmanagers",
            tls.display()
        );
        println!("export HUMMER_TLS_DIR={}", tls.display());
    }
    println!("export HUMMER_JOBMANAGER={rpc}");
    Ok(())
}

fn stop_cluster(dir: &Path) -> Result<()> {
    let pids = std::fs::read_to_string(dir.join("pids"))
        .with_context(|| format!("no cluster was started in {}", dir.display()))?;
    for pid in pids.lines().filter(|l| !l.is_empty()) {
        let _ = Command::new("kill").arg(pid).status();
    }
    std::fs::remove_file(dir.join("pids"))?;
    println!("cluster stopped");
    Ok(())
}

/// `2026-11-29 17:01:02.345` from milliseconds since the Unix epoch (UTC, no time zone data
/// needed).
fn format_utc_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// `1.5 MB` and the like.
fn format_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Start {
        #[command(flatten)]
        jobmanager: JobManagerOptions,
        #[command(flatten)]
        taskmanager: TaskManagerOptions,
    }

    #[derive(clap::Parser)]
    struct Jm {
        #[command(flatten)]
        options: JobManagerOptions,
    }

    #[derive(clap::Parser)]
    struct Tm {
        #[command(flatten)]
        options: TaskManagerOptions,
    }

    #[test]
    fn cluster_start_passes_every_option_on() {
        use clap::Parser;
        let start = Start::try_parse_from([
            "start",
            "--scheduler",
            "rfts",
            "--heartbeat-timeout-ms",
            "700",
            "--data-dir",
            "/tmp/d",
            "--rebalance-interval-ms",
            "20",
            "--savepoint-dir",
            "/tmp/s p",
            "--ha-dir",
            "/tmp/h",
            "--lease-ms",
            "900",
            "--rest-token-file",
            "/tmp/t",
            "--rest-token-for-reads",
            "--data-net",
            "fast=10.0.0.1",
            "--data-net",
            "slow=10.0.1.1",
            "--heartbeat-interval-ms",
            "30",
            "--monitor-interval-ms",
            "40",
            "--cpu-quota",
            "0.5",
            "--reconnect-timeout-ms",
            "50",
        ])
        .expect("cluster start options parse");
        let jm = Jm::try_parse_from(
            std::iter::once("jobmanager".to_string()).chain(start.jobmanager.to_args()),
        )
        .expect("the JobManager takes them");
        assert_eq!(jm.options, start.jobmanager);
        let tm = Tm::try_parse_from(
            std::iter::once("taskmanager".to_string()).chain(start.taskmanager.to_args()),
        )
        .expect("the TaskManagers take them");
        assert_eq!(tm.options, start.taskmanager);
        // Defaults travel as defaults.
        let start = Start::try_parse_from(["start"]).expect("no options parse");
        let jm = Jm::try_parse_from(
            std::iter::once("jobmanager".to_string()).chain(start.jobmanager.to_args()),
        )
        .expect("defaults parse");
        assert_eq!(jm.options, start.jobmanager);
    }

    #[test]
    fn utc_times_and_sizes_are_formatted() {
        assert_eq!(format_utc_ms(0), "1970-01-01 00:00:00.000");
        // 2024-02-29 12:34:56.789 UTC (a leap day).
        assert_eq!(format_utc_ms(1_709_210_096_789), "2024-02-29 12:34:56.789");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 << 20), "3.0 MB");
    }
}
