//! Shared state files: operator state that a task writes to storage itself and checkpoints
//! reference by name.
//!
//! When a barrier passes a task, the task's process writes each operator's snapshot as an
//! immutable file of the job's `shared/` directory (in parts, on an object store) and
//! acknowledges the checkpoint with a [`StateRef`] per operator in place of the bytes: name,
//! length, CRC-32 and, for a delta, the checkpoint it builds on. The coordinator (the
//! JobManager's, for a cluster job) therefore never holds state, and a task's snapshot has no
//! size limit. A checkpoint's task file lists, per operator, the references of its whole chain
//! (the last full snapshot, then each delta on it), so a file written once is shared by every
//! later checkpoint whose chain still contains it and is never written again; only new files
//! are written at each checkpoint. The store deletes a shared file when no retained checkpoint
//! references it (Flink's `SharedStateRegistry`, computed from the retained checkpoints'
//! metadata, which survives a crash). A savepoint resolves every reference into its own
//! files, so it stands alone.

use serde::{Deserialize, Serialize};

use crate::backend::Storage;
use crate::error::{HummerError, Result, internal};
use crate::state::task_state::TaskAck;
use crate::types::CheckpointId;

/// The directory of a job's checkpoints that holds the shared state files.
pub const SHARED_DIR: &str = "shared";

/// How a reference starts, in place of an operator's snapshot bytes ("Hummer state file").
const MAGIC: &[u8; 4] = b"HMRF";

/// One operator snapshot stored as a shared file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRef {
    /// The file's name in [`SHARED_DIR`].
    pub file: String,
    /// Its length in bytes.
    pub len: u64,
    /// Its CRC-32.
    pub crc32: u32,
    /// The checkpoint whose snapshot of the same operator this one is a delta on.
    pub base: Option<CheckpointId>,
}

impl StateRef {
    /// The reference as it stands in a task snapshot in place of the state's bytes.
    pub fn encode(&self) -> Result<Vec<u8>> {
        postcard::to_extend(self, MAGIC.to_vec())
            .map_err(|e| internal!("cannot encode a state file reference: {e}"))
    }

    /// The reference `bytes` hold, if they hold one rather than state.
    pub fn decode(bytes: &[u8]) -> Option<Result<StateRef>> {
        let rest = bytes.strip_prefix(MAGIC)?;
        Some(
            postcard::from_bytes(rest).map_err(|e| HummerError::BadInput {
                input: "a checkpoint's task file".into(),
                reason: format!("undecodable state file reference: {e}"),
            }),
        )
    }

    /// The checkpoint whose snapshot wrote the file (named `<checkpoint>-...`).
    pub fn written_in(file: &str) -> Option<CheckpointId> {
        file.split_once('-')?.0.parse().ok()
    }

    /// Reads the file from `shared` and checks its length and checksum; the error names it.
    pub fn read(&self, shared: &Storage) -> Result<Vec<u8>> {
        let bytes = shared.read(&self.file)?;
        let bad = |reason: String| HummerError::BadInput {
            input: shared.location().join(&self.file).display().to_string(),
            reason,
        };
        if bytes.len() as u64 != self.len {
            return Err(bad(format!(
                "the state file has {} bytes, {} expected",
                bytes.len(),
                self.len
            )));
        }
        if crc32fast::hash(&bytes) != self.crc32 {
            return Err(bad("the state file fails its checksum".into()));
        }
        Ok(bytes)
    }
}

/// Writes the state of acknowledged snapshots as shared files, in the process that took them.
pub struct StateUploader {
    shared: Storage,
}

impl StateUploader {
    /// An uploader into the shared directory of the job's checkpoints at `dir` (a directory
    /// or an object store URL), created if missing.
    pub fn open(dir: &std::path::Path) -> Result<StateUploader> {
        let shared = Storage::open(dir)?.child(SHARED_DIR);
        shared.create()?;
        Ok(StateUploader { shared })
    }

    /// Writes every operator state the acknowledgement holds as a file of its own and puts a
    /// reference in its place (unless that was done: [`TaskAck::state_in_files`]); returns
    /// the bytes written. An operator's parts on disk are read now, each into a buffer of its
    /// own written after the operator's bytes (not appended to them, which would copy them
    /// as the buffer grew). The written buffers are recycled for the next snapshots.
    pub fn store(&self, ack: &mut TaskAck) -> Result<u64> {
        if ack.state_in_files {
            return Ok(0);
        }
        let cold_parts = ack.snapshot.take_cold_parts()?;
        let checkpoint = ack.snapshot.checkpoint;
        let mut written = 0;
        for ((node, bytes), cold) in ack.snapshot.operators.iter_mut().zip(cold_parts) {
            let file = format!(
                "{checkpoint}-{}-{node}-{:016x}",
                ack.task,
                crate::store::new_nonce(checkpoint)
            );
            let cold = (cold.into_iter())
                .map(|part| {
                    let mut out = Vec::new();
                    part.write(&mut out).map(|()| out)
                })
                .collect::<Result<Vec<_>>>()?;
            let parts: Vec<&[u8]> = std::iter::once(bytes.as_slice())
                .chain(cold.iter().map(Vec::as_slice))
                .collect();
            self.shared.write_parts(&file, &parts)?;
            let mut crc32 = crc32fast::Hasher::new();
            parts.iter().for_each(|p| crc32.update(p));
            let reference = StateRef {
                file,
                len: parts.iter().map(|p| p.len() as u64).sum(),
                crc32: crc32.finalize(),
                base: crate::state::snapshot::delta_base(bytes),
            };
            written += reference.len;
            let state = std::mem::replace(bytes, reference.encode()?);
            crate::state::snapshot::recycle(state);
        }
        ack.state_in_files = true;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::task_state::TaskSnapshot;
    use std::time::Duration;

    /// A snapshot whose table has entries on disk is written whole: its bytes, then the
    /// part on disk read after the barrier, after the table went on changing; the file
    /// restores the table as it was at the barrier.
    #[test]
    fn an_operator_s_part_on_disk_is_written_after_its_bytes() {
        use crate::state::declared::DeclaredState;
        use crate::state::disk_tier::{Budget, DiskTier, TierUse};
        use crate::state::keyed_table::KeyedTable;
        use crate::state::snapshot::SnapshotBuffer;
        use std::sync::Arc;

        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::new(Budget::Entries(4), Some(dir.path())).unwrap();
        let mut table = KeyedTable::<u32, u64>::default();
        DeclaredState::new()
            .table("t", &mut table)
            .use_disk_tier(&TierUse {
                tier: tier.clone(),
                max_parallelism: 128,
                counters: Arc::default(),
            });
        for k in 0..200 {
            table.insert(k, u64::from(k));
        }
        assert!(table.len_in_memory() < 50, "most entries are on disk");
        let taken = DeclaredState::new()
            .table("t", &mut table)
            .snapshot_deferring(1, 128, &mut SnapshotBuffer::default())
            .unwrap()
            .unwrap();
        assert!(!taken.cold_parts.is_empty());
        // The task goes on: entries read back, changed, removed; more spilled.
        for k in 0..200 {
            *table.upsert(k, || 0) += 1000;
        }
        table.remove(&7);
        let mut snapshot = TaskSnapshot::new(1, 128);
        snapshot.operators.push((5, taken.bytes));
        snapshot.cold_parts.add(0, taken.cold_parts);
        let mut ack = TaskAck {
            task: 0,
            snapshot,
            alignment: Duration::ZERO,
            sync: Duration::ZERO,
            state_in_files: false,
        };
        let uploader = StateUploader::open(&dir.path().join("checkpoints")).unwrap();
        let written = uploader.store(&mut ack).unwrap();
        let reference = StateRef::decode(&ack.snapshot.operators[0].1)
            .unwrap()
            .unwrap();
        assert_eq!(written, reference.len);
        let shared = Storage::open(&dir.path().join("checkpoints").join(SHARED_DIR)).unwrap();
        let bytes = reference.read(&shared).unwrap();
        let mut restored = KeyedTable::<u32, u64>::default();
        DeclaredState::new()
            .table("t", &mut restored)
            .restore(&bytes, 0..128, "the file")
            .unwrap();
        let mut entries: Vec<(u32, u64)> = restored.drain().collect();
        entries.sort_unstable();
        assert_eq!(
            entries,
            (0..200).map(|k| (k, u64::from(k))).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_uploaded_snapshot_reads_back_and_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let uploader = StateUploader::open(dir.path()).unwrap();
        let mut snapshot = TaskSnapshot::new(7, 128);
        snapshot.operators = vec![(3, vec![1, 2, 3]), (4, b"HMRS-not-a-delta".to_vec())];
        let mut ack = TaskAck {
            task: 2,
            snapshot,
            alignment: Duration::ZERO,
            sync: Duration::ZERO,
            state_in_files: false,
        };
        assert_eq!(uploader.store(&mut ack).unwrap(), 3 + 16);
        // A second upload writes nothing more.
        assert_eq!(uploader.store(&mut ack.clone()).unwrap(), 0);
        let first = StateRef::decode(&ack.snapshot.operators[0].1)
            .unwrap()
            .unwrap();
        assert_eq!(StateRef::written_in(&first.file), Some(7));
        assert_eq!(first.base, None);
        let shared = Storage::open(&dir.path().join(SHARED_DIR)).unwrap();
        assert_eq!(first.read(&shared).unwrap(), vec![1, 2, 3]);
        std::fs::write(dir.path().join(SHARED_DIR).join(&first.file), [1, 2, 4]).unwrap();
        let err = first.read(&shared).unwrap_err().to_string();
        assert!(
            err.contains(&first.file) && err.contains("checksum"),
            "{err}"
        );
        std::fs::remove_file(dir.path().join(SHARED_DIR).join(&first.file)).unwrap();
        let err = first.read(&shared).unwrap_err().to_string();
        assert!(err.contains(&first.file), "{err}");
    }
}
