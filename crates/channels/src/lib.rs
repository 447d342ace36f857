//! Channels between subtasks: memory rings within a process, TCP connections between
//! processes, and one factory that hides which is which.
//!
//! * [`local`]: bounded lock-free batch queues between subtasks of one process, parking
//!   instead of spinning.
//! * [`network`]: the data plane between workers (a connection per remote channel, credit
//!   based flow control, network transfer as tasks of their own).
//! * [`allocator`]: the channel factory. A task asks it for the endpoints of a channel and
//!   gets an [`Outbox`] to [`Push`] into and a [`ChannelReceiver`] to read from, whether the
//!   peer runs in this process or in another worker (as timely's `Allocate`/`Push`/`Pull`).
//!
//! * [`secure`]: mutual TLS (or, when asked, plaintext) for every TCP connection of a
//!   cluster.
//!
//! Layer 2 of 12, beside `scheduler`, `image` and `state`: depends on `types` only; below
//! `runtime` (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_types::{self as types, error};

pub mod allocator;
pub mod local;
pub mod network;
pub mod secure;

pub use allocator::{ChannelAllocator, ChannelSpec, Endpoints, NetworkTaskSlot, Placement};
pub use local::{ChannelReceiver, ChannelSender};

use crate::error::Result;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{CancelToken, StreamEvent};

/// The sending end of a channel: a memory ring to a subtask of this process, or a connection
/// to a subtask of another worker.
pub trait Push<T>: Send {
    /// Sends an event, waiting while the consumer cannot take it (backpressure); returns
    /// [`crate::error::HummerError::Cancelled`] if the job is cancelled meanwhile.
    fn push(&mut self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()>;
    /// True when a push would wait now (a full ring, no credit): the consumer is slower.
    fn is_blocked(&self) -> bool;
}

impl<T: Send> Push<T> for ChannelSender<T> {
    #[inline]
    fn push(&mut self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()> {
        self.send(event, cancel)
    }

    #[inline]
    fn is_blocked(&self) -> bool {
        self.is_full()
    }
}

impl<T: serde::Serialize + Send> Push<T> for network::RemoteSender<T> {
    #[inline]
    fn push(&mut self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()> {
        self.send(event, cancel)
    }

    #[inline]
    fn is_blocked(&self) -> bool {
        self.credits() == 0
    }
}

/// The sending end of a channel as the allocator hands it out: a memory ring, or a network
/// connection written by the producing subtask itself. Its users only [`Push`] into it; the
/// variants exist so that a send costs a branch, not a dynamic call, on the per-record path.
pub enum Outbox<T> {
    /// To a subtask of this process (or to a dedicated sender task).
    Local(ChannelSender<T>),
    /// To a subtask of another worker, encoded into the connection by the producer.
    Remote(network::RemoteSender<T>),
}

impl<T: serde::Serialize + Send> Push<T> for Outbox<T> {
    #[inline]
    fn push(&mut self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()> {
        match self {
            Outbox::Local(s) => s.push(event, cancel),
            Outbox::Remote(r) => r.push(event, cancel),
        }
    }

    #[inline]
    fn is_blocked(&self) -> bool {
        match self {
            Outbox::Local(s) => s.is_blocked(),
            Outbox::Remote(r) => r.is_blocked(),
        }
    }
}

/// A task of the data plane (the receiving end of a remote channel, or a dedicated sending
/// end), run on a thread of its own beside the subtasks.
pub trait NetworkTask: Send {
    /// Moves batches until the end of the channel, a failure or cancellation.
    fn run(self: Box<Self>, cancel: &CancelToken, metrics: &SubtaskMetrics) -> Result<()>;
}
