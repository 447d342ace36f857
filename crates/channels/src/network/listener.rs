//! A worker's data listener: accepts the connections of remote channels and hands each to
//! the receiver task waiting for its channel.

use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{HummerError, Result, internal};
use crate::network::frames::{KIND_HEADER, READ_POLL};
use crate::secure::{Security, Stream};
use crate::types::CancelToken;

/// Per channel: a receiver waiting for its connection, or a connection that came first.
enum Slot {
    Waiting(Sender<Stream>),
    Arrived(Stream),
}

type Waiting = Arc<Mutex<HashMap<usize, Slot>>>;

/// Accepts data connections for one job.
pub struct DataListener {
    port: u16,
    job: String,
    waiting: Waiting,
}

impl DataListener {
    /// Binds `host:0` (an ephemeral port) and starts accepting in a background thread that
    /// ends with the process or when `cancel` is set.
    pub fn bind(host: &str, job: &str, cancel: CancelToken) -> Result<DataListener> {
        let endpoint = format!("{host}:0");
        let listener = TcpListener::bind(&endpoint).map_err(|source| HummerError::Network {
            endpoint: endpoint.clone(),
            source,
        })?;
        let port = listener
            .local_addr()
            .map_err(|source| HummerError::Network { endpoint, source })?
            .port();
        let waiting: Waiting = Arc::default();
        let (w, job_id) = (waiting.clone(), job.to_string());
        listener
            .set_nonblocking(true)
            .map_err(|e| internal!("data listener: {e}"))?;
        std::thread::Builder::new()
            .name("data-listener".into())
            .spawn(move || accept_loop(listener, job_id, w, cancel))
            .map_err(|e| internal!("data listener thread: {e}"))?;
        Ok(DataListener {
            port,
            job: job.to_string(),
            waiting,
        })
    }

    /// The port the listener accepts on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Registers interest in a channel; the connection arrives on the returned receiver.
    pub fn register_channel(&self, channel: usize) -> Receiver<Stream> {
        let (tx, rx) = channel_pair();
        if let Ok(mut w) = self.waiting.lock() {
            match w.remove(&channel) {
                Some(Slot::Arrived(stream)) => {
                    let _ = tx.send(stream);
                }
                _ => {
                    w.insert(channel, Slot::Waiting(tx));
                }
            }
        }
        rx
    }

    /// The job this listener accepts connections for.
    pub fn job(&self) -> &str {
        &self.job
    }
}

fn channel_pair() -> (Sender<Stream>, Receiver<Stream>) {
    channel()
}

fn accept_loop(listener: TcpListener, job: String, waiting: Waiting, cancel: CancelToken) {
    while !cancel.is_cancelled() {
        match listener.accept() {
            Ok((stream, peer)) => {
                // Route on a thread of its own: a peer slow to send its header must not hold
                // up the others.
                let (job, waiting, cancel) = (job.clone(), waiting.clone(), cancel.clone());
                std::thread::spawn(move || {
                    if let Err(e) = route(stream, &job, &waiting, &cancel) {
                        tracing::warn!("refused a data connection from {peer}: {e}");
                    }
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("data listener: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Reads a connection's header and hands it to the receiver of its channel.
fn route(stream: TcpStream, job: &str, waiting: &Waiting, cancel: &CancelToken) -> Result<()> {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".into());
    stream
        .set_nonblocking(false)
        .and_then(|_| stream.set_nodelay(true))
        .and_then(|_| stream.set_read_timeout(Some(READ_POLL)))
        .map_err(|source| HummerError::Network {
            endpoint: peer.clone(),
            source,
        })?;
    let bad = |reason: String| HummerError::BadInput {
        input: format!("data connection from {peer}"),
        reason,
    };
    // A peer without the cluster's certificate is refused here, before any frame is read.
    let stream = Security::of_process()?
        .accept(stream)
        .map_err(|e| bad(format!("refused: {e}")))?;
    // The header is small: read it byte-exact so no data frame is consumed here.
    let mut len = [0u8; 4];
    read_exact_timeout(&stream, &mut len, cancel).map_err(|e| bad(e.to_string()))?;
    let len = u32::from_be_bytes(len) as usize;
    if !(2..=4096).contains(&len) {
        return Err(bad(format!("header length {len} out of range")));
    }
    let mut body = vec![0u8; len];
    read_exact_timeout(&stream, &mut body, cancel).map_err(|e| bad(e.to_string()))?;
    if body[0] != KIND_HEADER {
        return Err(bad(format!(
            "expected a header frame, got kind {}",
            body[0]
        )));
    }
    let (header_job, channel): (String, u64) =
        postcard::from_bytes(&body[1..]).map_err(|e| bad(format!("bad header: {e}")))?;
    if header_job != job {
        return Err(bad(format!(
            "connection for job {header_job}, this worker runs {job}"
        )));
    }
    let mut w = waiting
        .lock()
        .map_err(|_| internal!("data listener lock poisoned"))?;
    match w.remove(&(channel as usize)) {
        Some(Slot::Waiting(sender)) => sender
            .send(stream)
            .map_err(|_| bad(format!("the receiver of channel {channel} is gone"))),
        Some(Slot::Arrived(_)) => Err(bad(format!("channel {channel} connected twice"))),
        None => {
            // The producer was quicker than this worker's set-up: keep it for the receiver.
            w.insert(channel as usize, Slot::Arrived(stream));
            Ok(())
        }
    }
}

fn read_exact_timeout(
    mut stream: &Stream,
    buf: &mut [u8],
    cancel: &CancelToken,
) -> std::io::Result<()> {
    use std::io::Read;
    let mut filled = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if cancel.is_cancelled() || std::time::Instant::now() > deadline {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
