//! q4, average price per category: the average (integer, truncated) of the winning bids'
//! prices of each category's auctions. The final table: each category's row once the input
//! has ended; or its update stream (see `updates`).
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     Q.category,
//!     AVG(Q.final)
//! FROM (
//!     SELECT MAX(B.price) AS final, A.category
//!     FROM auction A, bid B
//!     WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
//!     GROUP BY A.id, A.category
//! ) Q
//! GROUP BY Q.category;
//! ```

use serde::{Deserialize, Serialize};

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Bid};
use crate::nexmark::queries::updates::{Emit, ResultTrigger, emit_rows};
use crate::nexmark::queries::winning_bids::winning_bids;
use crate::operators::window::{AggregateFunction, GlobalWindows, WindowResult};

/// Sum and count of prices.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct SumCount(u64, u64);

#[derive(Clone, Copy)]
struct Average;

impl AggregateFunction<(u64, u64)> for Average {
    type Acc = SumCount;
    type Out = u64;
    fn create_accumulator(&self) -> SumCount {
        SumCount::default()
    }
    fn add(&self, v: &(u64, u64), acc: &mut SumCount) {
        acc.0 += v.1;
        acc.1 += 1;
    }
    fn get_result(&self, acc: &SumCount) -> u64 {
        acc.0 / acc.1.max(1)
    }
    fn merge(&self, a: SumCount, b: SumCount) -> SumCount {
        SumCount(a.0 + b.0, a.1 + b.1)
    }
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let rows = winning_bids(env, input)
        .map(|(a, b): (Auction, Bid)| (a.category, b.price))
        .key_by(|r: &(u64, u64)| r.0)
        .window(GlobalWindows::create())
        // The final table fires at the final watermark: the end of the input.
        .trigger(ResultTrigger(emit))
        .aggregate(Average)
        .map(
            |WindowResult {
                 key: category,
                 value: avg,
                 ..
             }: WindowResult<u64, u64>| {
                (category, vec![format!("{category},{avg}")])
            },
        );
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
