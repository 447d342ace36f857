//! The end of a chain that feeds a shuffle: routes records into per-channel batches.
//!
//! A writer keeps one open batch per downstream channel. A batch is sent when it reaches the
//! batch size, when the task flushes (buffer timeout or idle input), or at end of input. A
//! forward or rebalance route hands a large incoming batch over whole, without copying.

use crate::types::{BatchRouter, Partitioning};
use std::sync::Arc;

use crate::channels::{Outbox, Push};
use crate::error::{Result, internal};
use crate::operators::{Control, Output};
use crate::types::CancelToken;
use crate::types::StreamEvent;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{NO_TIMESTAMP, Timestamp};

/// Sends an event into a channel; time spent waiting on a blocked channel is added to
/// `metrics` as backpressure.
#[inline]
pub fn send_counted<T: serde::Serialize + Send>(
    channel: &mut Outbox<T>,
    event: StreamEvent<T>,
    cancel: &CancelToken,
    metrics: &SubtaskMetrics,
) -> Result<()> {
    let waiting = channel.is_blocked().then(std::time::Instant::now);
    let sent = channel.push(event, cancel);
    if let Some(since) = waiting {
        metrics.backpressured_ns.fetch_add(
            since.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
    sent
}

/// How a record writer picks the channels of a record.
pub enum Route<T> {
    /// One channel: everything goes to it.
    Single,
    /// Round robin over the channels.
    Rebalance {
        /// The channel the next batch goes to.
        next: usize,
    },
    /// Every record to every channel.
    Broadcast,
    /// By the hash of the record's key.
    Hash {
        /// Computes each record's key group.
        router: BatchRouter<T>,
        /// The channel of each key group.
        targets: Vec<u32>,
    },
}

/// Writes a stream into the channels of one shuffle.
pub struct RecordWriter<T> {
    channels: Vec<Outbox<T>>,
    buffers: Vec<Vec<T>>,
    /// Timestamps of each buffer's records: empty while none has one, else as long as it.
    stamps: Vec<Vec<Timestamp>>,
    route: Route<T>,
    batch_size: usize,
    max_parallelism: usize,
    cancel: CancelToken,
    metrics: Arc<SubtaskMetrics>,
}

impl<T: crate::types::Data> RecordWriter<T> {
    /// A writer over `channels`, routed by `partitioning`.
    pub fn new(
        channels: Vec<Outbox<T>>,
        partitioning: &Partitioning,
        batch_size: usize,
        max_parallelism: usize,
        cancel: CancelToken,
        metrics: Arc<SubtaskMetrics>,
    ) -> Result<Self> {
        if channels.is_empty() {
            return Err(internal!("record writer without channels"));
        }
        let route = match partitioning {
            _ if channels.len() == 1 => Route::Single,
            Partitioning::Forward => {
                return Err(internal!(
                    "forward edge with {} channels from one subtask",
                    channels.len()
                ));
            }
            Partitioning::Rebalance => Route::Rebalance { next: 0 },
            Partitioning::Broadcast => Route::Broadcast,
            Partitioning::Hash { router } => {
                let router = router
                    .downcast_ref::<BatchRouter<T>>()
                    .ok_or_else(|| internal!("hash router of another record type"))?;
                Route::Hash {
                    router: router.clone(),
                    targets: Vec::new(),
                }
            }
        };
        let buffers = channels.iter().map(|_| Vec::new()).collect();
        let stamps = channels.iter().map(|_| Vec::new()).collect();
        Ok(RecordWriter {
            channels,
            buffers,
            stamps,
            route,
            batch_size: batch_size.max(1),
            max_parallelism,
            cancel,
            metrics,
        })
    }

    /// Sends what is buffered for `channel`.
    pub fn send(&mut self, channel: usize) -> Result<()> {
        let batch = std::mem::replace(
            &mut self.buffers[channel],
            Vec::with_capacity(self.batch_size),
        );
        let event = if self.stamps[channel].is_empty() {
            StreamEvent::Batch(batch)
        } else {
            let stamps = std::mem::replace(
                &mut self.stamps[channel],
                Vec::with_capacity(self.batch_size),
            );
            StreamEvent::Stamped(batch, stamps)
        };
        send_counted(
            &mut self.channels[channel],
            event,
            &self.cancel,
            &self.metrics,
        )
    }

    /// Appends a batch (with its timestamps, or none: see [`Output::push`]) to one channel,
    /// handing it over uncopied when it is large.
    pub fn append(
        &mut self,
        channel: usize,
        batch: &mut Vec<T>,
        timestamps: &mut Vec<Timestamp>,
    ) -> Result<()> {
        if self.buffers[channel].is_empty() && batch.len() * 2 >= self.batch_size {
            let event = if timestamps.is_empty() {
                StreamEvent::Batch(std::mem::take(batch))
            } else {
                StreamEvent::Stamped(std::mem::take(batch), std::mem::take(timestamps))
            };
            return send_counted(
                &mut self.channels[channel],
                event,
                &self.cancel,
                &self.metrics,
            );
        }
        let stamps = &mut self.stamps[channel];
        if !timestamps.is_empty() {
            stamps.resize(self.buffers[channel].len(), NO_TIMESTAMP);
            stamps.append(timestamps);
        } else if !stamps.is_empty() {
            // A stream mixing both: these records get the no-timestamp mark.
            stamps.resize(stamps.len() + batch.len(), NO_TIMESTAMP);
        }
        self.buffers[channel].append(batch);
        if self.buffers[channel].len() >= self.batch_size {
            self.send(channel)?;
        }
        Ok(())
    }

    /// Sends a control event to every channel (after what is buffered: see
    /// [`Control::is_in_stream`]).
    fn send_to_all(&mut self, event: impl Fn() -> StreamEvent<T>) -> Result<()> {
        for channel in &mut self.channels {
            send_counted(channel, event(), &self.cancel, &self.metrics)?;
        }
        Ok(())
    }

    /// Puts each record of a batch without timestamps into the buffer of its channel
    /// (`targets[i]` is `batch[i]`'s).
    fn scatter(&mut self, batch: &mut Vec<T>, targets: &[u32]) -> Result<()> {
        let mut result = Ok(());
        // Records without timestamps into buffers that have some (a stream mixing both) get
        // the no-timestamp mark; the common case checks once per batch.
        let mixed = self.stamps.iter().any(|s| !s.is_empty());
        for (record, &t) in batch.drain(..).zip(targets) {
            let t = t as usize;
            if mixed && !self.stamps[t].is_empty() {
                self.stamps[t].push(NO_TIMESTAMP);
            }
            self.buffers[t].push(record);
            if self.buffers[t].len() >= self.batch_size && result.is_ok() {
                result = self.send(t);
            }
        }
        result
    }

    /// [`RecordWriter::scatter`] for a batch whose records carry timestamps.
    fn scatter_stamped(
        &mut self,
        batch: &mut Vec<T>,
        timestamps: &mut Vec<Timestamp>,
        targets: &[u32],
    ) -> Result<()> {
        let mut result = Ok(());
        for ((record, ts), &t) in batch.drain(..).zip(timestamps.drain(..)).zip(targets) {
            let t = t as usize;
            let stamps = &mut self.stamps[t];
            stamps.resize(self.buffers[t].len(), NO_TIMESTAMP);
            stamps.push(ts);
            self.buffers[t].push(record);
            if self.buffers[t].len() >= self.batch_size && result.is_ok() {
                result = self.send(t);
            }
        }
        result
    }

    /// Sends what is buffered for every channel.
    pub fn flush(&mut self) -> Result<()> {
        for channel in 0..self.channels.len() {
            if !self.buffers[channel].is_empty() {
                self.send(channel)?;
            }
        }
        Ok(())
    }
}

impl<T: crate::types::Data> Output<T> for RecordWriter<T> {
    fn push(&mut self, records: &mut Vec<T>, timestamps: &mut Vec<Timestamp>) -> Result<()> {
        if records.is_empty() {
            timestamps.clear();
            return Ok(());
        }
        if !timestamps.is_empty() && timestamps.len() != records.len() {
            return Err(internal!(
                "{} timestamps for a batch of {} records",
                timestamps.len(),
                records.len()
            ));
        }
        self.metrics.add_out(records.len());
        match &mut self.route {
            Route::Single => self.append(0, records, timestamps),
            Route::Rebalance { next } => {
                let channel = *next;
                *next = (channel + 1) % self.channels.len();
                self.append(channel, records, timestamps)
            }
            Route::Broadcast => {
                for channel in 0..self.channels.len() - 1 {
                    let (mut copy, mut stamps) = (records.clone(), timestamps.clone());
                    self.append(channel, &mut copy, &mut stamps)?;
                }
                self.append(self.channels.len() - 1, records, timestamps)
            }
            Route::Hash { router, targets } => {
                router(records, self.channels.len(), self.max_parallelism, targets);
                let targets = std::mem::take(targets);
                let result = if timestamps.is_empty() {
                    self.scatter(records, &targets)
                } else {
                    self.scatter_stamped(records, timestamps, &targets)
                };
                if let Route::Hash { targets: slot, .. } = &mut self.route {
                    *slot = targets;
                }
                result
            }
        }
    }

    fn control(&mut self, event: Control<'_>) -> Result<()> {
        if event.is_in_stream() {
            self.flush()?;
        }
        match event {
            Control::EndOfInput => self.send_to_all(|| StreamEvent::EndOfInput),
            Control::Barrier(snapshot) => {
                let id = snapshot.checkpoint;
                self.send_to_all(|| StreamEvent::Barrier(id))
            }
            Control::Watermark(w) => self.send_to_all(|| StreamEvent::Watermark(w)),
            Control::WatermarkStatus(s) => self.send_to_all(|| StreamEvent::Status(s)),
            Control::Flush | Control::CheckpointComplete(_) | Control::ProcessingTime(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::local::channel;
    use crate::state::task_state::TaskSnapshot;
    use crate::types::{TaskWaker, WatermarkStatus};

    /// What a channel received, one line per event.
    fn received(rx: &crate::channels::local::ChannelReceiver<u32>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv())
            .map(|event| match event {
                StreamEvent::Batch(r) => format!("batch {r:?}"),
                StreamEvent::Stamped(r, t) => format!("stamped {r:?} at {t:?}"),
                StreamEvent::Barrier(id) => format!("barrier {id}"),
                StreamEvent::Watermark(w) => format!("watermark {w}"),
                StreamEvent::Status(s) => format!("status {s:?}"),
                StreamEvent::EndOfInput => "end".to_string(),
            })
            .collect()
    }

    #[test]
    fn buffered_records_go_ahead_of_every_control_event_that_travels_the_stream() {
        let (tx, rx) = channel(
            64,
            Arc::new(TaskWaker::default()),
            Arc::new(TaskWaker::default()),
        );
        let mut writer = RecordWriter::new(
            vec![Outbox::Local(tx)],
            &Partitioning::Rebalance,
            100,
            128,
            CancelToken::default(),
            Arc::new(SubtaskMetrics::default()),
        )
        .unwrap();
        let mut snapshot = TaskSnapshot::new(3, 128);
        writer.push(&mut vec![1], &mut Vec::new()).unwrap();
        writer.control(Control::Watermark(10)).unwrap();
        writer.push(&mut vec![2], &mut vec![20]).unwrap();
        writer.control(Control::Barrier(&mut snapshot)).unwrap();
        writer.push(&mut vec![3], &mut Vec::new()).unwrap();
        writer.control(Control::CheckpointComplete(3)).unwrap();
        writer.control(Control::ProcessingTime(30)).unwrap();
        assert_eq!(
            received(&rx),
            [
                "batch [1]",
                "watermark 10",
                "stamped [2] at [20]",
                "barrier 3"
            ],
            "a completion and processing time stay in the task: nothing is flushed for them"
        );
        writer
            .control(Control::WatermarkStatus(WatermarkStatus::Idle))
            .unwrap();
        writer.push(&mut vec![4], &mut Vec::new()).unwrap();
        writer.control(Control::Flush).unwrap();
        writer.push(&mut vec![5], &mut Vec::new()).unwrap();
        writer.control(Control::EndOfInput).unwrap();
        assert_eq!(
            received(&rx),
            ["batch [3]", "status Idle", "batch [4]", "batch [5]", "end"]
        );
    }
}
