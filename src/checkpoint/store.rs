//! A checkpoint directory on the local filesystem.
//!
//! Layout: `DIR/chk-<id>/` holds one file per snapshot (named by the writer, e.g.
//! `op-3-subtask-1`) and `_metadata` (JSON: checkpoint id, creation time, every file with its
//! length and checksum). A checkpoint in progress lives in `DIR/chk-<id>.inprogress/` and is
//! renamed to `chk-<id>` only after its metadata is written, so a crash never leaves a
//! half-written checkpoint that looks complete. Recovery takes the newest complete checkpoint
//! whose files all match their metadata; a damaged one is skipped with a log line naming it and
//! what is wrong, and the one before it is tried.

use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{HummerError, Result};

/// What `_metadata` records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointMetadata {
    /// The checkpoint's id (increasing).
    pub id: u64,
    /// Milliseconds since the Unix epoch when it completed.
    pub completed_at_ms: u64,
    /// Every file: name -> (length, checksum).
    pub files: BTreeMap<String, (u64, u64)>,
}

/// A complete, verified checkpoint.
#[derive(Clone, Debug)]
pub struct CompletedCheckpoint {
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// Its directory.
    pub dir: PathBuf,
}

impl CompletedCheckpoint {
    /// The bytes of one of its files (verified when the checkpoint was found).
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(name);
        std::fs::read(&path).map_err(|e| HummerError::io("cannot read checkpoint file", &path, e))
    }
}

fn checksum(bytes: &[u8]) -> u64 {
    foldhash::fast::FixedState::with_seed(0x6368_6b70_7466_696c).hash_one(bytes)
}

/// The checkpoints of one job.
pub struct CheckpointStore {
    dir: PathBuf,
    retain: usize,
}

/// A checkpoint being written.
pub struct PendingCheckpoint {
    id: u64,
    dir: PathBuf,
    files: BTreeMap<String, (u64, u64)>,
}

impl CheckpointStore {
    /// A store in `dir` (created if missing) keeping the last `retain` checkpoints.
    pub fn open(dir: impl Into<PathBuf>, retain: usize) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|e| HummerError::io("cannot create checkpoint directory", &dir, e))?;
        Ok(CheckpointStore {
            dir,
            retain: retain.max(1),
        })
    }

    /// Starts checkpoint `id`.
    pub fn begin(&self, id: u64) -> Result<PendingCheckpoint> {
        let dir = self.dir.join(format!("chk-{id}.inprogress"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| HummerError::io("cannot clear checkpoint directory", &dir, e))?;
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| HummerError::io("cannot create checkpoint directory", &dir, e))?;
        Ok(PendingCheckpoint {
            id,
            dir,
            files: BTreeMap::new(),
        })
    }

    /// Completes a checkpoint: metadata last, then the directory renamed into place; older
    /// checkpoints beyond the retained ones are removed.
    pub fn complete(&self, pending: PendingCheckpoint) -> Result<CheckpointMetadata> {
        let metadata = CheckpointMetadata {
            id: pending.id,
            completed_at_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            files: pending.files,
        };
        let meta_path = pending.dir.join("_metadata");
        let json = serde_json::to_vec_pretty(&metadata)
            .map_err(|e| HummerError::Internal(format!("checkpoint metadata: {e}")))?;
        std::fs::write(&meta_path, json)
            .map_err(|e| HummerError::io("cannot write checkpoint metadata", &meta_path, e))?;
        let done = self.dir.join(format!("chk-{}", pending.id));
        std::fs::rename(&pending.dir, &done)
            .map_err(|e| HummerError::io("cannot complete checkpoint", &done, e))?;
        self.prune()?;
        Ok(metadata)
    }

    /// Ids of complete checkpoints, newest first.
    pub fn ids(&self) -> Result<Vec<u64>> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| HummerError::io("cannot list checkpoints", &self.dir, e))?;
        let mut ids: Vec<u64> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok())
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(ids)
    }

    fn prune(&self) -> Result<()> {
        for id in self.ids()?.into_iter().skip(self.retain) {
            let dir = self.dir.join(format!("chk-{id}"));
            std::fs::remove_dir_all(&dir)
                .map_err(|e| HummerError::io("cannot remove old checkpoint", &dir, e))?;
        }
        Ok(())
    }

    /// Checks one checkpoint: its metadata parses and every file has its recorded length and
    /// checksum.
    fn verify(&self, id: u64) -> std::result::Result<CompletedCheckpoint, String> {
        let dir = self.dir.join(format!("chk-{id}"));
        let meta = std::fs::read(dir.join("_metadata")).map_err(|e| format!("no metadata: {e}"))?;
        let metadata: CheckpointMetadata =
            serde_json::from_slice(&meta).map_err(|e| format!("unreadable metadata: {e}"))?;
        if metadata.id != id {
            return Err(format!("metadata says checkpoint {}", metadata.id));
        }
        for (name, (len, sum)) in &metadata.files {
            let bytes = std::fs::read(dir.join(name)).map_err(|e| format!("file {name}: {e}"))?;
            if bytes.len() as u64 != *len {
                return Err(format!(
                    "file {name} has {} bytes, {len} expected",
                    bytes.len()
                ));
            }
            if checksum(&bytes) != *sum {
                return Err(format!("file {name} fails its checksum"));
            }
        }
        Ok(CompletedCheckpoint { metadata, dir })
    }

    /// The newest checkpoint that is whole; damaged ones are skipped with a log line.
    pub fn latest_valid(&self) -> Result<Option<CompletedCheckpoint>> {
        for id in self.ids()? {
            match self.verify(id) {
                Ok(c) => return Ok(Some(c)),
                Err(reason) => tracing::warn!(
                    "checkpoint {id} in {} is damaged ({reason}); falling back to the one before",
                    self.dir.display()
                ),
            }
        }
        Ok(None)
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The checkpoint (or savepoint) at `path`: either one checkpoint's directory (`.../chk-7`) or
/// a directory of checkpoints, whose newest whole one is taken.
pub fn find_checkpoint(path: &Path) -> Result<CompletedCheckpoint> {
    let bad = |reason: String| HummerError::BadInput {
        input: path.display().to_string(),
        reason,
    };
    if !path.is_dir() {
        return Err(bad("no such checkpoint or savepoint directory".into()));
    }
    if path.join("_metadata").exists() {
        let id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("chk-"))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| bad("a checkpoint directory must be named chk-<id>".into()))?;
        let parent = path.parent().unwrap_or(Path::new("."));
        let store = CheckpointStore {
            dir: parent.to_path_buf(),
            retain: usize::MAX,
        };
        return store
            .verify(id)
            .map_err(|reason| bad(format!("damaged checkpoint: {reason}")));
    }
    let store = CheckpointStore {
        dir: path.to_path_buf(),
        retain: usize::MAX,
    };
    store
        .latest_valid()?
        .ok_or_else(|| bad("holds no complete checkpoint".into()))
}

impl PendingCheckpoint {
    /// Writes one snapshot file of the checkpoint.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        if name.is_empty() || name.contains('/') || name.starts_with('_') {
            return Err(HummerError::Internal(format!(
                "bad checkpoint file name '{name}'"
            )));
        }
        let path = self.dir.join(name);
        std::fs::write(&path, bytes)
            .map_err(|e| HummerError::io("cannot write checkpoint file", &path, e))?;
        self.files
            .insert(name.to_string(), (bytes.len() as u64, checksum(bytes)));
        Ok(())
    }

    /// The checkpoint's id.
    pub fn id(&self) -> u64 {
        self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(store: &CheckpointStore, id: u64) {
        let mut p = store.begin(id).unwrap();
        p.write("op-1-subtask-0", format!("state of {id}").as_bytes())
            .unwrap();
        p.write("op-2-subtask-0", &[id as u8; 100]).unwrap();
        store.complete(p).unwrap();
    }

    #[test]
    fn keeps_the_last_n_and_recovers_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::open(dir.path(), 2).unwrap();
        assert!(store.latest_valid().unwrap().is_none());
        for id in 1..=4 {
            checkpoint(&store, id);
        }
        assert_eq!(store.ids().unwrap(), vec![4, 3]);
        let latest = store.latest_valid().unwrap().unwrap();
        assert_eq!(latest.metadata.id, 4);
        assert_eq!(latest.read("op-1-subtask-0").unwrap(), b"state of 4");
    }

    #[test]
    fn damaged_or_unfinished_checkpoints_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::open(dir.path(), 5).unwrap();
        for id in 1..=3 {
            checkpoint(&store, id);
        }
        // Checkpoint 3: a truncated file. Checkpoint 2: a flipped byte.
        let f3 = dir.path().join("chk-3/op-2-subtask-0");
        std::fs::write(&f3, [3u8; 50]).unwrap();
        let f2 = dir.path().join("chk-2/op-1-subtask-0");
        let mut bytes = std::fs::read(&f2).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&f2, bytes).unwrap();
        // An unfinished checkpoint 4 never counts.
        let mut pending = store.begin(4).unwrap();
        pending.write("op-1-subtask-0", b"half").unwrap();
        let latest = store.latest_valid().unwrap().unwrap();
        assert_eq!(latest.metadata.id, 1);
        // Garbage metadata is skipped too.
        std::fs::write(dir.path().join("chk-1/_metadata"), b"{not json").unwrap();
        assert!(store.latest_valid().unwrap().is_none());
    }
}
