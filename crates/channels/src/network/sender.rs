//! The sending end of a remote channel, fused into the producing subtask.
//!
//! Credit-based flow control: the receiver grants one credit per batch it can take (its
//! channel's capacity at first, then one for every batch it hands on), and the sender sends a
//! batch only against a credit. At most a channel's capacity of batches is ever in flight, so
//! a slow consumer stalls its own producer quickly and holds no more memory than its channel,
//! while the other channels between the same workers keep flowing.

use std::io::Write;
use std::marker::PhantomData;
use std::net::TcpStream;

use crate::secure::{Security, Stream};
use std::time::Duration;

use serde::Serialize;

use crate::error::{HummerError, Result, internal};
use crate::network::frames::{
    FrameReader, KIND_BARRIER, KIND_BATCH, KIND_CREDIT, KIND_END, KIND_HEADER, KIND_STAMPED,
    KIND_STATUS, KIND_WATERMARK, MAX_DATA_FRAME, READ_POLL, frame,
};
use crate::types::CancelToken;
use crate::types::{StreamEvent, Timestamp, WatermarkStatus};

/// Writes a channel's batches into its TCP connection.
pub struct RemoteSender<T> {
    stream: Stream,
    credits_in: FrameReader<Stream>,
    credits: u64,
    endpoint: String,
    _types: PhantomData<fn(T)>,
}

/// How long a blocked write waits before it checks for cancellation (and tries again).
const WRITE_POLL: Duration = Duration::from_millis(100);

/// How long the sender waits, after its end of input, for the receiver to close.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

impl<T: Serialize> RemoteSender<T> {
    /// Connects to the data listener at `endpoint` and announces the channel.
    pub fn connect(endpoint: &str, job: &str, channel: usize, bind: Option<&str>) -> Result<Self> {
        let net = |source| HummerError::Network {
            endpoint: endpoint.to_string(),
            source,
        };
        let stream = match bind {
            // Binding the local end chooses the interface the shuffle leaves through.
            Some(local) => connect_from(local, endpoint).map_err(net)?,
            None => TcpStream::connect(endpoint).map_err(net)?,
        };
        stream.set_nodelay(true).map_err(net)?;
        stream.set_write_timeout(Some(WRITE_POLL)).map_err(net)?;
        let stream = Security::of_process()?.connect(stream).map_err(net)?;
        let header =
            postcard::to_stdvec(&(job, channel as u64)).map_err(|e| internal!("header: {e}"))?;
        let reverse = stream.try_clone().map_err(net)?;
        reverse
            .tcp()
            .set_read_timeout(Some(READ_POLL))
            .map_err(net)?;
        let mut sender = RemoteSender {
            stream,
            credits_in: FrameReader::new(reverse, endpoint.to_string()),
            credits: 0,
            endpoint: endpoint.to_string(),
            _types: PhantomData,
        };
        // The receiver routes the connection by its header: send it now, not with the first
        // batch, which may come much later.
        sender.write_patiently(&frame(KIND_HEADER, &header), &CancelToken::default())?;
        Ok(sender)
    }

    fn net_error(&self, source: std::io::Error) -> HummerError {
        HummerError::Network {
            endpoint: self.endpoint.clone(),
            source,
        }
    }

    /// Writes all of `bytes`, waiting as long as the receiver is slow (backpressure) but
    /// noticing cancellation.
    fn write_patiently(&mut self, bytes: &[u8], cancel: &CancelToken) -> Result<()> {
        let mut written = 0;
        while written < bytes.len() {
            match self.stream.write(&bytes[written..]) {
                Ok(0) => return Err(self.net_error(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => written += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    if cancel.is_cancelled() {
                        return Err(HummerError::Cancelled);
                    }
                }
                Err(e) => return Err(self.net_error(e)),
            }
        }
        Ok(())
    }

    /// Batches that may be sent before waiting for the receiver.
    pub fn credits(&self) -> u64 {
        self.credits
    }

    /// Waits for a credit (backpressure), reading the receiver's credit frames.
    fn take_credit(&mut self, cancel: &CancelToken) -> Result<()> {
        while self.credits == 0 {
            match self.credits_in.next(cancel)? {
                Some((KIND_CREDIT, payload)) if payload.len() == 4 => {
                    let grant =
                        u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                    self.credits += u64::from(grant);
                }
                Some((kind, _)) => {
                    return Err(HummerError::BadInput {
                        input: format!("data connection to {}", self.endpoint),
                        reason: format!("expected a credit frame, got kind {kind}"),
                    });
                }
                None => {
                    return Err(self.net_error(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the receiver closed the connection",
                    )));
                }
            }
        }
        self.credits -= 1;
        Ok(())
    }

    /// Sends an event; a batch waits for a credit from the receiver (backpressure). A batch
    /// whose encoding would exceed the largest frame is sent in parts.
    pub fn send(&mut self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()> {
        match event {
            StreamEvent::Batch(batch) => self.send_batch(batch, None, cancel),
            StreamEvent::Stamped(batch, stamps) => self.send_batch(batch, Some(stamps), cancel),
            StreamEvent::Barrier(id) => {
                self.write_patiently(&frame(KIND_BARRIER, &id.to_be_bytes()), cancel)
            }
            StreamEvent::Watermark(w) => {
                self.write_patiently(&frame(KIND_WATERMARK, &w.to_be_bytes()), cancel)
            }
            StreamEvent::Status(status) => {
                let byte = u8::from(status == WatermarkStatus::Idle);
                self.write_patiently(&frame(KIND_STATUS, &[byte]), cancel)
            }
            StreamEvent::EndOfInput => {
                self.write_patiently(&frame(KIND_END, &[]), cancel)?;
                self.close(cancel)
            }
        }
    }

    fn send_batch(
        &mut self,
        mut batch: Vec<T>,
        mut stamps: Option<Vec<Timestamp>>,
        cancel: &CancelToken,
    ) -> Result<()> {
        let body = match &stamps {
            None => postcard::to_stdvec(&batch),
            Some(stamps) => postcard::to_stdvec(&(&batch, stamps)),
        }
        .map_err(|e| internal!("cannot encode a batch: {e}"))?;
        if body.len() + 1 > MAX_DATA_FRAME {
            if batch.len() < 2 {
                return Err(HummerError::BadInput {
                    input: format!("channel to {}", self.endpoint),
                    reason: format!(
                        "one record encodes to {} bytes, more than a data frame carries ({MAX_DATA_FRAME})",
                        body.len()
                    ),
                });
            }
            let half = batch.len() / 2;
            let second = batch.split_off(half);
            let second_stamps = stamps.as_mut().map(|s| s.split_off(half));
            self.send_batch(batch, stamps, cancel)?;
            return self.send_batch(second, second_stamps, cancel);
        }
        self.take_credit(cancel)?;
        let kind = if stamps.is_some() {
            KIND_STAMPED
        } else {
            KIND_BATCH
        };
        self.write_patiently(&frame(kind, &body), cancel)
    }

    /// After the end of input: stops writing and waits until the receiver, having read
    /// everything, closes. Closing with unread credits in the socket would make the kernel
    /// reset the connection and drop data still queued for the receiver.
    fn close(&mut self, cancel: &CancelToken) -> Result<()> {
        match self.stream.shutdown_write(CLOSE_WAIT) {
            Ok(()) => {}
            // The receiver read the end of input and closed first (over TLS the close_notify
            // that follows the end can meet a closed socket): nothing is lost.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotConnected
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                ) =>
            {
                return Ok(());
            }
            Err(e) => return Err(self.net_error(e)),
        }
        let deadline = std::time::Instant::now() + CLOSE_WAIT;
        loop {
            match self.credits_in.next(cancel) {
                Ok(None) => return Ok(()),
                Ok(Some(_)) => {}
                // The receiver is gone after it read the end of input: nothing is lost.
                Err(HummerError::Network { .. }) => return Ok(()),
                Err(e) => return Err(e),
            }
            if std::time::Instant::now() > deadline {
                return Err(self.net_error(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the receiver did not close the channel after its end of input",
                )));
            }
        }
    }
}

/// Connects to `remote` from the local IP `local` (bind before connect), so that the traffic
/// uses the interface that owns `local`.
fn connect_from(local: &str, remote: &str) -> std::io::Result<TcpStream> {
    use std::net::{SocketAddr, ToSocketAddrs};
    let local_ip = local
        .parse::<std::net::IpAddr>()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let remote: SocketAddr = remote
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no address"))?;
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(remote),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.bind(&SocketAddr::new(local_ip, 0).into())?;
    socket.connect(&remote.into())?;
    Ok(socket.into())
}
