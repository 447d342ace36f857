//! JobManager high availability with real processes: JobManagers (a leader and standbys) and
//! TaskManagers of the `hummer` binary sharing an HA directory on loopback; exactly-once jobs
//! through `kill -9` of the leader at random moments, with and without a standby, with a
//! TaskManager killed at the same time, and a leader paused past its lease (split brain). The
//! cluster runs with mutual TLS (its certificates made by `hummer cluster certs`), so the
//! trials also carry the job's control and data connections over TLS.

mod common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hummer::cluster::ha::lease::{Lease, read_lease};

use common::cli::BIN;
use common::cluster::TestCluster;
use common::eventually;

/// The leader's lease in these tests (the figure is for a 2 s lease).
const LEASE_MS: u64 = 1000;

/// `jobmanagers` JobManagers and `taskmanagers` TaskManagers (2 slots each) with mutual TLS,
/// sharing an HA directory.
fn ha_cluster(jobmanagers: usize, taskmanagers: usize) -> TestCluster {
    TestCluster::builder()
        .tls()
        .ha()
        .jobmanagers(jobmanagers)
        .taskmanagers(taskmanagers)
        .slots(2)
        .jobmanager_args(["--lease-ms", &LEASE_MS.to_string()])
        .jobmanager_args(["--heartbeat-timeout-ms", "5000"])
        .start()
}

fn ha_dir(cluster: &TestCluster) -> &std::path::Path {
    cluster.ha_dir().expect("an HA cluster")
}

/// The lease of a live leader (its holder is one of our JobManagers).
fn wait_for_leader(cluster: &TestCluster, timeout: Duration) -> Lease {
    eventually(timeout, "a leader", || {
        read_lease(ha_dir(cluster)).ok().flatten().filter(|lease| {
            leader_index(cluster, lease).is_some() && now_ms() < lease.expires_at_ms
        })
    })
}

/// Which of our JobManagers holds `lease` (alive).
fn leader_index(cluster: &TestCluster, lease: &Lease) -> Option<usize> {
    (0..cluster.jobmanager_count()).position(|i| {
        cluster
            .jobmanager_pid(i)
            .is_some_and(|pid| lease.holder.starts_with(&format!("jobmanager-{pid}-")))
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// An exactly-once EventCount job submitted through the HA address; returns the client (which
/// waits and verifies) and the job's id.
fn submit_event_count(cluster: &TestCluster, events: u64, keys: u64) -> (Child, String) {
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
        .arg(cluster.dir().join("checkpoints"))
        .arg("--out")
        .arg(cluster.dir().join("out"))
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
    let mut cluster = ha_cluster(jobmanagers, 3);
    let (client, id) = submit_event_count(&cluster, events, keys);
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    std::thread::sleep(kill_after);

    let lease = wait_for_leader(&cluster, Duration::from_secs(5));
    let leader = leader_index(&cluster, &lease).unwrap();
    cluster.kill_jobmanager(leader);
    let killed_at = Instant::now();
    if matches!(loss, Loss::LeaderAndTaskManager) {
        cluster.kill_taskmanager(victim_tm);
    }
    if matches!(loss, Loss::RestartedAlone) {
        // On the same HA and data directories.
        cluster.restart_jobmanager(leader);
    }
    let new = wait_for_leader(&cluster, Duration::from_secs(20));
    assert!(new.token > lease.token, "{what}: the token did not grow");
    // The job runs again under the new leader, unless it already finished there.
    let back = eventually(
        Duration::from_secs(60).saturating_sub(killed_at.elapsed()),
        &format!("{what}: the job back"),
        || {
            let status = cluster.status(&id);
            if status.contains("Running") || status.contains("Finished") {
                Ok(killed_at.elapsed())
            } else {
                Err(status)
            }
        },
    );
    assert_exactly_once(client, &what);
    cluster.assert_taskmanagers_running(&what);
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
    let mut cluster = ha_cluster(2, 3);
    let (client, id) = submit_event_count(&cluster, 120_000, 20);
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let lease = wait_for_leader(&cluster, Duration::from_secs(5));
    let leader = leader_index(&cluster, &lease).unwrap();
    cluster.signal_jobmanager(leader, libc::SIGSTOP);
    let new = eventually(
        Duration::from_secs(20),
        "a new leader while the old one is paused",
        || {
            Some(wait_for_leader(&cluster, Duration::from_secs(20)))
                .filter(|l| l.token > lease.token)
        },
    );
    assert_ne!(leader_index(&cluster, &new), Some(leader));
    // The job runs under the new leader before the old one wakes up.
    cluster.wait_for_status(&id, "Running", Duration::from_secs(30));
    cluster.signal_jobmanager(leader, libc::SIGCONT);
    let code = eventually(
        Duration::from_secs(10),
        "the deposed leader to exit",
        || cluster.jobmanager_exit(leader),
    )
    .code();
    assert_eq!(code, Some(3), "the deposed leader's exit");
    assert_exactly_once(client, "split brain");
    cluster.assert_taskmanagers_running("split brain");
    let lease_now = read_lease(ha_dir(&cluster)).unwrap().unwrap();
    assert_eq!(
        lease_now.token, new.token,
        "the old leader wrote the lease again"
    );
}

/// A job that ended before the leader went is listed by the next leader as it ended (and is
/// not run again).
#[test]
fn a_new_leader_lists_the_jobs_that_ended_before_it() {
    let mut cluster = ha_cluster(2, 3);
    let (client, id) = submit_event_count(&cluster, 2_000, 5);
    assert_exactly_once(client, "a short job");
    assert!(cluster.status(&id).contains("Finished"));
    let lease = wait_for_leader(&cluster, Duration::from_secs(5));
    cluster.kill_jobmanager(leader_index(&cluster, &lease).unwrap());
    let new = wait_for_leader(&cluster, Duration::from_secs(20));
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
