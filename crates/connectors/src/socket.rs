//! `socket_text_stream`: lines read from a TCP server. Unbounded, not parallel.
//!
//! The connection is opened when the job starts; a refused or unreachable address fails
//! `execute()` with an error naming it. The stream ends when the server closes the connection.

use std::io::{BufRead, BufReader, ErrorKind};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::error::{HummerError, Result};
use crate::{Source, SourceContext, SourceReader, SourceStatus};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one read waits for data before the task gets control back (to flush and to notice
/// cancellation).
const READ_TIMEOUT: Duration = Duration::from_millis(20);

/// Reads `\n`-terminated UTF-8 lines from `host:port`.
pub struct SocketTextSource {
    host: String,
    port: u16,
}

impl SocketTextSource {
    /// A source reading from `host:port`.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        SocketTextSource {
            host: host.into(),
            port,
        }
    }

    fn endpoint(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

struct SocketReader {
    endpoint: String,
    reader: BufReader<TcpStream>,
    pending: Vec<u8>,
}

impl Source<String> for SocketTextSource {
    fn name(&self) -> String {
        format!("Socket Stream ({})", self.endpoint())
    }
    fn is_bounded(&self) -> bool {
        false
    }
    fn max_parallelism(&self) -> Option<usize> {
        Some(1)
    }
    fn create_reader(&self, _ctx: &SourceContext) -> Result<Box<dyn SourceReader<String>>> {
        let endpoint = self.endpoint();
        let net_err = |source| HummerError::Network {
            endpoint: endpoint.clone(),
            source,
        };
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(net_err)?
            .next()
            .ok_or_else(|| net_err(std::io::Error::new(ErrorKind::NotFound, "no address")))?;
        let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(net_err)?;
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .map_err(net_err)?;
        tracing::warn!(
            "socket source {endpoint} is not replayable: records it delivered before a failure \
             are not read again (at-most-once)"
        );
        Ok(Box::new(SocketReader {
            endpoint,
            reader: BufReader::new(stream),
            pending: Vec::new(),
        }))
    }
}

impl SourceReader<String> for SocketReader {
    fn poll_next(&mut self, out: &mut Vec<String>, max: usize) -> Result<SourceStatus> {
        for _ in 0..max {
            match self.reader.read_until(b'\n', &mut self.pending) {
                Ok(0) => {
                    // Closed by the server: a last line without terminator still counts.
                    if !self.pending.is_empty() {
                        let line = std::mem::take(&mut self.pending);
                        out.push(self.decode(line)?);
                    }
                    return Ok(SourceStatus::Finished);
                }
                Ok(_) if self.pending.last() == Some(&b'\n') => {
                    let mut line = std::mem::take(&mut self.pending);
                    line.pop();
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    out.push(self.decode(line)?);
                }
                // A partial line: keep it and wait for the rest.
                Ok(_) => return Ok(SourceStatus::Idle(Duration::ZERO)),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(SourceStatus::Idle(Duration::ZERO));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(HummerError::Network {
                        endpoint: self.endpoint.clone(),
                        source,
                    });
                }
            }
            if self.reader.buffer().is_empty() && !out.is_empty() {
                // Hand on what arrived instead of waiting for a full batch.
                return Ok(SourceStatus::Idle(Duration::ZERO));
            }
        }
        Ok(SourceStatus::MoreAvailable)
    }
}

impl SocketReader {
    fn decode(&self, line: Vec<u8>) -> Result<String> {
        String::from_utf8(line).map_err(|e| HummerError::BadInput {
            input: self.endpoint.clone(),
            reason: format!("invalid UTF-8 in a line: {e}"),
        })
    }
}
