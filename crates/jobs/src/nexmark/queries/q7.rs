//! q7, highest bid: per tumbling 10 s window its largest price, and every bid of that price
//! with `window_end - 10 s <= dateTime <= window_end` (inclusive at both ends, so a bid at
//! exactly a window's end also counts for it): `auction, price, bidder, dateTime, extra`.
//!
//! Each bid goes to its window, and a bid at a window boundary to the window before as well
//! (as a candidate only: it does not raise that window's maximum). Per window a process
//! function keeps the maximum and the bids at it, and emits them when the watermark passes
//! the window's end (when no boundary bid can still come).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra
//! from bid B
//! JOIN (
//!   SELECT MAX(price) AS maxprice, window_end as `dateTime`
//!   FROM TABLE(
//!           TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//!   GROUP BY window_start, window_end
//! ) B1
//! ON B.price = B1.maxprice
//! WHERE B.`dateTime` BETWEEN B1.`dateTime`  - INTERVAL '10' SECOND AND B1.`dateTime`;
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Bid, BidColumns};
use crate::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use crate::types::Timestamp;

const WINDOW: i64 = 10_000;

/// The maximum of one window and the bids at it.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Highest {
    max: Option<u64>,
    /// Bids of the window at `max`.
    top: Vec<Bid>,
    /// Bids at the window's end (candidates that do not count for its maximum).
    boundary: Vec<Bid>,
}

#[derive(Clone)]
struct HighestBids;

impl KeyedProcessFunction<i64, (i64, bool, Bid)> for HighestBids {
    type State = Highest;
    type Out = String;

    fn process_element(
        &mut self,
        (start, at_boundary, bid): (i64, bool, Bid),
        ctx: &mut ProcessContext<'_, '_, i64, Highest, String>,
    ) {
        let state = ctx.state().get_or_insert_with(Highest::default);
        if at_boundary {
            state.boundary.push(bid);
        } else {
            match state.max {
                Some(m) if bid.price < m => {}
                Some(m) if bid.price == m => state.top.push(bid),
                _ => {
                    state.max = Some(bid.price);
                    state.top = vec![bid];
                }
            }
        }
        ctx.timer_service()
            .register_event_time_timer(start + WINDOW);
    }

    fn on_timer(&mut self, _: Timestamp, ctx: &mut ProcessContext<'_, '_, i64, Highest, String>) {
        let Some(state) = ctx.state().value().cloned() else {
            return;
        };
        ctx.state().clear();
        let Some(max) = state.max else {
            return;
        };
        for b in state
            .top
            .iter()
            .chain(state.boundary.iter().filter(|b| b.price == max))
        {
            let mut line = format!("{},{},{},", b.auction, b.price, b.bidder);
            format::timestamp(&mut line, b.date_time);
            line.push(',');
            format::string(&mut line, &b.extra);
            ctx.collect(line);
        }
    }
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    input
        .bids_with(env, BidColumns::NUMBERS.with_extra())
        .flat_map(|b: Bid| {
            let start = b.date_time - b.date_time.rem_euclid(WINDOW);
            let boundary = (b.date_time == start).then(|| (start - WINDOW, true, b.clone()));
            std::iter::once((start, false, b)).chain(boundary)
        })
        .key_by(|r: &(i64, bool, Bid)| r.0)
        .process_function(HighestBids)
        .name("Highest bids per window")
}
