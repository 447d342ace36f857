//! The data plane: channels between subtasks in different worker processes.
//!
//! A channel whose producer and consumer run in different workers becomes a TCP connection,
//! opened by the producer's side to the consumer worker's data listener and announced with a
//! header naming the job and the channel. Its two ends are tasks of the data flow like any
//! other ("network is a task"):
//!
//! * the **sender** is fused into the producing subtask: its record writer encodes each batch
//!   (postcard) straight into the socket ([`RemoteSender`]);
//! * the **receiver** is a task of its own on the consuming side ([`ReceiverTask`]): it decodes
//!   batches and pushes them into an ordinary memory channel to the consuming subtask.
//!
//! Flow control: each remote channel has its own connection, so the receiver stops reading a
//! channel whose consumer is full, the kernel's window closes, and only that channel's
//! producer blocks; other channels between the same workers keep flowing.

mod frames;
mod listener;
mod receiver;
mod sender;

pub use listener::DataListener;
pub use receiver::ReceiverTask;
pub use sender::RemoteSender;
