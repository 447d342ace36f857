//! q18, find last bid: per bidder and auction, the bid with the latest time (ties: the
//! highest price, then the smallest extra). The final table, once the input has ended; or
//! its update stream (see `updates`).

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::model::Bid;
use crate::jobs::nexmark::queries::final_table::BestPerKey;
use crate::jobs::nexmark::queries::updates::{Emit, emit_rows};

/// Whether `a` is later than `b` by the query's order.
fn later(a: &Bid, b: &Bid) -> bool {
    (a.date_time, a.price, std::cmp::Reverse(&a.extra))
        > (b.date_time, b.price, std::cmp::Reverse(&b.extra))
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let bids = input.bids(env).key_by(|b: &Bid| (b.bidder, b.auction));
    match emit {
        Emit::FinalTable => bids
            .transform("Last bid per bidder and auction", |_| {
                Ok(BestPerKey::new(|b: &Bid| (b.bidder, b.auction), later))
            })
            .map(|b: Bid| format::bid_row(&b)),
        Emit::Updates => {
            let rows = bids
                .reduce(|kept: Bid, b: Bid| if later(&b, &kept) { b } else { kept })
                .name("Last bid per bidder and auction")
                .map(|b: Bid| ((b.bidder, b.auction), vec![format::bid_row(&b)]));
            emit_rows(&rows, emit)
        }
    }
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}
