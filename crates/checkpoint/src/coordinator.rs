//! The checkpoint coordinator: when to trigger a checkpoint, when one is complete, and what
//! happened to each (its history).
//!
//! It is a state machine without threads or sockets of its own, so that the local runtime and
//! the JobManager drive the same logic: the owner calls [`CheckpointCoordinator::tick`]
//! periodically and carries out the [`DueCheckpoint`] it returns (sets the hub of a local job, sends
//! a message to every worker of a cluster job), and hands it every [`HubEvent`] from the tasks.
//! Rules, as in Flink:
//! - one checkpoint at a time; the next is triggered `interval` after the previous trigger,
//!   and never sooner than `min_pause` after the previous one ended;
//! - a checkpoint not acknowledged by every task within `timeout` is given up (expired), as
//!   is one a task declines;
//! - a checkpoint is complete when every task acknowledged it; its snapshots are then written
//!   to the [`CheckpointStore`] (this is the "upload": the tasks are not waiting for it) and
//!   the store completes it atomically and keeps the last N;
//! - when every source subtask has read all its input, the final checkpoint is triggered at
//!   once; it never expires (the sources have ended, so it cannot be retried).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{HummerError, Result, internal};
use crate::hub::HubEvent;
use crate::shared::{StateRef, StateUploader};
use crate::state::task_state::{PieceReader, RestoredState, TaskAck, TaskSnapshot};
use crate::store::{CheckpointStore, CompletedCheckpoint, TASK_FILE_PREFIX};
use crate::types::CheckpointId;

/// Checkpoint settings of a job (Flink's `CheckpointConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointConfig {
    /// Time between two triggers.
    pub interval: Duration,
    /// A checkpoint not complete after this long is given up.
    pub timeout: Duration,
    /// Least time between the end of one checkpoint and the trigger of the next.
    pub min_pause: Duration,
    /// Completed checkpoints kept.
    pub retain: usize,
    /// Where checkpoints are written (a directory; one subdirectory per checkpoint).
    pub dir: std::path::PathBuf,
}

impl CheckpointConfig {
    /// Checkpoints every `interval` into `dir`; timeout 10 minutes, no minimum pause, the last
    /// 3 kept.
    pub fn new(interval: Duration, dir: impl Into<std::path::PathBuf>) -> Self {
        CheckpointConfig {
            interval,
            timeout: Duration::from_secs(600),
            min_pause: Duration::ZERO,
            retain: 3,
            dir: dir.into(),
        }
    }

    /// Checks the settings; names the first bad one.
    pub fn validate(&self) -> Result<()> {
        if self.interval < Duration::from_millis(10) {
            return Err(HummerError::Config(format!(
                "checkpoint interval must be at least 10 ms, got {:?}",
                self.interval
            )));
        }
        if self.timeout.is_zero() {
            return Err(HummerError::Config(
                "checkpoint timeout must be positive".into(),
            ));
        }
        if self.retain == 0 {
            return Err(HummerError::Config(
                "at least one checkpoint must be retained".into(),
            ));
        }
        Ok(())
    }
}

/// One operator of the checkpointed graph, recorded so that a restore can check that it loads
/// state into the same operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorInfo {
    /// Stream node id.
    pub node: usize,
    /// Operator name.
    pub name: String,
    /// Parallelism when checkpointed.
    pub parallelism: usize,
}

/// The shape of the job a checkpoint belongs to (`graph.json` in every checkpoint).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphInfo {
    /// Key groups.
    pub max_parallelism: usize,
    /// Every operator.
    pub operators: Vec<OperatorInfo>,
}

impl GraphInfo {
    /// Checks that state checkpointed for `self` can be loaded into `current`: the same key
    /// groups, and every operator that has state in `restored` still exists with the same
    /// name. The error lists every operator that does not match.
    pub fn check_compatible(&self, current: &GraphInfo, restored: &RestoredState) -> Result<()> {
        if self.max_parallelism != current.max_parallelism {
            return Err(HummerError::Config(format!(
                "the checkpoint has {} key groups (max parallelism), this job {}; state cannot be \
                 redistributed between them",
                self.max_parallelism, current.max_parallelism
            )));
        }
        let stateful: std::collections::BTreeSet<usize> = restored
            .stateful_nodes()
            .chain(restored.sources.keys().copied())
            .collect();
        let mut mismatched = Vec::new();
        for node in stateful {
            let old = self.operators.iter().find(|o| o.node == node);
            let new = current.operators.iter().find(|o| o.node == node);
            match (old, new) {
                (Some(o), Some(n)) if o.name == n.name => {}
                (Some(o), Some(n)) => mismatched.push(format!(
                    "operator {node} was '{}' and is now '{}'",
                    o.name, n.name
                )),
                (Some(o), None) => mismatched.push(format!(
                    "operator {node} '{}' has state but is not in this job",
                    o.name
                )),
                (None, _) => mismatched.push(format!(
                    "operator {node} has state but the checkpoint does not describe it"
                )),
            }
        }
        if mismatched.is_empty() {
            Ok(())
        } else {
            Err(HummerError::Config(format!(
                "the checkpoint or savepoint does not match this job: {}",
                mismatched.join("; ")
            )))
        }
    }
}

/// File of a checkpoint that describes the job's graph.
pub const GRAPH_FILE: &str = "graph.json";

/// What happened to one checkpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckpointStatus {
    /// Triggered, not every task has acknowledged.
    InProgress,
    /// Complete and stored.
    Completed,
    /// Given up; the reason.
    Failed(String),
}

/// One row of a job's checkpoint history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointStats {
    /// Checkpoint id.
    pub id: CheckpointId,
    /// Milliseconds since the Unix epoch when it was triggered.
    pub triggered_at_ms: u64,
    /// Trigger to completion (or to failure), milliseconds.
    pub duration_ms: u64,
    /// Bytes written for it: new state files and its own files.
    pub size_bytes: u64,
    /// Bytes of state files of earlier checkpoints that it references too (shared, not
    /// written again).
    #[serde(default)]
    pub shared_bytes: u64,
    /// Longest barrier alignment of any task, milliseconds.
    pub alignment_ms: u64,
    /// Longest synchronous part of any task's snapshot (the copy of its state while it
    /// processes nothing), milliseconds.
    #[serde(default)]
    pub sync_ms: u64,
    /// Writing the acknowledged state and the metadata to storage, milliseconds.
    #[serde(default)]
    pub write_ms: u64,
    /// Whether it is the job's final checkpoint.
    pub is_final: bool,
    /// Its status.
    pub status: CheckpointStatus,
}

impl CheckpointStats {
    /// A checkpoint triggered at `at_ms`, in progress, nothing measured yet.
    pub fn triggered(id: CheckpointId, at_ms: u64, is_final: bool) -> Self {
        CheckpointStats {
            id,
            triggered_at_ms: at_ms,
            duration_ms: 0,
            size_bytes: 0,
            shared_bytes: 0,
            alignment_ms: 0,
            sync_ms: 0,
            write_ms: 0,
            is_final,
            status: CheckpointStatus::InProgress,
        }
    }
}

/// A checkpoint that is due: the owner must start it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DueCheckpoint {
    /// Its id.
    pub id: CheckpointId,
    /// The final checkpoint: sources end after injecting it.
    pub last: bool,
}

struct Pending {
    id: CheckpointId,
    last: bool,
    started: Instant,
    acks: BTreeMap<usize, TaskAck>,
}

/// Most history rows kept per job.
const HISTORY: usize = 100;

/// Coordinates the checkpoints of one job attempt.
pub struct CheckpointCoordinator {
    config: CheckpointConfig,
    store: CheckpointStore,
    graph: GraphInfo,
    /// Acknowledgements a checkpoint needs (the job's tasks).
    tasks: usize,
    /// Source subtasks, which must all finish before the final checkpoint.
    sources: usize,
    sources_finished: HashSet<usize>,
    next_id: CheckpointId,
    pending: Option<Pending>,
    final_done: bool,
    last_trigger: Instant,
    last_end: Option<Instant>,
    /// Trigger at the next tick regardless of the interval (a savepoint was asked for).
    forced: bool,
    history: Vec<CheckpointStats>,
    /// Writes the state of acknowledgements that still hold it (those of tasks in this
    /// process; a worker writes its own).
    uploader: StateUploader,
    /// Checkpoints this coordinator completed that the store still keeps: the shared files
    /// of each task's operators, whole chains, for the deltas of later checkpoints.
    kept: BTreeMap<CheckpointId, BTreeMap<usize, Vec<(usize, StateRef)>>>,
}

use crate::types::epoch_ms as now_ms;

impl CheckpointCoordinator {
    /// A coordinator for a job of `tasks` tasks, `sources` of them sources, whose attempt
    /// restarted from checkpoint `restored` (0: none); ids continue above it and above every
    /// checkpoint in the directory, so that no checkpoint (a damaged one an earlier attempt
    /// left, which a restore skipped) is ever written over.
    pub fn new(
        config: CheckpointConfig,
        graph: GraphInfo,
        tasks: usize,
        sources: usize,
        restored: CheckpointId,
        now: Instant,
    ) -> Result<Self> {
        config.validate()?;
        let store = CheckpointStore::open(&config.dir, config.retain)?;
        let uploader = StateUploader::open(&config.dir)?;
        // Above every checkpoint and every state file there, so that nothing an earlier
        // attempt left is written over; what it left unfinished goes.
        let newest = store.ids()?.first().copied().unwrap_or(0);
        let newest = newest.max(store.newest_shared()?);
        if let Err(e) = store.remove_orphans(restored.max(newest) + 1) {
            tracing::warn!("state files of unfinished checkpoints stay: {e}");
        }
        Ok(CheckpointCoordinator {
            config,
            store,
            graph,
            tasks,
            sources,
            sources_finished: HashSet::new(),
            next_id: restored.max(newest) + 1,
            pending: None,
            final_done: false,
            last_trigger: now,
            last_end: None,
            forced: false,
            history: Vec::new(),
            uploader,
            kept: BTreeMap::new(),
        })
    }

    /// The checkpoints triggered so far, oldest first (at most the last 100).
    pub fn history(&self) -> &[CheckpointStats] {
        &self.history
    }

    /// The checkpoint being taken, if any.
    pub fn pending(&self) -> Option<CheckpointId> {
        self.pending.as_ref().map(|p| p.id)
    }

    /// Triggers a checkpoint at the next tick (or right after the one being taken), whatever
    /// the interval says.
    pub fn request_trigger(&mut self) {
        self.forced = true;
    }

    /// Expires an overdue checkpoint and returns the checkpoint to trigger now, if any.
    pub fn tick(&mut self, now: Instant) -> Option<DueCheckpoint> {
        if let Some(p) = &self.pending
            && !p.last
            && now.duration_since(p.started) > self.config.timeout
        {
            let id = p.id;
            self.fail(id, format!("expired after {:?}", self.config.timeout), now);
        }
        if self.pending.is_some() || self.final_done {
            return None;
        }
        let all_sources_done = self.sources_finished.len() >= self.sources;
        let due = now.duration_since(self.last_trigger) >= self.config.interval
            && self
                .last_end
                .is_none_or(|end| now.duration_since(end) >= self.config.min_pause);
        if !(all_sources_done || due || self.forced) {
            return None;
        }
        self.forced = false;
        let id = self.next_id;
        self.next_id += 1;
        self.last_trigger = now;
        self.pending = Some(Pending {
            id,
            last: all_sources_done,
            started: now,
            acks: BTreeMap::new(),
        });
        self.push_history(CheckpointStats::triggered(id, now_ms(), all_sources_done));
        Some(DueCheckpoint {
            id,
            last: all_sources_done,
        })
    }

    /// Takes a report from a task; returns the id of a checkpoint it completed.
    pub fn on_event(&mut self, event: HubEvent, now: Instant) -> Result<Option<CheckpointId>> {
        match event {
            HubEvent::SourceFinished { task } => {
                self.sources_finished.insert(task);
                Ok(None)
            }
            HubEvent::Decline {
                task,
                checkpoint,
                reason,
            } => {
                if self.pending() == Some(checkpoint) {
                    let why = match reason {
                        Some(reason) => format!("declined by task {task}: {reason}"),
                        None => format!("declined by task {task}"),
                    };
                    self.fail(checkpoint, why, now);
                }
                Ok(None)
            }
            HubEvent::Ack(mut ack) => {
                if self.pending() != Some(ack.snapshot.checkpoint) {
                    return Ok(None);
                }
                if let Err(e) = self.uploader.store(&mut ack) {
                    let reason = format!("cannot write the state of task {}: {e}", ack.task);
                    self.fail(ack.snapshot.checkpoint, reason, now);
                    return Ok(None);
                }
                let Some(pending) = self.pending.as_mut() else {
                    return Ok(None);
                };
                pending.acks.insert(ack.task, ack);
                if pending.acks.len() < self.tasks {
                    return Ok(None);
                }
                let Some(pending) = self.pending.take() else {
                    return Ok(None);
                };
                self.store_checkpoint(pending, now).map(Some)
            }
        }
    }

    fn store_checkpoint(&mut self, pending: Pending, now: Instant) -> Result<CheckpointId> {
        let id = pending.id;
        let (mut size, mut shared_size) = (0u64, 0u64);
        let (mut alignment, mut sync) = (Duration::ZERO, Duration::ZERO);
        let write_started = Instant::now();
        let written = (|| -> Result<()> {
            let mut files = self.store.begin(id)?;
            let graph = serde_json::to_vec_pretty(&self.graph)
                .map_err(|e| internal!("checkpoint graph: {e}"))?;
            files.write(GRAPH_FILE, &graph)?;
            let mut manifest = BTreeMap::new();
            for (&task, ack) in &pending.acks {
                let chains = self.chains_of(id, task, &ack.snapshot)?;
                let mut stored = TaskSnapshot {
                    operators: Vec::with_capacity(chains.len()),
                    sources: ack.snapshot.sources.clone(),
                    ..TaskSnapshot::new(id, ack.snapshot.max_parallelism)
                };
                for (node, reference) in &chains {
                    files.share(reference);
                    if StateRef::written_in(&reference.file) == Some(id) {
                        size += reference.len;
                    } else {
                        shared_size += reference.len;
                    }
                    stored.operators.push((*node, reference.encode()?));
                }
                let bytes = postcard::to_stdvec(&stored)
                    .map_err(|e| internal!("checkpoint task file: {e}"))?;
                size += bytes.len() as u64;
                files.write(&format!("{TASK_FILE_PREFIX}{task}"), &bytes)?;
                alignment = alignment.max(ack.alignment);
                sync = sync.max(ack.sync);
                manifest.insert(task, chains);
            }
            self.store.complete(files)?;
            // Complete: what follows must not fail it.
            if let Ok(kept) = self.store.ids() {
                self.kept.retain(|id, _| kept.contains(id));
            }
            self.kept.insert(id, manifest);
            Ok(())
        })();
        let write_ms = write_started.elapsed().as_millis() as u64;
        let duration_ms = now.duration_since(pending.started).as_millis() as u64;
        let (alignment_ms, sync_ms) = (alignment.as_millis() as u64, sync.as_millis() as u64);
        self.last_end = Some(now);
        let stats = self.history.iter_mut().rev().find(|h| h.id == id);
        match written {
            Ok(_) => {
                if let Some(h) = stats {
                    h.duration_ms = duration_ms;
                    h.size_bytes = size;
                    h.shared_bytes = shared_size;
                    h.alignment_ms = alignment_ms;
                    h.sync_ms = sync_ms;
                    h.write_ms = write_ms;
                    h.status = CheckpointStatus::Completed;
                }
                if pending.last {
                    self.final_done = true;
                }
                tracing::debug!(
                    checkpoint = id,
                    bytes = size,
                    duration_ms,
                    alignment_ms,
                    sync_ms,
                    write_ms,
                    "checkpoint completed"
                );
                Ok(id)
            }
            Err(e) => {
                if let Some(h) = stats {
                    h.status = CheckpointStatus::Failed(e.to_string());
                }
                Err(e)
            }
        }
    }

    /// The shared files of every operator of `task`'s snapshot in checkpoint `id`, each
    /// operator's whole chain oldest first: a delta's base chain (from the checkpoint it
    /// builds on), then its own file. A delta on a checkpoint this coordinator did not
    /// complete, or no longer keeps, fails the checkpoint: its state could not be restored.
    fn chains_of(
        &self,
        id: CheckpointId,
        task: usize,
        snapshot: &TaskSnapshot,
    ) -> Result<Vec<(usize, StateRef)>> {
        let failed = |reason: String| HummerError::Checkpoint {
            checkpoint: id,
            reason,
        };
        let mut chains = Vec::with_capacity(snapshot.operators.len());
        for (node, piece) in &snapshot.operators {
            let reference = StateRef::decode(piece).ok_or_else(|| {
                failed(format!(
                    "the state of operator {node} in task {task} was not written to storage"
                ))
            })??;
            if let Some(base) = reference.base {
                let chain: Vec<(usize, StateRef)> = self
                    .kept
                    .get(&base)
                    .and_then(|tasks| tasks.get(&task))
                    .map(|ops| ops.iter().filter(|(n, _)| n == node).cloned().collect())
                    .unwrap_or_default();
                if chain.is_empty() {
                    return Err(failed(format!(
                        "the state of operator {node} in task {task} is a delta on checkpoint \
                         {base}, which is not a kept checkpoint of this run"
                    )));
                }
                chains.extend(chain);
            }
            chains.push((*node, reference));
        }
        Ok(chains)
    }

    fn fail(&mut self, id: CheckpointId, reason: String, now: Instant) {
        let Some(p) = self.pending.take() else {
            return;
        };
        tracing::warn!("checkpoint {id} failed: {reason}");
        self.last_end = Some(now);
        if let Some(h) = self.history.iter_mut().rev().find(|h| h.id == id) {
            h.duration_ms = now.duration_since(p.started).as_millis() as u64;
            h.status = CheckpointStatus::Failed(reason);
        }
    }

    fn push_history(&mut self, stats: CheckpointStats) {
        if self.history.len() >= HISTORY {
            self.history.remove(0);
        }
        self.history.push(stats);
    }
}

/// Loads the state of a completed checkpoint for the job `job`, refusing it if its graph
/// does not match (see [`GraphInfo::check_compatible`]).
pub fn load_for(checkpoint: &CompletedCheckpoint, job: &GraphInfo) -> Result<RestoredState> {
    let (graph, restored) = load(checkpoint)?;
    graph.check_compatible(job, &restored)?;
    Ok(restored)
}

/// Loads the state of a completed checkpoint and the graph it was taken of.
pub fn load(checkpoint: &CompletedCheckpoint) -> Result<(GraphInfo, RestoredState)> {
    let graph_bytes = checkpoint.read(GRAPH_FILE)?;
    let graph: GraphInfo =
        serde_json::from_slice(&graph_bytes).map_err(|e| HummerError::BadInput {
            input: checkpoint.dir.join(GRAPH_FILE).display().to_string(),
            reason: format!("unreadable checkpoint graph: {e}"),
        })?;
    let mut restored = RestoredState::of(checkpoint.metadata.id);
    for name in checkpoint.metadata.files.keys() {
        if !name.starts_with(TASK_FILE_PREFIX) {
            continue;
        }
        restored.add(crate::chains::read_task_as_listed(checkpoint, name)?);
    }
    // Shared state files are read when an operator's state is first asked for.
    let source = checkpoint.clone();
    restored.read_with(PieceReader {
        refers: |piece| StateRef::decode(piece).is_some(),
        read: std::sync::Arc::new(move |piece| match StateRef::decode(piece) {
            Some(reference) => source.read_shared(&reference?),
            None => Ok(piece.to_vec()),
        }),
    });
    Ok((graph, restored))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::keyed_table::KeyedTable;
    use crate::state::task_state::TaskSnapshot;
    use crate::store::{CheckpointMetadata, copy_checkpoint, find_checkpoint};
    use std::collections::HashMap;

    const NODE: usize = 5;

    /// A coordinator of a one-task job (a source that never finishes) keeping `retain` checkpoints in `dir`,
    /// its attempt restored from `restored`.
    fn coordinator(dir: &std::path::Path, retain: usize, restored: u64) -> CheckpointCoordinator {
        let mut config = CheckpointConfig::new(Duration::from_millis(10), dir);
        config.retain = retain;
        CheckpointCoordinator::new(config, GraphInfo::default(), 1, 1, restored, Instant::now())
            .unwrap()
    }

    /// Triggers the next checkpoint and acknowledges it with `state` as the task's only
    /// operator state; returns the checkpoint's id and what the coordinator said.
    fn checkpoint(
        c: &mut CheckpointCoordinator,
        state: impl FnOnce(CheckpointId) -> Vec<u8>,
    ) -> (CheckpointId, Result<Option<CheckpointId>>) {
        let now = c.last_trigger + Duration::from_secs(1);
        let trigger = c.tick(now).unwrap();
        let mut snapshot = TaskSnapshot::new(trigger.id, 128);
        snapshot.operators.push((NODE, state(trigger.id)));
        let ack = TaskAck {
            task: 0,
            snapshot,
            alignment: Duration::ZERO,
            sync: Duration::ZERO,
            state_in_files: false,
        };
        (trigger.id, c.on_event(HubEvent::Ack(ack), now))
    }

    /// The table restored from `checkpoint` (every piece of the node, in order).
    fn restored(checkpoint: &CompletedCheckpoint) -> HashMap<u32, u64> {
        let (_, state) = load(checkpoint).unwrap();
        let mut table = KeyedTable::<u32, u64>::default();
        (state.pieces(NODE))
            .for_each(|piece| table.restore(piece, 0..128, "test"))
            .unwrap();
        table.drain().collect()
    }

    /// A coordinator keeping `retain` checkpoints of a job in `job/` of a fresh directory (kept
    /// while the returned handle lives), and an empty table.
    fn fresh_job(
        retain: usize,
    ) -> (
        tempfile::TempDir,
        std::path::PathBuf,
        CheckpointCoordinator,
        KeyedTable<u32, u64>,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("job");
        let c = coordinator(&dir, retain, 0);
        (tmp, dir, c, KeyedTable::default())
    }

    fn put(table: &mut KeyedTable<u32, u64>, keys: std::ops::Range<u32>, value: u64) {
        keys.for_each(|k| table.insert(k, value));
    }

    /// One round of a running operator: the last checkpoint completes, `keys` get `value`,
    /// and the next checkpoint stores the table's snapshot (a delta when it may be); its id.
    fn step(
        c: &mut CheckpointCoordinator,
        table: &mut KeyedTable<u32, u64>,
        keys: std::ops::Range<u32>,
        value: u64,
    ) -> CheckpointId {
        if let Some(last) = c.history().last() {
            table.checkpoint_complete(last.id);
        }
        put(table, keys, value);
        let (id, done) = checkpoint(c, |id| table.snapshot_for(id, 128).unwrap());
        assert_eq!(done.unwrap(), Some(id));
        id
    }

    /// The shared state files in the job's directory.
    fn shared_files(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir.join(crate::shared::SHARED_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    }

    /// The shared files every checkpoint left in `dir` references.
    fn referenced(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
        let store = CheckpointStore::open(dir, usize::MAX).unwrap();
        store
            .ids()
            .unwrap()
            .into_iter()
            .flat_map(|id| {
                find_checkpoint(&dir.join(format!("chk-{id}")))
                    .unwrap()
                    .metadata
                    .shared
                    .into_keys()
            })
            .collect()
    }

    #[test]
    fn deltas_share_the_files_of_their_chain_and_restore_whole() {
        let (tmp, dir, mut c, mut table) = fresh_job(1);
        step(&mut c, &mut table, 0..1000, 1);
        // Deltas on the last completed checkpoint, each completed before the next.
        for round in 0..3u64 {
            let keys = 10 * round as u32..10 * round as u32 + 10;
            let id = step(&mut c, &mut table, keys, round + 2);
            let stored = std::fs::read(dir.join(format!("chk-{id}/task-0"))).unwrap();
            let stored: TaskSnapshot = postcard::from_bytes(&stored).unwrap();
            // The task file lists the chain: the full snapshot, then every delta on it.
            let chain: Vec<StateRef> = stored
                .operators
                .iter()
                .map(|(_, piece)| StateRef::decode(piece).unwrap().unwrap())
                .collect();
            assert_eq!(chain.len(), round as usize + 2, "{id}");
            assert_eq!(chain[0].base, None);
            assert_eq!(chain.last().unwrap().base, Some(id - 1));
            // Only the delta was written; the rest is shared.
            let stats = c.history().last().unwrap();
            assert!(stats.size_bytes < stats.shared_bytes / 10, "{stats:?}");
        }
        let mut expected: HashMap<u32, u64> = (0..1000).map(|k| (k, 1)).collect();
        (0..30).for_each(|k| {
            expected.insert(k, u64::from(k / 10) + 2);
        });
        let store = CheckpointStore::open(&dir, 1).unwrap();
        // Only the newest is retained, with every file of its chain and no other.
        assert_eq!(store.ids().unwrap(), vec![4]);
        let latest = store.latest_valid().unwrap().unwrap();
        assert_eq!(latest.metadata.shared.len(), 4);
        assert_eq!(shared_files(&dir), referenced(&dir));
        assert_eq!(restored(&latest), expected);
        // Found by its own path (as a cluster's workers find it), its files are beside it.
        let found = find_checkpoint(&dir.join("chk-4")).unwrap();
        assert_eq!(restored(&found), expected);

        // A savepoint holds the whole chain and needs nothing of the job's directory.
        let savepoint = tmp.path().join("savepoint/chk-4");
        copy_checkpoint(&latest, &savepoint).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let found = find_checkpoint(&savepoint).unwrap();
        assert!(found.metadata.bases.is_empty() && found.metadata.shared.is_empty());
        assert_eq!(restored(&found), expected);
    }

    #[test]
    fn a_full_checkpoint_lets_the_chain_go_and_a_lost_base_fails_the_checkpoint() {
        let (_tmp, dir, mut c, mut table) = fresh_job(1);
        step(&mut c, &mut table, 0..100, 1);
        step(&mut c, &mut table, 0..1, 2);
        // A full snapshot (most keys changed): the chain's files go.
        step(&mut c, &mut table, 0..100, 3);
        let store = CheckpointStore::open(&dir, 1).unwrap();
        assert_eq!(store.ids().unwrap(), vec![3]);
        assert_eq!(shared_files(&dir).len(), 1);
        // A delta on a checkpoint that is gone cannot complete, and says why.
        table.checkpoint_complete(1);
        let (id, done) = checkpoint(&mut c, |_| {
            let mut stale = KeyedTable::<u32, u64>::default();
            put(&mut stale, 0..100, 1);
            stale.snapshot_for(1, 128).unwrap();
            stale.checkpoint_complete(1);
            stale.insert(7, 7);
            stale.snapshot_for(4, 128).unwrap()
        });
        let err = done.unwrap_err().to_string();
        assert!(
            err.contains("delta on checkpoint 1, which is not a kept checkpoint"),
            "{err}"
        );
        let last = c.history().last().unwrap();
        assert_eq!(last.id, id);
        assert!(matches!(&last.status, CheckpointStatus::Failed(r) if r.contains("not a kept")));
        assert_eq!(store.latest_valid().unwrap().unwrap().metadata.id, 3);
    }

    #[test]
    fn a_checkpoint_whose_state_file_is_damaged_or_missing_is_skipped() {
        let (_tmp, dir, mut c, mut table) = fresh_job(3);
        step(&mut c, &mut table, 0..100, 1);
        step(&mut c, &mut table, 0..1, 2);
        step(&mut c, &mut table, 1..2, 2);
        // The delta written for checkpoint 2 is damaged: 3, which shares it, goes with it.
        let file = |id: u64| {
            shared_files(&dir)
                .into_iter()
                .find(|f| StateRef::written_in(f) == Some(id))
                .unwrap()
        };
        let damaged = file(2);
        let path = dir.join(crate::shared::SHARED_DIR).join(&damaged);
        let good = std::fs::read(&path).unwrap();
        let mut bad = good.clone();
        bad[good.len() / 2] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        let store = CheckpointStore::open(&dir, 3).unwrap();
        assert_eq!(store.latest_valid().unwrap().unwrap().metadata.id, 1);
        // Named by its path, it is found (nothing to fall back to, lengths checked only),
        // and the damaged file is named when the state is read.
        let named = find_checkpoint(&dir.join("chk-3")).unwrap();
        let (_, state) = load(&named).unwrap();
        let err = state
            .pieces(NODE)
            .for_each(|_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains(&damaged) && err.contains("checksum"), "{err}");
        // A missing file is named too.
        std::fs::remove_file(&path).unwrap();
        let err = find_checkpoint(&dir.join("chk-2")).unwrap_err().to_string();
        assert!(
            err.contains(&damaged) && err.contains("shared state file"),
            "{err}"
        );
        std::fs::write(&path, &good).unwrap();
        assert_eq!(store.latest_valid().unwrap().unwrap().metadata.id, 3);
        // A later attempt restored from 1 numbers its checkpoints above every one there.
        let mut later = coordinator(&dir, 3, 1);
        let mut fresh = KeyedTable::<u32, u64>::default();
        assert_eq!(step(&mut later, &mut fresh, 0..100, 9), 4);
        let latest = store.latest_valid().unwrap().unwrap();
        assert_eq!(latest.metadata.id, 4);
        assert_eq!(restored(&latest), (0..100).map(|k| (k, 9)).collect());
    }

    #[test]
    fn retention_removes_nothing_while_a_kept_checkpoint_s_metadata_cannot_be_read() {
        let (_tmp, dir, mut c, mut table) = fresh_job(2);
        step(&mut c, &mut table, 0..100, 1);
        step(&mut c, &mut table, 0..100, 2);
        step(&mut c, &mut table, 0..100, 3);
        let metadata = dir.join("chk-3/_metadata");
        let kept = std::fs::read(&metadata).unwrap();
        let listed: CheckpointMetadata = serde_json::from_slice(&kept).unwrap();
        // Checkpoint 3's metadata is there but cannot be read (a directory in its place).
        std::fs::remove_file(&metadata).unwrap();
        std::fs::create_dir(&metadata).unwrap();
        step(&mut c, &mut table, 0..100, 4);
        let files = shared_files(&dir);
        assert!(listed.shared.keys().all(|f| files.contains(f)), "{files:?}");
        // Readable again: the next checkpoint's retention catches up.
        std::fs::remove_dir(&metadata).unwrap();
        std::fs::write(&metadata, &kept).unwrap();
        step(&mut c, &mut table, 0..100, 5);
        assert_eq!(shared_files(&dir), referenced(&dir));
    }

    /// What a sequence of checkpoints may meet.
    #[derive(Clone, Debug)]
    enum Round {
        /// Keys `from..from + n` get a value, then a checkpoint completes.
        Complete { from: u32, n: u32 },
        /// Keys change, the task writes its state, and the checkpoint is declined.
        Declined { from: u32, n: u32 },
        /// The job fails and restarts from its newest complete checkpoint, keeping `retain`.
        Restart { retain: usize },
    }

    fn round() -> impl proptest::strategy::Strategy<Value = Round> {
        use proptest::prelude::*;
        prop_oneof![
            5 => (0u32..300, 1u32..200).prop_map(|(from, n)| Round::Complete { from, n }),
            2 => (0u32..300, 1u32..50).prop_map(|(from, n)| Round::Declined { from, n }),
            1 => (1usize..4).prop_map(|retain| Round::Restart { retain }),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        /// After any sequence of completed and declined checkpoints and restarts with any
        /// retention, the shared files are exactly those the retained checkpoints reference
        /// (no orphan, nothing referenced deleted), and every retained checkpoint restores
        /// exactly the state it was taken of.
        #[test]
        fn shared_files_are_exactly_those_retained_checkpoints_reference(
            rounds in proptest::collection::vec(round(), 1..24), retain in 1usize..4,
        ) {
            let (_tmp, dir, mut c, mut table) = fresh_job(retain);
            let mut model: HashMap<u32, u64> = HashMap::new();
            let mut taken: BTreeMap<CheckpointId, HashMap<u32, u64>> = BTreeMap::new();
            let mut retain = retain;
            for (i, round) in rounds.into_iter().enumerate() {
                let value = i as u64;
                match round {
                    Round::Complete { from, n } => {
                        put(&mut table, from..from + n, value);
                        (from..from + n).for_each(|k| { model.insert(k, value); });
                        let (id, done) = checkpoint(&mut c, |id| table.snapshot_for(id, 128).unwrap());
                        proptest::prop_assert_eq!(done.unwrap(), Some(id));
                        table.checkpoint_complete(id);
                        taken.insert(id, model.clone());
                    }
                    Round::Declined { from, n } => {
                        put(&mut table, from..from + n, value);
                        (from..from + n).for_each(|k| { model.insert(k, value); });
                        let now = c.last_trigger + Duration::from_secs(1);
                        let id = c.tick(now).unwrap().id;
                        let mut snapshot = TaskSnapshot::new(id, 128);
                        snapshot.operators.push((NODE, table.snapshot_for(id, 128).unwrap()));
                        let mut ack = TaskAck { task: 0, snapshot, alignment: Duration::ZERO, sync: Duration::ZERO, state_in_files: false };
                        // A worker wrote the state, then a task declined.
                        StateUploader::open(&dir).unwrap().store(&mut ack).unwrap();
                        let decline = HubEvent::Decline { task: 1, checkpoint: id, reason: None };
                        proptest::prop_assert_eq!(c.on_event(decline, now).unwrap(), None);
                    }
                    Round::Restart { retain: r } => {
                        retain = r;
                        let latest = CheckpointStore::open(&dir, retain).unwrap().latest_valid().unwrap();
                        let from = latest.as_ref().map_or(0, |l| l.metadata.id);
                        c = coordinator(&dir, retain, from);
                        table = KeyedTable::default();
                        model = HashMap::new();
                        if let Some(latest) = latest {
                            let (_, state) = load(&latest).unwrap();
                            (state.pieces(NODE))
                                .for_each(|piece| table.restore(piece, 0..128, "test"))
                                .unwrap();
                            model = taken[&from].clone();
                        }
                    }
                }
            }
            let store = CheckpointStore::open(&dir, retain).unwrap();
            let ids = store.ids().unwrap();
            if !ids.is_empty() {
                // Files of the last declined checkpoint go at the next completion: make one.
                let (id, done) = checkpoint(&mut c, |id| table.snapshot_for(id, 128).unwrap());
                proptest::prop_assert_eq!(done.unwrap(), Some(id));
                taken.insert(id, model.clone());
                proptest::prop_assert_eq!(shared_files(&dir), referenced(&dir));
                for id in store.ids().unwrap() {
                    let found = find_checkpoint(&dir.join(format!("chk-{id}"))).unwrap();
                    proptest::prop_assert_eq!(&restored(&found), &taken[&id], "checkpoint {}", id);
                }
            }
        }
    }
}
