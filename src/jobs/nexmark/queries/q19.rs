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

use serde::{Deserialize, Serialize};

const TOP: usize = 10;

/// A bid as the top ten keeps it: the fields it is ordered by and its formatted row, one
/// allocation instead of the four of a [`Bid`] (at 100 M events the final table holds some
/// 44 M of them: 390 bytes each as `Bid`s, under 250 as rows).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct RankedBid {
    price: u64,
    date_time: i64,
    bidder: u64,
    /// Where the row's last column, `extra`, starts.
    extra_at: u32,
    row: Box<str>,
}

impl RankedBid {
    fn new(b: &Bid) -> RankedBid {
        let row = format::bid_row(b);
        let extra_at = row.rfind(',').map_or(0, |at| at + 1) as u32;
        RankedBid {
            price: b.price,
            date_time: b.date_time,
            bidder: b.bidder,
            extra_at,
            row: row.into_boxed_str(),
        }
    }

    /// The query's order: the highest price first; ties to the earlier, then the lower
    /// bidder, then the smaller extra.
    fn order(&self) -> (std::cmp::Reverse<u64>, i64, u64, &str) {
        let extra = self.row.get(self.extra_at as usize..).unwrap_or("");
        (
            std::cmp::Reverse(self.price),
            self.date_time,
            self.bidder,
            extra,
        )
    }
}

/// Keeps the ten first bids by the query's order.
#[derive(Clone, Copy)]
struct TopTen;

impl TopTen {
    fn offer(top: &mut Vec<RankedBid>, ranked: impl FnOnce() -> RankedBid, price: u64, time: i64) {
        // Most bids cannot enter a full top ten: decided on price and time alone, before the
        // row is formatted.
        if top.len() == TOP
            && top.last().is_some_and(|last| {
                (std::cmp::Reverse(price), time) > (std::cmp::Reverse(last.price), last.date_time)
            })
        {
            return;
        }
        let b = ranked();
        if top.len() == TOP && top.last().is_some_and(|last| b.order() >= last.order()) {
            return;
        }
        let at = top.partition_point(|x| x.order() <= b.order());
        if top.len() == TOP {
            // Room first: growing past ten would double the vector's capacity for good.
            top.pop();
        } else if top.capacity() == 0 {
            top.reserve_exact(TOP);
        }
        top.insert(at, b);
    }
}

impl AggregateFunction<Bid> for TopTen {
    type Acc = Vec<RankedBid>;
    type Out = Vec<RankedBid>;
    fn create_accumulator(&self) -> Vec<RankedBid> {
        Vec::new()
    }
    fn add(&self, b: &Bid, top: &mut Vec<RankedBid>) {
        TopTen::offer(top, || RankedBid::new(b), b.price, b.date_time);
    }
    fn get_result(&self, top: &Vec<RankedBid>) -> Vec<RankedBid> {
        top.clone()
    }
    fn merge(&self, mut a: Vec<RankedBid>, b: Vec<RankedBid>) -> Vec<RankedBid> {
        for x in b {
            let (price, time) = (x.price, x.date_time);
            TopTen::offer(&mut a, || x, price, time);
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
             top: Vec<RankedBid>,
             out: &mut Collector<'_, (u64, Vec<String>)>| {
                let mut lines = Vec::with_capacity(top.len());
                for (rank, b) in top.into_iter().enumerate() {
                    let mut line = String::from(b.row);
                    line.push(',');
                    line.push_str(itoa::Buffer::new().format(rank + 1));
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
