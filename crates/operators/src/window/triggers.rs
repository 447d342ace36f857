//! Triggers: when a window's result is emitted, and when its contents are dropped (Flink's
//! `Trigger`).
//!
//! A trigger is asked on every record added to a window, and when a timer it registered (in
//! event time or processing time) fires; it answers with a [`TriggerResult`]. The window
//! operator owns the timers and a number per key and window the trigger may keep
//! ([`TriggerContext::state`]: a count, a flag), all checkpointed with the window.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use crate::keyed_process_function::TimerService;
use crate::keyed_timers::TimeDomain;
use crate::types::Timestamp;
use crate::window::TimeWindow;

/// What a trigger decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerResult {
    /// Nothing happens.
    Continue,
    /// Emit the window's result; keep its contents (a later firing updates the result).
    Fire,
    /// Drop the window's contents without emitting.
    Purge,
    /// Emit the window's result, then drop its contents.
    FireAndPurge,
}

impl TriggerResult {
    /// Whether the window's result is emitted.
    pub fn fires(self) -> bool {
        matches!(self, TriggerResult::Fire | TriggerResult::FireAndPurge)
    }

    /// Whether the window's contents are dropped.
    pub fn purges(self) -> bool {
        matches!(self, TriggerResult::Purge | TriggerResult::FireAndPurge)
    }
}

/// What a trigger sees of the window operator while it decides: the window's
/// [`TimerService`] (the clocks, and the window's timers: one fires the trigger's
/// [`Trigger::on_timer`]), which it derefs to, and the
/// number the trigger keeps.
pub struct TriggerContext<'a> {
    pub(crate) timers: TimerService<'a>,
    pub(crate) state: &'a mut u64,
}

impl TriggerContext<'_> {
    /// A number the trigger keeps per key and window (0 at first; summed when session
    /// windows merge).
    pub fn state(&mut self) -> &mut u64 {
        self.state
    }
}

impl<'a> Deref for TriggerContext<'a> {
    type Target = TimerService<'a>;
    fn deref(&self) -> &TimerService<'a> {
        &self.timers
    }
}

impl DerefMut for TriggerContext<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.timers
    }
}

/// Decides when a window fires and purges (Flink's `Trigger`).
pub trait Trigger<T>: Send + Sync {
    /// A record with timestamp `timestamp` was added to `window`.
    fn on_element(
        &self,
        record: &T,
        timestamp: Timestamp,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult;
    /// A timer the trigger registered for `window` in `domain` fired at `time` (by default:
    /// nothing happens). Flink's `onEventTime` and `onProcessingTime`, one hook told which.
    fn on_timer(
        &self,
        domain: TimeDomain,
        time: Timestamp,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        let _ = (domain, time, window, ctx);
        TriggerResult::Continue
    }
    /// Whether the trigger works with merging (session) windows.
    fn can_merge(&self) -> bool {
        false
    }
    /// Windows were merged into `window` (their timers are gone, their states summed):
    /// register what the merged window needs.
    fn on_merge(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
        let _ = (window, ctx);
    }
    /// The window is being removed: delete what the trigger registered or keeps.
    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
        let _ = (window, ctx);
    }
}

/// The trigger that fires when the clock of a time domain passes the window's end (the
/// default of windows in that domain), written once for both.
macro_rules! window_end_trigger {
    ($(#[$doc:meta])* $name:ident, $domain:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl<T> Trigger<T> for $name {
            fn on_element(
                &self,
                _record: &T,
                _timestamp: Timestamp,
                window: &TimeWindow,
                ctx: &mut TriggerContext<'_>,
            ) -> TriggerResult {
                let end = window.max_timestamp();
                if matches!($domain, TimeDomain::EventTime) && end <= ctx.current_watermark() {
                    // A late record within the allowed lateness: update the result at once.
                    TriggerResult::Fire
                } else {
                    ctx.register($domain, end);
                    TriggerResult::Continue
                }
            }
            fn on_timer(
                &self,
                domain: TimeDomain,
                time: Timestamp,
                window: &TimeWindow,
                _ctx: &mut TriggerContext<'_>,
            ) -> TriggerResult {
                // Only timers of its own domain; in processing time every one fires (as
                // Flink's), in event time the end's.
                if domain != $domain {
                    TriggerResult::Continue
                } else if matches!($domain, TimeDomain::ProcessingTime)
                    || time == window.max_timestamp()
                {
                    TriggerResult::Fire
                } else {
                    TriggerResult::Continue
                }
            }
            fn can_merge(&self) -> bool {
                true
            }
            fn on_merge(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
                if window.max_timestamp() > ctx.current_time($domain) {
                    ctx.register($domain, window.max_timestamp());
                }
            }
            fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
                ctx.delete($domain, window.max_timestamp());
            }
        }
    };
}

window_end_trigger!(
    /// Fires once the watermark passes the window's end, and again for every late record
    /// within the allowed lateness (the default of event-time windows).
    EventTimeTrigger,
    TimeDomain::EventTime
);

window_end_trigger!(
    /// Fires when the processing-time clock passes the window's end (the default of
    /// processing-time windows).
    ProcessingTimeTrigger,
    TimeDomain::ProcessingTime
);

/// Fires every `count` records of a window (its count restarts after each firing).
#[derive(Clone, Copy, Debug)]
pub struct CountTrigger {
    count: u64,
}

impl CountTrigger {
    /// Fires every `count` records (at least 1).
    pub fn of(count: u64) -> Self {
        CountTrigger {
            count: count.max(1),
        }
    }
}

impl<T> Trigger<T> for CountTrigger {
    fn on_element(
        &self,
        _record: &T,
        _timestamp: Timestamp,
        _window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        let n = ctx.state();
        *n += 1;
        if *n >= self.count {
            *n = 0;
            TriggerResult::Fire
        } else {
            TriggerResult::Continue
        }
    }
    fn can_merge(&self) -> bool {
        true
    }
}

/// Turns every firing of another trigger into fire-and-purge: each result covers only the
/// records since the last one.
pub struct PurgingTrigger<T> {
    inner: Arc<dyn Trigger<T>>,
}

impl<T> PurgingTrigger<T> {
    /// Purges whenever `inner` fires.
    pub fn of(inner: impl Trigger<T> + 'static) -> Self {
        PurgingTrigger {
            inner: Arc::new(inner),
        }
    }
}

fn purging(result: TriggerResult) -> TriggerResult {
    if result.fires() {
        TriggerResult::FireAndPurge
    } else {
        result
    }
}

impl<T> Trigger<T> for PurgingTrigger<T> {
    fn on_element(
        &self,
        record: &T,
        timestamp: Timestamp,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        purging(self.inner.on_element(record, timestamp, window, ctx))
    }
    fn on_timer(
        &self,
        domain: TimeDomain,
        time: Timestamp,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        purging(self.inner.on_timer(domain, time, window, ctx))
    }
    fn can_merge(&self) -> bool {
        self.inner.can_merge()
    }
    fn on_merge(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
        self.inner.on_merge(window, ctx)
    }
    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
        self.inner.clear(window, ctx)
    }
}

/// Never fires (the default of [`crate::window::GlobalWindows`], which need a
/// trigger of their own).
#[derive(Clone, Copy, Debug, Default)]
pub struct NeverTrigger;

impl<T> Trigger<T> for NeverTrigger {
    fn on_element(
        &self,
        _record: &T,
        _timestamp: Timestamp,
        _window: &TimeWindow,
        _ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        TriggerResult::Continue
    }
    fn can_merge(&self) -> bool {
        true
    }
}
