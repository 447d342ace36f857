//! The end of a chain that feeds a shuffle: routes records into per-channel batches.
//!
//! A writer keeps one open batch per downstream channel. A batch is sent when it reaches the
//! batch size, when the task flushes (buffer timeout or idle input), or at end of input. A
//! forward or rebalance route hands a large incoming batch over whole, without copying.

use std::any::Any;
use std::sync::Arc;

use crate::checkpoint::CheckpointId;
use crate::checkpoint::task_state::TaskSnapshot;
use crate::error::{HummerError, Result};
use crate::network::RemoteSender;
use crate::operators::Output;
use crate::runtime::CancelToken;
use crate::runtime::channel::{ChannelSender, StreamEvent};
use crate::runtime::metrics::SubtaskMetrics;

/// Computes the target channel of every record of a batch (one dynamic call per batch):
/// `(records, channels, max_parallelism, targets_out)`.
pub type BatchRouter<T> = Arc<dyn Fn(&[T], usize, usize, &mut Vec<u32>) + Send + Sync>;

/// How the records of an edge are distributed over the consumer's subtasks.
#[derive(Clone)]
pub enum Partitioning {
    /// Subtask *i* feeds subtask *i* (equal parallelism; becomes `Rebalance` otherwise).
    Forward,
    /// Batches go round-robin to all consumers.
    Rebalance,
    /// Every consumer gets every record.
    Broadcast,
    /// Records go to the subtask owning their key's key group.
    Hash {
        /// A [`BatchRouter<T>`] for the edge's record type, type-erased.
        router: Arc<dyn Any + Send + Sync>,
    },
}

impl Partitioning {
    /// Name used in plans.
    pub fn name(&self) -> &'static str {
        match self {
            Partitioning::Forward => "FORWARD",
            Partitioning::Rebalance => "REBALANCE",
            Partitioning::Broadcast => "BROADCAST",
            Partitioning::Hash { .. } => "HASH",
        }
    }

    /// A hash partitioning from a typed router.
    pub(crate) fn hash<T: 'static>(router: BatchRouter<T>) -> Self {
        Partitioning::Hash {
            router: Arc::new(router),
        }
    }
}

impl std::fmt::Debug for Partitioning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a writer's channel leads: a subtask in this process or one in another worker.
pub(crate) enum Outlet<T> {
    Local(ChannelSender<T>),
    Remote(RemoteSender<T>),
}

impl<T: serde::Serialize> Outlet<T> {
    /// Sends an event; time spent waiting on a full local channel is added to `metrics`.
    fn send(
        &mut self,
        event: StreamEvent<T>,
        cancel: &CancelToken,
        metrics: &SubtaskMetrics,
    ) -> Result<()> {
        let blocked = match self {
            Outlet::Local(s) => s.is_full(),
            Outlet::Remote(r) => r.credits() == 0,
        };
        let waiting = blocked.then(std::time::Instant::now);
        let sent = match self {
            Outlet::Local(s) => s.send(event, cancel),
            Outlet::Remote(r) => r.send(event, cancel),
        };
        if let Some(since) = waiting {
            metrics.backpressured_ns.fetch_add(
                since.elapsed().as_nanos() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        sent
    }
}

enum Route<T> {
    Single,
    Rebalance {
        next: usize,
    },
    Broadcast,
    Hash {
        router: BatchRouter<T>,
        targets: Vec<u32>,
    },
}

/// Writes a stream into the channels of one shuffle.
pub(crate) struct RecordWriter<T> {
    channels: Vec<Outlet<T>>,
    buffers: Vec<Vec<T>>,
    route: Route<T>,
    batch_size: usize,
    max_parallelism: usize,
    cancel: CancelToken,
    metrics: Arc<SubtaskMetrics>,
}

impl<T: crate::data::Data> RecordWriter<T> {
    pub(crate) fn new(
        channels: Vec<Outlet<T>>,
        partitioning: &Partitioning,
        batch_size: usize,
        max_parallelism: usize,
        cancel: CancelToken,
        metrics: Arc<SubtaskMetrics>,
    ) -> Result<Self> {
        if channels.is_empty() {
            return Err(HummerError::Internal(
                "record writer without channels".into(),
            ));
        }
        let route = match partitioning {
            _ if channels.len() == 1 => Route::Single,
            Partitioning::Forward => {
                return Err(HummerError::Internal(format!(
                    "forward edge with {} channels from one subtask",
                    channels.len()
                )));
            }
            Partitioning::Rebalance => Route::Rebalance { next: 0 },
            Partitioning::Broadcast => Route::Broadcast,
            Partitioning::Hash { router } => {
                let router = router.downcast_ref::<BatchRouter<T>>().ok_or_else(|| {
                    HummerError::Internal("hash router of another record type".into())
                })?;
                Route::Hash {
                    router: router.clone(),
                    targets: Vec::new(),
                }
            }
        };
        let buffers = channels.iter().map(|_| Vec::new()).collect();
        Ok(RecordWriter {
            channels,
            buffers,
            route,
            batch_size: batch_size.max(1),
            max_parallelism,
            cancel,
            metrics,
        })
    }

    fn send(&mut self, channel: usize) -> Result<()> {
        let batch = std::mem::replace(
            &mut self.buffers[channel],
            Vec::with_capacity(self.batch_size),
        );
        self.channels[channel].send(StreamEvent::Batch(batch), &self.cancel, &self.metrics)
    }

    /// Appends a whole batch to one channel, handing it over uncopied when it is large.
    fn append(&mut self, channel: usize, batch: &mut Vec<T>) -> Result<()> {
        if self.buffers[channel].is_empty() && batch.len() * 2 >= self.batch_size {
            let whole = std::mem::take(batch);
            return self.channels[channel].send(
                StreamEvent::Batch(whole),
                &self.cancel,
                &self.metrics,
            );
        }
        self.buffers[channel].append(batch);
        if self.buffers[channel].len() >= self.batch_size {
            self.send(channel)?;
        }
        Ok(())
    }
}

impl<T: crate::data::Data> Output<T> for RecordWriter<T> {
    fn push(&mut self, batch: &mut Vec<T>) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.metrics.add_out(batch.len());
        match &mut self.route {
            Route::Single => self.append(0, batch),
            Route::Rebalance { next } => {
                let channel = *next;
                *next = (channel + 1) % self.channels.len();
                self.append(channel, batch)
            }
            Route::Broadcast => {
                for channel in 0..self.channels.len() - 1 {
                    let mut copy = batch.clone();
                    self.append(channel, &mut copy)?;
                }
                self.append(self.channels.len() - 1, batch)
            }
            Route::Hash { router, targets } => {
                router(batch, self.channels.len(), self.max_parallelism, targets);
                let targets = std::mem::take(targets);
                let mut result = Ok(());
                for (record, &t) in batch.drain(..).zip(targets.iter()) {
                    let t = t as usize;
                    self.buffers[t].push(record);
                    if self.buffers[t].len() >= self.batch_size && result.is_ok() {
                        result = self.send(t);
                    }
                }
                if let Route::Hash { targets: slot, .. } = &mut self.route {
                    *slot = targets;
                }
                result
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        for channel in 0..self.channels.len() {
            if !self.buffers[channel].is_empty() {
                self.send(channel)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.flush()?;
        for channel in &mut self.channels {
            channel.send(StreamEvent::EndOfInput, &self.cancel, &self.metrics)?;
        }
        Ok(())
    }

    fn barrier(&mut self, snapshot: &mut TaskSnapshot) -> Result<()> {
        self.flush()?;
        for channel in &mut self.channels {
            channel.send(
                StreamEvent::Barrier(snapshot.checkpoint),
                &self.cancel,
                &self.metrics,
            )?;
        }
        Ok(())
    }

    fn checkpoint_complete(&mut self, _id: CheckpointId) -> Result<()> {
        Ok(())
    }
}
