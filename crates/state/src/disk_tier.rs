//! The disk tier of keyed state: with a memory budget for state, a keyed table keeps its hot
//! entries in memory and moves cold ones to local disk, reading an entry back into memory
//! when its key comes again. Without a budget nothing here runs, and a table is as fast as
//! it was.
//!
//! Why it is built this way:
//!
//! * **The disk side is files of its own** ([`run_file`]): a spill writes its entries as one
//!   immutable file sorted by key group and key (a *run*), and keeps in memory the first key
//!   of each block and a bloom filter, so a key that is not on disk costs filter probes and
//!   one that is costs one block read. A key read back is marked taken out of its run (a bit
//!   per entry); a run with nothing left is deleted. Runs are merged by size tiers
//!   ([`merge_choice`]): as soon as a table has [`MERGED`] runs of a like size, they become
//!   one, so an entry is rewritten once per tier (a few times) rather than at every merge;
//!   past [`MAX_RUNS`] the smallest are merged whatever their sizes. Merges run on a thread
//!   of their own (the task reads the old runs meanwhile), and drop what was taken out.
//!   (Merging the four smallest runs whenever a table had twelve rewrote q19's window
//!   contents 14 times over: 18 GB written for 1.3 GB moved out. Tiers of eight rather than
//!   four wrote a third less again, and q18 and q19 with 64 MiB ran 6-13 % faster: the
//!   entries a job moves out mostly stay out, so fewer runs to probe buys little.)
//!   (An embedded LSM tree, `fjall`, was measured first: its leveled compaction rewrote the
//!   spilled state over and over and took three quarters of the CPU of a q18 run, 110 times
//!   slower than in memory. Spilled state here is written once per spill and once per merge,
//!   and never needs a write-ahead log: a checkpoint, not the disk tier, makes it durable.)
//! * **Each key is in memory or on disk, never both**: a key read back leaves the disk, so
//!   a table's length, its snapshots and its drain are the two parts added, with no
//!   shadowing to resolve.
//! * **The pressure is the process's memory, not an estimate**: what a `Vec` of SQL values
//!   occupies on the heap is several times its encoded size, and no estimate of it stays
//!   true across operators. [`DiskTier`] reads the process's resident memory (at most every
//!   [`SAMPLE_EVERY`]) and compares its growth since the tier was made with the budget; a
//!   table then limits the entries it keeps in memory ([`Cold::spill_count`]). Entries not
//!   used since the table last moved some out go first ([`Victims`], CLOCK), so that the
//!   keys a job keeps coming back to stay in memory; the only bookkeeping per entry is a
//!   bit of the epoch a change stores anyway. (Random eviction, tried first, moved the
//!   keys in use out as readily as any other.)
//! * **Checkpoints read its files after the barrier** ([`ColdPart`]): at the barrier a table
//!   writes the entries in memory and takes copies of its runs (a file never changes, and
//!   an open one stays readable when a merge deletes it); the checkpoint's writer then reads
//!   the entries on disk as they are stored, with no decoding, while the task goes on. A
//!   whole snapshot takes all of them; a delta those changed since its base, which were in
//!   memory then and so are stamped with a later epoch, in runs written since (each run
//!   keeps its newest stamp, and older runs are passed over). (Read back and re-encoded at
//!   the barrier, this part took q19 at 2g 1-2.3 s of every 10 s checkpoint while its task
//!   waited.) A restored table fills memory and spills as it loads.
//!
//! An error of the disk (a full disk, a file that cannot be read) fails the job, with the
//! directory named, as any other task failure: the job restarts from its last checkpoint.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

pub mod run_file;

use run_file::RunFile;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{HummerError, Result};
use crate::key_groups::{key_group_of_hash, key_hash};
use crate::keyed_table::Epoch;
use crate::types::metrics::{StateCounters, SubtaskMetrics};

/// How often the process's resident memory is read, at most.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// Runs a table keeps at most before it merges its smallest ones whatever their sizes.
pub const MAX_RUNS: usize = 32;

/// Runs of a like size a table merges into one as soon as it has them.
pub const MERGED: usize = 8;

/// Runs merged at once, at most.
pub const MAX_MERGED: usize = 12;

/// Runs smaller than this (live bytes) count as one size when merges are chosen.
pub const SMALL_RUN_BYTES: u64 = 4 << 20;

/// Hot entries a table keeps at least before it moves any to disk: a small table costs
/// little memory and would pay a disk read for every key.
pub const MIN_HOT_ENTRIES: usize = 1024;

/// When memory is short, as [`DiskTier`] decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The process's resident memory has grown by more than this many bytes since the tier
    /// was made (`--state-memory`).
    Bytes(u64),
    /// A table holds more than this many entries in memory: a deterministic budget, for
    /// tests of the tier itself.
    Entries(usize),
}

/// The share of the budget (one in this many bytes) that snapshot buffers kept for later
/// checkpoints may hold. Kept buffers are resident: under a budget they would count as state
/// (the tier reads the process's memory), and the tables would move that much more out.
const RECYCLED_SHARE: u64 = 16;

/// The disk tier of one process: the budget, and the directory every table of the process
/// spills into (a directory of its own per table, made at its first spill).
pub struct DiskTier {
    budget: Budget,
    dir: PathBuf,
    /// Resident bytes when the tier was made.
    baseline: u64,
    /// The latest reading of resident bytes.
    resident: AtomicU64,
    sampled_at: Mutex<Instant>,
    next_table: AtomicUsize,
    /// The counters of all its tables, summed (each subtask has its own as well).
    pub stats: StateCounters,
}

/// The tier of the process, if a budget was set (see [`DiskTier::configure_process`]).
static PROCESS: RwLock<Option<Arc<DiskTier>>> = RwLock::new(None);

impl DiskTier {
    /// A tier with `budget`, spilling under `dir` (a directory of its own is made there and
    /// removed when the tier is dropped); `None`: under the system's temporary directory.
    pub fn new(budget: Budget, dir: Option<&Path>) -> Result<Arc<DiskTier>> {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let base = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let dir = base.join(format!(
            "hummer-state-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&base).map_err(|source| HummerError::Io {
            action: "creating the state directory",
            path: base.clone(),
            source,
        })?;
        remove_stale_dirs(&base);
        let baseline = resident_bytes().unwrap_or(0);
        if let Budget::Bytes(bytes) = budget {
            crate::snapshot::limit_recycling(bytes / RECYCLED_SHARE);
        }
        Ok(Arc::new(DiskTier {
            budget,
            dir,
            baseline,
            resident: AtomicU64::new(baseline),
            sampled_at: Mutex::new(Instant::now()),
            next_table: AtomicUsize::new(0),
            stats: StateCounters::default(),
        }))
    }

    /// Sets the tier every job of this process uses from now on (`None`: no budget, state
    /// stays in memory). The budget is the process's: a TaskManager's slots share it.
    pub fn configure_process(tier: Option<Arc<DiskTier>>) {
        if let Ok(mut process) = PROCESS.write() {
            *process = tier;
        }
    }

    /// Makes the process's tier one of `budget` under `dir`, unless it is one already.
    pub fn ensure_process(budget: Budget, dir: Option<&Path>) -> Result<()> {
        if let Some(tier) = DiskTier::process()
            && tier.budget == budget
            && dir.is_none_or(|d| tier.dir.parent() == Some(d))
        {
            return Ok(());
        }
        DiskTier::configure_process(Some(DiskTier::new(budget, dir)?));
        Ok(())
    }

    /// The tier of this process, if one was configured.
    pub fn process() -> Option<Arc<DiskTier>> {
        PROCESS.read().ok().and_then(|p| p.clone())
    }

    /// The directory it spills into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the tier did, as one line (`None` if it moved nothing to disk).
    pub fn summary(&self) -> Option<String> {
        let s = &self.stats;
        let evicted = s.moved_out.load(Ordering::Relaxed);
        (evicted > 0).then(|| {
            format!(
                "state on disk: {evicted} entries moved out of memory ({:.1} MB written), {} of {} look-ups past memory read back from disk",
                s.bytes_written.load(Ordering::Relaxed) as f64 / 1e6,
                s.disk_hits.load(Ordering::Relaxed),
                s.disk_lookups.load(Ordering::Relaxed),
            )
        })
    }

    /// The latest reading of resident memory, and whether it has grown past the budget.
    fn pressure(&self) -> (u64, bool) {
        self.sample();
        let resident = self.resident.load(Ordering::Relaxed);
        let over = match self.budget {
            Budget::Bytes(budget) => resident.saturating_sub(self.baseline) > budget,
            Budget::Entries(_) => false,
        };
        (resident, over)
    }

    /// Reads the resident memory again if the last reading is older than [`SAMPLE_EVERY`].
    fn sample(&self) {
        let Ok(mut at) = self.sampled_at.try_lock() else {
            return; // another task is reading it
        };
        if at.elapsed() < SAMPLE_EVERY {
            return;
        }
        *at = Instant::now();
        if let Some(bytes) = resident_bytes() {
            self.resident.store(bytes, Ordering::Relaxed);
        }
    }

    fn error(&self, what: &str, e: impl std::fmt::Display) -> HummerError {
        HummerError::Io {
            action: "keeping state on disk",
            path: self.dir.clone(),
            source: std::io::Error::other(format!("{what}: {e}")),
        }
    }

    /// A new directory for one table's runs.
    fn table_dir(&self) -> Result<PathBuf> {
        let n = self.next_table.fetch_add(1, Ordering::Relaxed);
        let dir = self.dir.join(format!("table-{n}"));
        std::fs::create_dir_all(&dir).map_err(|source| HummerError::Io {
            action: "creating a directory for state on disk",
            path: dir.clone(),
            source,
        })?;
        Ok(dir)
    }
}

/// The process a tier's directory under a base directory belongs to
/// (`hummer-state-<pid>-<n>`, as [`DiskTier::new`] names it).
fn owner_pid(name: &std::ffi::OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix("hummer-state-")?;
    rest.split_once('-')?.0.parse().ok()
}

/// Removes the tier directories under `base` of the processes `gone` says have ended.
fn remove_dirs_of(base: &Path, gone: impl Fn(u32) -> bool) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        if owner_pid(&entry.file_name()).is_some_and(&gone)
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            tracing::info!(dir = %entry.path().display(), "removed the state a stopped process left");
        }
    }
}

/// Removes the directories that tiers of processes no longer running left under `base`: a
/// process killed, or one that exits from a failed task without dropping its tier, leaves
/// its state on disk, and a job that restarts in a new worker each time would fill the disk
/// with it. A directory whose pid is running (this process's, or a live one of another job)
/// is left alone.
fn remove_stale_dirs(base: &Path) {
    let own = std::process::id();
    remove_dirs_of(base, |pid| {
        pid != own && !Path::new(&format!("/proc/{pid}")).exists()
    });
}

/// Removes what the tiers of process `pid`, which has ended, left under `base` (`None`: the
/// system's temporary directory, the default of `--state-dir`): a TaskManager calls it when
/// one of its workers exits, however it ended.
pub fn remove_dirs_of_process(base: Option<&Path>, pid: u32) {
    let base = base.map_or_else(std::env::temp_dir, Path::to_path_buf);
    remove_dirs_of(&base, |owner| owner == pid);
}

impl Drop for DiskTier {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl std::fmt::Debug for DiskTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskTier")
            .field("budget", &self.budget)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Resident bytes of this process (`/proc/self/statm`), where the system says.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// How a table's keys and values are written to disk and read back: set where the types
/// are known to be serde types (the table's [`crate::declared::StateTable`] impl), so the
/// table itself needs no such bound.
struct Codec<K, V> {
    encode: EncodeFn<K, V>,
    encode_key: fn(&K, usize, &mut Vec<u8>) -> Result<()>,
    decode: DecodeFn<K, V>,
}

/// Appends an entry's key (its key group first) and its value (its epoch first).
type EncodeFn<K, V> = fn(&K, &V, Epoch, usize, &mut Vec<u8>, &mut Vec<u8>) -> Result<()>;
/// Reads an entry back from its key and value.
type DecodeFn<K, V> = fn(&[u8], &[u8]) -> Result<(K, V, Epoch)>;

fn encode<K: std::hash::Hash + Serialize, V: Serialize>(
    k: &K,
    v: &V,
    epoch: Epoch,
    max_parallelism: usize,
    key: &mut Vec<u8>,
    value: &mut Vec<u8>,
) -> Result<()> {
    encode_key(k, max_parallelism, key)?;
    value.extend_from_slice(&epoch.to_le_bytes());
    postcard::to_io(v, &mut *value).map_err(|e| crate::error::internal!("encoding state: {e}"))?;
    Ok(())
}

fn encode_key<K: std::hash::Hash + Serialize>(
    k: &K,
    max_parallelism: usize,
    key: &mut Vec<u8>,
) -> Result<()> {
    let group = key_group_of_hash(key_hash(k), max_parallelism) as u32;
    key.extend_from_slice(&group.to_be_bytes());
    postcard::to_io(k, &mut *key).map_err(|e| crate::error::internal!("encoding a key: {e}"))?;
    Ok(())
}

pub(crate) fn decode<K: DeserializeOwned, V: DeserializeOwned>(
    key: &[u8],
    value: &[u8],
) -> Result<(K, V, Epoch)> {
    let bad = |e: &dyn std::fmt::Display| crate::error::internal!("reading state back: {e}");
    let k = key
        .get(4..)
        .ok_or_else(|| bad(&"a key shorter than its group"))
        .and_then(|k| postcard::from_bytes(k).map_err(|e| bad(&e)))?;
    let (epoch, v) = value
        .split_first_chunk::<4>()
        .ok_or_else(|| bad(&"a value shorter than its epoch"))?;
    let v = postcard::from_bytes(v).map_err(|e| bad(&e))?;
    Ok((k, v, Epoch::from_le_bytes(*epoch)))
}

/// What a table is given to move cold entries to disk: the process's tier, the job's number
/// of key groups (a file is sorted by key group), and the counters of the subtask the table
/// belongs to.
#[derive(Clone, Debug)]
pub struct TierUse {
    /// The process's tier.
    pub tier: Arc<DiskTier>,
    /// Key groups of the job.
    pub max_parallelism: usize,
    /// The subtask's counters (its [`StateCounters`]).
    pub counters: Arc<SubtaskMetrics>,
}

/// Where a table counts what it does: its tier's totals and its subtask's counters.
#[derive(Clone)]
struct Counts {
    tier: Arc<DiskTier>,
    subtask: Arc<SubtaskMetrics>,
}

impl Counts {
    /// Adds `n` to the counter `which` picks, in both.
    fn add(&self, which: fn(&StateCounters) -> &AtomicU64, n: u64) {
        for c in [&self.tier.stats, &self.subtask.state] {
            which(c).fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Takes `n` off the counter `which` picks, in both.
    fn sub(&self, which: fn(&StateCounters) -> &AtomicU64, n: u64) {
        for c in [&self.tier.stats, &self.subtask.state] {
            which(c).fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Counts a run written.
    fn written(&self, run: &RunFile) {
        self.add(|c| &c.disk_bytes, run.bytes());
        self.add(|c| &c.bytes_written, run.bytes());
    }

    /// Deletes a run's file (an open run stays readable), uncounting its bytes.
    fn forget(&self, run: &RunFile) {
        self.sub(|c| &c.disk_bytes, run.bytes());
        run.unlink();
    }
}

/// The bit of an entry's epoch that says it was not used since the table last chose
/// entries to move to disk: a CLOCK reference bit, inverted so that marking an entry
/// changed (which stores the current epoch) also marks it used. Without a budget no entry
/// ever has it.
pub(crate) const UNUSED: Epoch = 1 << 31;

/// Whether an entry's epoch has the [`UNUSED`] bit: not used since the last spill.
#[inline(always)]
pub(crate) fn is_unused(epoch: Epoch) -> bool {
    epoch & UNUSED != 0
}

/// An entry's epoch without the [`UNUSED`] bit: that of its last change.
#[inline(always)]
pub(crate) fn changed_in(epoch: Epoch) -> Epoch {
    epoch & !UNUSED
}

/// The entries one spill moves to disk: CLOCK, in one pass over the table. Entries not used
/// since the last spill go first (those whose hash falls in a window of the hash space, the
/// share of them the spill needs); only when they are too few do used ones go as well, by
/// the same rule. An entry that stays is marked [`UNUSED`]: unless it is used before the
/// next spill, it is among the first to go then. So the entries a job keeps coming back to
/// stay in memory (q19's recent auctions), and those it left leave, with no bookkeeping per
/// entry on the hot path beyond the store a change makes anyway.
pub(crate) struct Victims {
    of_unused: Window,
    /// None: no used entry goes.
    of_used: Option<Window>,
}

impl Victims {
    /// Whether the entry of `hash` goes; one that stays is marked unused.
    #[inline]
    pub(crate) fn pick(&self, hash: u64, epoch: &mut Epoch) -> bool {
        if is_unused(*epoch) {
            self.of_unused.holds(hash)
        } else if self.of_used.is_some_and(|w| w.holds(hash)) {
            true
        } else {
            *epoch |= UNUSED;
            false
        }
    }
}

/// A window of the hash space: `width` hashes from `start`, wrapping.
#[derive(Clone, Copy)]
struct Window {
    start: u64,
    width: u64,
}

impl Window {
    const ALL: Window = Window {
        start: 0,
        width: u64::MAX,
    };

    /// The window from `start` that holds a share `count / of` of the hashes.
    fn share(start: u64, count: usize, of: usize) -> Window {
        let share = (count as f64 / of.max(1) as f64).min(1.0);
        Window {
            start,
            width: (share * u64::MAX as f64) as u64,
        }
    }

    #[inline]
    fn holds(&self, hash: u64) -> bool {
        hash.wrapping_sub(self.start) <= self.width
    }
}

/// The disk part of one keyed table.
pub(crate) struct Cold<K, V> {
    codec: Codec<K, V>,
    max_parallelism: usize,
    counts: Counts,
    /// Entries in memory as last counted into `counters`.
    reported_hot: u64,
    /// The runs, oldest first, in a directory made at the first spill.
    runs: Vec<RunFile>,
    /// A merge under way, if one is.
    merging: Option<Merging>,
    dir: Option<PathBuf>,
    next_run: u64,
    /// Entries on disk (a key read back is removed from it, so each counts once).
    on_disk: usize,
    /// Entries the table keeps in memory at most, once the budget was found exceeded
    /// (see [`Cold::spill_count`]), and the resident memory when it was last lowered.
    limit: Option<usize>,
    lowered_at: u64,
    /// Where in the hash space the next spill's victims begin (windows taken in turn, so
    /// that every key is as likely to go).
    cursor: u64,
    /// Scratch buffer of an encoded key.
    key: Vec<u8>,
}

impl<K, V> Cold<K, V> {
    /// The disk part of a table of serde types, spilling into `tier`.
    pub(crate) fn new(to: TierUse) -> Self
    where
        K: std::hash::Hash + Serialize + DeserializeOwned,
        V: Serialize + DeserializeOwned,
    {
        Cold {
            counts: Counts {
                tier: to.tier,
                subtask: to.counters,
            },
            reported_hot: 0,
            codec: Codec {
                encode: encode::<K, V>,
                encode_key: encode_key::<K>,
                decode: decode::<K, V>,
            },
            max_parallelism: to.max_parallelism.max(1),
            runs: Vec::new(),
            merging: None,
            dir: None,
            next_run: 0,
            on_disk: 0,
            limit: None,
            lowered_at: 0,
            cursor: 0,
            key: Vec::new(),
        }
    }

    /// Entries on disk.
    pub(crate) fn len(&self) -> usize {
        self.on_disk
    }

    /// Counts the table's `hot` entries in memory.
    pub(crate) fn report_hot(&mut self, hot: usize) {
        let (hot, before) = (hot as u64, self.reported_hot);
        if hot > before {
            self.counts.add(|c| &c.in_memory, hot - before);
        } else {
            self.counts.sub(|c| &c.in_memory, before - hot);
        }
        self.reported_hot = hot;
    }

    /// How many of a table's `hot` entries in memory to move to disk now (0: none).
    ///
    /// The table keeps a limit of entries in memory, set when the budget is first found
    /// exceeded (three quarters of what it holds then) and lowered again by a quarter
    /// whenever memory has grown by a thirty-second of the budget since, while still over
    /// it: resident memory need not fall when entries leave (the allocator keeps the pages
    /// for the entries that come next), so the limit, not the reading, says when to stop.
    /// Over its limit, a table moves entries out down to seven eighths of it, so that a
    /// spill writes a file of some size rather than one per record.
    pub(crate) fn spill_count(&mut self, hot: usize) -> usize {
        match self.counts.tier.budget {
            Budget::Entries(limit) => {
                self.limit = Some(limit);
            }
            Budget::Bytes(budget) => {
                if hot < MIN_HOT_ENTRIES {
                    return 0;
                }
                let (resident, over) = self.counts.tier.pressure();
                let grown = resident > self.lowered_at.saturating_add(budget / 32);
                if over && (self.limit.is_none() || grown) {
                    let current = self.limit.map_or(hot, |l| l.min(hot));
                    self.limit = Some((current / 4 * 3).max(MIN_HOT_ENTRIES));
                    self.lowered_at = resident;
                }
            }
        }
        match self.limit {
            Some(limit) if hot > limit => hot - limit / 8 * 7,
            _ => 0,
        }
    }

    /// Which entries the next spill of `count` of `hot` entries moves, `unused` of them
    /// marked [`UNUSED`] (see [`Victims`]).
    pub(crate) fn next_victims(&mut self, count: usize, hot: usize, unused: usize) -> Victims {
        let start = self.cursor;
        let (of_unused, of_used) = if unused >= count {
            (Window::share(start, count, unused), None)
        } else {
            (
                Window::ALL,
                Some(Window::share(start, count - unused, hot - unused)),
            )
        };
        let width = of_unused.width.max(of_used.map_or(0, |w| w.width));
        self.cursor = start.wrapping_add(width);
        Victims { of_unused, of_used }
    }

    /// Writes `victims` (taken out of memory) to disk, each with the epoch of its last change
    /// (what a snapshot's cold part goes by, see [`Cold::snapshot_part`]).
    pub(crate) fn spill(&mut self, victims: Vec<(K, V, Epoch)>) -> Result<()> {
        if victims.is_empty() {
            return Ok(());
        }
        let mut encoded = Vec::with_capacity(victims.len());
        for (k, v, epoch) in &victims {
            let epoch = &changed_in(*epoch);
            let (mut key, mut value) = (Vec::new(), Vec::new());
            (self.codec.encode)(k, v, *epoch, self.max_parallelism, &mut key, &mut value)?;
            encoded.push((key, value));
        }
        let n = victims.len();
        drop(victims);
        encoded.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let run = self.write_run(n, encoded.into_iter().map(Ok))?;
        self.runs.push(run);
        self.on_disk += n;
        self.counts.add(|c| &c.moved_out, n as u64);
        self.counts.add(|c| &c.on_disk, n as u64);
        // Past twice the runs a table keeps, spills wait for merges to catch up.
        self.finish_merge(self.runs.len() > 2 * MAX_RUNS)?;
        self.start_merge()
    }

    /// Writes a new run of `count` sorted entries.
    fn write_run(
        &mut self,
        count: usize,
        entries: impl Iterator<Item = std::io::Result<(Vec<u8>, Vec<u8>)>>,
    ) -> Result<RunFile> {
        let path = self.next_path()?;
        let run = RunFile::write(&path, count, entries)
            .map_err(|e| self.counts.tier.error("writing", e))?;
        self.counts.written(&run);
        Ok(run)
    }

    /// The path of the table's next run (its directory made at the first).
    fn next_path(&mut self) -> Result<PathBuf> {
        let dir = match &self.dir {
            Some(dir) => dir.clone(),
            None => {
                let dir = self.counts.tier.table_dir()?;
                self.dir = Some(dir.clone());
                dir
            }
        };
        self.next_run += 1;
        Ok(dir.join(format!("run-{}", self.next_run - 1)))
    }

    /// Starts merging the runs [`merge_choice`] picks into one, on a thread of its own
    /// (unless a merge is under way): the task goes on reading and taking entries out of them
    /// meanwhile, and [`Cold::finish_merge`] puts the merged run in their place.
    fn start_merge(&mut self) -> Result<()> {
        if self.merging.is_some() {
            return Ok(());
        }
        let sizes: Vec<u64> = self.runs.iter().map(|r| r.live_bytes()).collect();
        let Some(chosen) = merge_choice(&sizes) else {
            return Ok(());
        };
        let readers = chosen
            .iter()
            .map(|&i| self.runs[i].reader())
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| self.counts.tier.error("merging", e))?;
        let inputs = readers.iter().map(|r| r.path().to_path_buf()).collect();
        let path = self.next_path()?;
        let (done, result) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("state merge".into())
            .spawn(move || {
                // A table dropped or drained meanwhile takes no run: its file goes.
                if let Err(std::sync::mpsc::SendError(Ok(run))) =
                    done.send(run_file::merge(&path, &readers))
                {
                    run.unlink();
                }
            })
            .map_err(|e| self.counts.tier.error("starting a merge", e))?;
        self.merging = Some(Merging {
            inputs,
            taken: Vec::new(),
            result,
        });
        Ok(())
    }

    /// Puts a finished merge's run in place of its inputs, with what was taken out of them
    /// since it began taken out of it; with `wait`, waits for one under way.
    fn finish_merge(&mut self, wait: bool) -> Result<()> {
        let Some(merging) = &self.merging else {
            return Ok(());
        };
        let result = if wait {
            merging.result.recv().ok()
        } else {
            match merging.result.try_recv() {
                Ok(result) => Some(result),
                Err(std::sync::mpsc::TryRecvError::Empty) => return Ok(()),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => None,
            }
        };
        let Some(merging) = self.merging.take() else {
            return Ok(());
        };
        let result =
            result.ok_or_else(|| self.counts.tier.error("merging", "the merge thread ended"))?;
        let mut run = result.map_err(|e| self.counts.tier.error("merging", e))?;
        for key in &merging.taken {
            if let Some(entry) = run
                .get(key)
                .map_err(|e| self.counts.tier.error("merging", e))?
            {
                run.remove(entry.ordinal);
            }
        }
        for path in &merging.inputs {
            if let Some(i) = self.runs.iter().position(|r| r.path() == path) {
                let input = self.runs.remove(i);
                self.counts.forget(&input);
            }
        }
        self.counts.written(&run);
        if run.live() > 0 {
            self.runs.push(run);
        } else {
            self.counts.forget(&run);
        }
        Ok(())
    }

    /// Takes `key`'s entry off the disk, if it is there.
    pub(crate) fn take(&mut self, key: &K) -> Result<Option<(V, Epoch)>> {
        if self.on_disk == 0 {
            return Ok(None);
        }
        self.finish_merge(false)?;
        self.key.clear();
        (self.codec.encode_key)(key, self.max_parallelism, &mut self.key)?;
        self.counts.add(|c| &c.disk_lookups, 1);
        let hash = run_file::key_hash(&self.key);
        // Newest first: a key that just left memory is the likeliest to come back.
        for i in (0..self.runs.len()).rev() {
            let found = self.runs[i]
                .get_hashed(&self.key, hash)
                .map_err(|e| self.counts.tier.error("reading", e))?;
            if let Some(entry) = found {
                if let Some(merging) = &mut self.merging
                    && merging.inputs.iter().any(|p| p == self.runs[i].path())
                {
                    merging.taken.push(entry.key.clone());
                }
                let run = &mut self.runs[i];
                run.remove(entry.ordinal);
                if run.live() == 0 {
                    let run = self.runs.remove(i);
                    self.counts.forget(&run);
                }
                self.on_disk -= 1;
                self.counts.add(|c| &c.disk_hits, 1);
                self.counts.sub(|c| &c.on_disk, 1);
                let (_, v, epoch) = (self.codec.decode)(&entry.key, &entry.value)?;
                return Ok(Some((v, epoch)));
            }
        }
        Ok(None)
    }

    /// Every entry on disk.
    pub(crate) fn entries(&self) -> impl Iterator<Item = Result<(K, V, Epoch)>> + '_ {
        self.runs.iter().flat_map(|run| run.entries()).map(|entry| {
            let entry = entry.map_err(|e| self.counts.tier.error("reading", e))?;
            (self.codec.decode)(&entry.key, &entry.value)
        })
    }

    /// The cold part of a snapshot taken now, with the operator's `watermark` (see
    /// [`ColdPart`]): the entries on disk changed after epoch `since` (all of them for
    /// `None`), read later from copies of the runs as they are now. An entry changed after
    /// `since` was in memory then, so it is in a run written since, stamped with its epoch:
    /// the runs with nothing newer are passed over.
    pub(crate) fn snapshot_part(
        &self,
        since: Option<Epoch>,
        watermark: crate::types::Timestamp,
    ) -> Result<Option<ColdPart>> {
        let runs = (self.runs.iter())
            .filter(|run| since.is_none_or(|s| run.newest() > s))
            .map(RunFile::reader)
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(|e| self.counts.tier.error("reading", e))?;
        Ok((!runs.is_empty()).then(|| ColdPart {
            runs,
            since,
            tier: self.counts.tier.clone(),
            max_parallelism: self.max_parallelism,
            watermark,
            table: 0,
        }))
    }

    /// Runs `f` on every entry on disk, to change it, and keeps those it returns true for:
    /// a run at a time, each read a block at a time and replaced by a run of what `f`
    /// kept, so that no entry stays in memory and none is read twice. Every entry kept is
    /// marked changed in `epoch`. After an error of `f`, the entries not yet seen are kept
    /// as they were.
    pub(crate) fn rewrite_each(
        &mut self,
        epoch: Epoch,
        f: &mut dyn FnMut(&K, &mut V) -> Result<bool>,
    ) -> Result<()> {
        self.finish_merge(true)?;
        let (decode, encode, max_parallelism) =
            (self.codec.decode, self.codec.encode, self.max_parallelism);
        let mut failed = None;
        for run in std::mem::take(&mut self.runs) {
            self.counts.forget(&run);
            let live = run.live();
            let entries = run.into_entries().filter_map(|entry| {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) => return Some(Err(e)),
                };
                if failed.is_some() {
                    return Some(Ok((entry.key, entry.value)));
                }
                let step = decode(&entry.key, &entry.value).and_then(|(k, mut v, _)| {
                    if !f(&k, &mut v)? {
                        return Ok(None);
                    }
                    let (mut key, mut value) = (Vec::new(), Vec::new());
                    encode(&k, &v, epoch, max_parallelism, &mut key, &mut value)?;
                    Ok(Some((key, value)))
                });
                match step {
                    Ok(kept) => kept.map(Ok),
                    Err(e) => {
                        failed = Some(e);
                        Some(Ok((entry.key, entry.value)))
                    }
                }
            });
            let kept = self.write_run(live as usize, entries)?;
            self.on_disk -= (live - kept.live()) as usize;
            self.counts.sub(|c| &c.on_disk, live - kept.live());
            if kept.live() > 0 {
                self.runs.push(kept);
            } else {
                self.counts.forget(&kept);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Takes every entry off the disk: the table starts again with none there (each run's
    /// file is deleted once it has been read).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (K, V)> + use<K, V> {
        // A merge under way is waited for, then its run goes with the rest.
        if let Err(e) = self.finish_merge(true) {
            panic!("{e}");
        }
        let runs = std::mem::take(&mut self.runs);
        self.counts.sub(|c| &c.on_disk, self.on_disk as u64);
        self.on_disk = 0;
        let counts = self.counts.clone();
        let decode = self.codec.decode;
        // Each run is read a block at a time (a drained table's entries are not all in
        // memory at once), its file deleted as it starts (it stays readable while open).
        runs.into_iter().flat_map(move |run| {
            counts.forget(&run);
            let counts = counts.clone();
            run.into_entries().map(move |entry| {
                let entry = entry.map_err(|e| counts.tier.error("reading", e));
                match entry.and_then(|e| decode(&e.key, &e.value)) {
                    Ok((k, v, _)) => (k, v),
                    // A drain cannot return an error: the task fails, naming the directory.
                    Err(e) => panic!("{e}"),
                }
            })
        })
    }
}

/// The part of a table's snapshot that is on disk, written after the barrier has passed: at
/// the barrier the table only takes copies of its runs (their files do not change; what the
/// task takes out of them later is not taken out of the copies), and the checkpoint's writer
/// reads them while the task goes on. The entries go as the runs hold them (no decoding and
/// encoding again), as a table of their own in the snapshot (version 4, see
/// [`crate::snapshot`]).
pub struct ColdPart {
    runs: Vec<RunFile>,
    /// Only entries changed after this epoch (a delta's base); `None`: all of them.
    since: Option<Epoch>,
    tier: Arc<DiskTier>,
    max_parallelism: usize,
    /// The operator's watermark, as the table's header carries it.
    watermark: crate::types::Timestamp,
    /// Which of the operator's declared tables it belongs to.
    pub(crate) table: u32,
}

impl ColdPart {
    /// Appends the part to `out`: its runs' live entries (those changed after its base, for a
    /// delta's), each key with its key group first and each value with its epoch first.
    pub fn write(self, out: &mut Vec<u8>) -> Result<()> {
        let started = Instant::now();
        // Room for every entry of the runs (an entry takes as many bytes here as in its
        // file), so the buffer is never copied as it grows; pages not written to are never
        // resident.
        let most: u64 = self.runs.iter().map(RunFile::bytes).sum();
        out.reserve(usize::try_from(most).unwrap_or(0).saturating_add(64));
        let open =
            crate::snapshot::open_cold_table(out, self.max_parallelism, self.watermark, self.table);
        let start = out.len();
        for run in &self.runs {
            run.for_each_live(|key, value| {
                if self.since.is_none_or(|s| run_file::stamp(value) > s) {
                    run_file::append_entry(out, key, value);
                }
                Ok(())
            })
            .map_err(|e| self.tier.error("reading", e))?;
        }
        tracing::debug!(
            table = self.table,
            runs = self.runs.len(),
            bytes = out.len() - start,
            ms = started.elapsed().as_millis() as u64,
            "cold part of a snapshot"
        );
        crate::snapshot::close_table(out, open);
        Ok(())
    }
}

impl std::fmt::Debug for ColdPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColdPart")
            .field("runs", &self.runs.len())
            .field("since", &self.since)
            .field("table", &self.table)
            .finish()
    }
}

/// A merge under way on a thread of its own.
struct Merging {
    /// The runs it reads (they stay the table's until it is done).
    inputs: Vec<PathBuf>,
    /// Keys taken out of those runs since it began.
    taken: Vec<Vec<u8>>,
    /// The merged run, when it is written.
    result: std::sync::mpsc::Receiver<std::io::Result<RunFile>>,
}

impl<K, V> Drop for Cold<K, V> {
    fn drop(&mut self) {
        // A merge under way is waited for, so that no file appears after the directory goes.
        let _ = self.finish_merge(true);
        self.report_hot(0);
        self.counts.sub(|c| &c.on_disk, self.on_disk as u64);
        for run in std::mem::take(&mut self.runs) {
            self.counts.forget(&run);
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Which runs to merge, given each run's live bytes: the smallest tier of at least
/// [`MERGED`] runs of a like size (each at most twice the smallest of them, runs under
/// [`SMALL_RUN_BYTES`] counted as that size), at most [`MAX_MERGED`] of them; past
/// [`MAX_RUNS`] runs, the [`MERGED`] smallest whatever their sizes; else none.
pub fn merge_choice(live_bytes: &[u64]) -> Option<Vec<usize>> {
    let mut order: Vec<usize> = (0..live_bytes.len()).collect();
    order.sort_by_key(|&i| live_bytes[i]);
    let size = |i: usize| live_bytes[i].max(SMALL_RUN_BYTES);
    for start in 0..order.len() {
        let tier = order[start..]
            .iter()
            .take_while(|&&i| size(i) <= 2 * size(order[start]))
            .count();
        if tier >= MERGED {
            return Some(order[start..start + tier.min(MAX_MERGED)].to_vec());
        }
    }
    (order.len() > MAX_RUNS).then(|| order[..MERGED].to_vec())
}

/// Panics with a disk error inside a hot-path call that cannot return one (a batch fold):
/// the runtime turns the panic into the task's failure, with the operator named.
pub(crate) fn or_fail<T>(r: Result<T>) -> T {
    match r {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declared::{DeclaredState, OperatorSnapshot};
    use crate::keyed_table::KeyedTable;
    use crate::snapshot::{SnapshotBuffer, delta_base};
    use crate::types::CheckpointId;
    use proptest::prelude::*;
    use std::collections::HashMap;

    const GROUPS: usize = 16;

    /// Snapshots a restore reads in order: a whole one, then deltas.
    type Chain = Vec<Vec<u8>>;

    #[derive(Clone, Debug)]
    enum Op {
        /// A batch of (key, amount) folded in: adds to the key's sum.
        Fold(Vec<(u16, u16)>),
        /// Adds through `update`, or removes the key if the amount is 0.
        Update(u16, u16),
        Remove(u16),
        Get(u16),
        Insert(u16, u16),
        Upsert(u16, u16),
        /// A checkpoint, completed or not.
        Snapshot(bool),
        /// Adds the amount to every key's sum, then removes the keys whose sum is a
        /// multiple of 3.
        RetainEach(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = 0u16..60;
        prop_oneof![
            proptest::collection::vec((key.clone(), any::<u16>()), 0..40).prop_map(Op::Fold),
            (key.clone(), 0u16..5).prop_map(|(k, v)| Op::Update(k, v)),
            key.clone().prop_map(Op::Remove),
            key.clone().prop_map(Op::Get),
            (key.clone(), any::<u16>()).prop_map(|(k, v)| Op::Insert(k, v)),
            (key, any::<u16>()).prop_map(|(k, v)| Op::Upsert(k, v)),
            any::<bool>().prop_map(Op::Snapshot),
            any::<u16>().prop_map(Op::RetainEach),
        ]
    }

    fn tier(limit: usize) -> Arc<DiskTier> {
        DiskTier::new(Budget::Entries(limit), None).expect("a tier")
    }

    fn table(tier: &Arc<DiskTier>) -> KeyedTable<u16, u64> {
        table_counted(tier, &Arc::new(SubtaskMetrics::default()))
    }

    fn table_counted(tier: &Arc<DiskTier>, counters: &Arc<SubtaskMetrics>) -> KeyedTable<u16, u64> {
        let mut t = KeyedTable::default();
        DeclaredState::new()
            .table("sums", &mut t)
            .use_disk_tier(&TierUse {
                tier: tier.clone(),
                max_parallelism: GROUPS,
                counters: counters.clone(),
            });
        t
    }

    fn contents(t: &mut KeyedTable<u16, u64>) -> HashMap<u16, u64> {
        let mut seen = HashMap::new();
        t.for_each_entry(|k, v| {
            assert!(seen.insert(*k, *v).is_none(), "key {k} twice");
        });
        seen
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// A table that may keep only a few entries in memory behaves as a map: every
        /// operation sees the state the reference has, its length counts both tiers, and
        /// the chain of snapshots since the last whole one restores (into a table with a
        /// tier of its own) what the table held when the last one was taken. A snapshot's
        /// part on disk is written only when the next one is taken (or at the end), after
        /// the table went on changing, spilling, merging and reading entries back.
        #[test]
        fn a_table_with_a_disk_tier_is_a_map(
            ops in proptest::collection::vec(op(), 1..60),
            limit in 0usize..12,
        ) {
            let tier = tier(limit);
            let mut t = table(&tier);
            let mut reference: HashMap<u16, u64> = HashMap::new();
            // The snapshots a restore of the last completed one reads (a whole one and the
            // deltas on it), and those of the last one taken, with what the table held then.
            let mut completed: Chain = Vec::new();
            let mut latest: Option<(Chain, HashMap<u16, u64>)> = None;
            let mut checkpoint = 0;
            let mut buffer = SnapshotBuffer::default();
            // A snapshot taken whose part on disk is not written yet, with what the table
            // held at its barrier.
            let mut pending: Option<(OperatorSnapshot, CheckpointId, bool, HashMap<u16, u64>)> = None;
            let mut finish = |pending: Option<(OperatorSnapshot, CheckpointId, bool, HashMap<u16, u64>)>,
                              t: &mut KeyedTable<u16, u64>| {
                let Some((snapshot, id, complete, at_barrier)) = pending else {
                    return;
                };
                let bytes = snapshot.into_bytes().expect("the part on disk is written");
                let mut chain = match delta_base(&bytes) {
                    Some(_) => completed.clone(),
                    None => Vec::new(),
                };
                chain.push(bytes);
                if complete {
                    DeclaredState::new().table("sums", t).checkpoint_complete(id);
                    completed = chain.clone();
                }
                latest = Some((chain, at_barrier));
            };
            for op in ops {
                match op {
                    Op::Fold(batch) => {
                        for (k, v) in &batch {
                            *reference.entry(*k).or_default() += u64::from(*v);
                        }
                        let mut b = batch.clone();
                        t.fold_batch(&mut b, |r| r.0, |_, sum, r| match sum {
                            Some(sum) => { *sum += u64::from(r.1); None }
                            None => Some(u64::from(r.1)),
                        });
                    }
                    Op::Update(k, v) => {
                        if v == 0 { reference.remove(&k); } else { *reference.entry(k).or_default() += u64::from(v); }
                        t.update(k, |_, slot| {
                            if v == 0 { *slot = None } else { *slot.get_or_insert(0) += u64::from(v) }
                        });
                    }
                    Op::Remove(k) => prop_assert_eq!(t.remove(&k), reference.remove(&k)),
                    Op::Get(k) => prop_assert_eq!(t.get(&k).copied(), reference.get(&k).copied()),
                    Op::Insert(k, v) => {
                        reference.insert(k, u64::from(v));
                        t.insert(k, u64::from(v));
                    }
                    Op::Upsert(k, v) => {
                        *reference.entry(k).or_default() += u64::from(v);
                        *t.upsert(k, || 0) += u64::from(v);
                    }
                    Op::RetainEach(v) => {
                        let step = |sum: &mut u64| {
                            *sum += u64::from(v);
                            !sum.is_multiple_of(3)
                        };
                        reference.retain(|_, sum| step(sum));
                        t.retain_each(|_, sum| Ok(step(sum))).expect("no error");
                    }
                    Op::Snapshot(complete) => {
                        finish(pending.take(), &mut t);
                        checkpoint += 1;
                        let snapshot = DeclaredState::new()
                            .table("sums", &mut t)
                            .snapshot_deferring(checkpoint, GROUPS, &mut buffer)
                            .expect("a snapshot")
                            .expect("declared");
                        pending = Some((snapshot, checkpoint, complete, reference.clone()));
                    }
                }
                prop_assert_eq!(t.len(), reference.len());
                // A batch may add its keys before the table spills after it.
                prop_assert!(t.len_in_memory() <= limit + 40);
            }
            prop_assert_eq!(contents(&mut t), reference.clone());
            finish(pending.take(), &mut t);
            if let Some((chain, at_last)) = latest {
                let other = self::tier(limit);
                let mut restored = table(&other);
                for (i, piece) in chain.iter().enumerate() {
                    DeclaredState::new()
                        .table("sums", &mut restored)
                        .restore(piece, 0..GROUPS, &format!("piece {i}"))
                        .expect("restores");
                }
                prop_assert_eq!(contents(&mut restored), at_last);
            }
            let mut drained: Vec<(u16, u64)> = t.drain().collect();
            drained.sort_unstable();
            let mut expected: Vec<(u16, u64)> = reference.into_iter().collect();
            expected.sort_unstable();
            prop_assert_eq!(drained, expected);
            prop_assert!(t.is_empty());
        }
    }

    proptest! {
        /// A merge takes distinct runs, at least [`MERGED`] and at most [`MAX_MERGED`], of a
        /// like size unless the table has too many runs; past [`MAX_RUNS`] there always is one.
        #[test]
        fn merges_take_runs_of_a_like_size(sizes in proptest::collection::vec(0u64..1 << 30, 0..40)) {
            match merge_choice(&sizes) {
                Some(chosen) => {
                    let mut unique = chosen.clone();
                    unique.sort_unstable();
                    unique.dedup();
                    prop_assert_eq!(unique.len(), chosen.len());
                    prop_assert!(chosen.len() >= MERGED && chosen.len() <= MAX_MERGED);
                    prop_assert!(chosen.iter().all(|&i| i < sizes.len()));
                    let of = |i: usize| sizes[i].max(SMALL_RUN_BYTES);
                    let small = chosen.iter().map(|&i| of(i)).min().unwrap_or(0);
                    let large = chosen.iter().map(|&i| of(i)).max().unwrap_or(0);
                    prop_assert!(large <= 2 * small || sizes.len() > MAX_RUNS);
                }
                None => prop_assert!(sizes.len() <= MAX_RUNS),
            }
        }
    }

    /// Spills of one size, merged as [`merge_choice`] says: the runs stay few and each byte
    /// is written a few times (once per tier), not once per merge.
    #[test]
    fn tiered_merges_write_each_byte_a_few_times() {
        let spill = 1 << 20;
        let (mut runs, mut written, mut spilled) = (Vec::<u64>::new(), 0u64, 0u64);
        for _ in 0..20_000 {
            runs.push(spill);
            (written, spilled) = (written + spill, spilled + spill);
            while let Some(chosen) = merge_choice(&runs) {
                let merged: u64 = chosen.iter().map(|&i| runs[i]).sum();
                runs = (0..runs.len())
                    .filter(|i| !chosen.contains(i))
                    .map(|i| runs[i])
                    .collect();
                runs.push(merged);
                written += merged;
            }
            assert!(runs.len() <= MAX_RUNS);
        }
        // 20 GB in 1 MiB spills: tiers of 4 MiB, 16, 64, ... 16 GiB.
        let amplification = written as f64 / spilled as f64;
        assert!(
            amplification < 8.0,
            "each byte written {amplification:.1} times"
        );
    }

    /// With room for 2,000 entries, 500 keys used in every batch beside 100 new keys a
    /// batch, each used once: once the first spill has marked what it kept, the keys in use
    /// are never moved out (random eviction read a seventh of them back at every spill).
    #[test]
    fn keys_in_use_stay_in_memory() {
        let tier = tier(2000);
        let counters = Arc::new(SubtaskMetrics::default());
        let mut t = table_counted(&tier, &counters);
        let hits = || counters.state.disk_hits.load(Ordering::Relaxed);
        let mut fresh = 1000u16;
        let mut after_warm_up = 0;
        for round in 0..200 {
            let mut batch: Vec<(u16, u16)> = (0..500).map(|k| (k, 1)).collect();
            batch.extend((0..100).map(|_| {
                fresh += 1;
                (fresh, 1)
            }));
            t.fold_batch(
                &mut batch,
                |(k, _)| *k,
                |_, v, (_, a)| match v {
                    Some(v) => {
                        *v += u64::from(a);
                        None
                    }
                    None => Some(u64::from(a)),
                },
            );
            if round == 30 {
                after_warm_up = hits();
            }
        }
        assert!(t.len_in_memory() <= 2000);
        assert_eq!(t.len(), 500 + 200 * 100);
        assert_eq!(
            hits(),
            after_warm_up,
            "keys in use were moved out and read back"
        );
        for k in 0..500 {
            assert_eq!(t.get(&k), Some(&200), "key {k}");
        }
    }

    /// An error of `retain_each`'s function stops the visit, is returned, and loses no
    /// entry, in memory or on disk.
    #[test]
    fn retain_each_stops_at_an_error_and_keeps_every_entry() {
        let tier = tier(4);
        let mut t = table(&tier);
        for k in 0..100u16 {
            t.insert(k, 1);
        }
        assert!(t.len_in_memory() < 10);
        let mut seen = 0;
        let result = t.retain_each(|k, _| {
            seen += 1;
            if seen == 50 {
                return Err(HummerError::BadInput {
                    input: format!("key {k}"),
                    reason: "fails".into(),
                });
            }
            Ok(false)
        });
        assert!(
            matches!(result, Err(HummerError::BadInput { .. })),
            "{result:?}"
        );
        assert_eq!(
            t.len(),
            100 - 49,
            "the entries before the error went, no other"
        );
        assert_eq!(contents(&mut t).len(), 51);
    }

    /// A tier removes what tiers of stopped processes left in its directory, and nothing
    /// of running ones or of anything else.
    #[test]
    fn a_tier_removes_the_state_stopped_processes_left() {
        let base = tempfile::tempdir().expect("a directory");
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("a process");
        child.wait().expect("it ends");
        let stale = base.path().join(format!("hummer-state-{}-0", child.id()));
        std::fs::create_dir_all(stale.join("table-0")).expect("made");
        std::fs::write(stale.join("table-0").join("run-0"), b"entries").expect("written");
        let kept = [
            format!("hummer-state-{}-9", std::process::id()),
            "hummer-state-1-0".to_string(),
            "hummer-state-x-0".to_string(),
            "other".to_string(),
        ];
        for name in &kept {
            std::fs::create_dir_all(base.path().join(name)).expect("made");
        }
        let _tier = DiskTier::new(Budget::Entries(2), Some(base.path())).expect("a tier");
        assert!(!stale.exists(), "the stopped process's state is gone");
        for name in &kept {
            assert!(base.path().join(name).exists(), "{name} is kept");
        }
        // A TaskManager removes a worker's when it ends, whatever the pid's state.
        remove_dirs_of_process(Some(base.path()), 1);
        assert!(!base.path().join("hummer-state-1-0").exists());
        for name in kept.iter().filter(|n| *n != "hummer-state-1-0") {
            assert!(base.path().join(name).exists(), "{name} is kept");
        }
    }

    #[test]
    fn the_tier_s_directory_goes_when_the_tier_does() {
        let base = tempfile::tempdir().expect("a directory");
        let tier = DiskTier::new(Budget::Entries(2), Some(base.path())).expect("a tier");
        let dir = tier.dir().to_path_buf();
        let counters = Arc::new(SubtaskMetrics::default());
        let mut t = table_counted(&tier, &counters);
        for k in 0..100u16 {
            t.insert(k, u64::from(k));
        }
        assert!(t.len_in_memory() < 10, "most entries went to disk");
        assert!(dir.exists());
        assert!(tier.stats.moved_out.load(Ordering::Relaxed) >= 90);
        assert_eq!(t.get(&42), Some(&42), "read back");
        let files = std::fs::read_dir(&dir)
            .expect("the tier's directory")
            .flatten()
            .flat_map(|table| std::fs::read_dir(table.path()).expect("a table's runs"))
            .count();
        assert!(files <= 2 * MAX_RUNS + 2, "{files} runs: merged");
        assert_eq!(t.len(), 100);
        let c = &counters.state;
        let count = |a: &AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!(count(&c.in_memory) as usize, t.len_in_memory());
        assert_eq!(count(&c.on_disk) as usize + t.len_in_memory(), 100);
        assert!(count(&c.disk_bytes) > 0 && count(&c.bytes_written) >= count(&c.disk_bytes));
        // Every new key was looked for on disk too; only 42 was there.
        assert_eq!(count(&c.disk_hits), 1);
        assert!(count(&c.disk_lookups) > 90);
        drop(t);
        assert_eq!(
            count(&c.in_memory) + count(&c.on_disk) + count(&c.disk_bytes),
            0
        );
        drop(tier);
        assert!(!dir.exists(), "{} is left", dir.display());
    }
}
