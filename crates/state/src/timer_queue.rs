//! Timers: what keyed operators (windows, process functions with timers, joins) asked to be
//! called back at, in one time domain, earliest first.
//!
//! The queue is a plain multiset ordered by time, as cheap as a push and a pop: the operator
//! that owns the timers keeps the authoritative list of each key's (or window's) timers in
//! its keyed state, so it registers a timer only once per key and time (Flink's rule), and
//! deleting a timer only takes it off that list. A popped timer no longer on its owner's list
//! is stale and skipped (lazy deletion). Timers are part of keyed state through those lists:
//! they are checkpointed per key and move with their key group.

use std::collections::BTreeMap;

use crate::types::Timestamp;

/// Timers of one time domain, earliest first.
#[derive(Debug)]
pub struct TimerQueue<P> {
    by_time: BTreeMap<Timestamp, Vec<P>>,
    len: usize,
}

impl<P> Default for TimerQueue<P> {
    fn default() -> Self {
        TimerQueue {
            by_time: BTreeMap::new(),
            len: 0,
        }
    }
}

impl<P> TimerQueue<P> {
    /// Adds a timer (the caller has checked that its owner does not already have it).
    pub fn register(&mut self, time: Timestamp, payload: P) {
        self.by_time.entry(time).or_default().push(payload);
        self.len += 1;
    }

    /// Removes and returns a timer at or before `upto`, earliest first, if any.
    pub fn pop_due(&mut self, upto: Timestamp) -> Option<(Timestamp, P)> {
        let mut entry = self.by_time.first_entry()?;
        let time = *entry.key();
        if time > upto {
            return None;
        }
        let payload = entry.get_mut().pop()?;
        if entry.get().is_empty() {
            entry.remove();
        }
        self.len -= 1;
        Some((time, payload))
    }

    /// The earliest timer's time (possibly a stale one).
    pub fn earliest(&self) -> Option<Timestamp> {
        self.by_time.keys().next().copied()
    }

    /// Number of timers queued (stale ones included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no timer is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a brute-force reference (a sorted multiset): every timer due is popped
        /// once, in time order; the others stay.
        #[test]
        fn pops_every_due_timer_once_in_time_order(
            timers in proptest::collection::vec((0i64..20, 0u8..5), 0..200),
            upto in 0i64..25,
        ) {
            let mut q = TimerQueue::default();
            for &(t, p) in &timers {
                q.register(t, p);
            }
            prop_assert_eq!(q.len(), timers.len());
            prop_assert_eq!(q.earliest(), timers.iter().map(|x| x.0).min());
            let mut popped = Vec::new();
            while let Some(timer) = q.pop_due(upto) {
                popped.push(timer);
            }
            let times: Vec<i64> = popped.iter().map(|x| x.0).collect();
            prop_assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
            popped.sort();
            let mut due: Vec<(i64, u8)> = timers.iter().copied().filter(|x| x.0 <= upto).collect();
            due.sort();
            prop_assert_eq!(&popped, &due);
            prop_assert_eq!(q.len(), timers.len() - due.len());
        }
    }
}
