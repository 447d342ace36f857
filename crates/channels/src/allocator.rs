//! The channel factory: the one place that knows whether a channel stays in this process.
//!
//! The executor asks for each channel of the execution graph that touches this process; the
//! allocator makes a memory ring when both ends run here, and otherwise the network end this
//! process holds: the producer's [`RemoteSender`] (fused into the producing subtask, or behind
//! a memory ring drained by a [`SenderTask`] of its own), or the consumer's [`ReceiverTask`]
//! feeding a memory ring. Network tasks are collected for the executor to run as tasks.

use std::sync::Arc;

use crate::error::{Result, internal};
use crate::local::{ChannelReceiver, channel};
use crate::network::{DataListener, NetworkTaskMode, ReceiverTask, RemoteSender, SenderTask};
use crate::types::{Data, TaskWaker};
use crate::{NetworkTask, Outbox};

/// Which subtasks run in this process and how to reach the others (cluster mode). Without a
/// placement every subtask runs here.
pub struct Placement {
    /// The job's id (announced on data connections).
    pub job: String,
    /// Per global subtask: `None` if it runs here, else the data address of its worker.
    pub remote: Vec<Option<String>>,
    /// This worker's data listener, for channels from remote producers.
    pub listener: DataListener,
    /// Local address outgoing data connections are bound to, if set.
    pub bind: Option<String>,
    /// Where the sending ends of remote channels run, unless their edge says otherwise.
    pub network_task: NetworkTaskMode,
}

/// One channel of the execution graph, as a task's builder asks for its ends.
#[derive(Clone, Copy, Debug)]
pub struct ChannelSpec {
    /// Its index in the execution graph (announced on its data connection).
    pub id: usize,
    /// Global index of the producing subtask.
    pub producer: usize,
    /// Global index of the consuming subtask.
    pub consumer: usize,
    /// Where its sending end runs if it crosses workers (`None`: the job's default).
    pub network_task: Option<NetworkTaskMode>,
}

/// The ends of one channel this process holds: the producer's if it runs here, the
/// consumer's if it runs here.
pub struct Endpoints<T> {
    /// Where the producing subtask writes.
    pub push: Option<Outbox<T>>,
    /// Where the consuming subtask reads.
    pub pull: Option<ChannelReceiver<T>>,
}

/// A network task the executor must run, with the waker of its thread.
pub struct NetworkTaskSlot {
    /// For thread names and logs.
    pub name: String,
    /// The task.
    pub body: Box<dyn NetworkTask>,
    /// Wakes its thread (bound by the executor).
    pub waker: Arc<TaskWaker>,
    /// The global subtask it serves (the producer's or the consumer's).
    pub subtask: usize,
}

/// Makes the channels of one job attempt in one process.
pub struct ChannelAllocator<'a> {
    capacity: usize,
    /// Waker of every global subtask's thread.
    wakers: &'a [Arc<TaskWaker>],
    placement: Option<&'a Placement>,
    network_tasks: Vec<NetworkTaskSlot>,
}

impl<'a> ChannelAllocator<'a> {
    /// An allocator for channels of `capacity` batches between subtasks woken by `wakers`,
    /// placed as `placement` says (all here if `None`).
    pub fn new(
        capacity: usize,
        wakers: &'a [Arc<TaskWaker>],
        placement: Option<&'a Placement>,
    ) -> Self {
        ChannelAllocator {
            capacity,
            wakers,
            placement,
            network_tasks: Vec::new(),
        }
    }

    /// Whether global subtask `subtask` runs in this process.
    pub fn is_here(&self, subtask: usize) -> bool {
        self.placement
            .is_none_or(|p| p.remote.get(subtask).is_none_or(Option::is_none))
    }

    fn waker(&self, subtask: usize) -> Result<Arc<TaskWaker>> {
        self.wakers
            .get(subtask)
            .cloned()
            .ok_or_else(|| internal!("channel to subtask {subtask}, which has no waker"))
    }

    /// The ends this process holds of `channel`.
    pub fn allocate<T: Data>(&mut self, spec: ChannelSpec) -> Result<Endpoints<T>> {
        let ChannelSpec {
            id,
            producer,
            consumer,
            network_task: mode,
        } = spec;
        let (here_p, here_c) = (self.is_here(producer), self.is_here(consumer));
        match (here_p, here_c, self.placement) {
            (true, true, _) => {
                let (s, r) =
                    channel::<T>(self.capacity, self.waker(producer)?, self.waker(consumer)?);
                Ok(Endpoints {
                    push: Some(Outbox::Local(s)),
                    pull: Some(r),
                })
            }
            (true, false, Some(p)) => {
                let endpoint = p.remote[consumer].as_deref().unwrap_or_default();
                let remote = RemoteSender::<T>::connect(endpoint, &p.job, id, p.bind.as_deref())?;
                let push = match mode.unwrap_or(p.network_task) {
                    NetworkTaskMode::Fused => Outbox::Remote(remote),
                    NetworkTaskMode::Dedicated => {
                        let waker = Arc::new(TaskWaker::default());
                        let (s, r) =
                            channel::<T>(self.capacity, self.waker(producer)?, waker.clone());
                        self.network_tasks.push(NetworkTaskSlot {
                            name: format!("send channel {id}"),
                            body: Box::new(SenderTask::new(r, remote)),
                            waker,
                            subtask: producer,
                        });
                        Outbox::Local(s)
                    }
                };
                Ok(Endpoints {
                    push: Some(push),
                    pull: None,
                })
            }
            (false, true, Some(p)) => {
                let waker = Arc::new(TaskWaker::default());
                let (s, r) = channel::<T>(self.capacity, waker.clone(), self.waker(consumer)?);
                let connection = p.listener.register_channel(id);
                self.network_tasks.push(NetworkTaskSlot {
                    name: format!("receive channel {id}"),
                    body: Box::new(ReceiverTask::new(id, connection, s, self.capacity)),
                    waker,
                    subtask: consumer,
                });
                Ok(Endpoints {
                    push: None,
                    pull: Some(r),
                })
            }
            _ => Ok(Endpoints {
                push: None,
                pull: None,
            }),
        }
    }

    /// The network tasks made so far, for the executor to run.
    pub fn take_network_tasks(&mut self) -> Vec<NetworkTaskSlot> {
        std::mem::take(&mut self.network_tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Push;
    use crate::types::metrics::SubtaskMetrics;
    use crate::types::{CancelToken, StreamEvent};

    fn spec(id: usize, producer: usize, consumer: usize) -> ChannelSpec {
        ChannelSpec {
            id,
            producer,
            consumer,
            network_task: None,
        }
    }

    fn wakers(n: usize) -> Vec<Arc<TaskWaker>> {
        (0..n).map(|_| Arc::new(TaskWaker::default())).collect()
    }

    fn batch_of(pull: &ChannelReceiver<u64>) -> Vec<u64> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match pull.try_recv() {
                Some(StreamEvent::Batch(b)) => return b,
                Some(other) => panic!("expected a batch, got {other:?}"),
                None if std::time::Instant::now() > deadline => panic!("no batch arrived"),
                None => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }

    #[test]
    fn both_ends_here_make_one_memory_ring() {
        let w = wakers(2);
        let mut alloc = ChannelAllocator::new(4, &w, None);
        assert!(alloc.is_here(0) && alloc.is_here(1));
        let ends = alloc.allocate::<u64>(spec(0, 0, 1)).unwrap();
        let (Some(mut push), Some(pull)) = (ends.push, ends.pull) else {
            panic!("a local channel has both ends here");
        };
        assert!(matches!(push, Outbox::Local(_)));
        push.push(StreamEvent::Batch(vec![1, 2]), &CancelToken::default())
            .unwrap();
        assert_eq!(batch_of(&pull), vec![1, 2]);
        assert!(alloc.take_network_tasks().is_empty());
    }

    /// Two workers of one job, each with its own allocator: subtask 0 runs on the first,
    /// subtask 1 on the second. The same channel gives the producer a network end and the
    /// consumer a receiver task feeding a ring, and a batch crosses.
    fn crosses_workers(mode: NetworkTaskMode) {
        let cancel = CancelToken::default();
        let listener =
            |c: &CancelToken| DataListener::bind("127.0.0.1", "job-7", c.clone()).unwrap();
        let (l0, l1) = (listener(&cancel), listener(&cancel));
        let addr1 = format!("127.0.0.1:{}", l1.port());
        let producer_side = Placement {
            job: "job-7".into(),
            remote: vec![None, Some(addr1)],
            listener: l0,
            bind: None,
            network_task: mode,
        };
        let consumer_side = Placement {
            job: "job-7".into(),
            remote: vec![Some("127.0.0.1:1".into()), None],
            listener: l1,
            bind: None,
            network_task: NetworkTaskMode::Fused,
        };
        let w = wakers(2);
        let mut consumer = ChannelAllocator::new(4, &w, Some(&consumer_side));
        assert!(!consumer.is_here(0) && consumer.is_here(1));
        let ends = consumer.allocate::<u64>(spec(5, 0, 1)).unwrap();
        assert!(ends.push.is_none());
        let pull = ends.pull.expect("the consumer reads here");
        let mut receivers = consumer.take_network_tasks();
        assert_eq!(receivers.len(), 1, "one receiver task");
        let receiver = receivers.remove(0);
        assert_eq!(receiver.subtask, 1);
        let cancel_r = cancel.clone();
        let receiving =
            std::thread::spawn(move || receiver.body.run(&cancel_r, &SubtaskMetrics::default()));

        let mut producer = ChannelAllocator::new(4, &w, Some(&producer_side));
        let ends = producer.allocate::<u64>(spec(5, 0, 1)).unwrap();
        assert!(ends.pull.is_none());
        let mut push = ends.push.expect("the producer writes here");
        let senders = producer.take_network_tasks();
        let sending = match mode {
            NetworkTaskMode::Fused => {
                assert!(matches!(push, Outbox::Remote(_)) && senders.is_empty());
                None
            }
            NetworkTaskMode::Dedicated => {
                assert!(matches!(push, Outbox::Local(_)) && senders.len() == 1);
                let sender = senders.into_iter().next().map(|s| s.body);
                let cancel_s = cancel.clone();
                sender.map(|s| {
                    std::thread::spawn(move || s.run(&cancel_s, &SubtaskMetrics::default()))
                })
            }
        };
        push.push(StreamEvent::Batch(vec![7, 8, 9]), &cancel)
            .unwrap();
        assert_eq!(batch_of(&pull), vec![7, 8, 9]);
        push.push(StreamEvent::EndOfInput, &cancel).unwrap();
        receiving.join().unwrap().unwrap();
        if let Some(s) = sending {
            s.join().unwrap().unwrap();
        }
        cancel.cancel();
    }

    #[test]
    fn a_channel_across_workers_gets_a_fused_network_end() {
        crosses_workers(NetworkTaskMode::Fused);
    }

    #[test]
    fn a_dedicated_network_end_is_a_ring_drained_by_a_sender_task() {
        crosses_workers(NetworkTaskMode::Dedicated);
    }

    #[test]
    fn a_channel_between_two_other_workers_has_no_end_here() {
        let cancel = CancelToken::default();
        let placement = Placement {
            job: "job-8".into(),
            remote: vec![Some("127.0.0.1:1".into()), Some("127.0.0.1:2".into()), None],
            listener: DataListener::bind("127.0.0.1", "job-8", cancel.clone()).unwrap(),
            bind: None,
            network_task: NetworkTaskMode::Fused,
        };
        let w = wakers(3);
        let mut alloc = ChannelAllocator::new(4, &w, Some(&placement));
        let ends = alloc.allocate::<u64>(spec(0, 0, 1)).unwrap();
        assert!(ends.push.is_none() && ends.pull.is_none());
        assert!(alloc.take_network_tasks().is_empty());
        cancel.cancel();
    }
}
