//! A checkpoint directory on the local filesystem.
//!
//! The directory may also be an object store URL (`s3://bucket/prefix`, see
//! [`crate::backend`]); there a checkpoint is written in place and its metadata,
//! written last, marks it complete.
//!
//! Layout: `DIR/chk-<id>/` holds one file per snapshot (named by the writer, e.g.
//! `op-3-subtask-1`) and `_metadata` (JSON: checkpoint id, creation time, every file with its
//! length and checksum). A checkpoint in progress lives in `DIR/chk-<id>.inprogress/` and is
//! renamed to `chk-<id>` only after its metadata is written, so a crash never leaves a
//! half-written checkpoint that looks complete. Recovery takes the newest complete checkpoint
//! whose files all match their metadata; a damaged one is skipped with a log line naming it and
//! what is wrong, and the one before it is tried.
//!
//! **Shared state files.** Operator state is not in a checkpoint's own directory: the tasks
//! write it as immutable files of `DIR/shared/` ([`crate::shared`]), and a checkpoint's task
//! files reference them. `_metadata` lists every shared file the checkpoint references, with
//! its length and checksum (`shared`), so a checkpoint is verified with its shared files, and a
//! file stays as long as a retained checkpoint lists it: retention deletes a shared file only
//! when none does. A delta's chain of files is listed whole by every checkpoint that needs it,
//! so no checkpoint depends on another one's directory. Checkpoints of earlier builds, whose
//! deltas name whole earlier checkpoints as `bases`, are still kept with those, verified and
//! read ([`CompletedCheckpoint::base`]). A savepoint is a copy with every reference and delta
//! resolved into its own files ([`copy_checkpoint`]), so it stands alone.

use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::Storage;
use crate::error::{HummerError, Result, internal};
use crate::shared::{SHARED_DIR, StateRef};

/// What `_metadata` records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointMetadata {
    /// The checkpoint's id (increasing).
    pub id: u64,
    /// Milliseconds since the Unix epoch when it completed.
    pub completed_at_ms: u64,
    /// Every file: name -> (length, checksum).
    pub files: BTreeMap<String, (u64, u64)>,
    /// How the checksums were computed (checkpoints of earlier builds: foldhash).
    #[serde(default)]
    pub checksum: ChecksumKind,
    /// Earlier checkpoints whose files this one's deltas build on, transitively, each with
    /// the nonce of the very checkpoint meant (empty: it stands alone).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bases: BTreeMap<u64, u64>,
    /// A random number telling this checkpoint from another of the same id (a later attempt
    /// may write a checkpoint with the id of one an earlier attempt left unfinished or
    /// damaged); bases are named by id and nonce.
    #[serde(default)]
    pub nonce: u64,
    /// The shared state files its task files reference (see [`crate::shared`]): name ->
    /// (length, CRC-32).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shared: BTreeMap<String, (u64, u64)>,
}

/// The checksum of the files of a checkpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChecksumKind {
    /// foldhash of the whole file, as earlier builds wrote (it cannot be computed part by part).
    #[default]
    Foldhash,
    /// CRC-32 (IEEE), computed as the parts are written.
    Crc32,
}

impl ChecksumKind {
    /// The checksum of a whole file.
    fn of(self, bytes: &[u8]) -> u64 {
        match self {
            ChecksumKind::Foldhash => {
                foldhash::fast::FixedState::with_seed(0x6368_6b70_7466_696c).hash_one(bytes)
            }
            ChecksumKind::Crc32 => crc32_of(&[bytes]),
        }
    }
}

/// The CRC-32 of a file made of `parts` (what this build writes).
fn crc32_of(parts: &[&[u8]]) -> u64 {
    let mut h = crc32fast::Hasher::new();
    parts.iter().for_each(|p| h.update(p));
    u64::from(h.finalize())
}

/// A complete, verified checkpoint.
#[derive(Clone, Debug)]
pub struct CompletedCheckpoint {
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// Its location (a directory, or an object store URL).
    pub dir: PathBuf,
    storage: Storage,
    /// The checkpoints its deltas build on (`metadata.bases`), verified with it.
    bases: Vec<CompletedCheckpoint>,
    /// Where the shared state files it references are.
    shared: Option<Storage>,
}

impl CompletedCheckpoint {
    /// The bytes of one of its files (verified when the checkpoint was found).
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.storage.read(name)
    }

    /// The bytes of a shared state file one of its task files references, checked against
    /// the reference; a file the checkpoint does not list is refused.
    pub fn read_shared(&self, reference: &StateRef) -> Result<Vec<u8>> {
        let listed = self.metadata.shared.get(&reference.file);
        match (&self.shared, listed) {
            (Some(shared), Some(_)) => reference.read(shared),
            _ => Err(HummerError::BadInput {
                input: self.dir.display().to_string(),
                reason: format!(
                    "a task file references state file {}, which the checkpoint does not list",
                    reference.file
                ),
            }),
        }
    }

    /// The earlier checkpoint `id` that this one builds on, if it names it as a base.
    pub fn base(&self, id: u64) -> Option<&CompletedCheckpoint> {
        self.bases.iter().find(|b| b.metadata.id == id)
    }
}

/// The checkpoints of one job.
pub struct CheckpointStore {
    root: Storage,
    retain: usize,
}

/// A checkpoint being written.
pub struct PendingCheckpoint {
    id: u64,
    storage: Storage,
    files: BTreeMap<String, (u64, u64)>,
    shared: BTreeMap<String, (u64, u64)>,
}

impl CheckpointStore {
    /// A store at `dir` (a directory, created if missing, or an object store URL) keeping the
    /// last `retain` checkpoints.
    pub fn open(dir: impl Into<PathBuf>, retain: usize) -> Result<Self> {
        let root = Storage::open(&dir.into())?;
        root.create()?;
        Ok(CheckpointStore {
            root,
            retain: retain.max(1),
        })
    }

    /// Starts checkpoint `id`.
    pub fn begin(&self, id: u64) -> Result<PendingCheckpoint> {
        // A local checkpoint is written aside and renamed into place; an object store has no
        // rename, there the metadata written last marks the checkpoint complete.
        let name = if self.root.renames() {
            format!("chk-{id}.inprogress")
        } else {
            format!("chk-{id}")
        };
        let storage = self.root.child(&name);
        storage.remove_all()?;
        storage.create()?;
        Ok(PendingCheckpoint {
            id,
            storage,
            files: BTreeMap::new(),
            shared: BTreeMap::new(),
        })
    }

    /// Completes a checkpoint: metadata last, then (locally) the directory renamed into place;
    /// older checkpoints beyond the retained ones are removed.
    pub fn complete(&self, pending: PendingCheckpoint) -> Result<CheckpointMetadata> {
        let metadata = CheckpointMetadata {
            id: pending.id,
            completed_at_ms: crate::types::epoch_ms(),
            files: pending.files,
            checksum: ChecksumKind::Crc32,
            bases: BTreeMap::new(),
            nonce: new_nonce(pending.id),
            shared: pending.shared,
        };
        write_metadata(&pending.storage, &metadata)?;
        let done = self.root.child(&format!("chk-{}", pending.id));
        pending.storage.rename_to(&done)?;
        // The checkpoint is complete: what retention fails to remove waits for the next one.
        if let Err(e) = self.prune() {
            tracing::warn!(
                "checkpoint {} completed, but older state in {} could not be removed: {e}",
                pending.id,
                self.root.location().display()
            );
        }
        Ok(metadata)
    }

    /// Ids of checkpoints (complete, or on an object store possibly unfinished), newest first.
    pub fn ids(&self) -> Result<Vec<u64>> {
        let mut ids: Vec<u64> = self
            .root
            .list_dirs()?
            .iter()
            .filter_map(|name| name.strip_prefix("chk-")?.parse().ok())
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        Ok(ids)
    }

    /// Removes the checkpoints beyond the newest `retain`, except those a retained one builds
    /// on, then every shared state file that no checkpoint left references and that was
    /// written for a checkpoint no newer than the newest (newer ones belong to a checkpoint
    /// still being taken).
    fn prune(&self) -> Result<()> {
        let ids = self.ids()?;
        let (retained, older) = ids.split_at(self.retain.min(ids.len()));
        let Some(retained) = self.references(retained) else {
            return Ok(());
        };
        let needed: std::collections::BTreeSet<u64> = retained
            .iter()
            .flat_map(|m| m.bases.keys().copied())
            .collect();
        let mut left = Vec::new();
        for &id in older {
            if needed.contains(&id) {
                left.push(id);
            } else {
                self.root.child(&format!("chk-{id}")).remove_all()?;
            }
        }
        let Some(&newest) = ids.first() else {
            return Ok(());
        };
        let Some(left) = self.references(&left) else {
            return Ok(());
        };
        let referenced = shared_names(retained.into_iter().chain(left));
        self.remove_shared(|file, written_in| written_in <= newest && !referenced.contains(file))
    }

    /// Removes every shared state file that no checkpoint references and that was written
    /// for a checkpoint before `next` (an attempt that starts numbering its checkpoints at
    /// `next` calls this: no checkpoint of it is being taken yet, so such files are left by
    /// checkpoints of earlier attempts that never completed).
    pub fn remove_orphans(&self, next: u64) -> Result<()> {
        let Some(all) = self.references(&self.ids()?) else {
            return Ok(());
        };
        let referenced = shared_names(all);
        self.remove_shared(|file, written_in| written_in < next && !referenced.contains(file))
    }

    /// The metadata of checkpoints `ids`, for retention: one without metadata (unfinished)
    /// or whose metadata does not parse (damaged) references nothing. `None` (and a log
    /// line) when a metadata file that is there cannot be read: then nothing may be deleted,
    /// since what it references is unknown.
    fn references(&self, ids: &[u64]) -> Option<Vec<CheckpointMetadata>> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            let dir = self.root.child(&format!("chk-{id}"));
            match read_metadata(&dir) {
                Ok(m) => found.push(m),
                Err(Damage::NoMetadata(e)) if dir.len_of(METADATA).is_ok() => {
                    tracing::warn!(
                        "the metadata of checkpoint {id} in {} cannot be read ({e}); no state \
                         file is removed this time",
                        self.root.location().display()
                    );
                    return None;
                }
                Err(_) => {}
            }
        }
        Some(found)
    }

    /// The newest checkpoint a shared state file was written for (0: none).
    pub fn newest_shared(&self) -> Result<u64> {
        Ok(self.shared_files()?.map(|(_, c)| c).max().unwrap_or(0))
    }

    /// Removes the shared state files `doomed(name, checkpoint written for)` picks.
    fn remove_shared(&self, doomed: impl Fn(&str, u64) -> bool) -> Result<()> {
        let shared = self.root.child(SHARED_DIR);
        for (file, written_in) in self.shared_files()? {
            if doomed(&file, written_in) {
                shared.remove(&file)?;
            }
        }
        Ok(())
    }

    /// Every shared state file, with the checkpoint it was written for (names of another
    /// form are not the store's and are left out).
    fn shared_files(&self) -> Result<impl Iterator<Item = (String, u64)>> {
        let shared = self.root.child(SHARED_DIR);
        let files = if shared.exists() {
            shared.list_files()?
        } else {
            Vec::new()
        };
        Ok(files
            .into_iter()
            .filter_map(|f| StateRef::written_in(&f).map(|c| (f, c))))
    }

    /// The newest checkpoint that is whole (with every checkpoint it builds on); damaged ones
    /// are skipped with a log line.
    pub fn latest_valid(&self) -> Result<Option<CompletedCheckpoint>> {
        for id in self.ids()? {
            match verify(&self.root, id, SharedCheck::Checksums) {
                Ok(c) => return Ok(Some(c)),
                Err(reason) => tracing::warn!(
                    "checkpoint {id} in {} is damaged ({reason}); falling back to the one before",
                    self.root.location().display()
                ),
            }
        }
        Ok(None)
    }

    /// The store's location.
    pub fn dir(&self) -> PathBuf {
        self.root.location()
    }
}

/// The names of the shared state files the checkpoints of `metadata` reference.
fn shared_names(
    metadata: impl IntoIterator<Item = CheckpointMetadata>,
) -> std::collections::BTreeSet<String> {
    metadata
        .into_iter()
        .flat_map(|m| m.shared.into_keys())
        .collect()
}

/// A random nonce for checkpoint `id` (every `RandomState` has random keys).
pub(crate) fn new_nonce(id: u64) -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(id)
}

/// Writes a checkpoint's `_metadata` (last: it marks the checkpoint complete).
fn write_metadata(storage: &Storage, metadata: &CheckpointMetadata) -> Result<()> {
    let json =
        serde_json::to_vec_pretty(metadata).map_err(|e| internal!("checkpoint metadata: {e}"))?;
    storage.write(METADATA, &json)
}

/// Name of the metadata file, written last.
const METADATA: &str = "_metadata";

/// Why a checkpoint is not whole.
#[derive(Debug, thiserror::Error)]
pub enum Damage {
    /// Its metadata, written last, cannot be read: the checkpoint never completed.
    #[error("no metadata: {0}")]
    NoMetadata(#[source] HummerError),
    /// Its metadata does not parse.
    #[error("unreadable metadata: {0}")]
    UnreadableMetadata(#[source] serde_json::Error),
    /// Its metadata belongs to another checkpoint.
    #[error("metadata says checkpoint {0}")]
    OtherCheckpoint(u64),
    /// A file it lists cannot be read.
    #[error("file {name}: {source}")]
    MissingFile {
        /// The file.
        name: String,
        /// Why it cannot be read.
        #[source]
        source: HummerError,
    },
    /// A file is shorter or longer than recorded.
    #[error("file {name} has {len} bytes, {expected} expected")]
    WrongLength {
        /// The file.
        name: String,
        /// Its length.
        len: u64,
        /// The recorded length.
        expected: u64,
    },
    /// A file's bytes differ from what was written.
    #[error("file {0} fails its checksum")]
    BadChecksum(String),
    /// A shared state file it references is missing, of another length or fails its
    /// checksum.
    #[error("shared state file {name}: {reason}")]
    SharedFile {
        /// The file.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The checkpoint of that id is another one than meant (written by a later attempt).
    #[error("it was replaced by a later checkpoint of the same id")]
    Replaced,
    /// A checkpoint it builds on is missing or damaged.
    #[error("checkpoint {id}, which it builds on: {damage}")]
    Base {
        /// The base checkpoint.
        id: u64,
        /// What is wrong with it.
        damage: Box<Damage>,
    },
}

fn read_metadata(storage: &Storage) -> std::result::Result<CheckpointMetadata, Damage> {
    let meta = storage.read(METADATA).map_err(Damage::NoMetadata)?;
    serde_json::from_slice(&meta).map_err(Damage::UnreadableMetadata)
}

/// How much of a checkpoint's shared state files [`verify`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SharedCheck {
    /// All of them, for their checksums: to choose the newest whole checkpoint, falling back
    /// to the one before when one is damaged.
    Checksums,
    /// Their lengths only: the checkpoint was named, so there is nothing to fall back to,
    /// and each file's checksum is checked when it is read anyway.
    Lengths,
}

/// Checks checkpoint `id` of the checkpoints at `root`, and every checkpoint it builds on.
fn verify(
    root: &Storage,
    id: u64,
    check: SharedCheck,
) -> std::result::Result<CompletedCheckpoint, Damage> {
    let mut checkpoint = verify_files(root.child(&format!("chk-{id}")), id)?;
    let shared = root.child(SHARED_DIR);
    for (name, &(len, sum)) in &checkpoint.metadata.shared {
        let damage = |reason: String| Damage::SharedFile {
            name: name.clone(),
            reason,
        };
        let (found_len, found_sum) = match check {
            SharedCheck::Checksums => shared
                .crc32(name)
                .map(|(len, sum)| (len, Some(sum)))
                .map_err(|e| damage(e.to_string()))?,
            SharedCheck::Lengths => (
                shared.len_of(name).map_err(|e| damage(e.to_string()))?,
                None,
            ),
        };
        if found_len != len {
            return Err(damage(format!("{found_len} bytes, {len} expected")));
        }
        if found_sum.is_some_and(|found| u64::from(found) != sum) {
            return Err(damage("it fails its checksum".into()));
        }
    }
    checkpoint.shared = Some(shared);
    for (&base, &nonce) in &checkpoint.metadata.bases {
        let damage = |damage| Damage::Base {
            id: base,
            damage: Box::new(damage),
        };
        let verified = verify_files(root.child(&format!("chk-{base}")), base).map_err(damage)?;
        if verified.metadata.nonce != nonce {
            return Err(damage(Damage::Replaced));
        }
        checkpoint.bases.push(verified);
    }
    Ok(checkpoint)
}

/// Checks one checkpoint's own files: its metadata parses and every file has its recorded
/// length and checksum.
fn verify_files(storage: Storage, id: u64) -> std::result::Result<CompletedCheckpoint, Damage> {
    let metadata = read_metadata(&storage)?;
    if metadata.id != id {
        return Err(Damage::OtherCheckpoint(metadata.id));
    }
    for (name, (len, sum)) in &metadata.files {
        let bytes = storage.read(name).map_err(|source| Damage::MissingFile {
            name: name.clone(),
            source,
        })?;
        if bytes.len() as u64 != *len {
            return Err(Damage::WrongLength {
                name: name.clone(),
                len: bytes.len() as u64,
                expected: *len,
            });
        }
        if metadata.checksum.of(&bytes) != *sum {
            return Err(Damage::BadChecksum(name.clone()));
        }
    }
    Ok(CompletedCheckpoint {
        metadata,
        dir: storage.location(),
        storage,
        bases: Vec::new(),
        shared: None,
    })
}

impl PendingCheckpoint {
    /// Writes one snapshot file of the checkpoint.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.write_parts(name, &[bytes])
    }

    /// Writes one snapshot file of the checkpoint made of `parts`, one after the other.
    pub fn write_parts(&mut self, name: &str, parts: &[&[u8]]) -> Result<()> {
        if name.is_empty() || name.contains('/') || name.starts_with('_') {
            return Err(internal!("bad checkpoint file name '{name}'"));
        }
        self.storage.write_parts(name, parts)?;
        let len = parts.iter().map(|p| p.len() as u64).sum();
        self.files.insert(name.to_string(), (len, crc32_of(parts)));
        Ok(())
    }

    /// The checkpoint's id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Records that the checkpoint's task files reference shared state file `reference`.
    pub fn share(&mut self, reference: &StateRef) {
        self.shared.insert(
            reference.file.clone(),
            (reference.len, u64::from(reference.crc32)),
        );
    }
}

/// The checkpoint (or savepoint) at `path`: either one checkpoint's directory (`.../chk-7`) or
/// a directory of checkpoints, whose newest whole one is taken. Object store URLs work alike.
pub fn find_checkpoint(path: &Path) -> Result<CompletedCheckpoint> {
    let bad = |reason: String| HummerError::BadInput {
        input: path.display().to_string(),
        reason,
    };
    let storage = Storage::open(path)?;
    if !storage.exists() {
        return Err(bad("no such checkpoint or savepoint directory".into()));
    }
    if storage.read(METADATA).is_ok() {
        let id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("chk-"))
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| bad("a checkpoint directory must be named chk-<id>".into()))?;
        // The checkpoints it builds on are its siblings.
        let root = Storage::open(path.parent().unwrap_or(path))?;
        return verify(&root, id, SharedCheck::Lengths)
            .map_err(|reason| bad(format!("damaged checkpoint: {reason}")));
    }
    let store = CheckpointStore {
        root: storage,
        retain: usize::MAX,
    };
    store
        .latest_valid()?
        .ok_or_else(|| bad("holds no complete checkpoint".into()))
}

/// Copies a complete checkpoint to `to` (a savepoint), across storages if need be; returns
/// the copy. A checkpoint that builds on earlier ones is copied with their state resolved into
/// its task files ([`crate::chains::read_task`]), so the copy stands alone.
pub fn copy_checkpoint(from: &CompletedCheckpoint, to: &Path) -> Result<CompletedCheckpoint> {
    let target = Storage::open(to)?;
    target.create()?;
    if from.metadata.bases.is_empty() && from.metadata.shared.is_empty() {
        for name in from.metadata.files.keys() {
            target.write(name, &from.read(name)?)?;
        }
        target.write(METADATA, &from.read(METADATA)?)?;
    } else {
        let mut copy = PendingCheckpoint {
            id: from.metadata.id,
            storage: target.clone(),
            files: BTreeMap::new(),
            shared: BTreeMap::new(),
        };
        for name in from.metadata.files.keys() {
            if name.starts_with(TASK_FILE_PREFIX) {
                let task = crate::chains::read_task(from, name)?;
                let parts = task.encoded_parts()?;
                let parts: Vec<&[u8]> = parts.iter().map(|p| p.as_ref()).collect();
                copy.write_parts(name, &parts)?;
            } else {
                copy.write(name, &from.read(name)?)?;
            }
        }
        let metadata = CheckpointMetadata {
            files: copy.files,
            bases: BTreeMap::new(),
            shared: BTreeMap::new(),
            checksum: ChecksumKind::Crc32,
            ..from.metadata.clone()
        };
        write_metadata(&target, &metadata)?;
    }
    verify_files(target, from.metadata.id).map_err(|reason| HummerError::BadInput {
        input: to.display().to_string(),
        reason: format!("the copied checkpoint does not verify: {reason}"),
    })
}

/// Task files (`task-<index>`) hold a task's state; only they may build on other checkpoints.
pub const TASK_FILE_PREFIX: &str = "task-";

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
    fn an_object_store_keeps_checkpoints_the_same_way() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().display());
        let store = CheckpointStore::open(&url, 2).unwrap();
        for id in 1..=3 {
            checkpoint(&store, id);
        }
        // Unfinished (no metadata): skipped.
        let mut pending = store.begin(4).unwrap();
        pending.write("op-1-subtask-0", b"half").unwrap();
        let latest = store.latest_valid().unwrap().unwrap();
        assert_eq!(latest.metadata.id, 3);
        assert_eq!(latest.read("op-1-subtask-0").unwrap(), b"state of 3");
        assert_eq!(latest.dir, PathBuf::from(format!("{url}/chk-3")));
        let found = find_checkpoint(&latest.dir).unwrap();
        assert_eq!(found.metadata, latest.metadata);
        // A savepoint copied to a local directory reads back the same.
        let savepoint = dir.path().join("savepoints/chk-3");
        let copy = copy_checkpoint(&latest, &savepoint).unwrap();
        assert_eq!(copy.read("op-2-subtask-0").unwrap(), vec![3u8; 100]);
        assert_eq!(find_checkpoint(&savepoint).unwrap().metadata.id, 3);
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
