//! JobManager high availability with real processes: JobManagers (a leader and standbys) and
//! TaskManagers of the `hummer` binary sharing an HA directory on loopback; exactly-once jobs
//! through `kill -9` of the leader at random moments, with and without a standby, with a
//! TaskManager killed at the same time, and a leader paused past its lease (split brain). The
//! cluster runs with mutual TLS (its certificates made by `hummer cluster certs`), so the
//! trials also carry the job's control and data connections over TLS.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hummer::cluster::ha::lease::{Lease, read_lease};

use common::cli::BIN;
/// The leader's lease in these tests (the figure is for a 2 s lease).
const LEASE_MS: u64 = 1000;

/// JobManagers and TaskManagers sharing an HA directory, killed when dropped.
struct HaCluster {
    dir: tempfile::TempDir,
    jobmanagers: Vec<Child>,
    taskmanagers: Vec<Child>,
}

impl HaCluster {
    fn start(jobmanagers: usize, taskmanagers: usize) -> HaCluster {
        let mut cluster = HaCluster {
            dir: tempfile::tempdir().unwrap(),
            jobmanagers: Vec::new(),
            taskmanagers: Vec::new(),
        };
        let certs = Command::new(BIN)
            .args(["cluster", "certs", "--dir"])
            .arg(cluster.tls_dir())
            .output()
            .unwrap();
        assert!(certs.status.success(), "{certs:?}");
        for _ in 0..jobmanagers {
            cluster.add_jobmanager();
        }
        cluster.wait_for_leader(Duration::from_secs(20));
        for i in 0..taskmanagers {
            cluster.add_taskmanager(i);
        }
        cluster
    }

    fn ha_dir(&self) -> PathBuf {
        self.dir.path().join("ha")
    }

    fn tls_dir(&self) -> PathBuf {
        self.dir.path().join("tls")
    }

    /// The address clients and TaskManagers use: the leader of the HA directory.
    fn address(&self) -> String {
        format!("ha:{}", self.ha_dir().display())
    }

    /// A client of the cluster (through the HA address, with its certificates).
    fn client(&self) -> common::cli::Client {
        common::cli::Client {
            jobmanager: self.address(),
            tls_dir: Some(self.tls_dir()),
        }
    }

    fn add_jobmanager(&mut self) {
        let n = self.jobmanagers.len();
        let mut jm = Command::new(BIN)
            .args([
                "jobmanager",
                "--rpc",
                "127.0.0.1:0",
                "--rest",
                "127.0.0.1:0",
            ])
            .arg("--ha-dir")
            .arg(self.ha_dir())
            .arg("--tls-dir")
            .arg(self.tls_dir())
            .args(["--lease-ms", &LEASE_MS.to_string()])
            .args(["--heartbeat-timeout-ms", "5000"])
            .arg("--data-dir")
            .arg(self.dir.path().join(format!("jm-{n}")))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.dir.path().join(format!("jm-{n}.log"))).unwrap())
            .spawn()
            .unwrap();
        drain(jm.stdout.take());
        self.jobmanagers.push(jm);
    }

    fn add_taskmanager(&mut self, i: usize) {
        let mut tm = Command::new(BIN)
            .args([
                "taskmanager",
                "--jobmanager",
                &self.address(),
                "--slots",
                "2",
            ])
            .arg("--tls-dir")
            .arg(self.tls_dir())
            .args(["--data-addr", &format!("127.0.0.{}", i + 2)])
            .args([
                "--heartbeat-interval-ms",
                "200",
                "--monitor-interval-ms",
                "100",
            ])
            .arg("--cache-dir")
            .arg(self.dir.path().join(format!("cache-{i}")))
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(self.dir.path().join(format!("tm-{i}.log"))).unwrap())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(tm.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(line.contains("registered"), "taskmanager: {line:?}");
        drain(Some(out.into_inner()));
        self.taskmanagers.push(tm);
    }

    /// The lease of a live leader (its holder is one of our JobManagers).
    fn wait_for_leader(&self, timeout: Duration) -> Lease {
        let started = Instant::now();
        loop {
            if let Ok(Some(lease)) = read_lease(&self.ha_dir())
                && self.leader_index(&lease).is_some()
                && now_ms() < lease.expires_at_ms
            {
                return lease;
            }
            assert!(started.elapsed() < timeout, "no leader after {timeout:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Which of our JobManagers holds `lease` (alive).
    fn leader_index(&self, lease: &Lease) -> Option<usize> {
        self.jobmanagers.iter().position(|jm| {
            lease
                .holder
                .starts_with(&format!("jobmanager-{}-", jm.id()))
        })
    }

    fn status(&self, id: &str) -> String {
        self.client().job_status(id)
    }

    fn wait_for_status(&self, id: &str, state: &str, timeout: Duration) -> Duration {
        self.client()
            .wait_for_job_status(id, state, timeout, || self.logs())
    }

    /// The last lines of every process's log, for a failure's message.
    fn logs(&self) -> String {
        let mut names: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        names.sort();
        let mut all = String::new();
        for path in names {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            all.push_str(&format!("--- {}\n", path.display()));
            for line in &lines[lines.len().saturating_sub(12)..] {
                all.push_str(line);
                all.push('\n');
            }
        }
        all
    }

    /// Asserts that every TaskManager still runs.
    fn assert_taskmanagers_alive(&mut self, what: &str) {
        for (i, tm) in self.taskmanagers.iter_mut().enumerate() {
            assert!(
                tm.try_wait().unwrap().is_none(),
                "{what}: TaskManager {i} exited"
            );
        }
    }
}

impl Drop for HaCluster {
    fn drop(&mut self) {
        for c in self
            .taskmanagers
            .iter_mut()
            .chain(self.jobmanagers.iter_mut())
        {
            let _ = Command::new("kill")
                .args(["-CONT", &c.id().to_string()])
                .stderr(Stdio::null())
                .status();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn drain(out: Option<impl Read + Send + 'static>) {
    if let Some(out) = out {
        std::thread::spawn(move || {
            let mut reader = BufReader::new(out);
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                line.clear();
            }
        });
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn signal(child: &Child, sig: &str) {
    Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
}

/// An exactly-once EventCount job submitted through the HA address; returns the client (which
/// waits and verifies) and the job's id.
fn submit_event_count(cluster: &HaCluster, events: u64, keys: u64) -> (Child, String) {
    let mut client = cluster
        .client()
        .command(&[])
        .args([
            "run",
            "event-count",
            "--parallelism",
            "6",
            "--wait",
            "--verify",
        ])
        .args(["--events", &events.to_string(), "--keys", &keys.to_string()])
        .args(["--rate", "25000", "--checkpoint-interval-ms", "100"])
        .args(["--restart", "fixed-delay:10:200ms"])
        .arg("--checkpoint-dir")
        .arg(cluster.dir.path().join("checkpoints"))
        .arg("--out")
        .arg(cluster.dir.path().join("out"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = common::cli::submitted_job_id(&mut client);
    (client, id)
}

/// Waits for the client; asserts the job finished with every event exactly once.
fn assert_exactly_once(mut client: Child, what: &str) {
    let status = client.wait().unwrap();
    let mut out = String::new();
    client
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    client
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success() && out.contains("every event exactly once"),
        "{what}: {out}\n{err}"
    );
}

/// How a failover trial loses its leader.
#[derive(Clone, Copy, Debug)]
enum Loss {
    /// `kill -9` of the leader; a standby takes over.
    LeaderWithStandby,
    /// `kill -9` of the leader and of a TaskManager; a standby takes over.
    LeaderAndTaskManager,
    /// `kill -9` of the only JobManager; a new one is started on the same HA directory.
    RestartedAlone,
}

/// One trial: an exactly-once job, the leader killed at a moment drawn from `seed`. Returns
/// the time from the kill to the job running again.
fn failover_trial(seed: u64, loss: Loss) -> Duration {
    let mut rng = common::Rng::new(seed);
    let events = 40_000 + rng.below(40_000);
    let keys = 1 + rng.below(50);
    let kill_after = Duration::from_millis(200 + rng.below(1_500));
    let victim_tm = rng.below(3) as usize;
    let what = format!("seed {seed} ({loss:?}): {events} events, kill after {kill_after:?}");
    eprintln!("failover trial {what}");
    let jobmanagers = match loss {
        Loss::RestartedAlone => 1,
        _ => 2,
    };
    let mut cluster = HaCluster::start(jobmanagers, 3);
    let (client, id) = submit_event_count(&cluster, events, keys);
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    std::thread::sleep(kill_after);

    let lease = cluster.wait_for_leader(Duration::from_secs(5));
    let leader = cluster.leader_index(&lease).unwrap();
    let mut old = cluster.jobmanagers.remove(leader);
    signal(&old, "-9");
    let killed_at = Instant::now();
    let _ = old.wait();
    if matches!(loss, Loss::LeaderAndTaskManager) {
        let mut tm = cluster.taskmanagers.remove(victim_tm);
        signal(&tm, "-9");
        let _ = tm.wait();
    }
    if matches!(loss, Loss::RestartedAlone) {
        cluster.add_jobmanager();
    }
    let new = cluster.wait_for_leader(Duration::from_secs(20));
    assert!(new.token > lease.token, "{what}: the token did not grow");
    // The job runs again under the new leader, unless it already finished there.
    let mut back = None;
    while killed_at.elapsed() < Duration::from_secs(60) {
        let status = cluster.status(&id);
        if status.contains("Running") || status.contains("Finished") {
            back = Some(killed_at.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let back = back.unwrap_or_else(|| panic!("{what}: not back: {}", cluster.status(&id)));
    assert_exactly_once(client, &what);
    cluster.assert_taskmanagers_alive(&what);
    // The new leader's REST shows the job with the checkpoints of its attempt here.
    let status = cluster.status(&id);
    assert!(
        status.contains("Finished") && status.contains("completed (final)"),
        "{what}: {status}"
    );
    eprintln!("{what}: running again {back:?} after the kill");
    back
}

#[test]
fn a_standby_takes_over_from_a_killed_leader_exactly_once() {
    let mut times: Vec<Duration> = common::trial_seeds(4, 7)
        .into_iter()
        .map(|seed| failover_trial(seed, Loss::LeaderWithStandby))
        .collect();
    times.sort();
    eprintln!(
        "kill -9 to running again, {LEASE_MS} ms lease: median {:?}",
        times[times.len() / 2]
    );
}

#[test]
fn a_leader_and_a_taskmanager_killed_together_lose_nothing() {
    for seed in common::trial_seeds(3, 11) {
        failover_trial(seed, Loss::LeaderAndTaskManager);
    }
}

#[test]
fn a_jobmanager_restarted_on_its_ha_directory_resumes_the_job() {
    for seed in common::trial_seeds(3, 13) {
        failover_trial(seed, Loss::RestartedAlone);
    }
}

/// Split brain: the leader is paused (SIGSTOP) past its lease, a standby takes over, and the
/// old leader, resumed, must not act: it finds itself deposed and stops. The job stays
/// exactly-once and no TaskManager exits.
#[test]
fn a_leader_paused_past_its_lease_is_fenced_off() {
    let mut cluster = HaCluster::start(2, 3);
    let (client, id) = submit_event_count(&cluster, 120_000, 20);
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let lease = cluster.wait_for_leader(Duration::from_secs(5));
    let leader = cluster.leader_index(&lease).unwrap();
    signal(&cluster.jobmanagers[leader], "-STOP");
    let deadline = Instant::now() + Duration::from_secs(20);
    let new = loop {
        let l = cluster.wait_for_leader(Duration::from_secs(20));
        if l.token > lease.token {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "no new leader while the old one is paused"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_ne!(cluster.leader_index(&new), Some(leader));
    // The job runs under the new leader before the old one wakes up.
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    signal(&cluster.jobmanagers[leader], "-CONT");
    let woke = Instant::now();
    let code = loop {
        if let Some(status) = cluster.jobmanagers[leader].try_wait().unwrap() {
            break status.code();
        }
        assert!(
            woke.elapsed() < Duration::from_secs(10),
            "the deposed leader still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(3), "the deposed leader's exit");
    assert_exactly_once(client, "split brain");
    cluster.assert_taskmanagers_alive("split brain");
    let lease_now = read_lease(&cluster.ha_dir()).unwrap().unwrap();
    assert_eq!(
        lease_now.token, new.token,
        "the old leader wrote the lease again"
    );
}

/// A job that ended before the leader went is listed by the next leader as it ended (and is
/// not run again).
#[test]
fn a_new_leader_lists_the_jobs_that_ended_before_it() {
    let mut cluster = HaCluster::start(2, 3);
    let (client, id) = submit_event_count(&cluster, 2_000, 5);
    assert_exactly_once(client, "a short job");
    assert!(cluster.status(&id).contains("Finished"));
    let lease = cluster.wait_for_leader(Duration::from_secs(5));
    let mut old = cluster
        .jobmanagers
        .remove(cluster.leader_index(&lease).unwrap());
    signal(&old, "-9");
    let _ = old.wait();
    let new = cluster.wait_for_leader(Duration::from_secs(20));
    assert!(new.token > lease.token);
    let status = cluster.status(&id);
    assert!(status.contains("Finished"), "{status}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        cluster.status(&id).contains("Finished"),
        "the job ran again"
    );
}

/// Without a JobManager at all (none leads), clients get a clear error naming the directory.
#[test]
fn a_client_without_a_leader_is_told_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["list", "--jobmanager"])
        .arg(format!("ha:{}", dir.path().display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no JobManager leads") && err.contains(&dir.path().display().to_string()),
        "{err}"
    );
}
