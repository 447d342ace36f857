//! The one error type of the engine.
//!
//! Every fallible call in the library returns [`Result`]. The variants say *where* a failure
//! came from (user code, an input, the graph, the configuration) so that a user reading the
//! message knows what to fix; binaries wrap them in `anyhow` at the edge.
//!
//! The lowest module of the lowest crate (`hummer-types`): imports nothing of the workspace.

use std::path::PathBuf;

/// Errors raised while building, translating or running a job.
#[derive(Debug, thiserror::Error)]
pub enum HummerError {
    /// An operator (its user function, or a source or sink) failed. Names the operator and
    /// the subtask so that the failing piece can be found; `cause` says what happened.
    #[error("operator '{operator}' (subtask {subtask}) failed: {cause}")]
    Operator {
        /// The operator's name as shown by `explain()`.
        operator: String,
        /// Zero-based index of the parallel subtask that failed.
        subtask: usize,
        /// What went wrong.
        #[source]
        cause: Box<HummerError>,
    },
    /// User code panicked; holds the panic message.
    #[error("panic: {0}")]
    Panic(String),
    /// A file or directory could not be read or written.
    #[error("{action} '{path}': {source}")]
    Io {
        /// What was being done, e.g. "cannot read input".
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An input was readable but its content is not acceptable.
    #[error("bad input '{input}': {reason}")]
    BadInput {
        /// The input (file, socket address, ...) that holds the bad data.
        input: String,
        /// What is wrong with it, with a position where one is known.
        reason: String,
    },
    /// A network endpoint could not be reached or failed while in use.
    #[error("network endpoint '{endpoint}': {source}")]
    Network {
        /// `host:port` of the peer.
        endpoint: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A connection to a peer (a JobManager, a TaskManager) could not be opened or secured;
    /// `hint` says what a user can do about it.
    #[error("cannot connect to {peer}: {source}; {hint}")]
    Connect {
        /// What was being connected to, with its address.
        peer: String,
        /// The operating system's or the TLS layer's error.
        #[source]
        source: std::io::Error,
        /// What to check or do.
        hint: &'static str,
    },
    /// A Kafka broker could not be reached, refused a request, or sent what cannot be read.
    #[error("kafka {target}: {reason}")]
    Kafka {
        /// What was being read or written: the brokers, a topic, a partition, an offset.
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// The job graph is not valid (detected at `execute()` or `explain()`).
    #[error("invalid job graph: {0}")]
    InvalidGraph(String),
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The cluster refused a request or a job failed there.
    #[error("cluster: {0}")]
    Cluster(String),
    /// A failure reported by another process (a worker, the JobManager), as its text.
    #[error("{0}")]
    Remote(String),
    /// A worker of a cluster job failed: where it ran, and its failure.
    #[error("worker on TaskManager {task_manager}: {cause}")]
    Worker {
        /// The TaskManager the worker ran on.
        task_manager: String,
        /// What the worker reported.
        #[source]
        cause: Box<HummerError>,
    },
    /// The job failed and its restart strategy allows no more restarts.
    #[error("job failed and will not be restarted ({reason}); last failure: {cause}")]
    JobFailed {
        /// Which limit of the restart strategy was reached.
        reason: String,
        /// The failure that ended the job.
        #[source]
        cause: Box<HummerError>,
    },
    /// A checkpoint cannot be completed (the job goes on; a later checkpoint may complete).
    #[error("checkpoint {checkpoint}: {reason}")]
    Checkpoint {
        /// The checkpoint.
        checkpoint: u64,
        /// Why it cannot be completed.
        reason: String,
    },
    /// The job was cancelled before it finished.
    #[error("job cancelled")]
    Cancelled,
    /// An invariant of the engine itself was broken: a bug in Hummer, not in the job.
    #[error("internal error: {0}")]
    Internal(String),
}

/// `Result` with [`HummerError`] as the error.
pub type Result<T, E = HummerError> = std::result::Result<T, E>;

impl HummerError {
    /// Builds an [`HummerError::Io`] for `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HummerError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// What went wrong at the bottom: the error under every operator attribution, worker
    /// report and restart-strategy verdict.
    pub fn root_cause(&self) -> &HummerError {
        match self {
            HummerError::Operator { cause, .. }
            | HummerError::Worker { cause, .. }
            | HummerError::JobFailed { cause, .. } => cause.root_cause(),
            other => other,
        }
    }

    /// The operator and subtask the error is attributed to, if it is, however deep (under
    /// the worker or the restart strategy that reported it).
    pub fn failing_operator(&self) -> Option<(&str, usize)> {
        match self {
            HummerError::Operator {
                operator, subtask, ..
            } => Some((operator, *subtask)),
            HummerError::Worker { cause, .. } | HummerError::JobFailed { cause, .. } => {
                cause.failing_operator()
            }
            _ => None,
        }
    }

    /// The TaskManager whose worker reported the error, if one did.
    pub fn failing_task_manager(&self) -> Option<&str> {
        match self {
            HummerError::Worker { task_manager, .. } => Some(task_manager),
            HummerError::JobFailed { cause, .. } => cause.failing_task_manager(),
            _ => None,
        }
    }

    /// True for errors that already name the failing operator (they pass through the chain
    /// unchanged instead of being attributed to every operator they travel through).
    pub fn is_attributed(&self) -> bool {
        matches!(self, HummerError::Operator { .. } | HummerError::Cancelled)
    }

    /// Attributes an error raised inside an operator to that operator and subtask.
    pub fn attribute(self, operator: &str, subtask: usize) -> Self {
        if self.is_attributed() {
            self
        } else {
            HummerError::Operator {
                operator: operator.to_string(),
                subtask,
                cause: Box::new(self),
            }
        }
    }
}

/// A [`HummerError::Internal`] from format arguments: `internal!("chain {id} has no head")`.
#[macro_export]
macro_rules! internal {
    ($($arg:tt)*) => {
        $crate::error::HummerError::Internal(format!($($arg)*))
    };
}
pub use crate::internal;

/// Turns a caught panic payload into readable text.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic with a non-text payload)".to_string()
    }
}
