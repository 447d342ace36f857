//! A dedicated sending task: drains a memory channel from the producing subtask into a remote
//! channel, so the producer hands batches over in memory and never blocks on the network.

use serde::Serialize;

use crate::NetworkTask;
use crate::error::{HummerError, Result};
use crate::local::ChannelReceiver;
use crate::network::RemoteSender;
use crate::types::CancelToken;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{PARK_SAFETY_TIMEOUT, StreamEvent};

/// Forwards one channel to its remote consumer.
pub struct SenderTask<T> {
    input: ChannelReceiver<T>,
    output: RemoteSender<T>,
}

impl<T> SenderTask<T> {
    /// A task sending what arrives on `input` through `output`.
    pub(crate) fn new(input: ChannelReceiver<T>, output: RemoteSender<T>) -> Self {
        SenderTask { input, output }
    }
}

impl<T: Serialize + Send + 'static> NetworkTask for SenderTask<T> {
    fn run(self: Box<Self>, cancel: &CancelToken, metrics: &SubtaskMetrics) -> Result<()> {
        let SenderTask { input, mut output } = *self;
        loop {
            match input.try_recv() {
                Some(StreamEvent::Batch(batch)) => {
                    metrics.add_out(batch.len());
                    output.send(StreamEvent::Batch(batch), cancel)?;
                }
                Some(StreamEvent::Stamped(batch, stamps)) => {
                    metrics.add_out(batch.len());
                    output.send(StreamEvent::Stamped(batch, stamps), cancel)?;
                }
                Some(
                    event @ (StreamEvent::Barrier(_)
                    | StreamEvent::Watermark(_)
                    | StreamEvent::Status(_)),
                ) => {
                    output.send(event, cancel)?;
                }
                Some(StreamEvent::EndOfInput) => {
                    return output.send(StreamEvent::EndOfInput, cancel);
                }
                None if cancel.is_cancelled() => return Err(HummerError::Cancelled),
                None => std::thread::park_timeout(PARK_SAFETY_TIMEOUT),
            }
        }
    }
}
