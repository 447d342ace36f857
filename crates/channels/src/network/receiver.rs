//! The receiving end of a remote channel: a task of its own that decodes batches into a
//! memory channel to the consuming subtask.

use crate::secure::Stream;
use std::io::Write;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::NetworkTask;
use crate::error::{HummerError, Result, internal};
use crate::local::ChannelSender;
use crate::network::frames::{
    FrameReader, KIND_BARRIER, KIND_BATCH, KIND_CREDIT, KIND_END, KIND_STAMPED, KIND_STATUS,
    KIND_WATERMARK, frame,
};
use crate::types::CancelToken;
use crate::types::metrics::SubtaskMetrics;
use crate::types::{StreamEvent, WatermarkStatus};

/// How long a receiver waits for its producer to connect.
const CONNECT_WAIT: Duration = Duration::from_secs(30);

/// Receives one remote channel.
pub struct ReceiverTask<T> {
    channel: usize,
    connection: Receiver<Stream>,
    output: ChannelSender<T>,
    /// Credits granted at the start: the capacity of `output`.
    capacity: usize,
}

impl<T> ReceiverTask<T> {
    /// A receiver for `channel`, whose connection arrives on `connection`.
    pub(crate) fn new(
        channel: usize,
        connection: Receiver<Stream>,
        output: ChannelSender<T>,
        capacity: usize,
    ) -> Self {
        ReceiverTask {
            channel,
            connection,
            output,
            capacity,
        }
    }
}

impl<T> ReceiverTask<T> {
    /// The payload of a control frame that carries one 64-bit number.
    fn eight_bytes(&self, what: &str, payload: &[u8], peer: &str) -> Result<[u8; 8]> {
        <[u8; 8]>::try_from(payload).map_err(|_| HummerError::BadInput {
            input: format!("data connection from {peer}"),
            reason: format!(
                "{what} frame of {} bytes on channel {}, 8 expected",
                payload.len(),
                self.channel
            ),
        })
    }
}

impl<T: DeserializeOwned + Send + 'static> NetworkTask for ReceiverTask<T> {
    fn run(self: Box<Self>, cancel: &CancelToken, metrics: &SubtaskMetrics) -> Result<()> {
        let started = std::time::Instant::now();
        let stream = loop {
            match self.connection.recv_timeout(Duration::from_millis(100)) {
                Ok(s) => break s,
                Err(_) if cancel.is_cancelled() => return Err(HummerError::Cancelled),
                Err(_) if started.elapsed() > CONNECT_WAIT => {
                    return Err(internal!(
                        "the producer of channel {} did not connect within {CONNECT_WAIT:?}",
                        self.channel
                    ));
                }
                Err(_) => {}
            }
        };
        let peer = stream
            .tcp()
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into());
        let mut credits = stream.try_clone().map_err(|source| HummerError::Network {
            endpoint: peer.clone(),
            source,
        })?;
        let grant = |credits: &mut Stream, n: u32| {
            credits
                .write_all(&frame(KIND_CREDIT, &n.to_be_bytes()))
                .map_err(|source| HummerError::Network {
                    endpoint: peer.clone(),
                    source,
                })
        };
        grant(&mut credits, self.capacity as u32)?;
        let mut frames = FrameReader::new(stream, peer.clone());
        loop {
            match frames.next(cancel)? {
                Some((KIND_BATCH, payload)) => {
                    let batch: Vec<T> =
                        postcard::from_bytes(&payload).map_err(|e| HummerError::BadInput {
                            input: format!("data connection from {peer}"),
                            reason: format!("undecodable batch on channel {}: {e}", self.channel),
                        })?;
                    metrics.add_in(batch.len());
                    self.output.send(StreamEvent::Batch(batch), cancel)?;
                    // The batch is in the channel: the sender may send one more. (If the
                    // producer has already ended, the credit has no reader: ignore that.)
                    let _ = grant(&mut credits, 1);
                }
                Some((KIND_STAMPED, payload)) => {
                    let (batch, stamps): (Vec<T>, Vec<i64>) = postcard::from_bytes(&payload)
                        .map_err(|e| HummerError::BadInput {
                            input: format!("data connection from {peer}"),
                            reason: format!("undecodable batch on channel {}: {e}", self.channel),
                        })?;
                    if stamps.len() != batch.len() {
                        return Err(HummerError::BadInput {
                            input: format!("data connection from {peer}"),
                            reason: format!(
                                "batch of {} records with {} timestamps on channel {}",
                                batch.len(),
                                stamps.len(),
                                self.channel
                            ),
                        });
                    }
                    metrics.add_in(batch.len());
                    self.output
                        .send(StreamEvent::Stamped(batch, stamps), cancel)?;
                    let _ = grant(&mut credits, 1);
                }
                Some((KIND_BARRIER, payload)) => {
                    let id = self.eight_bytes("barrier", &payload, &peer)?;
                    self.output
                        .send(StreamEvent::Barrier(u64::from_be_bytes(id)), cancel)?;
                }
                Some((KIND_STATUS, payload)) => {
                    let status = match payload.as_slice() {
                        [0] => WatermarkStatus::Active,
                        [1] => WatermarkStatus::Idle,
                        other => {
                            return Err(HummerError::BadInput {
                                input: format!("data connection from {peer}"),
                                reason: format!(
                                    "status frame {other:?} on channel {}, 0 or 1 expected",
                                    self.channel
                                ),
                            });
                        }
                    };
                    self.output.send(StreamEvent::Status(status), cancel)?;
                }
                Some((KIND_WATERMARK, payload)) => {
                    let w = self.eight_bytes("watermark", &payload, &peer)?;
                    self.output
                        .send(StreamEvent::Watermark(i64::from_be_bytes(w)), cancel)?;
                }
                Some((KIND_END, _)) => {
                    return self.output.send(StreamEvent::EndOfInput, cancel);
                }
                Some((kind, _)) => {
                    return Err(HummerError::BadInput {
                        input: format!("data connection from {peer}"),
                        reason: format!("unexpected frame kind {kind}"),
                    });
                }
                None => {
                    return Err(HummerError::Network {
                        endpoint: peer,
                        source: std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the producer closed the connection before the end of its input",
                        ),
                    });
                }
            }
        }
    }
}
