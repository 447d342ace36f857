//! Where a query's tables come from: the generator in the job, or the harness's CSV files.
//! Either way each table is a stream with event timestamps (`dateTime`) and the harness's
//! watermark, `dateTime - 4 s`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::csv;
use crate::nexmark::csv_source::{CsvTable, CsvTableSource};
use crate::nexmark::generator::NexmarkSource;
use crate::nexmark::kafka::{KafkaTable, KafkaTables};
use crate::nexmark::model::{Auction, Bid, BidColumns, Person};
use crate::operators::WatermarkStrategy;

/// How far behind the largest event time the watermark trails (the queries' `WATERMARK FOR
/// dateTime AS dateTime - INTERVAL '4' SECOND`).
pub const WATERMARK_DELAY: Duration = Duration::from_secs(4);

/// How far in event time one table's source may run ahead of the others: the tables are
/// separate sources (as in the harness's Flink SQL), and a query that joins two of them holds
/// the faster one's rows until the slower one's watermark passes them. Aligned, the tables
/// advance together, and that state stays some seconds of events.
pub const MAX_TABLE_DRIFT: Duration = Duration::from_secs(10);

/// The source of a query's tables.
#[derive(Clone, Debug)]
pub enum NexmarkInput {
    /// The first `events` events of the generator, optionally at `rate` events per second.
    Generator {
        /// Events (over all three tables).
        events: u64,
        /// Events per second (`None`: as fast as possible).
        rate: Option<f64>,
    },
    /// The harness's CSV files: `DIR/{persons,auctions,bids}/part-*.csv`.
    Csv(PathBuf),
    /// The events as JSON in a Kafka topic (see [`crate::nexmark::kafka`]), read to its
    /// end as it is when the job starts.
    Kafka(Arc<KafkaTables>),
}

impl CsvTable for Person {
    fn parse(line: &str, _: ()) -> Result<Self, String> {
        csv::person(line)
    }
}

impl CsvTable for Auction {
    fn parse(line: &str, _: ()) -> Result<Self, String> {
        csv::auction(line)
    }
}

impl CsvTable for Bid {
    fn parse(line: &str, columns: BidColumns) -> Result<Self, String> {
        csv::bid(line, columns)
    }
}

impl NexmarkInput {
    fn table<T: CsvTable + KafkaTable>(
        &self,
        env: &StreamExecutionEnvironment,
        columns: T::Columns,
    ) -> DataStream<T> {
        let strategy = WatermarkStrategy::for_bounded_out_of_orderness(WATERMARK_DELAY)
            .with_timestamp_assigner(|row: &T, _| row.time())
            .with_watermark_alignment("nexmark tables", MAX_TABLE_DRIFT);
        match self {
            NexmarkInput::Generator { events, rate } => env.from_source(
                NexmarkSource::<T>::new(*events, *rate).with_columns(columns),
                strategy,
            ),
            // Each table's rows with per-partition watermarks; a JSON row is read whole (its
            // columns are not pruned).
            NexmarkInput::Kafka(tables) => env.from_source(T::source(tables), strategy),
            NexmarkInput::Csv(dir) => env.from_source(
                CsvTableSource::<T>::new(dir.join(T::NAME), WATERMARK_DELAY.as_millis() as i64)
                    .with_columns(columns),
                strategy,
            ),
        }
    }

    /// The `person` table.
    pub fn persons(&self, env: &StreamExecutionEnvironment) -> DataStream<Person> {
        self.table(env, ())
    }

    /// The `auction` table.
    pub fn auctions(&self, env: &StreamExecutionEnvironment) -> DataStream<Auction> {
        self.table(env, ())
    }

    /// The `bid` table, every column.
    pub fn bids(&self, env: &StreamExecutionEnvironment) -> DataStream<Bid> {
        self.table(env, BidColumns::ALL)
    }

    /// The `bid` table with only `columns` of its text columns (the others empty).
    pub fn bids_with(
        &self,
        env: &StreamExecutionEnvironment,
        columns: BidColumns,
    ) -> DataStream<Bid> {
        self.table(env, columns)
    }
}
