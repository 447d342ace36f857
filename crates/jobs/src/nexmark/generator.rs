//! The Nexmark generator as a source: the events of the `nexmark` crate (risingwavelabs'
//! nexmark-rs, the harness's generator) with exactly the harness's configuration (base time
//! 2023-01-01T00:00:00Z, the reference Java generator's word lists), so the same event
//! numbers give the same events as `../shared/bench/nexmark/gen`.
//!
//! Each table is its own source (as in the harness, where each table has a file set and a
//! watermark). Subtask `s` of `p` generates the table's rows `s, s + p, s + 2p, ...` of the
//! first `events` events; its position (the next row) is checkpointed, so a restored job
//! resumes exactly there.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use nexmark::EventGenerator;
use nexmark::config::NexmarkConfig;
use nexmark::event::{Event, EventType};

use crate::connectors::{Source, SourceContext, SourceReader, SourceStatus};
use crate::error::{HummerError, Result};
use crate::nexmark::model::{Auction, Bid, BidColumns, Person};

/// The harness's base time: 2023-01-01 00:00:00.000 UTC.
pub const BASE_TIME: u64 = 1_672_531_200_000;

fn words(s: &str) -> Vec<String> {
    s.split(',').map(String::from).collect()
}

/// The generator configuration of the harness (`gen/src/main.rs`).
pub fn config() -> NexmarkConfig {
    let mut cfg = NexmarkConfig {
        base_time: BASE_TIME,
        ..NexmarkConfig::default()
    };
    cfg.us_states = words("AZ,CA,ID,OR,WA,WY");
    cfg.us_cities = words(
        "Phoenix,Los Angeles,San Francisco,Boise,Portland,Bend,Redmond,Seattle,Kent,Cheyenne",
    );
    cfg.first_names = words("Peter,Paul,Luke,John,Saul,Vicky,Kate,Julie,Sarah,Deiter,Walter");
    cfg.last_names = words("Shultz,Abrams,Spencer,White,Bartels,Walton,Smith,Jones,Noris");
    cfg
}

/// A Nexmark table: how its rows come out of the generator.
pub trait Table: crate::types::Data {
    /// The generator's event type of this table.
    /// The generator's event type of this table (`None`: every event).
    const TYPE: Option<EventType>;
    /// The table's name.
    const NAME: &'static str;
    /// The row, if `event` is of this table.
    fn from_event(event: Event) -> Option<Self>;
    /// Rows of this table among the first `events` events (person:auction:bid = 1:3:46, in
    /// that order within every 50 events).
    fn rows_in(events: u64) -> u64;
    /// The row's event time.
    fn time(&self) -> crate::types::Timestamp;
    /// Which of the table's columns a query reads (see [`BidColumns`]).
    type Columns: Copy + Send + Sync + std::fmt::Debug + 'static;
    /// Every column.
    const ALL_COLUMNS: Self::Columns;
    /// Empties the columns that `columns` leaves out.
    fn prune(&mut self, columns: Self::Columns);
}

/// The generator of table `T`'s rows `offset, offset + step, ...`.
fn generator<T: Table>(offset: u64, step: u64) -> EventGenerator {
    let all = EventGenerator::new(config());
    match T::TYPE {
        Some(t) => all.with_type_filter(t),
        None => all,
    }
    .with_offset(offset)
    .with_step(step)
}

fn share(events: u64, before: u64, own: u64) -> u64 {
    let (full, rem) = (events / 50, events % 50);
    full * own + rem.saturating_sub(before).min(own)
}

impl Table for Person {
    type Columns = ();
    const ALL_COLUMNS: () = ();
    fn prune(&mut self, _: ()) {}
    const TYPE: Option<EventType> = Some(EventType::Person);
    const NAME: &'static str = "persons";
    fn from_event(event: Event) -> Option<Self> {
        match event {
            Event::Person(p) => Some(p.into()),
            _ => None,
        }
    }
    fn rows_in(events: u64) -> u64 {
        share(events, 0, 1)
    }
    fn time(&self) -> crate::types::Timestamp {
        self.date_time
    }
}

impl Table for Auction {
    type Columns = ();
    const ALL_COLUMNS: () = ();
    fn prune(&mut self, _: ()) {}
    const TYPE: Option<EventType> = Some(EventType::Auction);
    const NAME: &'static str = "auctions";
    fn from_event(event: Event) -> Option<Self> {
        match event {
            Event::Auction(a) => Some(a.into()),
            _ => None,
        }
    }
    fn rows_in(events: u64) -> u64 {
        share(events, 1, 3)
    }
    fn time(&self) -> crate::types::Timestamp {
        self.date_time
    }
}

impl Table for Bid {
    type Columns = BidColumns;
    const ALL_COLUMNS: BidColumns = BidColumns::ALL;
    fn prune(&mut self, columns: BidColumns) {
        Bid::prune(self, columns)
    }
    const TYPE: Option<EventType> = Some(EventType::Bid);
    const NAME: &'static str = "bids";
    fn from_event(event: Event) -> Option<Self> {
        match event {
            Event::Bid(b) => Some(b.into()),
            _ => None,
        }
    }
    fn rows_in(events: u64) -> u64 {
        share(events, 4, 46)
    }
    fn time(&self) -> crate::types::Timestamp {
        self.date_time
    }
}

/// One Nexmark table generated in the job.
pub struct NexmarkSource<T: Table> {
    events: u64,
    /// Events per second over all tables (`None`: as fast as possible).
    rate: Option<f64>,
    columns: T::Columns,
    _table: PhantomData<fn() -> T>,
}

impl<T: Table> NexmarkSource<T> {
    /// The table's rows among the first `events` events.
    pub fn new(events: u64, rate: Option<f64>) -> Self {
        NexmarkSource {
            events,
            rate,
            columns: T::ALL_COLUMNS,
            _table: PhantomData,
        }
    }

    /// Only these columns (the others left empty).
    pub fn with_columns(mut self, columns: T::Columns) -> Self {
        self.columns = columns;
        self
    }
}

struct NexmarkReader<T: Table> {
    generator: EventGenerator,
    /// Next row (of this table) this reader generates.
    next: u64,
    step: u64,
    end: u64,
    /// Rows of this table per second for this reader.
    rate: Option<f64>,
    started: Instant,
    emitted: u64,
    columns: T::Columns,
}

impl<T: Table> Source<T> for NexmarkSource<T> {
    fn name(&self) -> String {
        format!("Nexmark {}", T::NAME)
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn is_replayable(&self) -> bool {
        true
    }
    fn validate(&self) -> Result<()> {
        match self.rate {
            Some(r) if !(r.is_finite() && r > 0.0) => Err(HummerError::Config(format!(
                "nexmark rate must be a positive number of events per second, got {r}"
            ))),
            _ => Ok(()),
        }
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        let (s, p) = (ctx.subtask as u64, ctx.parallelism.max(1) as u64);
        let end = T::rows_in(self.events);
        // This table's share of the events' rate, split over the readers.
        let rate = self
            .rate
            .map(|r| r * T::rows_in(1_000_000) as f64 / 1_000_000.0 / p as f64);
        Ok(Box::new(NexmarkReader::<T> {
            generator: generator::<T>(s, p),
            next: s,
            step: p,
            end,
            rate,
            started: Instant::now(),
            emitted: 0,
            columns: self.columns,
        }))
    }
}

impl<T: Table> SourceReader<T> for NexmarkReader<T> {
    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        let mut budget = max as u64;
        if let Some(rate) = self.rate {
            let due = (self.started.elapsed().as_secs_f64() * rate) as u64;
            budget = budget.min(due.saturating_sub(self.emitted));
            if budget == 0 {
                return Ok(SourceStatus::Idle(Duration::from_millis(1)));
            }
        }
        let mut n = 0;
        while n < budget && self.next < self.end {
            if let Some(mut row) = self.generator.next().and_then(T::from_event) {
                row.prune(self.columns);
                out.push(row);
            }
            self.next += self.step;
            n += 1;
        }
        self.emitted += n;
        Ok(if self.next >= self.end {
            SourceStatus::Finished
        } else {
            SourceStatus::MoreAvailable
        })
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        Some(crate::connectors::count_position(self.next))
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let source = format!("the Nexmark {} source", T::NAME);
        self.next = crate::connectors::read_count_position(position, &source)?;
        self.generator = generator::<T>(self.next, self.step);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The rows of one table, split any way over readers and restored at any point, are the
    /// table's rows among the first N events of the plain generator: none lost or repeated.
    fn reference<T: Table>(events: u64) -> Vec<T> {
        EventGenerator::new(config())
            .take(events as usize)
            .filter_map(T::from_event)
            .collect()
    }

    fn read<T: Table + PartialEq + std::fmt::Debug>(
        events: u64,
        parallelism: usize,
        restore_after: usize,
    ) -> Vec<T> {
        let source = NexmarkSource::<T>::new(events, None);
        let mut all = Vec::new();
        for s in 0..parallelism {
            let ctx = SourceContext {
                subtask: s,
                parallelism,
                progress: Default::default(),
                metrics: Default::default(),
            };
            let mut reader = source.create_reader(&ctx).unwrap();
            let mut rows = Vec::new();
            let mut polls = 0;
            loop {
                let status = reader.poll_next(&mut rows, 7).unwrap();
                polls += 1;
                if polls == restore_after {
                    // A restart from the position checkpointed here.
                    let position = reader.snapshot_position().unwrap();
                    reader = source.create_reader(&ctx).unwrap();
                    reader.restore_position(&position).unwrap();
                }
                if status == SourceStatus::Finished {
                    break;
                }
            }
            all.extend(rows);
        }
        all
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn every_row_once_at_any_parallelism_and_restore_point(
            events in 0u64..600, parallelism in 1usize..5, restore_after in 1usize..40,
        ) {
            let key = |b: &Bid| (b.date_time, b.auction, b.bidder, b.price);
            let mut got = read::<Bid>(events, parallelism, restore_after);
            let mut want = reference::<Bid>(events);
            got.sort_by_key(key);
            want.sort_by_key(key);
            prop_assert_eq!(got, want);
            let mut got = read::<Person>(events, parallelism, restore_after);
            let mut want = reference::<Person>(events);
            got.sort_by_key(|p| p.id);
            want.sort_by_key(|p| p.id);
            prop_assert_eq!(got, want);
            let mut got = read::<Auction>(events, parallelism, restore_after);
            let mut want = reference::<Auction>(events);
            got.sort_by_key(|a| a.id);
            want.sort_by_key(|a| a.id);
            prop_assert_eq!(got, want);
        }
    }
}
