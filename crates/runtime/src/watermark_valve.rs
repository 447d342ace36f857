//! How a task's watermark follows its inputs: the minimum over its active input channels,
//! never going back; and whether the task is idle.
//!
//! Each channel's watermark only moves forward (a late, smaller watermark on a channel is
//! ignored). A channel that has ended holds nothing back. An idle channel (its producer said
//! so in band) holds nothing back either, until it is active again; a channel that comes back
//! behind the task's watermark holds it until it catches up, since the task's watermark never
//! goes back. When every channel that has not ended is idle, the task is idle: its consumers
//! stop waiting for it, and, as in Flink, its watermark advances to the largest watermark of
//! its channels, so what its inputs completed before they went quiet (a burst's last windows)
//! fires instead of stalling until some input speaks again. A channel that comes back behind
//! that watermark then has late records, as an idle input always may. The task's watermark is
//! the one over all its channels, across both inputs of a two-input task.

use crate::types::{MAX_WATERMARK, MIN_WATERMARK, Timestamp, WatermarkStatus};

#[derive(Clone, Copy, Debug)]
pub struct Channel {
    watermark: Timestamp,
    idle: bool,
    ended: bool,
}

/// What an event changed about the task's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValveChange {
    /// The task's new watermark, if it advanced.
    pub(crate) watermark: Option<Timestamp>,
    /// The task's new status, if it changed.
    pub(crate) status: Option<WatermarkStatus>,
}

impl ValveChange {
    /// Folds a later change into this one (the later watermark and status win).
    pub fn then(self, later: ValveChange) -> ValveChange {
        ValveChange {
            watermark: later.watermark.or(self.watermark),
            status: later.status.or(self.status),
        }
    }
}

/// Combines the watermarks and statuses of a task's input channels (numbered across its
/// inputs).
///
/// Invariants: `current` never decreases; `idle` is true exactly when no channel is active
/// and at least one has not ended.
#[derive(Debug)]
pub struct WatermarkValve {
    channels: Vec<Channel>,
    current: Timestamp,
    idle: bool,
}

impl WatermarkValve {
    /// A valve over `channels` input channels, all active at the minimum.
    pub fn new(channels: usize) -> Self {
        WatermarkValve {
            channels: vec![
                Channel {
                    watermark: MIN_WATERMARK,
                    idle: false,
                    ended: false,
                };
                channels
            ],
            current: MIN_WATERMARK,
            idle: false,
        }
    }

    /// Channel `channel` delivered watermark `w`.
    pub fn on_watermark(&mut self, channel: usize, w: Timestamp) -> ValveChange {
        match self.channels.get_mut(channel) {
            Some(c) if w > c.watermark => c.watermark = w,
            _ => return ValveChange::default(),
        }
        self.update()
    }

    /// Channel `channel` became idle or active.
    pub fn on_status(&mut self, channel: usize, status: WatermarkStatus) -> ValveChange {
        let idle = status == WatermarkStatus::Idle;
        match self.channels.get_mut(channel) {
            Some(c) if !c.ended && c.idle != idle => c.idle = idle,
            _ => return ValveChange::default(),
        }
        self.update()
    }

    /// Channel `channel` ended: it no longer holds the watermark back.
    pub fn on_end(&mut self, channel: usize) -> ValveChange {
        match self.channels.get_mut(channel) {
            Some(c) if !c.ended => {
                c.ended = true;
                c.idle = false;
                c.watermark = MAX_WATERMARK;
            }
            _ => return ValveChange::default(),
        }
        self.update()
    }

    /// The task's watermark.
    #[cfg(test)]
    pub(crate) fn current(&self) -> Timestamp {
        self.current
    }

    /// Whether the task is idle.
    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        self.idle
    }

    pub fn update(&mut self) -> ValveChange {
        let mut change = ValveChange::default();
        let mut open = false;
        let mut min_active: Option<Timestamp> = None;
        let mut max_open = MIN_WATERMARK;
        for c in self.channels.iter().filter(|c| !c.ended) {
            open = true;
            max_open = max_open.max(c.watermark);
            if !c.idle {
                min_active = Some(min_active.map_or(c.watermark, |m| m.min(c.watermark)));
            }
        }
        let idle = open && min_active.is_none();
        let candidate = if !open {
            Some(MAX_WATERMARK)
        } else if idle {
            Some(max_open)
        } else {
            min_active
        };
        if let Some(w) = candidate.filter(|w| *w > self.current) {
            self.current = w;
            change.watermark = Some(w);
        }
        if idle != self.idle {
            self.idle = idle;
            change.status = Some(if idle {
                WatermarkStatus::Idle
            } else {
                WatermarkStatus::Active
            });
        }
        change
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn wm(w: Timestamp) -> ValveChange {
        ValveChange {
            watermark: Some(w),
            status: None,
        }
    }

    #[test]
    fn the_slowest_channel_holds_the_watermark_and_an_ended_one_does_not() {
        let mut v = WatermarkValve::new(3);
        assert_eq!(v.on_watermark(0, 10), ValveChange::default());
        assert_eq!(v.on_watermark(1, 20), ValveChange::default());
        assert_eq!(v.on_watermark(2, 5), wm(5));
        assert_eq!(
            v.on_watermark(2, 4),
            ValveChange::default(),
            "never goes back"
        );
        assert_eq!(v.on_end(2), wm(10));
        assert_eq!(v.on_end(0), wm(20));
        assert_eq!(v.on_end(1), wm(MAX_WATERMARK));
        assert_eq!(v.current(), MAX_WATERMARK);
    }

    #[test]
    fn an_idle_channel_holds_nothing_back_until_it_is_active_again() {
        let mut v = WatermarkValve::new(2);
        v.on_watermark(0, 100);
        assert_eq!(v.on_status(1, WatermarkStatus::Idle), wm(100));
        assert_eq!(v.on_watermark(0, 150), wm(150));
        // Back, behind the task's watermark: it holds it until it catches up.
        assert_eq!(
            v.on_status(1, WatermarkStatus::Active),
            ValveChange::default()
        );
        assert_eq!(v.on_watermark(0, 200), ValveChange::default());
        assert_eq!(v.on_watermark(1, 170), wm(170));
        // Every channel idle: the task is idle, and its watermark advances to the largest of
        // its channels' (what they completed fires rather than stalls).
        v.on_status(0, WatermarkStatus::Idle);
        let change = v.on_status(1, WatermarkStatus::Idle);
        assert_eq!(change.status, Some(WatermarkStatus::Idle));
        assert_eq!(change.watermark, Some(200));
        assert!(v.is_idle());
        let change = v.on_status(1, WatermarkStatus::Active);
        assert_eq!(
            change,
            ValveChange {
                watermark: None,
                status: Some(WatermarkStatus::Active)
            }
        );
    }

    proptest! {
        /// Against a brute-force reference: after every event the valve's watermark is the
        /// largest value so far of "the minimum over active channels of the largest watermark
        /// each has delivered" (over all open channels, the largest, when every open one is
        /// idle; the maximum once every channel ended); it is reported exactly when it grows;
        /// the task is idle exactly when no channel is active and one is open.
        #[test]
        fn the_valve_follows_its_active_channels(
            channels in 1usize..5,
            events in proptest::collection::vec((0usize..5, 0u8..10, -50i64..50), 0..80),
        ) {
            let mut v = WatermarkValve::new(channels);
            let mut best = vec![MIN_WATERMARK; channels];
            let mut idle = vec![false; channels];
            let mut ended = vec![false; channels];
            let (mut last, mut last_idle) = (MIN_WATERMARK, false);
            for (c, kind, w) in events {
                let c = c % channels;
                let change = match kind {
                    0 => { if !ended[c] { ended[c] = true; idle[c] = false; } v.on_end(c) }
                    1 | 2 => { if !ended[c] { idle[c] = kind == 1; } v.on_status(c, if kind == 1 { WatermarkStatus::Idle } else { WatermarkStatus::Active }) }
                    _ => { if !ended[c] { best[c] = best[c].max(w); } v.on_watermark(c, w) }
                };
                let open: Vec<usize> = (0..channels).filter(|i| !ended[*i]).collect();
                let active: Vec<usize> = open.iter().copied().filter(|i| !idle[*i]).collect();
                let candidate = if open.is_empty() {
                    MAX_WATERMARK
                } else if active.is_empty() {
                    open.iter().map(|i| best[*i]).max().unwrap_or(last)
                } else {
                    active.iter().map(|i| best[*i]).min().unwrap_or(last)
                };
                let expected = candidate.max(last);
                let expected_idle = active.is_empty() && !open.is_empty();
                prop_assert_eq!(v.current(), expected);
                prop_assert_eq!(v.is_idle(), expected_idle);
                prop_assert_eq!(change.watermark, (expected > last).then_some(expected));
                prop_assert_eq!(change.status.is_some(), expected_idle != last_idle);
                last = expected;
                last_idle = expected_idle;
            }
        }
    }
}
