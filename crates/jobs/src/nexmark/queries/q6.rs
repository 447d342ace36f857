//! q6, average selling price by seller: for every closed auction with a winning bid, the
//! integer average of that seller's winning prices over the auction and the seller's 10
//! auctions before it, ordered by the winning bid's time (`AVG(price) OVER (PARTITION BY
//! seller ORDER BY dateTime ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)`): `seller, avg`.
//!
//! The winning bids are q4's. The OVER window orders a seller's auctions by their winning
//! bid's time, and an auction that closes later may have won earlier, so a row's average is
//! final only when the input has ended: like q4 this is the final table, emitted then (ties in
//! time are ordered by auction id), or an update stream (see `updates`) that changes a
//! seller's rows whenever one of its auctions closes.
//!
//! The SQL upstream (not supported by Flink SQL, so the benchmark does not run it):
//!
//! ```sql
//! SELECT
//!     Q.seller,
//!     AVG(Q.price) OVER
//!         (PARTITION BY Q.seller ORDER BY Q.`dateTime` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
//! FROM (
//!     SELECT *, ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
//!     FROM (SELECT A.id, A.seller, B.price, B.`dateTime`
//!         FROM auction AS A,
//!             bid AS B
//!         WHERE A.id = B.auction
//!             and B.`dateTime` between A.`dateTime` and A.expires)
//!     WHERE rownum <= 1
//! ) AS Q;
//! ```

use serde::{Deserialize, Serialize};

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Bid};
use crate::nexmark::queries::updates::{Emit, emit_rows};
use crate::nexmark::queries::winning_bids::winning_bids;
use crate::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use crate::types::{MAX_WATERMARK, Timestamp};

/// Rows in the OVER window: the current one and this many before it.
pub const PRECEDING: usize = 10;

/// One closed auction of a seller: the winning bid's time, the auction, the price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Sale {
    time: Timestamp,
    auction: u64,
    price: u64,
}

/// The averages of `sales` (sorted), one per sale, over it and the `PRECEDING` before it.
pub fn running_averages(sales: &[Sale]) -> impl Iterator<Item = u64> + '_ {
    let mut sum = 0u64;
    sales.iter().enumerate().map(move |(i, s)| {
        sum += s.price;
        if i > PRECEDING {
            sum -= sales[i - PRECEDING - 1].price;
        }
        sum / (i.min(PRECEDING) as u64 + 1)
    })
}

/// A seller's rows: one line per sale.
fn rows(seller: u64, sales: &[Sale]) -> (u64, Vec<String>) {
    let lines = running_averages(sales)
        .map(|avg| format!("{seller},{avg}"))
        .collect();
    (seller, lines)
}

#[derive(Clone)]
struct SellerAverages(Emit);

impl KeyedProcessFunction<u64, (Auction, Bid)> for SellerAverages {
    type State = Vec<Sale>;
    type Out = (u64, Vec<String>);

    fn process_element(
        &mut self,
        (a, b): (Auction, Bid),
        ctx: &mut ProcessContext<'_, '_, u64, Vec<Sale>, (u64, Vec<String>)>,
    ) {
        let sale = Sale {
            time: b.date_time,
            auction: a.id,
            price: b.price,
        };
        let sales = ctx.state().get_or_insert_with(Vec::new);
        let at = sales.partition_point(|s| *s < sale);
        sales.insert(at, sale);
        match self.0 {
            Emit::FinalTable => ctx.timer_service().register_event_time_timer(MAX_WATERMARK),
            Emit::Updates => {
                let rows = rows(a.seller, sales);
                ctx.collect(rows);
            }
        }
    }

    fn on_timer(
        &mut self,
        _t: Timestamp,
        ctx: &mut ProcessContext<'_, '_, u64, Vec<Sale>, (u64, Vec<String>)>,
    ) {
        let seller = *ctx.key();
        let sales = ctx.state().value().cloned().unwrap_or_default();
        ctx.state().clear();
        ctx.collect(rows(seller, &sales));
    }
}

/// The query's result lines, as `emit` says.
pub fn build_as(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
    emit: Emit,
) -> DataStream<String> {
    let rows = winning_bids(env, input)
        .key_by(|(a, _): &(Auction, Bid)| a.seller)
        .process_function(SellerAverages(emit))
        .name("Average price of a seller's last auctions");
    emit_rows(&rows, emit)
}

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    build_as(env, input, Emit::FinalTable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_cover_the_row_and_ten_before() {
        let sales: Vec<Sale> = (0..13)
            .map(|i| Sale {
                time: i,
                auction: i as u64,
                price: 10 * (i as u64 + 1),
            })
            .collect();
        let got: Vec<u64> = running_averages(&sales).collect();
        // Row 0: 10; row 1: (10+20)/2; row 10: (10..=110)/11 = 60; row 11: (20..=120)/11.
        assert_eq!(got[0], 10);
        assert_eq!(got[1], 15);
        assert_eq!(got[10], 60);
        assert_eq!(got[11], 70);
        assert_eq!(got[12], 80);
    }
}
