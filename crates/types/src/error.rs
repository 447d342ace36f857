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
    /// A failure reported by another process (a worker, the JobManager), of the kind it had
    /// there.
    #[error("{0}")]
    Remote(ErrorReport),
    /// What was being done when `source` happened (see [`ResultExt::context`]).
    #[error("{context}: {source}")]
    Context {
        /// What was being done, e.g. "cannot register with JobManager 10.0.0.1:6123".
        context: String,
        /// The failure.
        #[source]
        source: Box<HummerError>,
    },
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

/// What kind of failure a [`HummerError`] is, without its data: it travels with a failure
/// between processes, so that a JobManager reading a worker's failure still tells a bad input
/// from a panic or a lost connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    /// [`HummerError::Operator`].
    Operator,
    /// [`HummerError::Panic`].
    Panic,
    /// [`HummerError::Io`].
    Io,
    /// [`HummerError::BadInput`].
    BadInput,
    /// [`HummerError::Network`].
    Network,
    /// [`HummerError::Connect`].
    Connect,
    /// [`HummerError::Kafka`].
    Kafka,
    /// [`HummerError::InvalidGraph`].
    InvalidGraph,
    /// [`HummerError::Config`].
    Config,
    /// [`HummerError::Cluster`].
    Cluster,
    /// [`HummerError::Worker`].
    Worker,
    /// [`HummerError::JobFailed`].
    JobFailed,
    /// [`HummerError::Checkpoint`].
    Checkpoint,
    /// [`HummerError::Cancelled`].
    Cancelled,
    /// [`HummerError::Internal`].
    Internal,
}

/// An error as it travels between processes: its kind and its text. Read back, it is a
/// [`HummerError::Remote`] of the same [`HummerError::kind`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorReport {
    /// The kind of the error's root cause.
    pub kind: ErrorKind,
    /// The error's text.
    pub message: String,
}

impl std::fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Adds what was being done to an error: `read(path).context("loading the savepoint")?`.
pub trait ResultExt<T> {
    /// Wraps the error in [`HummerError::Context`].
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// Like [`ResultExt::context`], with the text made only on failure.
    fn with_context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<HummerError>> ResultExt<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| e.into().context(context))
    }

    fn with_context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| e.into().context(context()))
    }
}

impl HummerError {
    /// Builds an [`HummerError::Io`] for `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HummerError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// Wraps the error in what was being done when it happened.
    pub fn context(self, context: impl Into<String>) -> Self {
        HummerError::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error this one wraps (attribution, worker report, verdict or context), if any.
    fn wrapped(&self) -> Option<&HummerError> {
        match self {
            HummerError::Operator { cause, .. }
            | HummerError::Worker { cause, .. }
            | HummerError::JobFailed { cause, .. }
            | HummerError::Context { source: cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// What went wrong at the bottom: the error under every operator attribution, worker
    /// report, restart-strategy verdict and context.
    pub fn root_cause(&self) -> &HummerError {
        self.wrapped().map_or(self, HummerError::root_cause)
    }

    /// What kind of error this is; a [`HummerError::Remote`] has the kind it had where it
    /// was raised, and a [`HummerError::Context`] the kind of what it wraps.
    pub fn kind(&self) -> ErrorKind {
        match self {
            HummerError::Operator { .. } => ErrorKind::Operator,
            HummerError::Panic(_) => ErrorKind::Panic,
            HummerError::Io { .. } => ErrorKind::Io,
            HummerError::BadInput { .. } => ErrorKind::BadInput,
            HummerError::Network { .. } => ErrorKind::Network,
            HummerError::Connect { .. } => ErrorKind::Connect,
            HummerError::Kafka { .. } => ErrorKind::Kafka,
            HummerError::InvalidGraph(_) => ErrorKind::InvalidGraph,
            HummerError::Config(_) => ErrorKind::Config,
            HummerError::Cluster(_) => ErrorKind::Cluster,
            HummerError::Remote(report) => report.kind,
            HummerError::Context { source, .. } => source.kind(),
            HummerError::Worker { .. } => ErrorKind::Worker,
            HummerError::JobFailed { .. } => ErrorKind::JobFailed,
            HummerError::Checkpoint { .. } => ErrorKind::Checkpoint,
            HummerError::Cancelled => ErrorKind::Cancelled,
            HummerError::Internal(_) => ErrorKind::Internal,
        }
    }

    /// The error as another process receives it: its text, with its root cause's kind.
    pub fn report(&self) -> ErrorReport {
        ErrorReport {
            kind: self.root_cause().kind(),
            message: self.to_string(),
        }
    }

    /// True for a failure that is likely the consequence of another one elsewhere (a data
    /// connection to a peer that failed broke): the peer's own report names the cause.
    pub fn is_secondary(&self) -> bool {
        self.root_cause().kind() == ErrorKind::Network
    }

    /// The operator and subtask the error is attributed to, if it is, however deep (under
    /// the worker or the restart strategy that reported it).
    pub fn failing_operator(&self) -> Option<(&str, usize)> {
        match self {
            HummerError::Operator {
                operator, subtask, ..
            } => Some((operator, *subtask)),
            other => other.wrapped()?.failing_operator(),
        }
    }

    /// The TaskManager whose worker reported the error, if one did.
    pub fn failing_task_manager(&self) -> Option<&str> {
        match self {
            HummerError::Worker { task_manager, .. } => Some(task_manager),
            HummerError::Operator { .. } => None,
            other => other.wrapped()?.failing_task_manager(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bad_input() -> HummerError {
        HummerError::BadInput {
            input: "events.csv".into(),
            reason: "line 3: not a number".into(),
        }
    }

    #[test]
    fn context_says_what_was_being_done_and_keeps_the_cause_and_its_kind() {
        let r: Result<()> = Err(bad_input());
        let err = r.context("loading the savepoint").unwrap_err();
        assert_eq!(
            err.to_string(),
            "loading the savepoint: bad input 'events.csv': line 3: not a number"
        );
        assert_eq!(err.kind(), ErrorKind::BadInput);
        assert!(matches!(err.root_cause(), HummerError::BadInput { .. }));
        let source = std::error::Error::source(&err).map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some("bad input 'events.csv': line 3: not a number")
        );
    }

    #[test]
    fn a_report_read_back_in_another_process_keeps_its_kind_and_text() {
        let err = bad_input().attribute("Parse", 1).context("running the job");
        let wire = postcard::to_allocvec(&err.root_cause().report()).unwrap();
        let back = HummerError::Remote(postcard::from_bytes(&wire).unwrap());
        assert_eq!(back.kind(), ErrorKind::BadInput);
        assert_eq!(back.to_string(), bad_input().to_string());
        assert_eq!(err.failing_operator(), Some(("Parse", 1)));
        let network = HummerError::Network {
            endpoint: "10.0.0.2:7000".into(),
            source: std::io::Error::other("reset"),
        };
        let lost = HummerError::Remote(network.report());
        assert!(lost.is_secondary() && network.context("sending").is_secondary());
        assert!(!back.is_secondary());
    }
}
