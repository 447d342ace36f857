//! The timers of a keyed operator (windows, process functions), in both time domains: one
//! place for the rules they share.
//!
//! Each key (or window) keeps the authoritative list of its own timers in its keyed state
//! (a [`TimerList`], checkpointed with it); the two [`TimerQueue`]s only order them by time.
//! So: at most one timer per list and time (Flink's rule); deleting a timer only takes it off
//! the list, and a queued timer no longer on its list is stale and skipped when it comes up;
//! a restored list is queued again; processing-time timers ask the task to call back.

use std::collections::HashMap;

use smallvec::SmallVec;

use crate::state::timer_queue::TimerQueue;
use crate::types::{ProcessingTimeService, Timestamp};

/// A time domain of timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TimeDomain {
    /// Fires when the watermark reaches the timer's time.
    EventTime,
    /// Fires when the processing-time clock reaches it.
    ProcessingTime,
}

/// A timer change asked for by user code (a trigger, a process function) during a call, and
/// applied by the operator afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerChange {
    Register(TimeDomain, Timestamp),
    Delete(TimeDomain, Timestamp),
}

/// One key's (or window's) timers: the authoritative list. Most owners have one timer (a
/// window's end), held inline: no allocation of its own, and no cache miss to reach it when
/// a record registers the timer it has already. Written as a sequence, as a `Vec` is.
pub type TimerList = smallvec::SmallVec<[(TimeDomain, Timestamp); 1]>;

/// A keyed operator's timer queues, with payload `P` naming the timer's owner.
#[derive(Debug)]
pub(crate) struct KeyedTimers<P> {
    event: TimerQueue<P>,
    processing: TimerQueue<P>,
    time: ProcessingTimeService,
}

impl<P> KeyedTimers<P> {
    pub(crate) fn new(time: ProcessingTimeService) -> Self {
        KeyedTimers {
            event: TimerQueue::default(),
            processing: TimerQueue::default(),
            time,
        }
    }

    fn queue(&mut self, domain: TimeDomain) -> &mut TimerQueue<P> {
        match domain {
            TimeDomain::EventTime => &mut self.event,
            TimeDomain::ProcessingTime => &mut self.processing,
        }
    }

    /// The current processing time.
    pub(crate) fn now(&self) -> Timestamp {
        self.time.now()
    }

    /// Registers a timer of the owner of `list` (once per list and time).
    pub(crate) fn register(
        &mut self,
        list: &mut TimerList,
        domain: TimeDomain,
        t: Timestamp,
        payload: impl FnOnce() -> P,
    ) {
        if domain == TimeDomain::ProcessingTime && t == Timestamp::MAX {
            // Never due (a global window's end): nothing to register.
            return;
        }
        if list.contains(&(domain, t)) {
            return;
        }
        self.queue(domain).register(t, payload());
        list.push((domain, t));
        if domain == TimeDomain::ProcessingTime {
            self.time.request_at(t);
        }
    }

    /// Applies what user code asked for, for the owner of `list`.
    pub(crate) fn apply(
        &mut self,
        list: &mut TimerList,
        change: TimerChange,
        payload: impl FnOnce() -> P,
    ) {
        match change {
            TimerChange::Register(d, t) => self.register(list, d, t, payload),
            TimerChange::Delete(d, t) => Self::delete(list, d, t),
        }
    }

    /// Deletes a timer: off the list; its queued entry is skipped when it comes up.
    pub(crate) fn delete(list: &mut TimerList, domain: TimeDomain, t: Timestamp) {
        list.retain(|x| *x != (domain, t));
    }

    /// Whether a popped timer is still on its owner's list; takes it off if so (it fires).
    pub(crate) fn take_if_live(list: &mut TimerList, domain: TimeDomain, t: Timestamp) -> bool {
        let live = list.contains(&(domain, t));
        if live {
            Self::delete(list, domain, t);
        }
        live
    }

    /// The next timer of `domain` due at `upto` (possibly stale: check it with
    /// [`KeyedTimers::take_if_live`]).
    pub(crate) fn pop_due(
        &mut self,
        domain: TimeDomain,
        upto: Timestamp,
    ) -> Option<(Timestamp, P)> {
        self.queue(domain).pop_due(upto)
    }

    /// Takes every queued timer of `domain` (possibly stale), grouped by owner as `split`
    /// tells it from the payload, each owner's in time order: for firing them all at once
    /// (the final watermark, the end of input) in the order of the owners' table rather
    /// than in time order, when the table has keys on disk (see
    /// `KeyedTable::retain_each`).
    pub(crate) fn take_all_by_owner<O: std::hash::Hash + Eq, X>(
        &mut self,
        domain: TimeDomain,
        split: impl Fn(P) -> (O, X),
    ) -> HashMap<O, SmallVec<[(Timestamp, X); 1]>> {
        let mut due: HashMap<O, SmallVec<[(Timestamp, X); 1]>> = HashMap::new();
        while let Some((time, payload)) = self.pop_due(domain, Timestamp::MAX) {
            let (owner, x) = split(payload);
            due.entry(owner).or_default().push((time, x));
        }
        due
    }

    /// Queues the timers of a restored list.
    pub(crate) fn restore(&mut self, list: &TimerList, payload: impl Fn() -> P) {
        for &(domain, t) in list {
            self.queue(domain).register(t, payload());
        }
    }

    /// Asks the task to call back when the earliest processing-time timer is due (after a
    /// restore, those that fell due while the job was down fire right away).
    pub(crate) fn request_processing_time(&self) {
        if let Some(t) = self.processing.earliest() {
            self.time.request_at(t);
        }
    }

    /// Event-time timers queued (stale ones included).
    #[cfg(test)]
    pub(crate) fn event_len(&self) -> usize {
        self.event.len()
    }
}
