//! The tests' one HTTP/1.1 client: plain HTTP, or HTTPS trusting a cluster's CA (`ca.pem` of
//! `hummer cluster certs`, the server checked as `localhost`), with an optional bearer token.
//! One request per connection (`Connection: close`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

/// How long a request may wait for its answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A client of one HTTP(S) server.
#[derive(Clone)]
pub struct Http {
    address: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    token: Option<String>,
}

/// A response: its status code and its body.
#[derive(Clone, Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body (chunked transfer decoded).
    pub body: String,
}

impl Response {
    /// The body as JSON, `null` if it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

impl Http {
    /// Plain HTTP to `address` (`HOST:PORT`).
    pub fn plain(address: &str) -> Http {
        Http {
            address: address.to_string(),
            tls: None,
            token: None,
        }
    }

    /// HTTPS to `address`, trusting the certificates in the PEM file `ca`.
    pub fn https(address: &str, ca: &Path) -> Http {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::pem::PemObject::pem_file_iter(ca)
            .unwrap_or_else(|e| panic!("{}: {e}", ca.display()))
        {
            roots.add(cert.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        Http {
            address: address.to_string(),
            tls: Some(Arc::new(config)),
            token: None,
        }
    }

    /// The same client sending `Authorization: Bearer TOKEN`.
    pub fn with_token(mut self, token: &str) -> Http {
        self.token = Some(token.to_string());
        self
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, "")
    }

    /// `GET path`: the status and the body as JSON (`null` if it is not).
    pub fn get_json(&self, path: &str) -> (u16, Value) {
        let response = self.get(path);
        (response.status, response.json())
    }

    /// `POST path` with a JSON `body` (may be empty).
    pub fn post(&self, path: &str, body: &str) -> Response {
        self.request("POST", path, body)
    }

    /// `DELETE path`.
    pub fn delete(&self, path: &str) -> Response {
        self.request("DELETE", path, "")
    }

    /// `METHOD path` with `body`; panics when no HTTP response comes.
    pub fn request(&self, method: &str, path: &str, body: &str) -> Response {
        self.try_request(method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path} on {}: {e}", self.address))
    }

    /// `METHOD path` with `body` (sent as JSON when not empty).
    pub fn try_request(&self, method: &str, path: &str, body: &str) -> std::io::Result<Response> {
        let tcp = TcpStream::connect(&self.address)?;
        tcp.set_read_timeout(Some(TIMEOUT))?;
        tcp.set_write_timeout(Some(TIMEOUT))?;
        let host = if self.tls.is_some() {
            "localhost"
        } else {
            &self.address
        };
        let mut request =
            format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        if let Some(token) = &self.token {
            request.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        if !body.is_empty() {
            request.push_str("Content-Type: application/json\r\n");
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let mut raw = Vec::new();
        match &self.tls {
            None => exchange(tcp, &request, &mut raw)?,
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
                let conn = rustls::ClientConnection::new(config.clone(), name)
                    .map_err(std::io::Error::other)?;
                exchange(rustls::StreamOwned::new(conn, tcp), &request, &mut raw)?
            }
        }
        parse(&raw)
    }
}

/// Writes the request, reads the answer to the end of the connection. A connection closed
/// without TLS's close_notify keeps what was read.
fn exchange(mut s: impl Read + Write, request: &str, raw: &mut Vec<u8>) -> std::io::Result<()> {
    s.write_all(request.as_bytes())?;
    s.flush()?;
    match s.read_to_end(raw) {
        Err(e) if raw.is_empty() => Err(e),
        _ => Ok(()),
    }
}

fn parse(raw: &[u8]) -> std::io::Result<Response> {
    let invalid = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{what}: {:?}",
                String::from_utf8_lossy(&raw[..raw.len().min(200)])
            ),
        )
    };
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| invalid("no HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| invalid("no HTTP status"))?;
    let mut body = raw[split + 4..].to_vec();
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if chunked {
        body = dechunk(&body).ok_or_else(|| invalid("bad chunked body"))?;
    }
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}

/// The data of a chunked body.
fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    loop {
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&rest[..end]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[end + 2..];
        if size == 0 {
            return Some(data);
        }
        data.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}
