//! The `hummer` binary run as a client of a JobManager (an address, or `ha:DIR` for the
//! leader of an HA directory), with the cluster's TLS directory if it has one.

use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use super::eventually;

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

    /// Runs `hummer ARGS...` against the cluster and asserts that it succeeded, showing its
    /// stderr if it did not.
    pub fn hummer_ok(&self, args: &[&str]) -> Output {
        let run = self.hummer(args);
        assert!(
            run.status.success(),
            "hummer {args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        run
    }

    /// What `hummer status ID` prints.
    pub fn job_status(&self, id: &str) -> String {
        String::from_utf8_lossy(&self.hummer(&["status", id]).stdout).to_string()
    }

    /// Waits until the job's status shows `state`; returns how long that took. Panics after
    /// `timeout` with the last status.
    pub fn wait_for_job_status(&self, id: &str, state: &str, timeout: Duration) -> Duration {
        let started = Instant::now();
        eventually(timeout, &format!("job {id} {state}"), || {
            let status = self.job_status(id);
            if status.contains(state) {
                Ok(())
            } else {
                Err(status)
            }
        });
        started.elapsed()
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
