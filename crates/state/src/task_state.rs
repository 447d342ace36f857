//! What one task hands the checkpoint coordinator when a barrier passes it, and what it gets
//! back when the job restarts from a checkpoint.
//!
//! A task's chain fills a [`TaskSnapshot`] as the barrier travels through it: every stateful
//! operator adds its state, keyed by its stream node id (the operator's identity across
//! restarts and savepoints). A source task adds the positions of its [`SourceSplit`]s. The
//! snapshot is a *copy*: once it is taken the task goes on processing, and the coordinator
//! writes the bytes to the checkpoint store on its own thread. The part of keyed state that
//! is on disk is not even copied at the barrier: the snapshot holds copies of the disk tier's
//! files ([`ColdParts`]), read when the snapshot is written.
//!
//! On a restart, [`RestoredState`] holds, per node, the snapshots of every subtask of the
//! checkpointed run. Keyed operators load all of them and keep the key groups they own now,
//! so the job may restart at another parallelism; source splits are dealt out round-robin
//! over the new source subtasks.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::disk_tier::ColdPart;
use crate::error::{HummerError, Result};
use crate::types::CheckpointId;

/// The state one task adds to a checkpoint.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSnapshot {
    /// The checkpoint.
    pub checkpoint: CheckpointId,
    /// Key groups of the job (keyed state is grouped by them).
    pub max_parallelism: usize,
    /// State of each stateful operator of the chain: `(stream node id, bytes)`.
    pub operators: Vec<(usize, Vec<u8>)>,
    /// Positions of the source splits this task reads: `(stream node id, splits)`.
    pub sources: Vec<(usize, Vec<SourceSplit>)>,
    /// The job's final checkpoint: every input has ended before its barrier, so operators
    /// end before their snapshot (see `Operator::end_of_input`). Not written.
    #[serde(skip)]
    pub is_final: bool,
    /// The parts of `operators` still on disk. Not sent: the process that took the snapshot
    /// writes them before its state leaves it ([`TaskSnapshot::take_cold_parts`]).
    #[serde(skip)]
    pub cold_parts: ColdParts,
}

/// The parts of a task's operator snapshots that are on disk, each with the index of its
/// operator in [`TaskSnapshot::operators`], to be appended to that operator's bytes.
#[derive(Clone, Default)]
pub struct ColdParts(Arc<std::sync::Mutex<Vec<(usize, ColdPart)>>>);

impl ColdParts {
    /// Adds the parts of the snapshot of operator `operator`.
    pub fn add(&self, operator: usize, parts: Vec<ColdPart>) {
        (self.parts()).extend(parts.into_iter().map(|part| (operator, part)));
    }

    fn take(&self) -> Vec<(usize, ColdPart)> {
        std::mem::take(&mut *self.parts())
    }

    fn len(&self) -> usize {
        self.parts().len()
    }

    fn parts(&self) -> std::sync::MutexGuard<'_, Vec<(usize, ColdPart)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ColdParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ColdParts({})", self.len())
    }
}

/// Parts still to be written are not state yet: two snapshots compare by what they hold.
impl PartialEq for ColdParts {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
    }
}

impl TaskSnapshot {
    /// Takes the parts of its operators' snapshots that were on disk (see [`ColdParts`]),
    /// one list per operator: an operator's whole snapshot is its bytes, then each of its
    /// parts written ([`ColdPart::write`]).
    pub fn take_cold_parts(&mut self) -> Result<Vec<Vec<ColdPart>>> {
        let mut of: Vec<Vec<ColdPart>> = self.operators.iter().map(|_| Vec::new()).collect();
        for (operator, part) in self.cold_parts.take() {
            (of.get_mut(operator))
                .ok_or_else(|| crate::error::internal!("a cold part of no operator"))?
                .push(part);
        }
        Ok(of)
    }
}

impl TaskSnapshot {
    /// An empty snapshot of `checkpoint`.
    pub fn new(checkpoint: CheckpointId, max_parallelism: usize) -> Self {
        TaskSnapshot {
            checkpoint,
            max_parallelism,
            ..TaskSnapshot::default()
        }
    }
}

impl TaskSnapshot {
    /// The postcard encoding of the snapshot as a list of parts, the operators' state bytes
    /// borrowed rather than copied: written one after the other they are exactly
    /// `postcard::to_stdvec(self)`, so a snapshot of gigabytes goes to its file without a
    /// second copy in memory.
    pub fn encoded_parts(&self) -> crate::error::Result<Vec<std::borrow::Cow<'_, [u8]>>> {
        use std::borrow::Cow;
        let encode = |e: postcard::Error| crate::error::internal!("task snapshot: {e}");
        let mut head =
            postcard::to_stdvec(&(self.checkpoint, self.max_parallelism)).map_err(encode)?;
        head = postcard::to_extend(&self.operators.len(), head).map_err(encode)?;
        let mut parts = Vec::with_capacity(2 * self.operators.len() + 2);
        for (node, bytes) in &self.operators {
            head = postcard::to_extend(&(*node, bytes.len()), head).map_err(encode)?;
            parts.push(Cow::Owned(std::mem::take(&mut head)));
            parts.push(Cow::Borrowed(bytes.as_slice()));
        }
        head = postcard::to_extend(&self.sources, head).map_err(encode)?;
        parts.push(Cow::Owned(head));
        Ok(parts)
    }
}

/// One unit of source input and how far it has been read.
///
/// A split is what one reader of the first run read: `subtask` of `parallelism`. A restarted
/// source subtask may read several splits (fewer subtasks) or none (more subtasks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSplit {
    /// The reader index the split was created for.
    pub subtask: usize,
    /// The source parallelism the split was created for.
    pub parallelism: usize,
    /// The reader's position (see `SourceReader::snapshot_position`).
    pub position: Vec<u8>,
}

/// A task's acknowledgement of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskAck {
    /// Global index of the subtask (chain) in the execution graph.
    pub task: usize,
    /// Its state.
    pub snapshot: TaskSnapshot,
    /// Time from the first barrier to the last on a task with several inputs.
    pub alignment: Duration,
    /// Time the synchronous copy of the state took.
    pub sync: Duration,
    /// Its operators' state was written to files: `snapshot` holds references to them.
    pub state_in_files: bool,
}

/// Reads the state that stored pieces refer to (shared state files of the checkpoint).
#[derive(Clone)]
pub struct PieceReader {
    /// Whether a piece refers to a file rather than being the state itself.
    pub refers: fn(&[u8]) -> bool,
    /// The state a referring piece refers to.
    pub read: Arc<ReadPiece>,
}

/// Reads the state a piece refers to.
pub type ReadPiece = dyn Fn(&[u8]) -> Result<Vec<u8>> + Send + Sync;

/// The snapshots an operator restores from: one per old subtask that had state (or several,
/// a delta's chain, oldest first).
#[derive(Clone, Copy)]
pub enum Pieces<'a> {
    /// Snapshots in memory.
    Held(&'a [Vec<u8>]),
    /// Those of a node of a restored checkpoint, read one at a time.
    Restored(&'a RestoredState, usize),
}

impl Pieces<'_> {
    /// No snapshots: nothing to restore.
    pub const NONE: Pieces<'static> = Pieces::Held(&[]);

    /// Hands every snapshot to `each`, in order, each read only for the call.
    pub fn for_each(self, each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        match self {
            Pieces::Held(pieces) => pieces.iter().map(Vec::as_slice).try_for_each(each),
            Pieces::Restored(state, node) => state.for_each_piece(node, each),
        }
    }
}

/// The state a restarted job loads: per stream node, the snapshots of every old subtask.
///
/// Pieces that refer to files are read when a subtask restores from them, one at a time, and
/// let go once loaded ([`Pieces`]): a process reads the state of the operators it runs, not
/// the whole checkpoint's, and never holds more than one piece (a checkpoint of state larger
/// than memory is restored under the same budget as it was taken).
#[derive(Default, Clone)]
pub struct RestoredState {
    /// The checkpoint restored.
    pub checkpoint: CheckpointId,
    /// Operator state per node, one entry per old subtask that had state (or several, a
    /// delta's chain, oldest first), as stored.
    operators: BTreeMap<usize, Vec<Vec<u8>>>,
    /// Source splits per node, in old subtask order.
    pub sources: BTreeMap<usize, Vec<SourceSplit>>,
    reader: Option<PieceReader>,
}

impl std::fmt::Debug for RestoredState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestoredState")
            .field("checkpoint", &self.checkpoint)
            .field("operators", &self.operators.keys().collect::<Vec<_>>())
            .field("sources", &self.sources)
            .finish()
    }
}

impl RestoredState {
    /// The snapshots of `node` (none when it had no state), to be read one at a time.
    pub fn pieces(&self, node: usize) -> Pieces<'_> {
        Pieces::Restored(self, node)
    }

    /// Hands every snapshot of `node` to `each`, in order: one that refers to a file is read
    /// just before and let go just after (an error names the file).
    fn for_each_piece(&self, node: usize, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let Some(pieces) = self.operators.get(&node) else {
            return Ok(());
        };
        for piece in pieces {
            match &self.reader {
                Some(reader) if (reader.refers)(piece) => {
                    let read = (reader.read)(piece).map_err(|e| HummerError::Checkpoint {
                        checkpoint: self.checkpoint,
                        reason: format!("cannot restore the state of operator {node}: {e}"),
                    })?;
                    each(&read)?;
                }
                _ => each(piece)?,
            }
        }
        Ok(())
    }

    /// Nothing restored yet of checkpoint `checkpoint`.
    pub fn of(checkpoint: CheckpointId) -> Self {
        RestoredState {
            checkpoint,
            ..RestoredState::default()
        }
    }

    /// The nodes that have operator state.
    pub fn stateful_nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.operators.keys().copied()
    }

    /// Reads pieces that refer to files with `reader`.
    pub fn read_with(&mut self, reader: PieceReader) {
        self.reader = Some(reader);
    }

    /// The splits source subtask `subtask` of `parallelism` reads now: every
    /// `parallelism`-th split, starting at `subtask`. `None` if the checkpoint has no splits
    /// for `node` (a non-replayable source, or a node that was not a source).
    pub fn splits(
        &self,
        node: usize,
        subtask: usize,
        parallelism: usize,
    ) -> Option<Vec<SourceSplit>> {
        let all = self.sources.get(&node)?;
        Some(
            all.iter()
                .enumerate()
                .filter(|(i, _)| i % parallelism.max(1) == subtask)
                .map(|(_, s)| s.clone())
                .collect(),
        )
    }

    /// Adds one acknowledged task snapshot.
    pub fn add(&mut self, snapshot: TaskSnapshot) {
        for (node, bytes) in snapshot.operators {
            self.operators.entry(node).or_default().push(bytes);
        }
        for (node, splits) in snapshot.sources {
            self.sources.entry(node).or_default().extend(splits);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The parts of a snapshot, concatenated, are its postcard encoding.
        #[test]
        fn encoded_parts_are_the_postcard_encoding(
            checkpoint in any::<u64>(), max in 1usize..100_000,
            operators in proptest::collection::vec(
                (any::<usize>(), proptest::collection::vec(any::<u8>(), 0..300)), 0..5),
            positions in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 0..3),
        ) {
            let mut snap = TaskSnapshot::new(checkpoint, max);
            snap.operators = operators;
            snap.sources = vec![(3, positions.into_iter().enumerate()
                .map(|(i, position)| SourceSplit { subtask: i, parallelism: 3, position })
                .collect())];
            let joined: Vec<u8> = snap.encoded_parts().unwrap().concat();
            prop_assert_eq!(&joined, &postcard::to_stdvec(&snap).unwrap());
            let back: TaskSnapshot = postcard::from_bytes(&joined).unwrap();
            prop_assert_eq!(back, snap);
        }

        /// A node's pieces reach a restore in order, each piece that refers to a file read
        /// just before it is handed over (not all of them first), once per restore.
        #[test]
        fn pieces_are_read_one_at_a_time_in_order(
            pieces in proptest::collection::vec((any::<bool>(), 0u8..0xff), 0..8),
        ) {
            let mut restored = RestoredState::of(4);
            for (refers, byte) in &pieces {
                let mut snap = TaskSnapshot::new(4, 128);
                // A referring piece starts with 0xff; what it refers to is its byte, doubled.
                let stored = if *refers { vec![0xff, *byte] } else { vec![*byte] };
                snap.operators.push((9, stored));
                restored.add(snap);
            }
            let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counted = reads.clone();
            restored.read_with(PieceReader {
                refers: |p| p.first() == Some(&0xff),
                read: Arc::new(move |p: &[u8]| {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(vec![p[1], p[1]])
                }),
            });
            let mut seen = Vec::new();
            let mut referring_so_far = 0;
            restored.pieces(9).for_each(|piece| {
                let i = seen.len();
                referring_so_far += usize::from(pieces[i].0);
                assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), referring_so_far);
                seen.push(piece.to_vec());
                Ok(())
            }).unwrap();
            let expected: Vec<Vec<u8>> = pieces.iter()
                .map(|(refers, b)| if *refers { vec![*b, *b] } else { vec![*b] })
                .collect();
            prop_assert_eq!(seen, expected);
            restored.pieces(10).for_each(|_| panic!("node 10 has no state")).unwrap();
        }

        /// Dealt out over any number of new subtasks, every old split is read by exactly one.
        #[test]
        fn splits_are_dealt_to_exactly_one_new_subtask(old in 1usize..12, new in 1usize..12) {
            let mut restored = RestoredState::default();
            for s in 0..old {
                let mut snap = TaskSnapshot::new(1, 128);
                snap.sources.push((7, vec![SourceSplit { subtask: s, parallelism: old, position: vec![s as u8] }]));
                restored.add(snap);
            }
            let mut seen = Vec::new();
            for n in 0..new {
                seen.extend(restored.splits(7, n, new).unwrap().into_iter().map(|s| s.subtask));
            }
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..old).collect::<Vec<_>>());
            prop_assert!(restored.splits(8, 0, new).is_none());
        }
    }
}
