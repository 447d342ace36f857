//! Processing time: the clock operators read and the deadlines they ask to be woken at.
//!
//! Processing-time windows, processing-time timers, periodic watermark emission and idleness
//! timeouts all need "now" and a call when a deadline passes. Both come from here, so that a
//! test can drive them with a [`ManualClock`] instead of sleeping.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::Timestamp;

/// A source of processing time, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current processing time.
    fn now(&self) -> Timestamp;
}

/// Milliseconds since the Unix epoch on the system's wall clock (0 before 1970): the time
/// stamps of records kept for people (checkpoints, monitor samples, leases, exceptions).
pub fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        epoch_ms() as Timestamp
    }
}

/// A clock that moves only when told to: processing-time behaviour tested without sleeps.
///
/// ```
/// use hummer::types::{Clock, ManualClock};
/// let clock = ManualClock::new(1_000);
/// clock.advance(500);
/// assert_eq!(clock.now(), 1_500);
/// ```
#[derive(Debug, Default, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock that reads `start` until moved.
    pub fn new(start: Timestamp) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start)))
    }

    /// Moves the clock forward by `millis`.
    pub fn advance(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock (it should not go back).
    pub fn set(&self, now: Timestamp) {
        self.0.store(now, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.0.load(Ordering::SeqCst)
    }
}

/// One task's processing-time service: its clock, and the earliest deadline any operator of
/// its chain asked to be called at. The task reads the deadline on every turn of its loop
/// (one atomic load) and calls the chain's processing-time hooks once it has passed.
#[derive(Debug, Clone)]
pub struct ProcessingTimeService {
    clock: Arc<dyn Clock>,
    next: Arc<AtomicI64>,
}

impl Default for ProcessingTimeService {
    fn default() -> Self {
        ProcessingTimeService::new(Arc::new(SystemClock))
    }
}

impl ProcessingTimeService {
    /// A service on `clock` with nothing requested.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        ProcessingTimeService {
            clock,
            next: Arc::new(AtomicI64::new(Timestamp::MAX)),
        }
    }

    /// The current processing time.
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Asks to be called (through the operator's processing-time hook) once processing time
    /// reaches `at`. Requests are merged: the earliest wins, and after the call every operator
    /// asks again for what it still needs.
    pub fn request_at(&self, at: Timestamp) {
        self.next.fetch_min(at, Ordering::AcqRel);
    }

    /// The earliest requested deadline (`Timestamp::MAX`: none).
    #[inline]
    pub fn next_deadline(&self) -> Timestamp {
        self.next.load(Ordering::Acquire)
    }

    /// If the earliest deadline has passed, clears it and returns the current time: the task
    /// then calls its chain's hooks, which request their next deadlines anew.
    #[inline]
    pub fn take_due(&self) -> Option<Timestamp> {
        if self.next.load(Ordering::Acquire) == Timestamp::MAX {
            return None;
        }
        let now = self.now();
        if now < self.next_deadline() {
            return None;
        }
        self.next.store(Timestamp::MAX, Ordering::Release);
        Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_request_is_due_once_the_clock_passes_it() {
        let clock = ManualClock::new(100);
        let service = ProcessingTimeService::new(Arc::new(clock.clone()));
        assert_eq!(service.take_due(), None, "nothing requested");
        service.request_at(300);
        service.request_at(200);
        service.request_at(250);
        clock.set(199);
        assert_eq!(service.take_due(), None);
        clock.set(200);
        assert_eq!(service.take_due(), Some(200));
        assert_eq!(service.take_due(), None, "cleared until asked again");
        assert_eq!(service.next_deadline(), Timestamp::MAX);
    }
}
