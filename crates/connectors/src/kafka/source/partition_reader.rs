//! One partition of a reader: its checkpointed position, and its fetch running in the
//! background (one fetch in flight, two batches buffered).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use rskafka::client::partition::PartitionClient;
use rskafka::record::RecordAndOffset;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::error::Result;
use crate::kafka::client::{KafkaConfig, fetch_from, kafka_error, partition_target, runtime};
use crate::operators::watermark_strategy::WatermarkTracker;

/// The checkpointed position of one partition.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct PartitionPosition {
    pub(super) topic: String,
    pub(super) partition: i32,
    /// The next offset to read.
    pub(super) next: i64,
    /// Where a bounded source stops.
    pub(super) stop: Option<i64>,
}

/// What a partition's background fetch hands over.
pub(super) type Fetched = Result<(Vec<RecordAndOffset>, i64)>;

pub(super) struct PartitionReader<T> {
    pub(super) topic: Arc<str>,
    pub(super) partition: i32,
    pub(super) client: Arc<PartitionClient>,
    /// The next offset to hand on.
    pub(super) next: i64,
    pub(super) stop: Option<i64>,
    pub(super) fetched: Option<mpsc::Receiver<Fetched>>,
    pub(super) fetch_task: Option<tokio::task::JoinHandle<()>>,
    pub(super) pending: VecDeque<RecordAndOffset>,
    pub(super) tracker: Option<WatermarkTracker<T>>,
    /// The partition's end when last fetched.
    pub(super) high_watermark: i64,
    /// Records handed on.
    pub(super) consumed: u64,
}

impl<T> PartitionReader<T> {
    pub(super) fn finished(&self) -> bool {
        self.stop.is_some_and(|s| self.next >= s)
    }

    /// Starts fetching from `next` in the background.
    pub(super) fn start_fetching(&mut self, config: &KafkaConfig, timeout: Duration) -> Result<()> {
        let (tx, rx) = mpsc::channel(2);
        let client = self.client.clone();
        let max_bytes = config
            .number("fetch.max.bytes", 1 << 20)?
            .clamp(1, i32::MAX as u64) as i32;
        let max_wait = config
            .number("fetch.max.wait.ms", 100)?
            .min(i32::MAX as u64) as i32;
        let target = partition_target(&self.topic, self.partition);
        let mut offset = self.next;
        let task = runtime().spawn(async move {
            loop {
                let fetch = fetch_from(&client, offset, max_bytes, max_wait);
                let batch = match tokio::time::timeout(timeout, fetch).await {
                    Ok(Ok((records, high_watermark, next))) => {
                        offset = next;
                        Ok((records, high_watermark))
                    }
                    Ok(Err(e)) => Err(kafka_error(&format!("{target} offset {offset}"), e)),
                    Err(_) => Err(kafka_error(
                        &format!("{target} offset {offset}"),
                        format!("no answer to a fetch within {} ms", timeout.as_millis()),
                    )),
                };
                let failed = batch.is_err();
                let empty = batch.as_ref().is_ok_and(|(records, _)| records.is_empty());
                if tx.send(batch).await.is_err() || failed {
                    return;
                }
                if empty {
                    tokio::time::sleep(Duration::from_millis(max_wait.max(10) as u64)).await;
                }
            }
        });
        self.fetched = Some(rx);
        self.fetch_task = Some(task);
        Ok(())
    }

    pub(super) fn stop_fetching(&mut self) {
        if let Some(task) = self.fetch_task.take() {
            task.abort();
        }
        self.fetched = None;
        self.pending.clear();
    }
}

impl<T> Drop for PartitionReader<T> {
    fn drop(&mut self) {
        self.stop_fetching();
    }
}
