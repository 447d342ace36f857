//! Timers: what keyed operators (windows, process functions with timers) asked to be called
//! back at, in one time domain, ordered by time.
//!
//! A timer is a time and a payload (a key, or a key and a window). A payload has at most one
//! timer per time: registering it twice is one timer, as in Flink. Timers are part of keyed
//! state: the operators that own them snapshot them per key, so they move with their key group.

use std::collections::{BTreeMap, HashSet};
use std::hash::Hash;

use crate::types::Timestamp;

/// Timers of one time domain, earliest first.
#[derive(Debug)]
pub struct TimerQueue<P> {
    by_time: BTreeMap<Timestamp, HashSet<P, foldhash::fast::RandomState>>,
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

impl<P: Hash + Eq + Clone> TimerQueue<P> {
    /// Registers a timer; false if `payload` already had one at `time`.
    pub fn register(&mut self, time: Timestamp, payload: P) -> bool {
        let added = self.by_time.entry(time).or_default().insert(payload);
        self.len += usize::from(added);
        added
    }

    /// Deletes a timer; false if there was none.
    pub fn delete(&mut self, time: Timestamp, payload: &P) -> bool {
        let Some(set) = self.by_time.get_mut(&time) else {
            return false;
        };
        let removed = set.remove(payload);
        if set.is_empty() {
            self.by_time.remove(&time);
        }
        self.len -= usize::from(removed);
        removed
    }

    /// Removes and returns the earliest timer at or before `upto`, if any.
    pub fn pop_due(&mut self, upto: Timestamp) -> Option<(Timestamp, P)> {
        let mut entry = self.by_time.first_entry()?;
        let time = *entry.key();
        if time > upto {
            return None;
        }
        let set = entry.get_mut();
        let payload = set.iter().next().cloned()?;
        set.remove(&payload);
        if set.is_empty() {
            entry.remove();
        }
        self.len -= 1;
        Some((time, payload))
    }

    /// The earliest timer's time.
    pub fn earliest(&self) -> Option<Timestamp> {
        self.by_time.keys().next().copied()
    }

    /// Number of timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no timer is registered.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a brute-force reference: a set of (time, payload), popped in time order.
        #[test]
        fn pops_every_live_timer_once_in_time_order(
            ops in proptest::collection::vec((any::<bool>(), 0i64..20, 0u8..5), 0..200),
            upto in 0i64..25,
        ) {
            let mut q = TimerQueue::default();
            let mut reference = std::collections::BTreeSet::new();
            for (register, t, p) in ops {
                if register {
                    prop_assert_eq!(q.register(t, p), reference.insert((t, p)));
                } else {
                    prop_assert_eq!(q.delete(t, &p), reference.remove(&(t, p)));
                }
                prop_assert_eq!(q.len(), reference.len());
            }
            prop_assert_eq!(q.earliest(), reference.iter().next().map(|x| x.0));
            let mut popped = Vec::new();
            while let Some(timer) = q.pop_due(upto) {
                popped.push(timer);
            }
            let times: Vec<i64> = popped.iter().map(|x| x.0).collect();
            prop_assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
            popped.sort();
            let due: Vec<(i64, u8)> = reference.iter().copied().filter(|x| x.0 <= upto).collect();
            prop_assert_eq!(popped, due);
            prop_assert_eq!(q.len(), reference.len() - times.len());
        }
    }
}
