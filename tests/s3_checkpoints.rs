//! Checkpoints in an S3-compatible object store: a real S3 server (moto, installed into
//! `/var/tmp/hummer-moto` on first use from PyPI) holds the checkpoints of an EventCount job
//! that fails once and recovers from them, exactly once.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_hummer");

/// The moto S3 server, installed in a virtualenv of its own if missing.
fn moto_server() -> PathBuf {
    let venv = PathBuf::from("/var/tmp/hummer-moto");
    let server = venv.join("bin/moto_server");
    if !server.exists() {
        let lock = std::fs::File::create("/var/tmp/hummer-moto.lock").unwrap();
        // Two test processes must not install at once.
        let _guard = fs_lock(&lock);
        if !server.exists() {
            let ok = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .unwrap()
                .success()
                && Command::new(venv.join("bin/pip"))
                    .args(["install", "-q", "moto[server]==5.1.*"])
                    .status()
                    .unwrap()
                    .success();
            assert!(ok, "cannot install the moto S3 server from PyPI");
        }
    }
    server
}

fn fs_lock(file: &std::fs::File) -> impl Drop + '_ {
    struct Unlock<'a>(&'a std::fs::File);
    impl Drop for Unlock<'_> {
        fn drop(&mut self) {
            let _ = self.0.unlock();
        }
    }
    file.lock().unwrap();
    Unlock(file)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http(port: u16, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    (response[9..12].parse().unwrap(), response)
}

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
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "moto did not start"
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
        listing.contains("/_metadata</Key>") && listing.contains("/task-0</Key>"),
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
