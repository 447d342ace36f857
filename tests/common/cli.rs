//! The `hummer` binary run as a client of a JobManager (an address, or `ha:DIR` for the
//! leader of an HA directory), with the cluster's TLS directory if it has one.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_hummer");

/// How a client reaches a cluster.
#[derive(Clone, Debug)]
pub struct Client {
    /// The JobManager's address (`HUMMER_JOBMANAGER`).
    pub jobmanager: String,
    /// The cluster's TLS directory (`HUMMER_TLS_DIR`), `None` for a plaintext cluster.
    pub tls_dir: Option<PathBuf>,
}

impl Client {
    /// A client of the plaintext cluster at `jobmanager`.
    pub fn plaintext(jobmanager: &str) -> Client {
        Client {
            jobmanager: jobmanager.to_string(),
            tls_dir: None,
        }
    }

    /// `hummer ARGS...` set up to reach the cluster (to add to before running it).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("HUMMER_JOBMANAGER", &self.jobmanager)
            .env("HUMMER_TLS_DIR", self.tls_dir.clone().unwrap_or_default());
        command
    }

    /// Runs `hummer ARGS...` against the cluster.
    pub fn hummer(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// What `hummer status ID` prints.
    pub fn job_status(&self, id: &str) -> String {
        String::from_utf8_lossy(&self.hummer(&["status", id]).stdout).to_string()
    }

    /// Waits until the job's status shows `state`; returns how long that took. Panics after
    /// `timeout` with the status and `details()` (logs, say).
    pub fn wait_for_job_status(
        &self,
        id: &str,
        state: &str,
        timeout: Duration,
        details: impl Fn() -> String,
    ) -> Duration {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if self.job_status(id).contains(state) {
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "job {id} not {state} after {timeout:?}: {}\n{}",
            self.job_status(id),
            details()
        );
    }
}

/// The id of the job a client child process submitted: its first stdout line,
/// `submitted job ID`. Reads byte by byte, so the rest of the child's stdout stays in its pipe
/// for the caller.
pub fn submitted_job_id(child: &mut Child) -> String {
    use std::io::Read;
    let out = child.stdout.as_mut().expect("piped stdout");
    let mut line = Vec::new();
    let mut byte = [0u8];
    while out.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&line).to_string();
    line.trim()
        .strip_prefix("submitted job ")
        .unwrap_or_else(|| panic!("no job id in the client's first line {line:?}"))
        .to_string()
}

/// Reads the child's stdout until a line starting with each prefix was seen; returns the rest
/// of those lines, in the order of `prefixes`, and keeps draining the pipe in the background.
pub fn read_lines(child: &mut Child, prefixes: &[&str]) -> Vec<String> {
    let out = child.stdout.take().expect("piped stdout");
    let mut reader = BufReader::new(out);
    let mut found: Vec<Option<String>> = vec![None; prefixes.len()];
    let mut line = String::new();
    while found.iter().any(Option::is_none) {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "process ended before {prefixes:?}"
        );
        for (i, p) in prefixes.iter().enumerate() {
            if let Some(rest) = line.trim().strip_prefix(p) {
                found[i] = Some(rest.to_string());
            }
        }
    }
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    found.into_iter().flatten().collect()
}

/// The body of `GET path` on a plain-HTTP REST address.
pub fn http_get_text(address: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(address).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    response.split("\r\n\r\n").nth(1).unwrap_or("").to_string()
}
