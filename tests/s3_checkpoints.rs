//! Checkpoints in an S3-compatible object store: a real S3 server (moto, installed into
//! `/var/tmp/hummer-moto` from PyPI by `scripts/test.sh`) holds the checkpoints of an EventCount job
//! that fails once and recovers from them, exactly once.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_hummer");

/// The moto S3 server, which `scripts/test.sh` installs (from PyPI, into a virtualenv under
/// /var/tmp) before the heavy tier runs.
fn moto_server() -> PathBuf {
    let server = PathBuf::from("/var/tmp/hummer-moto/bin/moto_server");
    assert!(
        server.exists(),
        "{} is missing: scripts/test.sh installs it",
        server.display()
    );
    server
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One request over a fresh connection; an error if the server drops the connection (moto
/// accepts connections before its application is ready to answer them).
fn try_http(port: u16, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )?;
    let mut response = String::new();
    s.read_to_string(&mut response)?;
    let code = response
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {response:?}")))?;
    Ok((code, response))
}

fn http(port: u16, method: &str, path: &str) -> (u16, String) {
    try_http(port, method, path)
        .unwrap_or_else(|e| panic!("{method} {path} on the S3 server failed: {e}"))
}

/// Starts moto and waits until it answers a request, not only until its port is open.
fn start_s3() -> (Server, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Server(
        Command::new(moto_server())
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while let Err(e) = try_http(port, "GET", "/") {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "moto did not answer within 60 s: {e}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (server, port)
}

fn run_event_count(port: u16, out: &Path, extra: &[&str]) -> String {
    let run = Command::new(BIN)
        .args(["run", "event-count", "--events", "100000", "--keys", "37"])
        .args(["--parallelism", "2", "--checkpoint-interval-ms", "50"])
        .args([
            "--rate",
            "100000",
            "--checkpoint-dir",
            "s3://checkpoints/jobs",
        ])
        .arg("--out")
        .arg(out)
        .args(extra)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT", format!("http://127.0.0.1:{port}"))
        .env("AWS_ALLOW_HTTP", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

#[test]
fn a_job_recovers_from_checkpoints_in_an_s3_compatible_store() {
    crate::require_heavy!("an S3 server (moto, from PyPI)");
    let (_server, port) = start_s3();
    assert_eq!(http(port, "PUT", "/checkpoints").0, 200);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let stdout = run_event_count(
        port,
        &out,
        &[
            "--fail-at",
            "70000",
            "--restart",
            "fixed-delay:2:50ms",
            "--verify",
        ],
    );
    assert!(stdout.contains("1 restarts"), "{stdout}");
    assert!(stdout.contains("every event exactly once"), "{stdout}");
    let (code, listing) = http(port, "GET", "/checkpoints?list-type=2&prefix=jobs/");
    assert_eq!(code, 200);
    assert!(
        listing.contains("/_metadata</Key>")
            && listing.contains("/task-0</Key>")
            && listing.contains("/shared/"),
        "{listing}"
    );
}

#[test]
fn a_bad_object_store_location_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(BIN)
        .args(["run", "event-count", "--events", "10", "--checkpoint-dir"])
        .arg("nosuchstore://bucket/x")
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("nosuchstore://bucket/x"), "{stderr}");
}

/// JobManager high availability with the HA storage in S3: the lease is taken and renewed by
/// conditional puts, the job store is objects. Two JobManagers and two TaskManagers; the
/// leader is killed while an exactly-once job runs; the standby takes over and the job
/// finishes exactly once.
#[test]
fn a_standby_takes_over_with_the_ha_storage_in_s3() {
    crate::require_heavy!("an S3 server (moto, from PyPI)");
    let (_server, port) = start_s3();
    assert_eq!(http(port, "PUT", "/hummer-ha").0, 200);
    let dir = tempfile::tempdir().unwrap();
    let ha = "s3://hummer-ha/cluster";
    let address = format!("ha:{ha}");
    let aws = [
        ("AWS_ACCESS_KEY_ID", "test".to_string()),
        ("AWS_SECRET_ACCESS_KEY", "test".to_string()),
        ("AWS_REGION", "us-east-1".to_string()),
        ("AWS_ENDPOINT", format!("http://127.0.0.1:{port}")),
        ("AWS_ALLOW_HTTP", "true".to_string()),
    ];
    let command = |args: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(args)
            .envs(aws.iter().map(|(k, v)| (*k, v.as_str())))
            .stderr(Stdio::null());
        c
    };
    // The JobManagers say on stdout when they lead ("jobmanager leads (token N)").
    let (leads_tx, leads) = std::sync::mpsc::channel::<(u32, String)>();
    let mut processes: Vec<Child> = Vec::new();
    for j in 0..2 {
        let data = dir.path().join(format!("jm-{j}"));
        let mut jm = command(&[
            "jobmanager",
            "--insecure",
            "--rpc",
            "127.0.0.1:0",
            "--rest",
            "127.0.0.1:0",
            "--ha-dir",
            ha,
            "--lease-ms",
            "1000",
            "--data-dir",
            data.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
        let (out, pid, tx) = (jm.stdout.take().unwrap(), jm.id(), leads_tx.clone());
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(out).lines().map_while(|l| l.ok()) {
                if line.starts_with("jobmanager leads") {
                    let _ = tx.send((pid, line));
                }
            }
        });
        processes.push(jm);
    }
    let (leader, first) = leads
        .recv_timeout(Duration::from_secs(30))
        .expect("no leader");
    assert!(first.contains("token 1"), "{first}");
    for i in 0..2 {
        let cache = dir.path().join(format!("cache-{i}"));
        let tm = command(&[
            "taskmanager",
            "--insecure",
            "--jobmanager",
            &address,
            "--slots",
            "2",
            "--data-addr",
            &format!("127.0.0.{}", i + 2),
            "--cache-dir",
            cache.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
        processes.push(tm);
    }
    std::thread::sleep(Duration::from_millis(1500));
    let client = command(&["run", "event-count", "--events", "60000", "--keys", "13"])
        .args([
            "--parallelism",
            "4",
            "--rate",
            "20000",
            "--wait",
            "--verify",
        ])
        .args([
            "--checkpoint-interval-ms",
            "100",
            "--restart",
            "fixed-delay:10:200ms",
        ])
        .arg("--checkpoint-dir")
        .arg(dir.path().join("checkpoints"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("HUMMER_JOBMANAGER", &address)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the job is submitted (its binary in the HA storage), and has run a while.
    let mut client = client;
    let mut stdout = std::io::BufReader::new(client.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    if !line.starts_with("submitted job ") {
        let output = client.wait_with_output().unwrap();
        panic!(
            "the client did not submit: {line}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::thread::sleep(Duration::from_millis(1000));
    Command::new("kill")
        .args(["-9", &leader.to_string()])
        .status()
        .unwrap();
    let (standby, second) = leads
        .recv_timeout(Duration::from_secs(30))
        .expect("the standby did not take over");
    assert_ne!(standby, leader);
    assert!(second.contains("token 2"), "{second}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let output = client.wait_with_output().unwrap();
    assert!(
        output.status.success() && rest.contains("every event exactly once"),
        "{rest}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for mut p in processes {
        let alive = p.id() == leader || p.try_wait().unwrap().is_none();
        let _ = p.kill();
        let _ = p.wait();
        assert!(alive, "a process other than the killed leader exited");
    }
}
