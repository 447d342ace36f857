//! How a task's watermark follows its inputs: the minimum over its input channels, never
//! going back.
//!
//! Each channel's watermark only moves forward (a late, smaller watermark on a channel is
//! ignored); a channel that has ended holds nothing back (its watermark is the maximum). The
//! task's watermark is the minimum over all its channels, across both inputs of a two-input
//! task, and is handed on only when it advances.

use crate::types::{MAX_WATERMARK, MIN_WATERMARK, Timestamp};

/// Combines the watermarks of a task's input channels (numbered across its inputs).
///
/// Invariant: `current` is the minimum of `channels` as last handed on, and never decreases.
#[derive(Debug)]
pub(crate) struct WatermarkValve {
    channels: Vec<Timestamp>,
    current: Timestamp,
}

impl WatermarkValve {
    /// A valve over `channels` input channels, all at the minimum.
    pub(crate) fn new(channels: usize) -> Self {
        WatermarkValve {
            channels: vec![MIN_WATERMARK; channels],
            current: MIN_WATERMARK,
        }
    }

    /// Channel `channel` delivered watermark `w`; returns the task's watermark if it advanced.
    pub(crate) fn on_watermark(&mut self, channel: usize, w: Timestamp) -> Option<Timestamp> {
        let slot = self.channels.get_mut(channel)?;
        if w <= *slot {
            return None;
        }
        *slot = w;
        self.advance()
    }

    /// Channel `channel` ended: it no longer holds the watermark back.
    pub(crate) fn on_end(&mut self, channel: usize) -> Option<Timestamp> {
        self.on_watermark(channel, MAX_WATERMARK)
    }

    /// The task's watermark.
    #[cfg(test)]
    pub(crate) fn current(&self) -> Timestamp {
        self.current
    }

    fn advance(&mut self) -> Option<Timestamp> {
        let min = self.channels.iter().copied().min().unwrap_or(MAX_WATERMARK);
        (min > self.current).then(|| {
            self.current = min;
            min
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_slowest_channel_holds_the_watermark_and_an_ended_one_does_not() {
        let mut v = WatermarkValve::new(3);
        assert_eq!(v.on_watermark(0, 10), None);
        assert_eq!(v.on_watermark(1, 20), None);
        assert_eq!(v.on_watermark(2, 5), Some(5));
        assert_eq!(
            v.on_watermark(2, 4),
            None,
            "a channel's watermark never goes back"
        );
        assert_eq!(v.on_end(2), Some(10));
        assert_eq!(v.on_end(0), Some(20));
        assert_eq!(v.on_end(1), Some(MAX_WATERMARK));
        assert_eq!(v.current(), MAX_WATERMARK);
    }

    proptest! {
        /// Against a brute-force reference: after every event the valve's watermark is the
        /// minimum over channels of the largest watermark each has delivered (the maximum for
        /// an ended channel), it is reported exactly when it grows, and it never decreases.
        #[test]
        fn the_valve_is_the_minimum_of_each_channels_maximum(
            channels in 1usize..5,
            events in proptest::collection::vec((0usize..5, -50i64..50, proptest::bool::weighted(0.1)), 0..60),
        ) {
            let mut v = WatermarkValve::new(channels);
            let mut seen: Vec<Vec<Timestamp>> = vec![Vec::new(); channels];
            let mut ended = vec![false; channels];
            let mut last = MIN_WATERMARK;
            for (c, w, end) in events {
                let c = c % channels;
                let reported = if end {
                    ended[c] = true;
                    v.on_end(c)
                } else {
                    seen[c].push(w);
                    v.on_watermark(c, w)
                };
                let expected = (0..channels)
                    .map(|i| if ended[i] { MAX_WATERMARK } else { seen[i].iter().copied().max().unwrap_or(MIN_WATERMARK) })
                    .min()
                    .unwrap_or(MAX_WATERMARK);
                prop_assert_eq!(v.current(), expected.max(last));
                prop_assert_eq!(reported, (v.current() > last).then_some(v.current()));
                prop_assert!(v.current() >= last);
                last = v.current();
            }
        }
    }
}
