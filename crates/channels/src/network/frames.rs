//! Framing of the data plane: `[u32 length][u8 kind][payload]`.
//!
//! The first frame of a connection is a header (`kind` 0: postcard `(job id, channel)`); then
//! come batches (`kind` 1: postcard `Vec<T>`; `kind` 7 with timestamps: `(Vec<T>, Vec<i64>)`),
//! watermarks (`kind` 5), watermark statuses (`kind` 6), checkpoint barriers (`kind` 4: a big-endian `u64`
//! checkpoint id; they take no credit) and one end-of-input frame (`kind` 2, empty).
//! In the other direction the receiver sends credits (`kind` 3: a big-endian `u32`): a sender
//! sends a batch only against a credit.

use std::io::{ErrorKind, Read};
use std::time::Duration;

use crate::error::{HummerError, Result};
use crate::types::CancelToken;

pub(crate) const KIND_HEADER: u8 = 0;
pub(crate) const KIND_BATCH: u8 = 1;
pub(crate) const KIND_END: u8 = 2;
/// Receiver to sender: `u32` more batches may be sent.
pub(crate) const KIND_CREDIT: u8 = 3;
/// A checkpoint barrier: `u64` checkpoint id.
pub(crate) const KIND_BARRIER: u8 = 4;
/// A watermark: `i64` milliseconds.
pub(crate) const KIND_WATERMARK: u8 = 5;
/// A watermark status: one byte, 0 active, 1 idle.
pub(crate) const KIND_STATUS: u8 = 6;
/// A batch with event timestamps: postcard `(Vec<T>, Vec<i64>)`, as many timestamps as
/// records. Takes a credit like a batch.
pub(crate) const KIND_STAMPED: u8 = 7;

/// Largest data frame accepted.
pub(crate) const MAX_DATA_FRAME: usize = 256 << 20;

/// How often a blocked read checks for cancellation.
pub(crate) const READ_POLL: Duration = Duration::from_millis(100);

/// Builds a frame around `payload`.
pub(crate) fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 5);
    out.extend_from_slice(&((payload.len() + 1) as u32).to_be_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
    out
}

/// Reads frames from a socket with a read timeout, without losing bytes when a read times
/// out (so cancellation can be checked between reads).
pub(crate) struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    peer: String,
}

impl<R: Read> FrameReader<R> {
    pub(crate) fn new(inner: R, peer: String) -> Self {
        FrameReader {
            inner,
            buf: Vec::new(),
            peer,
        }
    }

    fn bad(&self, reason: String) -> HummerError {
        HummerError::BadInput {
            input: format!("data connection from {}", self.peer),
            reason,
        }
    }

    /// The next frame as `(kind, payload)`, or `None` if the peer closed between frames.
    pub(crate) fn next(&mut self, cancel: &CancelToken) -> Result<Option<(u8, Vec<u8>)>> {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                if len == 0 || len > MAX_DATA_FRAME {
                    return Err(self.bad(format!("frame length {len} out of range")));
                }
                if self.buf.len() >= 4 + len {
                    let kind = self.buf[4];
                    let payload = self.buf[5..4 + len].to_vec();
                    self.buf.drain(..4 + len);
                    return Ok(Some((kind, payload)));
                }
            }
            if cancel.is_cancelled() {
                return Err(HummerError::Cancelled);
            }
            let mut chunk = [0u8; 64 * 1024];
            match self.inner.read(&mut chunk) {
                Ok(0) if self.buf.is_empty() => return Ok(None),
                Ok(0) => {
                    return Err(HummerError::Network {
                        endpoint: self.peer.clone(),
                        source: std::io::Error::new(
                            ErrorKind::UnexpectedEof,
                            "connection closed in the middle of a frame",
                        ),
                    });
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(HummerError::Network {
                        endpoint: self.peer.clone(),
                        source,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary bytes give frames or an error, never a panic or a hang.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut reader = FrameReader::new(std::io::Cursor::new(bytes), "test".into());
            let cancel = CancelToken::default();
            for _ in 0..100 {
                match reader.next(&cancel) {
                    Ok(Some(_)) => continue,
                    _ => break,
                }
            }
        }

        #[test]
        fn frames_round_trip(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..10)) {
            let mut bytes = Vec::new();
            for p in &payloads {
                bytes.extend(frame(KIND_BATCH, p));
            }
            let mut reader = FrameReader::new(std::io::Cursor::new(bytes), "test".into());
            let cancel = CancelToken::default();
            for p in &payloads {
                let (kind, payload) = reader.next(&cancel).unwrap().unwrap();
                prop_assert_eq!(kind, KIND_BATCH);
                prop_assert_eq!(&payload, p);
            }
            prop_assert!(reader.next(&cancel).unwrap().is_none());
        }
    }
}
