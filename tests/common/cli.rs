//! The `hummer` binary run as a client of a JobManager (an address, or `ha:DIR` for the
//! leader of an HA directory).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_hummer");

/// Runs `hummer ARGS...` against `jobmanager`.
pub fn hummer(jobmanager: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("HUMMER_JOBMANAGER", jobmanager)
        .output()
        .unwrap()
}

/// What `hummer status ID` prints.
pub fn job_status(jobmanager: &str, id: &str) -> String {
    String::from_utf8_lossy(&hummer(jobmanager, &["status", id]).stdout).to_string()
}

/// Waits until the job's status shows `state`; returns how long that took. Panics after
/// `timeout` with the status and `details()` (logs, say).
pub fn wait_for_job_status(
    jobmanager: &str,
    id: &str,
    state: &str,
    timeout: Duration,
    details: impl Fn() -> String,
) -> Duration {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if job_status(jobmanager, id).contains(state) {
            return started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "job {id} not {state} after {timeout:?}: {}\n{}",
        job_status(jobmanager, id),
        details()
    );
}
