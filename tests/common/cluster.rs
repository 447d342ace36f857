//! One harness for the tests that start a cluster of `hummer` processes: JobManagers and
//! TaskManagers run from the binary under test, plaintext or with mutual TLS, alone or sharing
//! an HA directory, on loopback or behind a wrapper command (`ip netns exec NS`).
//!
//! ```ignore
//! let cluster = TestCluster::builder()
//!     .tls()
//!     .taskmanagers(2)
//!     .slots(2)
//!     .jobmanager_args(["--scheduler", "rfts"])
//!     .start();
//! cluster.hummer_ok(&["wordcount", "--corpus-lines", "100"]);
//! let (code, overview) = cluster.http().get_json("/overview");
//! ```
//!
//! Every process writes its stdout and stderr to a log file in the cluster's directory
//! (`jobmanager-0.log`, `taskmanager-1.log`, ...). The cluster's one `Drop` kills every process
//! it started (and the workers left in its cache); when the test is failing it first prints
//! the tail of every log, so a failure shows what the processes said and a pass prints nothing.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use super::cli::{BIN, Client};
use super::eventually;
use super::http::Http;

/// How long a process gets to say it is ready (a loaded two-core machine is slow).
const READY: Duration = Duration::from_secs(60);
/// The lines of each log shown when a test fails.
const TAIL: usize = 30;

/// Makes a cluster's certificates and REST token with `hummer cluster certs --dir DIR`.
pub fn make_certs(dir: &Path) {
    let out = Command::new(BIN)
        .args(["cluster", "certs", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "hummer cluster certs: {out:?}");
}

/// One TaskManager's own launch: a wrapper command in front of the binary and arguments
/// added to the cluster's.
#[derive(Clone, Debug, Default)]
pub struct TaskManager {
    wrapper: Vec<OsString>,
    args: Vec<OsString>,
}

impl TaskManager {
    /// A TaskManager like the others.
    pub fn new() -> TaskManager {
        TaskManager::default()
    }

    /// Runs it as `WRAPPER... hummer taskmanager ...` (`["ip", "netns", "exec", NS]`, say).
    pub fn wrapper<S: Into<OsString>>(mut self, wrapper: impl IntoIterator<Item = S>) -> Self {
        self.wrapper = wrapper.into_iter().map(Into::into).collect();
        self
    }

    /// Arguments of its own (its `--data-addr`, `--data-net`, ...); a default the harness
    /// adds (`--data-addr`, `--heartbeat-interval-ms`, `--monitor-interval-ms`, `--cache-dir`)
    /// is left out when they name it.
    pub fn args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// The options of a [`TestCluster`]; [`TestClusterBuilder::start`] starts it.
#[derive(Clone, Debug)]
pub struct TestClusterBuilder {
    tls: bool,
    ha: bool,
    jobmanagers: usize,
    taskmanagers: usize,
    own_taskmanagers: Vec<TaskManager>,
    slots: usize,
    host: String,
    jobmanager_args: Vec<OsString>,
    taskmanager_args: Vec<OsString>,
    jobmanager_wrapper: Vec<OsString>,
    dir: Option<PathBuf>,
}

impl TestClusterBuilder {
    /// Mutual TLS between the processes and HTTPS for REST, with certificates made by
    /// `hummer cluster certs` in `DIR/tls` (`--tls-dir`); without it, `--insecure`.
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// High availability: the JobManagers share `DIR/ha` (`--ha-dir`), TaskManagers and
    /// clients reach the leader through `ha:DIR/ha`.
    pub fn ha(mut self) -> Self {
        self.ha = true;
        self
    }

    /// How many JobManagers (default 1; more only make sense with [`Self::ha`]).
    pub fn jobmanagers(mut self, n: usize) -> Self {
        self.jobmanagers = n;
        self
    }

    /// `n` TaskManagers of the default launch (default 1), started before those of
    /// [`Self::taskmanager`].
    pub fn taskmanagers(mut self, n: usize) -> Self {
        self.taskmanagers = n;
        self
    }

    /// One more TaskManager, launched its own way.
    pub fn taskmanager(mut self, taskmanager: TaskManager) -> Self {
        self.own_taskmanagers.push(taskmanager);
        self
    }

    /// Slots per TaskManager (default 2).
    pub fn slots(mut self, slots: usize) -> Self {
        self.slots = slots;
        self
    }

    /// The host the JobManagers bind RPC and REST to, on free ports (default `127.0.0.1`).
    pub fn host(mut self, host: &str) -> Self {
        self.host = host.to_string();
        self
    }

    /// Arguments added to every JobManager's (`--scheduler rfts`, `--heartbeat-timeout-ms`).
    pub fn jobmanager_args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.jobmanager_args
            .extend(args.into_iter().map(Into::into));
        self
    }

    /// Arguments added to every TaskManager's.
    pub fn taskmanager_args<S: Into<OsString>>(
        mut self,
        args: impl IntoIterator<Item = S>,
    ) -> Self {
        self.taskmanager_args
            .extend(args.into_iter().map(Into::into));
        self
    }

    /// Runs the JobManagers as `WRAPPER... hummer jobmanager ...`.
    pub fn jobmanager_wrapper<S: Into<OsString>>(
        mut self,
        wrapper: impl IntoIterator<Item = S>,
    ) -> Self {
        self.jobmanager_wrapper = wrapper.into_iter().map(Into::into).collect();
        self
    }

    /// The cluster's directory (logs, data, caches, certificates); by default a new
    /// temporary directory, removed with the cluster.
    pub fn dir(mut self, dir: &Path) -> Self {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// Starts the JobManagers (waiting for their addresses, or with HA for a leader), then
    /// the TaskManagers (waiting until each has registered).
    pub fn start(self) -> TestCluster {
        let (temp, dir) = match &self.dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).unwrap();
                (None, dir.clone())
            }
            None => {
                let temp = tempfile::tempdir().unwrap();
                let dir = temp.path().to_path_buf();
                (Some(temp), dir)
            }
        };
        let tls = self.tls.then(|| dir.join("tls"));
        if let Some(tls) = &tls {
            make_certs(tls);
        }
        let mut cluster = TestCluster {
            ha: self.ha.then(|| dir.join("ha")),
            tls,
            dir,
            jobmanagers: Vec::new(),
            taskmanagers: Vec::new(),
            logs: Vec::new(),
            options: self.clone(),
            _temp: temp,
        };
        for _ in 0..self.jobmanagers {
            cluster.add_jobmanager();
        }
        if cluster.ha.is_some() && self.jobmanagers > 0 {
            eventually(READY, "a leading JobManager", || {
                (0..cluster.jobmanagers.len()).any(|i| cluster.jobmanager_rpc(i).is_some())
            });
        }
        for _ in 0..self.taskmanagers {
            cluster.add_taskmanager();
        }
        for taskmanager in self.own_taskmanagers {
            cluster.add_taskmanager_with(taskmanager);
        }
        cluster
    }
}

/// A process the cluster started.
struct Process {
    /// `jobmanager-0`, say.
    name: String,
    /// `None` once killed.
    child: Option<Child>,
    /// Its stdout and stderr.
    log: PathBuf,
    /// Wrapper, then the binary's arguments: to start it again.
    wrapper: Vec<OsString>,
    args: Vec<OsString>,
}

impl Process {
    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// The rest of the last log line starting with `prefix`.
    fn line(&self, prefix: &str) -> Option<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix(prefix).map(str::to_string))
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                // Not reaped, so the pid is still its own. A stopped process (SIGSTOP) dies of
                // SIGKILL too, but is woken first as the tests always did.
                unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }
}

/// A running cluster: see the module's documentation.
pub struct TestCluster {
    dir: PathBuf,
    tls: Option<PathBuf>,
    ha: Option<PathBuf>,
    jobmanagers: Vec<Process>,
    taskmanagers: Vec<Process>,
    /// Every log, in the order the processes started.
    logs: Vec<PathBuf>,
    options: TestClusterBuilder,
    _temp: Option<tempfile::TempDir>,
}

impl TestCluster {
    /// One JobManager, one TaskManager with 2 slots, plaintext, in a temporary directory.
    pub fn builder() -> TestClusterBuilder {
        TestClusterBuilder {
            tls: false,
            ha: false,
            jobmanagers: 1,
            taskmanagers: 1,
            own_taskmanagers: Vec::new(),
            slots: 2,
            host: "127.0.0.1".into(),
            jobmanager_args: Vec::new(),
            taskmanager_args: Vec::new(),
            jobmanager_wrapper: Vec::new(),
            dir: None,
        }
    }

    /// The cluster's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The TLS directory (`None` for a plaintext cluster).
    pub fn tls_dir(&self) -> Option<&Path> {
        self.tls.as_deref()
    }

    /// The HA directory (`None` without HA).
    pub fn ha_dir(&self) -> Option<&Path> {
        self.ha.as_deref()
    }

    /// The REST token of a TLS cluster (`DIR/tls/rest-token`).
    pub fn token(&self) -> String {
        let tls = self.tls.as_ref().expect("a plaintext cluster has no token");
        std::fs::read_to_string(tls.join("rest-token"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// What TaskManagers and clients are given: `ha:DIR` with HA, else the RPC address.
    pub fn address(&self) -> String {
        match &self.ha {
            Some(ha) => format!("ha:{}", ha.display()),
            None => self.rpc(),
        }
    }

    /// The RPC address of the first running JobManager that printed one (with HA: that has
    /// led; reach the leader through [`Self::address`]).
    pub fn rpc(&self) -> String {
        self.first_address(|c, i| c.jobmanager_rpc(i))
    }

    /// The REST address of the same JobManager as [`Self::rpc`].
    pub fn rest(&self) -> String {
        self.first_address(|c, i| c.jobmanager_rest(i))
    }

    fn first_address(&self, of: impl Fn(&TestCluster, usize) -> Option<String>) -> String {
        (0..self.jobmanagers.len())
            .filter(|&i| self.jobmanagers[i].child.is_some())
            .find_map(|i| of(self, i))
            .expect("no running JobManager has printed its address")
    }

    /// JobManager `i`'s RPC address, once it has printed it.
    pub fn jobmanager_rpc(&self, i: usize) -> Option<String> {
        self.jobmanagers[i].line("jobmanager listening on ")
    }

    /// JobManager `i`'s REST address, once it has printed it.
    pub fn jobmanager_rest(&self, i: usize) -> Option<String> {
        self.jobmanagers[i].line("jobmanager rest on ")
    }

    /// A client of the cluster (with its certificates when TLS).
    pub fn client(&self) -> Client {
        Client {
            jobmanager: self.address(),
            tls_dir: self.tls.clone(),
        }
    }

    /// An HTTP client of [`Self::rest`]: HTTPS trusting the cluster's CA when TLS.
    pub fn http(&self) -> Http {
        match &self.tls {
            Some(tls) => Http::https(&self.rest(), &tls.join("ca.pem")),
            None => Http::plain(&self.rest()),
        }
    }

    /// Runs `hummer ARGS...` against the cluster.
    pub fn hummer(&self, args: &[&str]) -> Output {
        self.client().hummer(args)
    }

    /// Runs `hummer ARGS...` against the cluster and asserts that it succeeded.
    pub fn hummer_ok(&self, args: &[&str]) -> Output {
        self.client().hummer_ok(args)
    }

    /// What `hummer status ID` prints.
    pub fn status(&self, id: &str) -> String {
        self.client().job_status(id)
    }

    /// Waits until the job's status shows `state`; returns how long that took.
    pub fn wait_for_status(&self, id: &str, state: &str, timeout: Duration) -> Duration {
        self.client().wait_for_job_status(id, state, timeout)
    }

    /// Starts one more JobManager; returns its index.
    pub fn add_jobmanager(&mut self) -> usize {
        let i = self.jobmanagers.len();
        let o = &self.options;
        let mut args: Vec<OsString> = vec!["jobmanager".into()];
        args.extend(self.security());
        args.extend(["--rpc".into(), format!("{}:0", o.host).into()]);
        args.extend(["--rest".into(), format!("{}:0", o.host).into()]);
        args.extend(["--data-dir".into(), self.dir.join(format!("jm-{i}")).into()]);
        if let Some(ha) = &self.ha {
            args.extend(["--ha-dir".into(), ha.clone().into()]);
        }
        args.extend(o.jobmanager_args.iter().cloned());
        let process = self.spawn(
            format!("jobmanager-{i}"),
            o.jobmanager_wrapper.clone(),
            args,
        );
        self.jobmanagers.push(process);
        self.wait_for_jobmanager(i);
        i
    }

    /// Without HA, waits until JobManager `i` prints its addresses (a standby prints them
    /// only once it leads).
    fn wait_for_jobmanager(&mut self, i: usize) {
        if self.ha.is_none() {
            self.wait_for_line(true, i, "jobmanager listening on ");
            self.wait_for_line(true, i, "jobmanager rest on ");
        }
    }

    /// `kill -9` of JobManager `i` (waited for).
    pub fn kill_jobmanager(&mut self, i: usize) {
        self.jobmanagers[i].kill();
    }

    /// Kills JobManager `i` if it runs and starts it again with the same arguments and data
    /// directory (on new ports); without HA, waits for its addresses.
    pub fn restart_jobmanager(&mut self, i: usize) {
        self.kill_jobmanager(i);
        self.respawn(true, i);
        self.wait_for_jobmanager(i);
    }

    /// How many JobManagers were started (killed ones included: indices stay).
    pub fn jobmanager_count(&self) -> usize {
        self.jobmanagers.len()
    }

    /// How many TaskManagers were started (killed ones included: indices stay).
    pub fn taskmanager_count(&self) -> usize {
        self.taskmanagers.len()
    }

    /// JobManager `i`'s process id (`None` once killed).
    pub fn jobmanager_pid(&self, i: usize) -> Option<u32> {
        self.jobmanagers[i].child.as_ref().map(Child::id)
    }

    /// Sends `signal` (`libc::SIGSTOP`, say) to JobManager `i`.
    pub fn signal_jobmanager(&self, i: usize, signal: i32) {
        let pid = self.jobmanager_pid(i).expect("a running JobManager");
        assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0, "kill {pid}");
    }

    /// How JobManager `i` exited, `None` while it runs.
    pub fn jobmanager_exit(&mut self, i: usize) -> Option<ExitStatus> {
        let child = self.jobmanagers[i]
            .child
            .as_mut()
            .expect("a JobManager not killed");
        child.try_wait().unwrap()
    }

    /// Starts one more TaskManager of the default launch; returns its index.
    pub fn add_taskmanager(&mut self) -> usize {
        self.add_taskmanager_with(TaskManager::new())
    }

    /// Starts one more TaskManager launched `taskmanager`'s way and waits until it has
    /// registered; returns its index.
    pub fn add_taskmanager_with(&mut self, taskmanager: TaskManager) -> usize {
        let i = self.taskmanagers.len();
        let o = &self.options;
        let own: Vec<OsString> = o
            .taskmanager_args
            .iter()
            .chain(&taskmanager.args)
            .cloned()
            .collect();
        let mut args: Vec<OsString> = vec!["taskmanager".into()];
        args.extend(self.security());
        args.extend(["--jobmanager".into(), self.address().into()]);
        args.extend(["--slots".into(), o.slots.to_string().into()]);
        let defaults: [(&str, OsString); 4] = [
            ("--data-addr", format!("127.0.0.{}", i + 2).into()),
            ("--heartbeat-interval-ms", "200".into()),
            ("--monitor-interval-ms", "100".into()),
            (
                "--cache-dir",
                self.cache_dir().join(format!("tm-{i}")).into(),
            ),
        ];
        for (flag, value) in defaults {
            if !has_flag(&own, flag) {
                args.extend([flag.into(), value]);
            }
        }
        args.extend(own);
        let process = self.spawn(format!("taskmanager-{i}"), taskmanager.wrapper, args);
        self.taskmanagers.push(process);
        self.wait_for_line(false, i, "taskmanager ");
        i
    }

    /// `kill -9` of TaskManager `i` (waited for); its workers keep running.
    pub fn kill_taskmanager(&mut self, i: usize) {
        self.taskmanagers[i].kill();
    }

    /// Kills TaskManager `i` if it runs and starts it again the same way.
    pub fn restart_taskmanager(&mut self, i: usize) {
        self.kill_taskmanager(i);
        self.respawn(false, i);
        self.wait_for_line(false, i, "taskmanager ");
    }

    /// Asserts that every TaskManager not killed still runs.
    pub fn assert_taskmanagers_running(&mut self, what: &str) {
        for p in self.taskmanagers.iter_mut().filter(|p| p.child.is_some()) {
            assert!(p.running(), "{what}: {} exited", p.name);
        }
    }

    /// Asserts that every process not killed still runs.
    pub fn assert_running(&mut self, what: &str) {
        for p in self.jobmanagers.iter_mut().filter(|p| p.child.is_some()) {
            assert!(p.running(), "{what}: {} exited", p.name);
        }
        self.assert_taskmanagers_running(what);
    }

    /// Where the TaskManagers cache job binaries (`tm-I` each).
    pub fn cache_dir(&self) -> PathBuf {
        self.dir.join("cache")
    }

    /// Worker processes (started from a TaskManager's artifact cache) still running.
    pub fn workers_running(&self) -> usize {
        // Workers run `<cache>/tm-I/<sha256>`; TaskManagers only name `<cache>/tm-I`.
        let out = Command::new("pgrep")
            .arg("-f")
            .arg(format!(
                "{}/tm-[0-9]+/[0-9a-f]{{64}}",
                self.cache_dir().display()
            ))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    }

    /// The last `lines` lines of every process's log.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut all = String::new();
        for path in &self.logs {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let text: Vec<&str> = text.lines().collect();
            all.push_str(&format!("--- {}\n", path.display()));
            for line in &text[text.len().saturating_sub(lines)..] {
                all.push_str(line);
                all.push('\n');
            }
        }
        all
    }

    fn security(&self) -> Vec<OsString> {
        match &self.tls {
            Some(tls) => vec!["--tls-dir".into(), tls.clone().into()],
            None => vec!["--insecure".into()],
        }
    }

    /// Starts `WRAPPER... hummer ARGS...` with its output in a log named after it (a new
    /// log for every start).
    fn spawn(&mut self, name: String, wrapper: Vec<OsString>, args: Vec<OsString>) -> Process {
        let starts = self
            .logs
            .iter()
            .filter(|l| {
                l.file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with(&format!("{name}.")))
            })
            .count();
        let log = match starts {
            0 => self.dir.join(format!("{name}.log")),
            n => self.dir.join(format!("{name}.{}.log", n + 1)),
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut command = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(BIN);
                c
            }
            None => Command::new(BIN),
        };
        let child = command
            .args(&args)
            // Plain log lines in the files (no ANSI colours).
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.logs.push(log.clone());
        Process {
            name,
            child: Some(child),
            log,
            wrapper,
            args,
        }
    }

    fn respawn(&mut self, jobmanager: bool, i: usize) {
        let old = if jobmanager {
            &self.jobmanagers[i]
        } else {
            &self.taskmanagers[i]
        };
        let (name, wrapper, args) = (old.name.clone(), old.wrapper.clone(), old.args.clone());
        let process = self.spawn(name, wrapper, args);
        if jobmanager {
            self.jobmanagers[i] = process;
        } else {
            self.taskmanagers[i] = process;
        }
    }

    /// Waits until the process prints a line starting with `prefix`; panics (showing the
    /// logs, as the cluster is dropped) if it exits first.
    fn wait_for_line(&mut self, jobmanager: bool, i: usize, prefix: &str) {
        let p = if jobmanager {
            &mut self.jobmanagers[i]
        } else {
            &mut self.taskmanagers[i]
        };
        let what = format!("{} to print {prefix:?}", p.name);
        eventually(READY, &what, || {
            if p.line(prefix).is_some() {
                return true;
            }
            if let Some(status) = p.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!("{} exited ({status}) before printing {prefix:?}", p.name);
            }
            false
        });
    }
}

/// Whether `args` name `flag` (`--flag VALUE` or `--flag=VALUE`).
fn has_flag(args: &[OsString], flag: &str) -> bool {
    args.iter().any(|a| {
        let a = a.to_string_lossy();
        a == flag || a.starts_with(&format!("{flag}="))
    })
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "the cluster's logs (last {TAIL} lines each):\n{}",
                self.log_tails(TAIL)
            );
        }
        for p in self.taskmanagers.iter_mut().chain(&mut self.jobmanagers) {
            p.kill();
        }
        // Workers of killed TaskManagers outlive them.
        let _ = Command::new("pkill")
            .arg("-9")
            .arg("-f")
            .arg(self.cache_dir())
            .stdout(Stdio::null())
            .status();
    }
}
