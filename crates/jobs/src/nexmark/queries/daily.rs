//! What q15, q16 and q17 share: bids grouped by a key and the day (UTC) of their time, in
//! tumbling one-day windows of event time. Each day's row is final when the watermark passes
//! the day's end (on a bounded input, at its end): the final table of the queries' updating
//! SQL aggregations, as append-only rows; or, as an update stream, on every bid
//! ([`per_day`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::api::{DataStream, KeyedStream};
use crate::error::Result;
use crate::nexmark::model::Bid;
use crate::nexmark::queries::updates::{Emit, ResultTrigger};
use crate::operators::window::{
    AccChanges, AggregateFunction, TumblingEventTimeWindows, WindowResult,
};
use crate::state::snapshot::decode_checkpointed;
use crate::state::{GrowSet, SnapshotEpochs};
use crate::types::Key;

/// One day in milliseconds.
pub const DAY: Duration = Duration::from_secs(86_400);

/// `bids` aggregated by `agg` per key and day: tumbling one-day windows of event time, each
/// day's result coming as `emit` says (see [`ResultTrigger`]).
pub fn per_day<K, KS, A>(
    bids: &KeyedStream<Bid, K, KS>,
    emit: Emit,
    agg: A,
) -> DataStream<WindowResult<K, A::Out>>
where
    K: Key,
    KS: Fn(&Bid) -> K + Clone + Send + Sync + 'static,
    A: AggregateFunction<Bid>,
{
    bids.window(TumblingEventTimeWindows::of(DAY))
        .trigger(ResultTrigger(emit))
        .aggregate(agg)
}

/// The three price ranks of q15-q17: below 10,000, below 1,000,000, the rest.
pub fn rank(price: u64) -> usize {
    match price {
        0..10_000 => 0,
        10_000..1_000_000 => 1,
        _ => 2,
    }
}

/// Counts of bids, distinct bidders and distinct auctions, in all and per price rank. The
/// sets only grow, so a checkpoint writes the ids added since the last one (see
/// [`GrowSet`]): every channel's sets change in every interval, and whole they are most of
/// q16's state.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counts {
    bids: [u64; 4],
    bidders: [GrowSet<u64>; 4],
    auctions: [GrowSet<u64>; 4],
    /// The latest time of day seen (q16's `max(DATE_FORMAT(dateTime, 'HH:mm'))`).
    pub latest: i64,
}

/// The result of [`Counts`]: the numbers alone (the sets stay in the accumulator, so a
/// result costs no copy of them).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DayCounts {
    bids: [u64; 4],
    bidders: [u64; 4],
    auctions: [u64; 4],
    /// The latest time of day seen.
    pub latest: i64,
}

impl DayCounts {
    /// The twelve count columns: bids, rank 1-3 bids, bidders, rank 1-3 bidders, auctions,
    /// rank 1-3 auctions.
    pub fn columns(&self) -> String {
        let cols: Vec<String> = [self.bids, self.bidders, self.auctions]
            .iter()
            .flatten()
            .map(u64::to_string)
            .collect();
        cols.join(",")
    }
}

/// The aggregation behind [`Counts`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CountDistinct;

impl AggregateFunction<Bid> for CountDistinct {
    type Acc = Counts;
    type Out = DayCounts;
    fn create_accumulator(&self) -> Counts {
        Counts::default()
    }
    fn add(&self, b: &Bid, acc: &mut Counts) {
        for i in [0, 1 + rank(b.price)] {
            acc.bids[i] += 1;
            acc.bidders[i].insert(b.bidder);
            acc.auctions[i].insert(b.auction);
        }
        acc.latest = acc.latest.max(b.date_time.rem_euclid(86_400_000));
    }
    fn get_result(&self, acc: &Counts) -> DayCounts {
        DayCounts {
            bids: acc.bids,
            bidders: acc.bidders.each_ref().map(|s| s.len() as u64),
            auctions: acc.auctions.each_ref().map(|s| s.len() as u64),
            latest: acc.latest,
        }
    }
    fn merge(&self, mut a: Counts, b: Counts) -> Counts {
        for i in 0..4 {
            a.bids[i] += b.bids[i];
            a.bidders[i].extend(b.bidders[i].iter());
            a.auctions[i].extend(b.auctions[i].iter());
        }
        a.latest = a.latest.max(b.latest);
        a
    }
    fn acc_changes(&self) -> Option<&dyn AccChanges<Counts>> {
        Some(self)
    }
}

impl AccChanges<Counts> for CountDistinct {
    /// The counters, and the ids each set gained since the base.
    fn write_changes(
        &self,
        acc: &mut Counts,
        epochs: SnapshotEpochs,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let added: Vec<Option<&[u64]>> = acc
            .bidders
            .iter_mut()
            .chain(acc.auctions.iter_mut())
            .map(|set| set.changes(epochs))
            .collect();
        let Some(added) = added.into_iter().collect::<Option<Vec<&[u64]>>>() else {
            return Ok(false);
        };
        postcard::to_io(&(acc.bids, acc.latest, added), out)
            .map_err(|e| crate::error::internal!("cannot encode q16's distinct counts: {e}"))?;
        Ok(true)
    }
    fn apply_changes(&self, acc: &mut Counts, changes: &[u8]) -> Result<()> {
        let (bids, latest, added): ([u64; 4], i64, Vec<Vec<u64>>) =
            decode_checkpointed("the distinct counts of a day", changes)?;
        if added.len() != 8 {
            return Err(crate::error::HummerError::BadInput {
                input: "checkpointed state of the distinct counts of a day".into(),
                reason: format!("{} sets of ids where 8 were expected", added.len()),
            });
        }
        acc.bids = bids;
        acc.latest = latest;
        for (set, ids) in acc
            .bidders
            .iter_mut()
            .chain(acc.auctions.iter_mut())
            .zip(&added)
        {
            set.extend(ids);
        }
        Ok(())
    }
}
