//! The sending end of a remote channel, fused into the producing subtask.

use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::net::TcpStream;
use std::time::Duration;

use serde::Serialize;

use crate::error::{HummerError, Result};
use crate::network::frames::{KIND_BATCH, KIND_END, KIND_HEADER, frame};
use crate::runtime::channel::StreamEvent;

/// Writes a channel's batches into its TCP connection.
pub struct RemoteSender<T> {
    stream: BufWriter<TcpStream>,
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
        let mut stream = BufWriter::with_capacity(64 * 1024, stream);
        stream
            .write_all(&frame(KIND_HEADER, &header))
            .map_err(net)?;
        // The receiver routes the connection by its header: send it now, not with the first
        // batch, which may come much later.
        stream.flush().map_err(net)?;
        Ok(RemoteSender {
            stream,
            endpoint: endpoint.to_string(),
            scratch: Vec::new(),
            _types: PhantomData,
        })
    }

    /// Sends an event (blocks while the receiver's window is closed: backpressure).
    pub fn send(&mut self, event: StreamEvent<T>) -> Result<()> {
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
