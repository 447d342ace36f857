//! Windows on keyed streams: assigners (tumbling, sliding, session, global; event time and
//! processing time), triggers, window functions, and the window operator that runs them.
//!
//! A window result always carries its window ([`TimeWindow`]): `reduce` and `aggregate` emit
//! a [`WindowResult`] (key, window, value); `process` functions are given the window. Late records are counted
//! and can be routed to a side output; nothing is dropped silently.

mod assigners;
mod functions;
mod time_window;
mod triggers;
mod window_operator;

pub use crate::keyed_timers::TimeDomain;
pub use assigners::{
    CumulativeEventTimeWindows, EventTimeSessionWindows, GlobalWindows,
    ProcessingTimeSessionWindows, SlidingEventTimeWindows, SlidingProcessingTimeWindows,
    TumblingEventTimeWindows, TumblingProcessingTimeWindows, WindowAssigner,
};
pub use functions::{
    AccChanges, AggregateFunction, AggregateWindow, CountAggregate, IncrementalProcess,
    ProcessWindow, ReduceWindow, WindowFunction, WindowOutput, WindowResult,
};
pub use time_window::TimeWindow;
pub use triggers::{
    CountTrigger, EventTimeTrigger, NeverTrigger, ProcessingTimeTrigger, PurgingTrigger, Trigger,
    TriggerContext, TriggerResult,
};
pub use window_operator::{WindowOperator, WindowSettings};
