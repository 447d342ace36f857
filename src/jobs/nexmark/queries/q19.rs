//! q19, auction top-k: per auction its ten highest bids (ties: earlier, then lower bidder,
//! then smaller extra) with their rank 1-10. The final table, once the input has ended; or
//! its update stream (see `updates`).

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::model::Bid;
use crate::jobs::nexmark::queries::updates::{Emit, ResultTrigger, emit_rows};
use crate::operators::Collector;
use crate::operators::window::{AggregateFunction, GlobalWindows, TimeWindow};

const TOP: usize = 10;

fn order(b: &Bid) -> (std::cmp::Reverse<u64>, i64, u64, &str) {
    (std::cmp::Reverse(b.price), b.date_time, b.bidder, &b.extra)
}

/// Keeps the ten first bids by the query's order.
#[derive(Clone, Copy)]
struct TopTen;

impl AggregateFunction<Bid> for TopTen {
    type Acc = Vec<Bid>;
    type Out = Vec<Bid>;
    fn create_accumulator(&self) -> Vec<Bid> {
        Vec::new()
    }
    fn add(&self, b: &Bid, top: &mut Vec<Bid>) {
        if top.len() == TOP && top.last().is_some_and(|last| order(b) >= order(last)) {
            return;
        }
        let at = top.partition_point(|x| order(x) <= order(b));
        top.insert(at, b.clone());
        top.truncate(TOP);
    }
    fn get_result(&self, top: &Vec<Bid>) -> Vec<Bid> {
        top.clone()
    }
    fn merge(&self, mut a: Vec<Bid>, b: Vec<Bid>) -> Vec<Bid> {
        for x in &b {
            self.add(x, &mut a);
        }
        a
    }
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let rows = input
        .bids(env)
        .key_by(|b: &Bid| b.auction)
        .window(GlobalWindows::create())
        .trigger(ResultTrigger(emit))
        .aggregate_with(
            TopTen,
            |auction: &u64,
             _: &TimeWindow,
             top: Vec<Bid>,
             out: &mut Collector<'_, (u64, Vec<String>)>| {
                let mut lines = Vec::with_capacity(top.len());
                for (rank, b) in top.iter().enumerate() {
                    let mut line = format::bid_row(b);
                    line.push_str(&format!(",{}", rank + 1));
                    lines.push(line);
                }
                out.collect((*auction, lines));
            },
        );
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
