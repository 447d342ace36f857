//! `write_text_file(dir)`: part files of `{record}\n` lines (Display, or an encoder of the
//! caller's, as the SQL filesystem sink writes its CSV and JSON rows straight into the file's
//! buffer).
//!
//! Without checkpoints, subtask *i* writes `dir/.part-i.inprogress` and renames it to
//! `dir/part-i` when its input ends, so a reader never sees a half-written part file. Part
//! files left by an earlier run with a higher parallelism are removed when the job starts.
//!
//! With checkpoints the sink is exactly-once, by a two-phase commit per checkpoint: records go
//! to `dir/.part-i.inprogress`; at the barrier of checkpoint *c* that file is closed and
//! renamed `dir/.part-i-c.pending` (pre-commit: durable, not yet visible), and the list of
//! pending files is the writer's checkpointed state; when checkpoint *c* has completed
//! everywhere the pending file becomes `dir/part-i-c` (commit). After a failure the restored
//! writers first commit what the restored checkpoint lists as pending (it had completed, so
//! its output must become visible even if the commit was interrupted), then delete every
//! in-progress and pending file of a later, uncompleted checkpoint: their records will be
//! written again by the replay. If the restored checkpoint is not the newest one (the newest
//! was damaged, or the job restarts from an older savepoint), committed files of checkpoints
//! after it are removed as well, since the replay writes their records again. A record
//! therefore never appears twice in the visible `part-*` files.
//!
//! An appending sink ([`TextFileSink::appending`], SQL's `INSERT INTO` a filesystem table, as
//! Flink's) leaves the files already in the directory alone: each writer names its files with
//! a run id of its own (`part-<run>-i`, `part-<run>-i-c`), kept in its checkpointed state so
//! that a restored writer recovers the files of the run it continues.
//!
//! A sink published by its caller ([`TextFileSink::published_by_caller`], SQL's `INSERT`
//! run in the client's process without checkpoints) leaves each finished part file hidden
//! (`.part-<run>-i.done`) until the caller, once the whole job has succeeded, makes the job's
//! files visible with [`publish`] (or removes them with [`discard`] when it failed), as Flink
//! commits a batch job's files when the job ends: a failed job leaves no part of its output.

use std::fmt::Display;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{HummerError, Result, internal};
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};
use crate::types::CheckpointId;

/// Appends a record's line (without its newline) to a string.
pub type LineEncoder<T> = Arc<dyn Fn(&T, &mut String) + Send + Sync>;

/// Writes records as text lines into a directory of part files.
pub struct TextFileSink<T> {
    dir: PathBuf,
    encode: LineEncoder<T>,
    appending: bool,
    /// The job's token, where the caller publishes the files (see the module documentation).
    published_by: Option<String>,
}

impl<T: Display> TextFileSink<T> {
    /// A sink writing each record's `Display` into `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        use std::fmt::Write as _;
        // Writing to a String fails only if a Display impl reports an error; its line is
        // then what it wrote before.
        Self::with_encoder(dir, |r: &T, line: &mut String| {
            let _ = write!(line, "{r}");
        })
    }
}

impl<T> TextFileSink<T> {
    /// A sink writing the line `encode` makes of each record into `dir`.
    pub fn with_encoder(
        dir: impl Into<PathBuf>,
        encode: impl Fn(&T, &mut String) + Send + Sync + 'static,
    ) -> Self {
        TextFileSink {
            dir: dir.into(),
            encode: Arc::new(encode),
            appending: false,
            published_by: None,
        }
    }

    /// The sink that adds its part files to those in the directory instead of replacing
    /// them (see the module documentation).
    pub fn appending(mut self) -> Self {
        self.appending = true;
        self
    }

    /// The appending sink whose finished files the caller publishes when the job has
    /// succeeded: `token` ([`job_token`]) names the job's files for [`publish`] and
    /// [`discard`]. (With checkpoints the files are committed by them, as always.)
    pub fn published_by_caller(mut self, token: &str) -> Self {
        self.appending = true;
        self.published_by = Some(token.to_string());
        self
    }
}

/// A token for the files of one job (see [`TextFileSink::published_by_caller`]).
pub fn job_token() -> String {
    new_run(0)
}

/// The hidden name of a finished file of a published sink, by its visible name.
fn done_name(committed: &str) -> String {
    format!(".{committed}.done")
}

/// The files of the job `token` in `dir` finished but not yet visible, with the names they
/// get when published.
fn done_files(dir: &Path, token: &str) -> Result<Vec<(PathBuf, PathBuf)>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| HummerError::io("cannot list output directory", dir, e))?;
    let prefix = format!(".part-{}", job_run(token, ""));
    Ok(entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let visible = name.strip_prefix('.')?.strip_suffix(".done")?;
            name.starts_with(&prefix)
                .then(|| (entry.path(), dir.join(visible)))
        })
        .collect())
}

/// Makes the finished files of the job `token` in `dir` visible: the job has succeeded.
pub fn publish(dir: &Path, token: &str) -> Result<()> {
    for (done, visible) in done_files(dir, token)? {
        std::fs::rename(&done, &visible)
            .map_err(|e| HummerError::io("cannot commit output file", &visible, e))?;
    }
    Ok(())
}

/// Makes the finished files of the job `token` in `dir` the directory's only visible files:
/// the job, an `INSERT OVERWRITE`, has succeeded. Every other visible file is removed
/// (hidden ones, `.name` and `_name`, and subdirectories are left alone).
pub fn publish_replacing(dir: &Path, token: &str) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| HummerError::io("cannot list output directory", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let visible_file =
            !name.starts_with(['.', '_']) && entry.file_type().is_ok_and(|t| t.is_file());
        if visible_file {
            std::fs::remove_file(entry.path())
                .map_err(|e| HummerError::io("cannot remove replaced file", entry.path(), e))?;
        }
    }
    publish(dir, token)
}

/// Removes what the job `token` wrote in `dir`, finished or not: the job has failed.
pub fn discard(dir: &Path, token: &str) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let prefix = format!(".part-{}", job_run(token, ""));
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            std::fs::remove_file(entry.path())
                .map_err(|e| HummerError::io("cannot remove output file", entry.path(), e))?;
        }
    }
    Ok(())
}

/// A run id for the files of one writer: unique across writers, runs and processes, without
/// a `-` (file names are split at them), and starting with a letter (never a subtask's
/// number).
fn new_run(subtask: usize) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("r{nanos:x}{:x}{n:x}{subtask:x}", std::process::id())
}

/// The run of subtask `subtask` (in hex) of the job `token`, whose files [`publish`] and
/// [`discard`] find by the run's start (`subtask` empty).
fn job_run(token: &str, subtask: &str) -> String {
    format!("{token}s{subtask}")
}

/// The name of the file a writer of `run` (none: a replacing sink) and `subtask` writes into.
fn in_progress_name(run: Option<&str>, subtask: usize) -> String {
    format!(".part-{}{subtask}.inprogress", run_prefix(run))
}

/// `run-` for a run's files, nothing for a replacing sink's.
fn run_prefix(run: Option<&str>) -> String {
    run.map(|r| format!("{r}-")).unwrap_or_default()
}

/// The committed name of subtask `subtask`'s part file.
pub fn part_file(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(format!("part-{subtask}"))
}

fn remove_stale_parts(dir: &Path, parallelism: usize) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| HummerError::io("cannot list output directory", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let index = name
            .strip_prefix("part-")
            .or_else(|| {
                name.strip_prefix(".part-")
                    .and_then(|n| n.strip_suffix(".inprogress"))
            })
            .and_then(|n| n.parse::<usize>().ok());
        if index.is_some_and(|i| i >= parallelism) {
            std::fs::remove_file(entry.path())
                .map_err(|e| HummerError::io("cannot remove stale part file", entry.path(), e))?;
        }
    }
    Ok(())
}

/// Writes `batch` as lines, draining it. The lines are encoded into `scratch` (kept between
/// batches) and written in large slices: formatting into a string costs far less per line
/// than formatting through an `io::Write`.
fn write_lines<T>(
    out: &mut impl Write,
    batch: &mut Vec<T>,
    encode: &LineEncoder<T>,
    scratch: &mut String,
) -> std::io::Result<()> {
    const FLUSH_AT: usize = 1 << 16;
    scratch.clear();
    for r in batch.drain(..) {
        encode(&r, scratch);
        scratch.push('\n');
        if scratch.len() >= FLUSH_AT {
            out.write_all(scratch.as_bytes())?;
            scratch.clear();
        }
    }
    out.write_all(scratch.as_bytes())
}

struct TextFileWriter<T> {
    out: BufWriter<File>,
    encode: LineEncoder<T>,
    scratch: String,
    in_progress: PathBuf,
    committed: PathBuf,
}

impl<T: Send + 'static> Sink<T> for TextFileSink<T> {
    fn name(&self) -> String {
        format!("Text File Sink ({})", self.dir.display())
    }

    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| HummerError::io("cannot create output directory", &self.dir, e))?;
        // A published sink's runs start with the job's token (`<token>s<subtask>`).
        let run = match &self.published_by {
            Some(token) => Some(job_run(token, &format!("{:x}", ctx.subtask))),
            None => self.appending.then(|| new_run(ctx.subtask)),
        };
        if ctx.checkpointing {
            let mut writer = TransactionalWriter::<T>::new(
                &self.dir,
                ctx.subtask,
                ctx.parallelism,
                self.encode.clone(),
            );
            writer.run = run;
            return Ok(Box::new(writer));
        }
        if ctx.subtask == 0 && !self.appending {
            remove_stale_parts(&self.dir, ctx.parallelism)?;
        }
        let in_progress = self.dir.join(in_progress_name(run.as_deref(), ctx.subtask));
        let committed = format!("part-{}{}", run_prefix(run.as_deref()), ctx.subtask);
        let committed = match self.published_by {
            Some(_) => done_name(&committed),
            None => committed,
        };
        let file = File::create(&in_progress)
            .map_err(|e| HummerError::io("cannot create output file", &in_progress, e))?;
        Ok(Box::new(TextFileWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            encode: self.encode.clone(),
            scratch: String::new(),
            in_progress,
            committed: self.dir.join(committed),
        }))
    }
}

impl<T: Send> SinkWriter<T> for TextFileWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        write_lines(&mut self.out, batch, &self.encode, &mut self.scratch)
            .map_err(|e| HummerError::io("cannot write output file", &self.in_progress, e))
    }

    fn finish(&mut self) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| HummerError::io("cannot write output file", &self.in_progress, e))?;
        std::fs::rename(&self.in_progress, &self.committed)
            .map_err(|e| HummerError::io("cannot commit output file", &self.committed, e))
    }
}

/// What a transactional writer checkpoints: the pending files it has not committed yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PendingFiles {
    /// The checkpoint this state belongs to.
    checkpoint: CheckpointId,
    /// The writer's subtask when it was checkpointed.
    subtask: usize,
    /// `(checkpoint, committed file name)` of every pending file.
    pending: Vec<(CheckpointId, String)>,
    /// The writer's run id, for an appending sink.
    run: Option<String>,
}

/// The exactly-once writer of one subtask (see the module documentation).
struct TransactionalWriter<T> {
    dir: PathBuf,
    subtask: usize,
    parallelism: usize,
    /// The in-progress file, opened at the first record after a barrier.
    out: Option<BufWriter<File>>,
    scratch: String,
    /// Pre-committed files not yet committed: `(checkpoint, committed name)`.
    pending: Vec<(CheckpointId, String)>,
    /// Pre-committed files still being synced to disk, by committed name: the sync runs beside
    /// the pipeline and a file is made visible only once it is done.
    syncing: Vec<(String, std::thread::JoinHandle<std::io::Result<()>>)>,
    /// States of the restored run, applied before the first record.
    restored: Vec<PendingFiles>,
    recovered: bool,
    encode: LineEncoder<T>,
    /// The run id its file names carry, for an appending sink.
    run: Option<String>,
}

fn pending_name(committed: &str) -> String {
    format!(".{committed}.pending")
}

/// A file's run id (none for a replacing sink's) and subtask, from the part of its name
/// after `part-`: `[run-]i` followed by `rest` (`-c` or nothing).
fn run_and_subtask(name: &str) -> Option<(Option<&str>, usize, Option<&str>)> {
    let mut parts = name.split('-');
    let first = parts.next()?;
    let (second, third) = (parts.next(), parts.next());
    if parts.next().is_some() {
        return None;
    }
    // `i`, `i-c` or `run-i-c` (an appending writer's `run-i` is read by `uncommitted` or
    // not at all: its run is not a number).
    match (second, third) {
        (None, _) => Some((None, first.parse().ok()?, None)),
        (Some(b), None) => Some((None, first.parse().ok()?, Some(b))),
        (Some(b), Some(c)) => Some((Some(first), b.parse().ok()?, Some(c))),
    }
}

/// `(run, subtask, checkpoint)` of a committed file `part-[run-]i-c`.
fn committed_file(name: &str) -> Option<(Option<&str>, usize, CheckpointId)> {
    let (run, subtask, checkpoint) = run_and_subtask(name.strip_prefix("part-")?)?;
    Some((run, subtask, checkpoint?.parse().ok()?))
}

/// The run and subtask in the name of an in-progress (`.part-[run-]i.inprogress`) or pending
/// (`.part-[run-]i-c.pending`) file.
fn uncommitted(name: &str) -> Option<(Option<&str>, usize)> {
    if let Some(rest) = name
        .strip_prefix(".part-")
        .and_then(|n| n.strip_suffix(".inprogress"))
    {
        // `i` or `run-i`.
        return match rest.split_once('-') {
            None => Some((None, rest.parse().ok()?)),
            Some((run, i)) => Some((Some(run), i.parse().ok()?)),
        };
    }
    let rest = name
        .strip_prefix(".part-")
        .and_then(|n| n.strip_suffix(".pending"))?;
    let (run, subtask, checkpoint) = run_and_subtask(rest)?;
    checkpoint?.parse::<u64>().ok()?;
    Some((run, subtask))
}

impl<T> TransactionalWriter<T> {
    fn new(dir: &Path, subtask: usize, parallelism: usize, encode: LineEncoder<T>) -> Self {
        TransactionalWriter {
            dir: dir.to_path_buf(),
            subtask,
            parallelism,
            out: None,
            scratch: String::new(),
            pending: Vec::new(),
            syncing: Vec::new(),
            restored: Vec::new(),
            recovered: false,
            encode,
            run: None,
        }
    }

    fn in_progress(&self) -> PathBuf {
        self.dir
            .join(in_progress_name(self.run.as_deref(), self.subtask))
    }

    /// Makes a pending file visible; one already visible is left alone.
    fn commit_file(&self, committed: &str) -> Result<()> {
        let from = self.dir.join(pending_name(committed));
        let to = self.dir.join(committed);
        match std::fs::rename(&from, &to) {
            Ok(()) => Ok(()),
            Err(_) if to.exists() => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                tracing::warn!(
                    "pending output file {} of a completed checkpoint is missing",
                    from.display()
                );
                Ok(())
            }
            Err(e) => Err(HummerError::io("cannot commit output file", &to, e)),
        }
    }

    /// Once, before the first record: commits what the restored checkpoint left pending for
    /// the old subtasks this one takes over, and removes their uncommitted files.
    fn recover(&mut self) -> Result<()> {
        if self.recovered {
            return Ok(());
        }
        self.recovered = true;
        let p = self.parallelism.max(1);
        let restored_checkpoint = self.restored.iter().map(|s| s.checkpoint).max();
        // The (run, subtask) pairs whose files this writer answers for: the old subtasks it
        // takes over (any of a replacing sink's runs) and its own.
        let mut mine: Vec<(Option<String>, usize)> = vec![(self.run.clone(), self.subtask)];
        for state in std::mem::take(&mut self.restored) {
            if state.subtask % p == self.subtask {
                for (_, committed) in &state.pending {
                    self.commit_file(committed)?;
                }
                // Continue the run of the subtask it was, so that a failure before its
                // next checkpoint leaves nothing the next restore does not clean up.
                if state.subtask == self.subtask && state.run.is_some() {
                    self.run = state.run.clone();
                    mine[0].0 = state.run.clone();
                }
                mine.push((state.run, state.subtask));
            }
        }
        let answers_for = |run: Option<&str>, j: usize| match run {
            None => self.run.is_none() && j % p == self.subtask,
            Some(run) => mine
                .iter()
                .any(|(r, s)| r.as_deref() == Some(run) && *s == j),
        };
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| HummerError::io("cannot list output directory", &self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let uncommitted = uncommitted(&name).is_some_and(|(run, j)| answers_for(run, j));
            let rolled_back = restored_checkpoint.is_some_and(|restored| {
                committed_file(&name).is_some_and(|(run, j, c)| answers_for(run, j) && c > restored)
            });
            if uncommitted || rolled_back {
                std::fs::remove_file(entry.path()).map_err(|e| {
                    HummerError::io("cannot remove uncommitted output file", entry.path(), e)
                })?;
            }
        }
        Ok(())
    }
}

impl<T: Send> SinkWriter<T> for TransactionalWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        self.recover()?;
        if self.out.is_none() {
            let path = self.in_progress();
            let file = File::create(&path)
                .map_err(|e| HummerError::io("cannot create output file", &path, e))?;
            self.out = Some(BufWriter::with_capacity(1 << 20, file));
        }
        let path = self.in_progress();
        if let Some(out) = &mut self.out {
            write_lines(out, batch, &self.encode, &mut self.scratch)
                .map_err(|e| HummerError::io("cannot write output file", &path, e))?;
        }
        Ok(())
    }

    fn pre_commit(&mut self, checkpoint: CheckpointId) -> Result<Option<Vec<u8>>> {
        self.recover()?;
        if let Some(out) = self.out.take() {
            let path = self.in_progress();
            let file = out
                .into_inner()
                .map_err(|e| HummerError::io("cannot write output file", &path, e.into_error()))?;
            let committed = format!(
                "part-{}{}-{checkpoint}",
                run_prefix(self.run.as_deref()),
                self.subtask
            );
            let pending = self.dir.join(pending_name(&committed));
            std::fs::rename(&path, &pending)
                .map_err(|e| HummerError::io("cannot pre-commit output file", &pending, e))?;
            // Syncing a second of output takes a while: the pipeline goes on meanwhile.
            let sync = std::thread::Builder::new()
                .name("file-sink-sync".into())
                .spawn(move || file.sync_all())
                .map_err(|e| HummerError::io("cannot sync output file", &pending, e))?;
            self.syncing.push((committed.clone(), sync));
            self.pending.push((checkpoint, committed));
        }
        let state = PendingFiles {
            checkpoint,
            subtask: self.subtask,
            pending: self.pending.clone(),
            run: self.run.clone(),
        };
        postcard::to_stdvec(&state)
            .map(Some)
            .map_err(|e| internal!("file sink state: {e}"))
    }

    fn commit(&mut self, checkpoint: CheckpointId) -> Result<()> {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(c, _)| *c <= checkpoint);
        self.pending = later;
        for (_, committed) in due {
            if let Some(i) = self.syncing.iter().position(|(name, _)| *name == committed) {
                let (_, sync) = self.syncing.swap_remove(i);
                let path = self.dir.join(pending_name(&committed));
                sync.join()
                    .map_err(|_| internal!("the output file sync panicked"))?
                    .map_err(|e| HummerError::io("cannot sync output file", &path, e))?;
            }
            self.commit_file(&committed)?;
        }
        Ok(())
    }

    fn restore(&mut self, state: &[u8]) -> Result<()> {
        let state: PendingFiles =
            postcard::from_bytes(state).map_err(|e| HummerError::BadInput {
                input: format!(
                    "checkpointed state of the file sink in {}",
                    self.dir.display()
                ),
                reason: e.to_string(),
            })?;
        self.restored.push(state);
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.recover()?;
        // The final checkpoint's barrier precedes the end of input, so everything written
        // is pending already; the final checkpoint's commit makes it visible.
        if self.out.is_some() {
            return Err(internal!(
                "records reached the exactly-once file sink after the final checkpoint"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_file_names_are_recognised() {
        assert_eq!(uncommitted(".part-3.inprogress"), Some((None, 3)));
        assert_eq!(uncommitted(".part-12-40.pending"), Some((None, 12)));
        assert_eq!(uncommitted("part-3-40"), None);
        assert_eq!(uncommitted(".part-x.inprogress"), None);
        assert_eq!(uncommitted(".part-1-x.pending"), None);
        assert_eq!(committed_file("part-3-40"), Some((None, 3, 40)));
        assert_eq!(committed_file("part-3"), None);
        let run = new_run(7);
        assert!(!run.contains('-') && run.parse::<usize>().is_err());
        assert_eq!(
            uncommitted(&format!(".part-{run}-3.inprogress")),
            Some((Some(run.as_str()), 3))
        );
        assert_eq!(
            uncommitted(&format!(".part-{run}-3-40.pending")),
            Some((Some(run.as_str()), 3))
        );
        assert_eq!(
            committed_file(&format!("part-{run}-3-40")),
            Some((Some(run.as_str()), 3, 40))
        );
        assert_eq!(committed_file(&format!("part-{run}-3")), None);
        assert_ne!(new_run(7), run, "a new run every time");
    }

    /// A writer of a replacing sink, or with `appending` one of a new run.
    fn writer(
        dir: &Path,
        subtask: usize,
        parallelism: usize,
        appending: bool,
    ) -> TransactionalWriter<u32> {
        let sink = TextFileSink::<u32>::new(dir);
        let mut w = TransactionalWriter::new(dir, subtask, parallelism, sink.encode);
        w.run = appending.then(|| new_run(subtask));
        w
    }

    fn visible(dir: &Path) -> Vec<String> {
        let mut lines: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("part-"))
            .flat_map(|e| {
                std::fs::read_to_string(e.path())
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        lines
    }

    #[test]
    fn output_is_visible_only_after_commit_and_a_restore_drops_uncommitted_output() {
        for appending in [false, true] {
            visible_after_commit(appending);
        }
    }

    fn visible_after_commit(appending: bool) {
        let dir = tempfile::tempdir().unwrap();
        // An appending sink leaves other runs' files alone.
        std::fs::write(dir.path().join("part-0"), "0\n").unwrap();
        let before: Vec<String> = if appending {
            vec!["0".into()]
        } else {
            Vec::new()
        };
        let mut w = writer(dir.path(), 0, 1, appending);
        w.write_batch(&mut vec![1, 2]).unwrap();
        let state1 = w.pre_commit(1).unwrap().unwrap();
        if !appending {
            std::fs::remove_file(dir.path().join("part-0")).unwrap();
        }
        assert_eq!(visible(dir.path()), before, "pre-committed is not visible");
        w.write_batch(&mut vec![3]).unwrap();
        let _state2 = w.pre_commit(2).unwrap().unwrap();
        w.write_batch(&mut vec![4]).unwrap();
        // Crash: checkpoint 1 completed, but its commit never reached the writer; checkpoint
        // 2 did not complete. The restored writer commits 1 and drops 2 and the rest.
        drop(w);
        let mut r = writer(dir.path(), 0, 1, appending);
        r.restore(&state1).unwrap();
        r.write_batch(&mut vec![3]).unwrap();
        let with = |more: &[&str]| {
            let mut all = before.clone();
            all.extend(more.iter().map(|s| s.to_string()));
            all
        };
        assert_eq!(visible(dir.path()), with(&["1", "2"]));
        r.pre_commit(2).unwrap();
        r.commit(2).unwrap();
        assert_eq!(visible(dir.path()), with(&["1", "2", "3"]));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn restoring_an_older_checkpoint_removes_what_later_ones_committed() {
        for appending in [false, true] {
            older_checkpoint_restored(appending);
        }
    }

    fn older_checkpoint_restored(appending: bool) {
        let dir = tempfile::tempdir().unwrap();
        let mut w = writer(dir.path(), 0, 1, appending);
        w.write_batch(&mut vec![1]).unwrap();
        let state1 = w.pre_commit(1).unwrap().unwrap();
        w.commit(1).unwrap();
        w.write_batch(&mut vec![2]).unwrap();
        w.pre_commit(2).unwrap();
        w.commit(2).unwrap();
        assert_eq!(visible(dir.path()), vec!["1", "2"]);
        // Checkpoint 2 is lost: the job goes back to 1 and will write 2 again.
        let mut r = writer(dir.path(), 0, 1, appending);
        r.restore(&state1).unwrap();
        r.recover().unwrap();
        assert_eq!(visible(dir.path()), vec!["1"], "appending {appending}");
    }

    #[test]
    fn a_lower_parallelism_takes_over_the_old_subtasks_files() {
        for appending in [false, true] {
            lower_parallelism(appending);
        }
    }

    fn lower_parallelism(appending: bool) {
        let dir = tempfile::tempdir().unwrap();
        let mut states = Vec::new();
        for s in 0..3 {
            let mut w = writer(dir.path(), s, 3, appending);
            w.write_batch(&mut vec![s as u32]).unwrap();
            states.push(w.pre_commit(5).unwrap().unwrap());
            w.write_batch(&mut vec![100 + s as u32]).unwrap();
        }
        for s in 0..2 {
            let mut r = writer(dir.path(), s, 2, appending);
            for st in &states {
                r.restore(st).unwrap();
            }
            r.recover().unwrap();
        }
        assert_eq!(visible(dir.path()), vec!["0", "1", "2"]);
        assert!(
            std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .all(|e| !e.file_name().to_string_lossy().starts_with('.'))
        );
    }
}
