//! The `hummer` binary run as a client of a JobManager (an address, or `ha:DIR` for the
//! leader of an HA directory), with the cluster's TLS directory if it has one.

use std::path::PathBuf;
use std::process::{Command, Output};
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
