//! Update streams: how a query whose SQL result is an updating table (q4, q6, q15-q19) shows
//! it while the input runs, as Flink's changelog does.
//!
//! Such a query computes, per result key, the key's current rows. As a final table
//! ([`Emit::FinalTable`]) they come out once, when they can no longer change (at the end of a
//! bounded input, or when the watermark closes their day). As an update stream
//! ([`Emit::Updates`]) every record that changes a key's rows emits the difference from the
//! rows it had: `+I,row` for a row of a key seen for the first time, `-U,row` / `+U,row` for
//! a row replaced, `-D,row` for a row gone (q19's bid that leaves the top ten). Applying the
//! changes in order (add on `+I`/`+U`, remove on `-U`/`-D`) gives the table at that point,
//! and on a bounded input the final table. A query whose rows never change (an append-only
//! query, or q9 whose rows are final when an auction closes) emits each row as `+I,row`.

use crate::api::DataStream;
use crate::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use crate::operators::window::{
    EventTimeTrigger, TimeDomain, TimeWindow, Trigger, TriggerContext, TriggerResult,
};
use crate::types::{Key, Timestamp};

/// How a query with an updating result emits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// Each key's rows once, when final.
    FinalTable,
    /// A change whenever a record changes a key's rows.
    Updates,
}

/// The windows' trigger for `Emit`: the end of the window in event time for the final
/// table (the default of event-time windows), every record for updates.
#[derive(Clone, Copy, Debug)]
pub struct ResultTrigger(pub Emit);

impl<T> Trigger<T> for ResultTrigger {
    fn on_element(
        &self,
        record: &T,
        timestamp: Timestamp,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        match self.0 {
            Emit::FinalTable => EventTimeTrigger.on_element(record, timestamp, window, ctx),
            Emit::Updates => TriggerResult::Fire,
        }
    }
    fn on_timer(
        &self,
        domain: TimeDomain,
        time: Timestamp,
        window: &TimeWindow,
        ctx: &mut TriggerContext<'_>,
    ) -> TriggerResult {
        match self.0 {
            Emit::FinalTable => {
                Trigger::<T>::on_timer(&EventTimeTrigger, domain, time, window, ctx)
            }
            Emit::Updates => TriggerResult::Continue,
        }
    }
    fn clear(&self, window: &TimeWindow, ctx: &mut TriggerContext<'_>) {
        if self.0 == Emit::FinalTable {
            Trigger::<T>::clear(&EventTimeTrigger, window, ctx);
        }
    }
}

/// Emits per key the difference between its rows and the rows it had (see the module).
#[derive(Clone)]
struct Changes;

impl<K: Key> KeyedProcessFunction<K, (K, Vec<String>)> for Changes {
    type State = Vec<String>;
    type Out = String;

    fn process_element(
        &mut self,
        (_, rows): (K, Vec<String>),
        ctx: &mut ProcessContext<'_, '_, K, Vec<String>, String>,
    ) {
        let old = ctx.state().value().cloned().unwrap_or_default();
        let removed: Vec<&String> = old.iter().filter(|r| !rows.contains(r)).collect();
        let added: Vec<&String> = rows.iter().filter(|r| !old.contains(r)).collect();
        let (minus, plus) = match (removed.is_empty(), added.is_empty()) {
            (_, true) => ("-D", ""),
            (true, false) => ("", "+I"),
            (false, false) => ("-U", "+U"),
        };
        for r in removed {
            ctx.collect(format!("{minus},{r}"));
        }
        for r in added {
            ctx.collect(format!("{plus},{r}"));
        }
        if rows.is_empty() {
            ctx.state().clear();
        } else {
            ctx.state().update(rows);
        }
    }
}

/// The result lines of `rows` (each key with its current rows) as `emit` says: every row of
/// each firing for the final table (the rows come once per key), the changes for updates.
pub fn emit_rows<K: Key>(rows: &DataStream<(K, Vec<String>)>, emit: Emit) -> DataStream<String> {
    match emit {
        Emit::FinalTable => rows.flat_map(|(_, rows): (K, Vec<String>)| rows),
        Emit::Updates => rows
            .key_by(|(k, _): &(K, Vec<String>)| k.clone())
            .process_function(Changes)
            .name("Changes"),
    }
}

/// An append-only query's lines as an update stream: every row an insertion.
pub fn inserts(rows: &DataStream<String>) -> DataStream<String> {
    rows.map(|row: String| format!("+I,{row}"))
}
