//! The failures of a job, as its history of exceptions: what the dashboard and REST show
//! under "exceptions" (Flink's exception history), root cause first.

use serde::{Deserialize, Serialize};

use crate::error::HummerError;

/// Failures kept per job, the newest.
pub const EXCEPTIONS_KEPT: usize = 100;

/// One failure of a job's attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExceptionRecord {
    /// Milliseconds since the Unix epoch when it was reported.
    pub at_ms: u64,
    /// The attempt that failed.
    pub attempt: u32,
    /// What went wrong at the bottom (under the operator and worker that reported it).
    pub root_cause: String,
    /// The whole error as reported.
    pub error: String,
    /// The operator it is attributed to, if any.
    pub operator: Option<String>,
    /// The operator's subtask.
    pub subtask: Option<usize>,
    /// The TaskManager whose worker reported it, if one did.
    pub task_manager: Option<String>,
    /// True if the job restarted after it; false if the job failed for good.
    pub restarted: bool,
}

impl ExceptionRecord {
    /// The record of `error`, a failure of `attempt`.
    pub fn of(error: &HummerError, attempt: u32, restarted: bool) -> Self {
        let operator = error.failing_operator();
        ExceptionRecord {
            at_ms: crate::types::epoch_ms(),
            attempt,
            root_cause: error.root_cause().to_string(),
            error: error.to_string(),
            operator: operator.map(|(o, _)| o.to_string()),
            subtask: operator.map(|(_, s)| s),
            task_manager: error.failing_task_manager().map(str::to_string),
            restarted,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_cause_is_found_under_the_worker_and_the_operator() {
        let error = HummerError::Worker {
            task_manager: "tm-2".into(),
            cause: Box::new(HummerError::Operator {
                operator: "Map".into(),
                subtask: 3,
                cause: Box::new(HummerError::Panic("boom".into())),
            }),
        };
        let r = ExceptionRecord::of(&error, 2, true);
        assert_eq!(r.root_cause, "panic: boom");
        assert_eq!(r.operator.as_deref(), Some("Map"));
        assert_eq!(r.subtask, Some(3));
        assert_eq!(r.task_manager.as_deref(), Some("tm-2"));
        assert_eq!(
            r.error,
            "worker on TaskManager tm-2: operator 'Map' (subtask 3) failed: panic: boom"
        );
        let remote = HummerError::Remote(crate::error::ErrorReport {
            kind: crate::error::ErrorKind::BadInput,
            message: "lost".into(),
        });
        let plain = ExceptionRecord::of(&remote.context("reading"), 1, false);
        assert_eq!((plain.root_cause.as_str(), plain.operator), ("lost", None));
    }
}
