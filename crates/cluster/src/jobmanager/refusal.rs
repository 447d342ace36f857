//! Why the JobManager refuses a client's request; sent back as the text of an error message.

use crate::protocol::{JobId, JobStatus};
use crate::scheduler::PlacementError;

/// A request the JobManager cannot carry out.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The job's binary was not uploaded.
    #[error("artifact {0} is unknown: upload it before submitting")]
    UnknownArtifact(String),
    /// Some TaskManagers lack the data network the job asks for.
    #[error("data network '{network}' is not declared by TaskManager(s) {missing}")]
    MissingDataNetwork {
        /// The network's name.
        network: String,
        /// The TaskManagers without it, comma-separated.
        missing: String,
    },
    /// The job does not fit the cluster now.
    #[error(transparent)]
    NoRoom(#[from] PlacementError),
    /// The job's restore point cannot be read.
    #[error("cannot start the job: {0}")]
    CannotStart(String),
    /// No such job.
    #[error("no job with id {0}")]
    NoSuchJob(JobId),
    /// The job is not running.
    #[error("job {job} is {state:?}, not running")]
    NotRunning {
        /// The job.
        job: JobId,
        /// Its state.
        state: JobStatus,
    },
    /// A savepoint of a job that takes no checkpoints.
    #[error("job {0} does not take checkpoints")]
    NoCheckpoints(JobId),
    /// A savepoint while another is being taken.
    #[error("a savepoint of job {0} is already being taken")]
    SavepointPending(JobId),
    /// A savepoint without a directory.
    #[error("no savepoint directory given and the JobManager has none")]
    NoSavepointDirectory,
}
