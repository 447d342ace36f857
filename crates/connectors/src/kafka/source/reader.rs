//! A source subtask's reader: discovers its partitions, polls them round robin, keeps a
//! watermark per partition, and snapshots and restores their offsets.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rskafka::client::partition::{OffsetAt, PartitionClient};
use tokio::sync::mpsc;

use crate::error::{HummerError, Result};
use crate::kafka::client::{
    Cluster, earliest_offset, end_offset, kafka_error, offset_of, partition_target,
};
use crate::kafka::deserializer::KafkaRecord;
use crate::kafka::group_offsets;
use crate::operators::WatermarkStrategy;
use crate::operators::watermark_strategy::WatermarkTracker;
use crate::types::metrics::{PartitionMetrics, SubtaskMetrics};
use crate::types::{Data, MIN_WATERMARK, Timestamp};
use crate::{Source, SourceReader, SourceStatus};

use super::KafkaSource;
use super::assignment::owner_of;
use super::builder::*;
use super::partition_reader::*;

pub(super) struct KafkaReader<T> {
    pub(super) source: KafkaSource<T>,
    pub(super) subtask: usize,
    pub(super) parallelism: usize,
    /// Where the partitions' consumed records, offsets and lag are reported (REST,
    /// Prometheus), at most every [`REPORT_INTERVAL`].
    pub(super) metrics: Arc<SubtaskMetrics>,
    pub(super) reported_at: Option<Instant>,
    pub(super) cluster: Option<Cluster>,
    pub(super) partitions: Vec<PartitionReader<T>>,
    /// Positions of a checkpoint, applied when the partitions are opened.
    pub(super) restored: Option<Vec<PartitionPosition>>,
    pub(super) discovered_at: Option<Instant>,
    /// The partition the next poll starts at (round robin).
    pub(super) next: usize,
    pub(super) strategy: Option<WatermarkStrategy<T>>,
    pub(super) skipped: u64,
    /// For the rate limit: when the reader started, records it has handed on.
    pub(super) started: Instant,
    pub(super) emitted: u64,
    /// The positions of the last snapshot, committed to the group when it completes.
    pub(super) snapshotted: std::sync::Mutex<Vec<PartitionPosition>>,
}

/// How often a reader reports its partitions' metrics.
pub(super) const REPORT_INTERVAL: Duration = Duration::from_millis(200);

impl<T: Data> KafkaReader<T> {
    /// Whether this reader has partition `partition` of `topic` open.
    fn has_partition(&self, topic: &str, partition: i32) -> bool {
        self.partitions
            .iter()
            .any(|r| *r.topic == *topic && r.partition == partition)
    }

    /// Reports the partitions' metrics (see `metrics`).
    fn report(&mut self) {
        if self
            .reported_at
            .is_some_and(|t| t.elapsed() < REPORT_INTERVAL)
        {
            return;
        }
        self.reported_at = Some(Instant::now());
        let Ok(mut all) = self.metrics.partitions.lock() else {
            return;
        };
        // Other splits of the subtask (after a rescale) report their own partitions.
        all.retain(|m| !self.has_partition(&m.topic, m.partition));
        all.extend(self.partitions.iter().map(|p| PartitionMetrics {
            topic: p.topic.to_string(),
            partition: p.partition,
            consumed: p.consumed,
            next_offset: p.next,
            end_offset: p.high_watermark.max(p.next),
        }));
    }

    fn cluster(&mut self) -> Result<Cluster> {
        if self.cluster.is_none() {
            self.cluster = Some(Cluster::connect(&self.source.config)?);
        }
        self.cluster
            .clone()
            .ok_or_else(|| crate::error::internal!("kafka cluster not connected"))
    }

    /// Opens the partitions of this subtask that are not open yet. The first time: at their
    /// restored positions, or where `starting` says; later (a partition added while the
    /// job runs): at their earliest offset.
    fn discover(&mut self) -> Result<()> {
        let first = self.discovered_at.is_none();
        if !first
            && (self.source.bounded
                || self
                    .discovered_at
                    .is_some_and(|t| t.elapsed() < self.source.discovery_interval))
        {
            return Ok(());
        }
        self.discovered_at = Some(Instant::now());
        let cluster = self.cluster()?;
        let timeout = cluster.timeout();
        let found = self.source.discover(&cluster)?;
        let restored = self.restored.take();
        let committed = match (&self.source.starting, group_id(&self.source.config)) {
            (StartingOffsets::Committed, Some(group)) if first => {
                let mine: std::collections::BTreeMap<String, Vec<i32>> = found
                    .iter()
                    .map(|(t, ps)| {
                        let own = ps
                            .iter()
                            .copied()
                            .filter(|&p| owner_of(t, p, self.parallelism) == self.subtask)
                            .collect();
                        (t.clone(), own)
                    })
                    .collect();
                group_offsets::fetch(&self.source.config, group, &mine)?
            }
            _ => Default::default(),
        };
        for (topic, partitions) in found {
            for p in partitions {
                if owner_of(&topic, p, self.parallelism) != self.subtask
                    || self.has_partition(&topic, p)
                {
                    continue;
                }
                let client = cluster.partition(&topic, p)?;
                let position = restored
                    .as_ref()
                    .and_then(|r| r.iter().find(|x| x.topic == topic && x.partition == p));
                let (next, stop) = match position {
                    Some(pos) => (pos.next, pos.stop),
                    None => {
                        let start = if first {
                            self.source.starting.clone()
                        } else {
                            StartingOffsets::Earliest
                        };
                        let next = match committed.get(&topic).and_then(|c| c.get(&p)) {
                            Some(&offset) => offset,
                            None => start_offset(&client, &start, timeout)?,
                        };
                        let stop = if self.source.bounded {
                            Some(end_offset(&client, timeout)?)
                        } else {
                            None
                        };
                        (next, stop)
                    }
                };
                let mut reader = PartitionReader {
                    topic: Arc::from(topic.as_str()),
                    partition: p,
                    client,
                    next,
                    stop,
                    fetched: None,
                    fetch_task: None,
                    pending: VecDeque::new(),
                    tracker: self.strategy.as_ref().map(WatermarkStrategy::tracker),
                    high_watermark: next,
                    consumed: 0,
                };
                if !reader.finished() {
                    reader.start_fetching(&self.source.config, timeout)?;
                }
                tracing::info!(
                    "kafka source subtask {}: reading topic '{topic}' partition {p} from offset {next}{}",
                    self.subtask,
                    stop.map(|s| format!(" to {s}")).unwrap_or_default()
                );
                self.partitions.push(reader);
            }
        }
        // A restored partition that no longer exists is kept as it was (in the position),
        // so that nothing of it is lost if it comes back.
        if let Some(restored) = restored {
            for pos in restored {
                if !self.has_partition(&pos.topic, pos.partition) {
                    tracing::warn!(
                        "kafka source: checkpointed topic '{}' partition {} is not in the cluster any more",
                        pos.topic,
                        pos.partition
                    );
                }
            }
        }
        Ok(())
    }

    /// Moves records of partition `i` into `out`; how many.
    fn drain(
        &mut self,
        i: usize,
        out: &mut Vec<T>,
        mut stamps: Option<&mut Vec<Timestamp>>,
        max: usize,
    ) -> Result<usize> {
        let deserializer = self.source.deserializer.clone();
        let bad_records = self.source.bad_records;
        let part = &mut self.partitions[i];
        let mut n = 0;
        while n < max && !part.finished() {
            if part.pending.is_empty() {
                let Some(rx) = part.fetched.as_mut() else {
                    break;
                };
                match rx.try_recv() {
                    Ok(Ok((records, high_watermark))) => {
                        part.high_watermark = high_watermark;
                        part.pending.extend(records);
                        continue;
                    }
                    Ok(Err(e)) => return Err(e),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        return Err(kafka_error(
                            &partition_target(&part.topic, part.partition),
                            "the background fetch stopped",
                        ));
                    }
                }
            }
            let Some(r) = part.pending.pop_front() else {
                break;
            };
            // (Fetches give no record before the offset asked for: see `fetch_from`.)
            if let Some(stop) = part.stop
                && r.offset >= stop
            {
                part.next = stop;
                break;
            }
            let timestamp = r.record.timestamp.timestamp_millis();
            let record = KafkaRecord {
                topic: &part.topic,
                partition: part.partition,
                offset: r.offset,
                timestamp,
                key: r.record.key.as_deref(),
                value: r.record.value.as_deref(),
                headers: &r.record.headers,
            };
            part.next = r.offset + 1;
            match deserializer.deserialize_optional(&record) {
                Ok(None) => {}
                Ok(Some(value)) => {
                    if let Some(stamps) = stamps.as_deref_mut() {
                        let ts = match &mut part.tracker {
                            Some(t) => t.on_record(&value, timestamp).0,
                            None => timestamp,
                        };
                        stamps.push(ts);
                    }
                    out.push(value);
                    part.consumed += 1;
                    n += 1;
                }
                Err(why) => match bad_records {
                    BadRecords::Fail => {
                        return Err(HummerError::BadInput {
                            input: format!(
                                "kafka topic '{}' partition {} offset {}",
                                part.topic, part.partition, r.offset
                            ),
                            reason: why,
                        });
                    }
                    BadRecords::Skip => {
                        self.skipped += 1;
                        tracing::warn!(
                            "kafka source: skipped the record at topic '{}' partition {} offset {} ({why}); {} skipped so far",
                            part.topic,
                            part.partition,
                            r.offset,
                            self.skipped
                        );
                    }
                },
            }
        }
        if part.finished() {
            part.stop_fetching();
        }
        Ok(n)
    }

    fn poll(
        &mut self,
        out: &mut Vec<T>,
        mut stamps: Option<&mut Vec<Timestamp>>,
        max: usize,
    ) -> Result<SourceStatus> {
        self.discover()?;
        let mut max = max;
        if let Some(rate) = self.source.rate {
            let own = rate / self.parallelism as f64;
            let due = (self.started.elapsed().as_secs_f64() * own) as u64;
            max = max.min(due.saturating_sub(self.emitted) as usize);
            if max == 0 {
                return Ok(SourceStatus::Idle(Duration::from_millis(1)));
            }
        }
        let n = self.partitions.len();
        let mut got = 0;
        for step in 0..n {
            if got >= max {
                break;
            }
            let i = (self.next + step) % n;
            got += self.drain(i, out, stamps.as_deref_mut(), max - got)?;
        }
        if n > 0 {
            self.next = (self.next + 1) % n;
        }
        self.emitted += got as u64;
        let finished = self.source.bounded && self.partitions.iter().all(PartitionReader::finished);
        if finished {
            // The last report is the final state.
            self.reported_at = None;
        }
        self.report();
        Ok(if finished {
            SourceStatus::Finished
        } else if got > 0 {
            SourceStatus::MoreAvailable
        } else {
            SourceStatus::Idle(Duration::from_millis(2))
        })
    }
}

/// The first offset to read of a partition without a checkpointed one.
pub(super) fn start_offset(
    client: &Arc<PartitionClient>,
    start: &StartingOffsets,
    timeout: Duration,
) -> Result<i64> {
    match start {
        // Committed: for a partition the group has no offset for.
        StartingOffsets::Earliest | StartingOffsets::Committed => earliest_offset(client, timeout),
        StartingOffsets::Latest => end_offset(client, timeout),
        StartingOffsets::Timestamp(ms) => {
            let at = chrono::DateTime::from_timestamp_millis(*ms).ok_or_else(|| {
                HummerError::Config(format!(
                    "kafka source: starting timestamp {ms} is out of range"
                ))
            })?;
            let offset = offset_of(client, OffsetAt::Timestamp(at), timeout)?;
            if offset < 0 {
                // No record at or after the time: the end.
                end_offset(client, timeout)
            } else {
                Ok(offset)
            }
        }
    }
}

impl<T: Data> SourceReader<T> for KafkaReader<T> {
    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        self.poll(out, None, max)
    }

    fn poll_next_stamped(
        &mut self,
        out: &mut Vec<T>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        self.poll(out, Some(stamps), max)
    }

    fn use_watermark_strategy(&mut self, strategy: &WatermarkStrategy<T>) -> bool {
        self.strategy = Some(strategy.clone());
        for p in &mut self.partitions {
            p.tracker = Some(strategy.tracker());
        }
        true
    }

    fn on_periodic_watermark(&mut self, now: Timestamp) {
        for p in &mut self.partitions {
            if let Some(t) = &mut p.tracker {
                t.on_periodic(now);
            }
        }
    }

    /// The minimum over the partitions that are neither finished nor idle; `None` while one
    /// of them has none yet.
    fn current_watermark(&self) -> Option<Timestamp> {
        self.strategy.as_ref()?;
        let mut min: Option<Timestamp> = None;
        for p in self.partitions.iter().filter(|p| !p.finished()) {
            let Some(t) = &p.tracker else { continue };
            if t.is_idle() {
                continue;
            }
            let w = t.watermark().unwrap_or(MIN_WATERMARK);
            min = Some(min.map_or(w, |m| m.min(w)));
        }
        min
    }

    /// Idle when every partition it reads is (or it has none: more subtasks than
    /// partitions).
    fn is_idle(&self) -> bool {
        self.discovered_at.is_some()
            && self
                .partitions
                .iter()
                .filter(|p| !p.finished())
                .all(|p| p.tracker.as_ref().is_some_and(WatermarkTracker::is_idle))
    }

    /// Commits the offsets of the last snapshot to the consumer group (`group.id`), for
    /// lag monitoring; a failure is logged, not fatal (the job's position is its checkpoint).
    fn notify_checkpoint_complete(&mut self, id: crate::types::CheckpointId) {
        let Some(group) = group_id(&self.source.config) else {
            return;
        };
        let positions = match self.snapshotted.lock() {
            Ok(mut s) => std::mem::take(&mut *s),
            Err(_) => return,
        };
        if positions.is_empty() {
            return;
        }
        let mut offsets = group_offsets::Offsets::new();
        for p in positions {
            offsets
                .entry(p.topic)
                .or_default()
                .insert(p.partition, p.next);
        }
        if let Err(e) = group_offsets::commit(&self.source.config, group, &offsets) {
            tracing::warn!("kafka source: offsets of checkpoint {id} not committed: {e}");
        }
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        let mut positions: Vec<PartitionPosition> = self
            .partitions
            .iter()
            .map(|p| PartitionPosition {
                topic: p.topic.to_string(),
                partition: p.partition,
                next: p.next,
                stop: p.stop,
            })
            .collect();
        // Not opened yet: what was restored stands.
        if let Some(restored) = &self.restored {
            positions.extend(restored.iter().cloned());
        }
        if let Ok(mut s) = self.snapshotted.lock() {
            *s = positions.clone();
        }
        postcard::to_stdvec(&positions).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let positions: Vec<PartitionPosition> =
            postcard::from_bytes(position).map_err(|e| HummerError::BadInput {
                input: format!("checkpointed position of the {} source", self.source.name()),
                reason: e.to_string(),
            })?;
        self.partitions.clear();
        self.discovered_at = None;
        self.restored = Some(positions);
        Ok(())
    }
}
