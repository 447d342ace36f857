//! High availability of the JobManager: what a new leader needs to take over, kept in the HA
//! storage (`--ha-dir`): a directory on shared storage, or a prefix in an object store
//! (`s3://bucket/ha`, through `object_store`).
//!
//! * [`lease`]: leader election by a lease with a fencing token.
//! * [`HaStore`]: the job store. One JSON record per job (its submission, the attempt last
//!   deployed, its end once it ended) and the job binaries by sha256. Every file is written
//!   whole or not at all (aside, synced and renamed in a directory; a put in an object store),
//!   so a crash at any moment leaves either the old or the new version. Job ids start with the
//!   leader's fencing token, so leaders never hand out the same id. The latest completed checkpoint of
//!   a job is found in its own checkpoint directory, whose newest whole checkpoint is the
//!   restore point (written last, verified on load: see `crate::checkpoint::store`).
//!
//! A new leader loads the store, keeps the ended jobs for listing and resumes every other one
//! from its latest completed checkpoint, with an attempt number above any the old leader
//! used, so that reports of the old attempts are ignored. TaskManagers and clients find the
//! leader through the lease: an address written `ha:DIR` ([`resolve`]) is the RPC address of
//! the current leader of the HA directory `DIR`.

pub mod lease;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checkpoint::backend::Storage;
use crate::error::{HummerError, Result};
use crate::protocol::{JobId, JobStatus, SubmitRequest};

/// The HA directory an address names (`ha:DIR`), if it names one rather than a JobManager:
/// then the leader may change, and a connection lost is made again to the next one.
pub fn ha_dir(address: &str) -> Option<&Path> {
    address.strip_prefix("ha:").map(Path::new)
}

/// The RPC address a client or TaskManager should connect to: `address` itself, or for
/// `ha:DIR` the current leader's (an error naming the directory if nobody leads).
pub fn resolve(address: &str) -> Result<String> {
    let Some(dir) = ha_dir(address) else {
        return Ok(address.to_string());
    };
    match lease::read_lease(dir)? {
        Some(lease) => Ok(lease.rpc),
        None => Err(HummerError::Cluster(format!(
            "no JobManager leads the HA directory {} (no lease yet)",
            dir.display()
        ))),
    }
}

/// What the job store keeps of a job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job's id.
    pub id: JobId,
    /// Its submission (settings, artifact, recovery).
    pub request: SubmitRequest,
    /// The attempt last deployed.
    pub attempt: u32,
    /// The parallelism of each vertex in that attempt (a new leader waits for as many slots
    /// before it resumes the job, for a while).
    pub parallelism: Vec<usize>,
    /// How it ended, once it did.
    pub ended: Option<JobStatus>,
    /// Why it failed, if it did.
    pub error: Option<crate::error::ErrorReport>,
}

/// The job store of an HA storage.
#[derive(Clone, Debug)]
pub struct HaStore {
    jobs: Storage,
    artifacts: Storage,
}

impl HaStore {
    /// The store at `location` (a directory, created if missing, or an object store URL).
    pub fn open(location: &Path) -> Result<HaStore> {
        let root = Storage::open(location)?;
        let (jobs, artifacts) = (root.child("jobs"), root.child("artifacts"));
        jobs.create()?;
        artifacts.create()?;
        Ok(HaStore { jobs, artifacts })
    }

    /// Saves a job's record (replacing the one before).
    pub fn save_job(&self, record: &JobRecord) -> Result<()> {
        let json = serde_json::to_vec_pretty(record)
            .map_err(|e| crate::error::internal!("job record: {e}"))?;
        self.jobs
            .write_durably(&format!("{}.json", record.id), &json)
    }

    /// Every job record; an unreadable one is skipped with a log line naming it.
    pub fn load_jobs(&self) -> Result<Vec<JobRecord>> {
        let mut jobs = Vec::new();
        for name in self.jobs.list_files()? {
            if !name.ends_with(".json") {
                continue;
            }
            match self
                .jobs
                .read(&name)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<JobRecord>(&b).map_err(|e| e.to_string()))
            {
                Ok(record) => jobs.push(record),
                Err(e) => tracing::warn!("skipping job record {name}: {e}"),
            }
        }
        jobs.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(jobs)
    }

    /// Saves a job binary under its sha256 (once).
    pub fn save_artifact(&self, sha256: &str, bytes: &[u8]) -> Result<()> {
        check_sha256(sha256)?;
        if self.artifacts.read_versioned(sha256)?.is_some() {
            return Ok(());
        }
        self.artifacts.write_durably(sha256, bytes)
    }

    /// A saved job binary.
    pub fn load_artifact(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        check_sha256(sha256)?;
        Ok(self
            .artifacts
            .read_versioned(sha256)?
            .map(|(bytes, _)| bytes))
    }
}

fn check_sha256(sha256: &str) -> Result<()> {
    if sha256.is_empty() || !sha256.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(HummerError::BadInput {
            input: sha256.to_string(),
            reason: "not a sha256 in hex".into(),
        });
    }
    Ok(())
}
