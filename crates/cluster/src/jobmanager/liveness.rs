//! When a TaskManager counts as lost: silent for the heartbeat timeout while the JobManager
//! itself was running to hear it.
//!
//! Two things made a live TaskManager look lost on a loaded machine, and each is handled here:
//!
//! - A heartbeat aged in the JobManager. Its connection's reader read it, then waited for the
//!   state lock (held by a submission, a disk write, another connection) before recording it,
//!   while the watchdog, once it got the lock, saw only the old time. So a frame is stamped
//!   ([`HeardClock::stamp`]) the moment it is read, before any lock.
//! - The JobManager did not run at all (a host too busy to schedule it, a paused process). It
//!   cannot tell a silent TaskManager from its own absence, and after such a gap the
//!   heartbeats that arrived meanwhile are still unread in its sockets. So the [`Watchdog`]
//!   measures its own ticks: after a gap far longer than its period, silence counts again
//!   only from the moment the JobManager runs again.
//!
//! A TaskManager that is itself stopped or starved for the timeout is still lost, and one whose
//! connection closes is lost at once (that is the reader's business, not this module's).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The moment every [`HeardClock`] counts from (a process-wide epoch for atomics).
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// When a connection was last heard from, stamped without a lock by its reader and read by the
/// watchdog and the REST API. Clones share the one time.
///
/// ```
/// use hummer::cluster::jobmanager::liveness::HeardClock;
/// let heard = HeardClock::now();
/// std::thread::sleep(std::time::Duration::from_millis(5));
/// assert!(heard.elapsed() >= std::time::Duration::from_millis(5));
/// heard.clone().stamp();
/// assert!(heard.elapsed() < std::time::Duration::from_millis(5));
/// ```
#[derive(Clone, Debug)]
pub struct HeardClock(Arc<AtomicU64>);

impl HeardClock {
    /// A clock stamped now.
    pub fn now() -> HeardClock {
        let clock = HeardClock(Arc::new(AtomicU64::new(0)));
        clock.stamp();
        clock
    }

    /// Records that the connection was heard from now.
    pub fn stamp(&self) {
        let micros = origin().elapsed().as_micros() as u64;
        self.0.fetch_max(micros, Ordering::Relaxed);
    }

    /// When it was last heard from.
    pub fn last(&self) -> Instant {
        origin() + Duration::from_micros(self.0.load(Ordering::Relaxed))
    }

    /// How long ago it was last heard from.
    pub fn elapsed(&self) -> Duration {
        self.last().elapsed()
    }
}

/// Decides, at each of its ticks, which silences are long enough to declare a TaskManager lost.
///
/// ```
/// use std::time::{Duration, Instant};
/// use hummer::cluster::jobmanager::liveness::Watchdog;
/// let start = Instant::now();
/// let mut dog = Watchdog::new(Duration::from_secs(5), start);
/// let heard = start;
/// // Ticking steadily: a TaskManager silent for 6 s is lost.
/// let mut now = start;
/// for _ in 0..60 {
///     now += dog.period();
///     dog.tick(now);
/// }
/// assert!(dog.is_lost(heard, now));
/// // The JobManager itself did not run for 10 s: silence counts from its return.
/// let mut dog = Watchdog::new(Duration::from_secs(5), start);
/// let back = start + Duration::from_secs(10);
/// dog.tick(back);
/// assert!(!dog.is_lost(heard, back + Duration::from_secs(1)));
/// ```
#[derive(Debug)]
pub struct Watchdog {
    timeout: Duration,
    last_tick: Instant,
    counting_since: Instant,
}

impl Watchdog {
    /// A watchdog for `timeout`, ticking from `now`.
    pub fn new(timeout: Duration, now: Instant) -> Watchdog {
        Watchdog {
            timeout,
            last_tick: now,
            counting_since: now,
        }
    }

    /// How often it should tick: a quarter of the timeout, between 20 and 100 ms.
    pub fn period(&self) -> Duration {
        (self.timeout / 4).clamp(Duration::from_millis(20), Duration::from_millis(100))
    }

    /// A gap between ticks longer than this means the JobManager was not running.
    fn stall(&self) -> Duration {
        (self.timeout / 4).max(self.period() * 4)
    }

    /// Records a tick at `now`. Returns how long the JobManager was away when this tick came
    /// after a stall (silence then counts from `now`), `None` otherwise.
    pub fn tick(&mut self, now: Instant) -> Option<Duration> {
        let gap = now.saturating_duration_since(self.last_tick);
        self.last_tick = self.last_tick.max(now);
        if gap > self.stall() {
            self.counting_since = self.counting_since.max(now);
            return Some(gap);
        }
        None
    }

    /// Whether a TaskManager last heard from at `heard` is lost at `now`.
    pub fn is_lost(&self, heard: Instant, now: Instant) -> bool {
        now.saturating_duration_since(heard.max(self.counting_since)) > self.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TIMEOUT: Duration = Duration::from_secs(5);

    proptest! {
        /// Against a brute-force reading of the rule: lost exactly when the `timeout` before
        /// `now` holds no heartbeat and starts after the JobManager's last stall (a gap
        /// between ticks longer than a quarter of the timeout, 1.25 s here).
        #[test]
        fn lost_exactly_when_silent_for_the_timeout_while_running(
            ticks in proptest::collection::vec((1u64..3_000, any::<bool>()), 1..200),
        ) {
            let stall = Duration::from_millis(1_250);
            let start = Instant::now();
            let mut dog = Watchdog::new(TIMEOUT, start);
            let (mut now, mut heard, mut resumed) = (start, start, start);
            for (gap, beat) in ticks {
                let gap = Duration::from_millis(gap);
                now += gap;
                if gap > stall {
                    resumed = now;
                }
                prop_assert_eq!(dog.tick(now), (gap > stall).then_some(gap));
                prop_assert_eq!(dog.tick(now), None, "a second tick at once is no stall");
                let silent = now.duration_since(heard.max(resumed));
                prop_assert_eq!(dog.is_lost(heard, now), silent > TIMEOUT);
                if beat {
                    heard = now;
                }
            }
        }
    }

    #[test]
    fn a_steadily_ticking_jobmanager_loses_a_silent_taskmanager_after_the_timeout() {
        let start = Instant::now();
        let mut dog = Watchdog::new(TIMEOUT, start);
        let mut now = start;
        while now < start + TIMEOUT {
            now += dog.period();
            assert_eq!(dog.tick(now), None);
            assert!(!dog.is_lost(start, now));
        }
        now += dog.period();
        dog.tick(now);
        assert!(dog.is_lost(start, now));
        assert!(!dog.is_lost(now - Duration::from_secs(1), now));
    }

    #[test]
    fn after_a_stall_silence_counts_from_the_jobmanager_s_return() {
        let start = Instant::now();
        let mut dog = Watchdog::new(TIMEOUT, start);
        let back = start + Duration::from_secs(8);
        assert_eq!(dog.tick(back), Some(Duration::from_secs(8)));
        assert!(!dog.is_lost(start, back));
        let mut now = back;
        while now < back + TIMEOUT {
            now += dog.period();
            dog.tick(now);
        }
        now += dog.period();
        dog.tick(now);
        assert!(
            dog.is_lost(start, now),
            "silent on after the JobManager came back"
        );
    }

    #[test]
    fn a_stamp_never_goes_back() {
        let heard = HeardClock::now();
        let later = heard.last();
        heard.0.store(0, Ordering::Relaxed);
        heard.stamp();
        assert!(heard.last() >= later);
    }
}
