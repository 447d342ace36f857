//! The channel factory: the one place that knows whether a channel stays in this process.
//!
//! The executor asks for each channel of the execution graph that touches this process; the
//! allocator makes a memory ring when both ends run here, and otherwise the network end this
//! process holds: the producer's [`RemoteSender`] (fused into the producing subtask, or behind
//! a memory ring drained by a [`SenderTask`] of its own), or the consumer's [`ReceiverTask`]
//! feeding a memory ring. Network tasks are collected for the executor to run as tasks.

use std::sync::Arc;

use crate::channels::local::{ChannelReceiver, channel};
use crate::channels::network::{
    DataListener, NetworkTaskMode, ReceiverTask, RemoteSender, SenderTask,
};
use crate::channels::{NetworkTask, Outbox};
use crate::error::{Result, internal};
use crate::types::{Data, TaskWaker};

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

    /// The ends this process holds of channel `id` from subtask `producer` to `consumer`;
    /// `mode` is the edge's choice of where a remote sending end runs (`None`: the job's).
    pub fn allocate<T: Data>(
        &mut self,
        id: usize,
        producer: usize,
        consumer: usize,
        mode: Option<NetworkTaskMode>,
    ) -> Result<Endpoints<T>> {
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
