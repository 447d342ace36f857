//! Leader election by a lease in the HA directory, with a fencing token.
//!
//! The lease is a small JSON file, `leader.json`: the fencing token (one more at every change
//! of leader), the holder, its RPC and REST addresses and when the lease expires (wall-clock
//! milliseconds; the JobManagers' clocks must agree to well within a lease). Every
//! read-modify-write of it is atomic against the other JobManagers: in a directory under an
//! exclusive `flock` of `leader.lock`, the file replaced by a rename; in an object store by a
//! conditional put on the version read. Readers (TaskManagers, clients) always see a whole
//! lease.
//!
//! A leader renews its lease every third of its duration. It also keeps the monotonic instant
//! until which its lease is surely valid ([`Leadership::is_valid`]): a leader that was paused
//! (SIGSTOP, a long GC-like stall) past that instant knows it, before it acts, the moment it
//! resumes; it then re-checks the lease, and if another JobManager took over (a higher token)
//! it stops. Messages a leader sends TaskManagers carry its token, and a TaskManager refuses
//! a token lower than the highest it has seen.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::checkpoint::backend::{Storage, is_url, write_atomically};
use crate::error::{HummerError, Result};

/// The lease file.
const LEASE: &str = "leader.json";
/// The lock guarding changes of the lease.
const LOCK: &str = "leader.lock";
/// How often a lease change in an object store is decided again after losing a race.
const CONDITIONAL_PUT_ATTEMPTS: usize = 8;

/// Who leads, until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The fencing token: one more at every change of leader.
    pub token: u64,
    /// The holder (a unique name of the JobManager process).
    pub holder: String,
    /// The holder's RPC address.
    pub rpc: String,
    /// The holder's REST address, if it serves REST.
    pub rest: Option<String>,
    /// When the lease lapses unless renewed (milliseconds since the Unix epoch).
    pub expires_at_ms: u64,
}

impl Lease {
    /// Whether the lease has lapsed at `now_ms`.
    pub fn lapsed(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_at_ms
    }
}

use crate::types::epoch_ms as now_ms;

/// Where the lease lives: a directory, or a prefix in an object store.
enum LeaseStore {
    Dir(PathBuf),
    Object(Storage),
}

impl LeaseStore {
    fn open(location: &Path) -> Result<LeaseStore> {
        if is_url(location) {
            Ok(LeaseStore::Object(Storage::open(location)?))
        } else {
            Ok(LeaseStore::Dir(location.to_path_buf()))
        }
    }

    fn parse(&self, bytes: &[u8]) -> Result<Lease> {
        serde_json::from_slice(bytes).map_err(|e| HummerError::BadInput {
            input: self.describe(),
            reason: format!("unreadable lease: {e}"),
        })
    }

    fn describe(&self) -> String {
        match self {
            LeaseStore::Dir(dir) => dir.join(LEASE).display().to_string(),
            LeaseStore::Object(s) => format!("{}/{LEASE}", s.location().display()),
        }
    }

    /// The current lease (`None` if nobody ever led).
    fn read(&self) -> Result<Option<Lease>> {
        let bytes = match self {
            LeaseStore::Dir(dir) => match std::fs::read(dir.join(LEASE)) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => {
                    return Err(HummerError::io("cannot read the lease", dir.join(LEASE), e));
                }
            },
            LeaseStore::Object(s) => match s.read_versioned(LEASE)? {
                Some((bytes, _)) => bytes,
                None => return Ok(None),
            },
        };
        self.parse(&bytes).map(Some)
    }

    /// Writes the lease `decide` makes of the current one, atomically against every other
    /// writer; `None` when `decide` declines (on the lease as it is when written).
    fn update(&self, decide: impl Fn(Option<&Lease>) -> Option<Lease>) -> Result<Option<Lease>> {
        let encode = |lease: &Lease| {
            serde_json::to_vec_pretty(lease).map_err(|e| crate::error::internal!("lease: {e}"))
        };
        match self {
            LeaseStore::Dir(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| HummerError::io("cannot create the HA directory", dir, e))?;
                let _lock = LeaseLock::take(dir)?;
                let Some(next) = decide(self.read()?.as_ref()) else {
                    return Ok(None);
                };
                write_atomically(&dir.join(LEASE), &encode(&next)?, false)?;
                Ok(Some(next))
            }
            // A conditional put that loses a race is decided again on what the winner wrote:
            // the winner may be this very process (its renewal thread and a lock's check
            // renewing at once), which must not read as being deposed.
            LeaseStore::Object(s) => {
                for _ in 0..CONDITIONAL_PUT_ATTEMPTS {
                    let (current, version) = match s.read_versioned(LEASE)? {
                        Some((bytes, version)) => (Some(self.parse(&bytes)?), version),
                        None => (None, None),
                    };
                    if current.is_some() && version.is_none() {
                        return Err(HummerError::BadInput {
                            input: self.describe(),
                            reason:
                                "the object store gives no version (ETag) for a conditional put"
                                    .into(),
                        });
                    }
                    let Some(next) = decide(current.as_ref()) else {
                        return Ok(None);
                    };
                    if s.put_if(LEASE, &encode(&next)?, version)? {
                        return Ok(Some(next));
                    }
                }
                Ok(None)
            }
        }
    }
}

/// Reads the current lease of the HA storage at `location` (`None` if nobody ever led).
pub fn read_lease(location: &Path) -> Result<Option<Lease>> {
    LeaseStore::open(location)?.read()
}

/// An exclusive lock of the lease, released when dropped.
struct LeaseLock(File);

impl LeaseLock {
    fn take(dir: &Path) -> Result<LeaseLock> {
        let path = dir.join(LOCK);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| HummerError::io("cannot open the lease lock", &path, e))?;
        // SAFETY: flock on a file descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(HummerError::io(
                "cannot lock the lease",
                &path,
                std::io::Error::last_os_error(),
            ));
        }
        Ok(LeaseLock(file))
    }
}

impl Drop for LeaseLock {
    fn drop(&mut self) {
        // SAFETY: as in `take`.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// One JobManager's part in the election.
pub struct Candidate {
    store: LeaseStore,
    holder: String,
    rpc: String,
    rest: Option<String>,
    duration: Duration,
}

/// A won election: the token, and until when the lease is surely held.
pub struct Leadership {
    candidate: Candidate,
    token: u64,
    valid_until: Mutex<Instant>,
    /// Held while renewing: the renewal thread and a lock's validity check renew one at a
    /// time, so the leader never races itself for the lease.
    renewing: Mutex<()>,
}

impl Candidate {
    /// A candidate named `holder` (unique per process) in the HA storage at `location`,
    /// leading with leases of `duration`.
    pub fn new(
        location: &Path,
        holder: String,
        rpc: String,
        rest: Option<String>,
        duration: Duration,
    ) -> Result<Candidate> {
        Ok(Candidate {
            store: LeaseStore::open(location)?,
            holder,
            rpc,
            rest,
            duration,
        })
    }

    /// Takes the lease if nobody holds it (it lapsed, or never existed); returns the new
    /// token, above every earlier one (`None` while another JobManager holds the lease).
    pub fn try_acquire(&self) -> Result<Option<u64>> {
        let won = self.store.update(|current| {
            let now = now_ms();
            if current.is_some_and(|l| !l.lapsed(now)) {
                return None;
            }
            Some(self.lease(current.map_or(1, |l| l.token + 1), now))
        })?;
        Ok(won.map(|l| l.token))
    }

    /// The leadership of a lease just acquired with `token`.
    fn lead(self, token: u64) -> Leadership {
        let valid_until = Mutex::new(Instant::now() + self.safe_duration());
        Leadership {
            candidate: self,
            token,
            valid_until,
            renewing: Mutex::new(()),
        }
    }

    /// Waits, trying every third of a lease, until this candidate leads.
    pub async fn campaign(self) -> Leadership {
        let mut announced = false;
        loop {
            match self.try_acquire() {
                Ok(Some(token)) => return self.lead(token),
                Ok(None) if !announced => {
                    println!("jobmanager standby (another JobManager leads)");
                    announced = true;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("leader election: {e}"),
            }
            tokio::time::sleep(self.duration / 3).await;
        }
    }

    /// This candidate's lease with `token`, from `now` on.
    fn lease(&self, token: u64, now: u64) -> Lease {
        Lease {
            token,
            holder: self.holder.clone(),
            rpc: self.rpc.clone(),
            rest: self.rest.clone(),
            expires_at_ms: now + self.duration.as_millis() as u64,
        }
    }

    /// How long after a renewal the lease is surely still ours, allowing for the clock
    /// differences between hosts and the time the renewal took to write.
    fn safe_duration(&self) -> Duration {
        self.duration.mul_f64(0.8)
    }
}

impl Leadership {
    /// The fencing token.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// How often the lease is renewed.
    pub fn renew_interval(&self) -> Duration {
        self.candidate.duration / 3
    }

    /// Whether the lease is surely still held: renewed recently enough (monotonic time, so a
    /// process that was paused sees that it may have lost it).
    pub fn is_valid(&self) -> bool {
        Instant::now() < *self.valid_until.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Renews the lease; `false` if another JobManager holds it now (this one is deposed).
    pub fn renew(&self) -> Result<bool> {
        let _renewing = self.renewing.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        let renewed = self.candidate.store.update(|current| {
            current
                .filter(|l| l.token == self.token && l.holder == self.candidate.holder)
                .map(|_| self.candidate.lease(self.token, now_ms()))
        })?;
        if renewed.is_none() {
            return Ok(false);
        }
        *self.valid_until.lock().unwrap_or_else(|p| p.into_inner()) =
            started + self.candidate.safe_duration();
        Ok(true)
    }

    /// Makes sure this JobManager still leads before it acts: renews the lease if its
    /// validity ran out (after a pause). Ends the process if it was deposed: a leader that
    /// lost its lease must not act again.
    pub fn ensure(&self) {
        if self.is_valid() {
            return;
        }
        match self.renew() {
            Ok(true) => {}
            Ok(false) => self.step_down("another JobManager took the lease"),
            Err(e) => self.step_down(&format!("cannot renew the lease: {e}")),
        }
    }

    /// Ends the process: it no longer leads.
    pub fn step_down(&self, why: &str) -> ! {
        tracing::error!(token = self.token, "leadership lost ({why}): stopping");
        std::process::exit(3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(dir: &Path, name: &str, ms: u64) -> Candidate {
        Candidate::new(
            dir,
            name.into(),
            format!("{name}:1"),
            None,
            Duration::from_millis(ms),
        )
        .unwrap()
    }

    #[test]
    fn one_leader_at_a_time_and_tokens_grow_at_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let a = candidate(dir.path(), "a", 300);
        let token = a.try_acquire().unwrap().unwrap();
        let a = a.lead(token);
        assert_eq!(a.token(), 1);
        let b = candidate(dir.path(), "b", 300);
        assert_eq!(b.try_acquire().unwrap(), None, "b took a held lease");
        assert!(a.renew().unwrap());
        std::thread::sleep(Duration::from_millis(350));
        // a's lease lapsed: b takes it with a higher token, and a is deposed.
        assert_eq!(b.try_acquire().unwrap(), Some(2));
        assert!(!a.renew().unwrap());
        assert!(!a.is_valid());
        let lease = read_lease(dir.path()).unwrap().unwrap();
        assert_eq!((lease.holder.as_str(), lease.token), ("b", 2));
    }

    /// The renewal thread and a lock's validity check may renew at once; in an object store
    /// one of the two conditional puts loses, and that must not read as being deposed.
    #[test]
    fn renewals_racing_in_an_object_store_all_keep_the_lease() {
        let a = candidate(Path::new("memory:///ha"), "a", 60_000);
        let token = a.try_acquire().unwrap().unwrap();
        let a = a.lead(token);
        std::thread::scope(|scope| {
            let renewing: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| (0..50).all(|_| a.renew().unwrap())))
                .collect();
            for r in renewing {
                assert!(r.join().unwrap(), "a racing renewal read as deposed");
            }
        });
        assert!(a.is_valid());
    }

    #[test]
    fn a_damaged_lease_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LEASE), b"{not json").unwrap();
        let err = read_lease(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("leader.json") && err.contains("unreadable lease"),
            "{err}"
        );
    }
}
