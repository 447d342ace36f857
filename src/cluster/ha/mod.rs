//! High availability of the JobManager: what a new leader needs to take over, kept in a
//! directory on shared storage (the HA directory, `--ha-dir`).
//!
//! * [`lease`]: leader election by a lease with a fencing token.
//! * [`HaStore`]: the job store. One JSON record per job (its submission, the attempt last
//!   deployed, its end once it ended), the job binaries by sha256 and the counter of job ids.
//!   Every file is written aside, synced and renamed into place, so a crash at any moment
//!   leaves either the old or the new version, never a mix. The latest completed checkpoint of
//!   a job is found in its own checkpoint directory, whose newest whole checkpoint is the
//!   restore point (written last, verified on load: see `crate::checkpoint::store`).
//!
//! A new leader loads the store, keeps the ended jobs for listing and resumes every other one
//! from its latest completed checkpoint, with an attempt number above any the old leader
//! used, so that reports of the old attempts are ignored. TaskManagers and clients find the
//! leader through the lease: an address written `ha:DIR` ([`resolve`]) is the RPC address of
//! the current leader of the HA directory `DIR`.

pub mod lease;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cluster::protocol::{JobId, JobState, SubmitRequest};
use crate::error::{HummerError, Result};

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

/// Writes `bytes` to `path` so that a crash leaves the old file or the new one: written to a
/// temporary file beside it, renamed over it; with `durable`, the file and the directory are
/// synced too (a lease is not: a sync can wait seconds behind a large write, longer than a
/// lease, and a lease lost in a host crash just lapses).
pub fn write_atomically(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let fail = |e| HummerError::io("cannot write", path, e);
    let mut file = std::fs::File::create(&tmp).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    if durable {
        file.sync_all().map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)?;
    if durable && let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
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
    pub ended: Option<JobState>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// The job store of an HA directory.
#[derive(Clone, Debug)]
pub struct HaStore {
    dir: PathBuf,
}

impl HaStore {
    /// The store in `dir` (created if missing).
    pub fn open(dir: &Path) -> Result<HaStore> {
        for sub in ["jobs", "artifacts"] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d)
                .map_err(|e| HummerError::io("cannot create the HA directory", &d, e))?;
        }
        Ok(HaStore {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Saves a job's record (replacing the one before).
    pub fn save_job(&self, record: &JobRecord) -> Result<()> {
        let json = serde_json::to_vec_pretty(record)
            .map_err(|e| crate::error::internal!("job record: {e}"))?;
        write_atomically(&self.job_path(&record.id), &json, true)
    }

    fn job_path(&self, id: &str) -> PathBuf {
        self.dir.join("jobs").join(format!("{id}.json"))
    }

    /// Every job record; an unreadable one is skipped with a log line naming it.
    pub fn load_jobs(&self) -> Result<Vec<JobRecord>> {
        let dir = self.dir.join("jobs");
        let entries =
            std::fs::read_dir(&dir).map_err(|e| HummerError::io("cannot list jobs", &dir, e))?;
        let mut jobs = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<JobRecord>(&b).map_err(|e| e.to_string()))
            {
                Ok(record) => jobs.push(record),
                Err(e) => tracing::warn!("skipping job record {}: {e}", path.display()),
            }
        }
        jobs.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(jobs)
    }

    /// Saves a job binary under its sha256 (once).
    pub fn save_artifact(&self, sha256: &str, bytes: &[u8]) -> Result<()> {
        let path = self.artifact_path(sha256)?;
        if path.exists() {
            return Ok(());
        }
        write_atomically(&path, bytes, true)
    }

    /// A saved job binary.
    pub fn load_artifact(&self, sha256: &str) -> Result<Option<Vec<u8>>> {
        let path = self.artifact_path(sha256)?;
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HummerError::io("cannot read artifact", &path, e)),
        }
    }

    fn artifact_path(&self, sha256: &str) -> Result<PathBuf> {
        if sha256.is_empty() || !sha256.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(HummerError::BadInput {
                input: sha256.to_string(),
                reason: "not a sha256 in hex".into(),
            });
        }
        Ok(self.dir.join("artifacts").join(sha256))
    }

    /// Takes the next job number (the counter survives leaders).
    pub fn next_job_number(&self) -> Result<u64> {
        let path = self.dir.join("next-job");
        let current = match std::fs::read_to_string(&path) {
            Ok(text) => text
                .trim()
                .parse::<u64>()
                .map_err(|e| HummerError::BadInput {
                    input: path.display().to_string(),
                    reason: format!("not a number: {e}"),
                })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(HummerError::io("cannot read", &path, e)),
        };
        write_atomically(&path, (current + 1).to_string().as_bytes(), true)?;
        Ok(current + 1)
    }
}
