//! The sending end of a remote channel, fused into the producing subtask.
//!
//! Credit-based flow control: the receiver grants one credit per batch it can take (its
//! channel's capacity at first, then one for every batch it hands on), and the sender sends a
//! batch only against a credit. At most a channel's capacity of batches is ever in flight, so
//! a slow consumer stalls its own producer quickly and holds no more memory than its channel,
//! while the other channels between the same workers keep flowing.

use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::net::TcpStream;
use std::time::Duration;

use serde::Serialize;

use crate::error::{HummerError, Result};
use crate::network::frames::{
    FrameReader, KIND_BATCH, KIND_CREDIT, KIND_END, KIND_HEADER, READ_POLL, frame,
};
use crate::runtime::CancelToken;
use crate::runtime::channel::StreamEvent;

/// Writes a channel's batches into its TCP connection.
pub struct RemoteSender<T> {
    stream: BufWriter<TcpStream>,
    credits_in: FrameReader<TcpStream>,
    credits: u64,
    endpoint: String,
    scratch: Vec<u8>,
    _types: PhantomData<fn(T)>,
}

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
        stream
            .set_write_timeout(Some(Duration::from_secs(30)))
            .map_err(net)?;
        let header = postcard::to_stdvec(&(job, channel as u64))
            .map_err(|e| HummerError::Internal(format!("header: {e}")))?;
        let reverse = stream.try_clone().map_err(net)?;
        reverse.set_read_timeout(Some(READ_POLL)).map_err(net)?;
        let mut stream = BufWriter::with_capacity(64 * 1024, stream);
        stream
            .write_all(&frame(KIND_HEADER, &header))
            .map_err(net)?;
        // The receiver routes the connection by its header: send it now, not with the first
        // batch, which may come much later.
        stream.flush().map_err(net)?;
        Ok(RemoteSender {
            stream,
            credits_in: FrameReader::new(reverse, endpoint.to_string()),
            credits: 0,
            endpoint: endpoint.to_string(),
            scratch: Vec::new(),
            _types: PhantomData,
        })
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
                    return Err(HummerError::Network {
                        endpoint: self.endpoint.clone(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            "the receiver closed the connection",
                        ),
                    });
                }
            }
        }
        self.credits -= 1;
        Ok(())
    }

    /// Sends an event; a batch waits for a credit from the receiver (backpressure).
    pub fn send(&mut self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()> {
        if matches!(event, StreamEvent::Batch(_)) {
            self.take_credit(cancel)?;
        }
        let net = |source| HummerError::Network {
            endpoint: self.endpoint.clone(),
            source,
        };
        match event {
            StreamEvent::Batch(batch) => {
                self.scratch.clear();
                let body = postcard::to_extend(&batch, std::mem::take(&mut self.scratch))
                    .map_err(|e| HummerError::Internal(format!("cannot encode a batch: {e}")))?;
                self.stream
                    .write_all(&frame(KIND_BATCH, &body))
                    .map_err(net)?;
                self.scratch = body;
            }
            StreamEvent::EndOfInput => {
                self.stream.write_all(&frame(KIND_END, &[])).map_err(net)?;
            }
        }
        self.stream.flush().map_err(net)
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
