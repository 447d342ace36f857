//! What q4 and q9 share: each auction's winning bid, the highest (then earliest) of the bids
//! made while it was open (`A.dateTime <= B.dateTime <= A.expires`), emitted once the
//! watermark passes the auction's end, when no valid bid can still come.
//!
//! A bid may arrive before its auction (the tables are separate streams): it waits, and is
//! dropped once the watermark passes its time with the auction still unknown (every auction
//! that started before the bid has arrived by then). State per auction ends with it.

use serde::{Deserialize, Serialize};

use crate::api::{DataStream, JoinSide, StreamExecutionEnvironment};
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Bid, BidColumns};
use crate::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use crate::types::Timestamp;

type Row = JoinSide<Auction, Bid>;

/// One auction's state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Open {
    auction: Option<Auction>,
    best: Option<Bid>,
    /// Bids that came before their auction.
    waiting: Vec<Bid>,
}

/// Whether `b` beats `best`: higher price, then earlier, then (for a fixed answer on ties)
/// lower bidder and smaller extra.
fn beats(b: &Bid, best: &Bid) -> bool {
    (std::cmp::Reverse(b.price), b.date_time, b.bidder, &b.extra)
        < (
            std::cmp::Reverse(best.price),
            best.date_time,
            best.bidder,
            &best.extra,
        )
}

fn offer(open: &mut Open, b: Bid) {
    let Some(a) = &open.auction else {
        return;
    };
    if a.date_time <= b.date_time
        && b.date_time <= a.expires
        && open.best.as_ref().is_none_or(|best| beats(&b, best))
    {
        open.best = Some(b);
    }
}

#[derive(Clone)]
struct Winning;

impl KeyedProcessFunction<u64, Row> for Winning {
    type State = Open;
    type Out = (Auction, Bid);

    fn process_element(
        &mut self,
        row: Row,
        ctx: &mut ProcessContext<'_, '_, u64, Open, (Auction, Bid)>,
    ) {
        let open = ctx.state().get_or_insert_with(Open::default);
        let timer = match row {
            JoinSide::Left(a) => {
                let expires = a.expires;
                open.auction = Some(a);
                for b in std::mem::take(&mut open.waiting) {
                    offer(open, b);
                }
                expires
            }
            JoinSide::Right(b) if open.auction.is_some() => {
                offer(open, b);
                return;
            }
            JoinSide::Right(b) => {
                let t = b.date_time;
                open.waiting.push(b);
                t
            }
        };
        ctx.timer_service().register_event_time_timer(timer);
    }

    fn on_timer(
        &mut self,
        t: Timestamp,
        ctx: &mut ProcessContext<'_, '_, u64, Open, (Auction, Bid)>,
    ) {
        let Some(open) = ctx.state().value().cloned() else {
            return;
        };
        match open.auction {
            Some(a) if t >= a.expires => {
                ctx.state().clear();
                if let Some(b) = open.best {
                    ctx.collect((a, b));
                }
            }
            Some(_) => {}
            None => {
                // Bids whose auction never came by their time: no auction will match them.
                let state = ctx.state().get_or_insert_with(Open::default);
                state.waiting.retain(|b| b.date_time > t);
                if state.waiting.is_empty() {
                    ctx.state().clear();
                }
            }
        }
    }
}

/// Every auction with its winning bid, when the auction closes.
pub fn winning_bids(
    env: &StreamExecutionEnvironment,
    input: &NexmarkInput,
) -> DataStream<(Auction, Bid)> {
    let auctions = input.auctions(env).map(Row::Left);
    let bids = input
        .bids_with(env, BidColumns::NUMBERS.with_extra())
        .map(Row::Right);
    auctions
        .union(&[bids])
        .key_by(|r: &Row| match r {
            JoinSide::Left(a) => a.id,
            JoinSide::Right(b) => b.auction,
        })
        .process_function(Winning)
        .name("Winning bids")
}
