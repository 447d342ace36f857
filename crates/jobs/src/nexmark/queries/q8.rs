//! q8, monitor new users: persons who opened an auction in the tumbling 10 s window in which
//! they registered: `id, name, window_start`, once per person and window.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT P.id, P.name, P.starttime
//! FROM (
//!   SELECT id, name,
//!         window_start AS starttime,
//!         window_end AS endtime
//!   FROM TABLE(
//!             TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//!   GROUP BY id, name, window_start, window_end
//! ) P
//! JOIN (
//!   SELECT seller,
//!         window_start AS starttime,
//!         window_end AS endtime
//!   FROM TABLE(
//!         TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
//!   GROUP BY seller, window_start, window_end
//! ) A
//! ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
//! ```

use std::time::Duration;

use crate::api::{DataStream, JoinSide, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Person};
use crate::operators::Collector;
use crate::operators::window::{TimeWindow, TumblingEventTimeWindows};

/// A person (id, name) or an auction's seller.
type Side = JoinSide<(u64, String), u64>;

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    let persons = input
        .persons(env)
        .map(|p: Person| Side::Left((p.id, p.name)));
    let sellers = input.auctions(env).map(|a: Auction| Side::Right(a.seller));
    persons
        .union(&[sellers])
        .key_by(|s: &Side| match s {
            JoinSide::Left((id, _)) => *id,
            JoinSide::Right(seller) => *seller,
        })
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .process(
            |id: &u64, w: &TimeWindow, rows: &[Side], out: &mut Collector<'_, String>| {
                if !rows.iter().any(|r| matches!(r, JoinSide::Right(_))) {
                    return;
                }
                let mut names: Vec<&String> = rows
                    .iter()
                    .filter_map(|r| match r {
                        JoinSide::Left((_, name)) => Some(name),
                        JoinSide::Right(_) => None,
                    })
                    .collect();
                names.sort();
                names.dedup();
                for name in names {
                    let mut line = format!("{id},");
                    format::string(&mut line, name);
                    line.push(',');
                    format::timestamp(&mut line, w.start);
                    out.collect(line);
                }
            },
        )
        .name("New users with auctions")
}
