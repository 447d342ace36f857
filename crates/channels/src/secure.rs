//! Transport security of every TCP connection of a cluster: mutual TLS (rustls) with the
//! certificates of one cluster CA, or plaintext when asked for explicitly.
//!
//! A cluster's TLS directory (made by [`make_cluster_certificates`], `hummer cluster certs`)
//! holds the CA's certificate and key and one node certificate with its key, signed by the CA,
//! for the name [`SERVER_NAME`], usable as a server and as a client certificate. Every peer
//! presents it and checks the other's against the CA: a peer without a certificate of the
//! cluster is refused during the handshake, before any frame of the protocol is read.
//!
//! Connections are plain [`TcpStream`]s wrapped after the handshake: [`Stream`] for the
//! blocking code (clients, workers, the data plane), whose two ends may be used from two
//! threads at once (a sender writes data while it reads credits), and [`AsyncStream`] for the
//! async JobManager and TaskManagers.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::types::crypto::provider;
use rustls::ServerConnection;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig};

use crate::error::{HummerError, Result};

/// The name in the node certificate, which every client checks.
pub const SERVER_NAME: &str = "hummer.cluster";
/// The CA's certificate in a TLS directory.
pub const CA_CERT: &str = "ca.pem";
/// The CA's private key (kept to sign more certificates; not read by the cluster).
pub const CA_KEY: &str = "ca.key";
/// The node certificate.
pub const NODE_CERT: &str = "node.pem";
/// The node certificate's private key.
pub const NODE_KEY: &str = "node.key";
/// The REST API's bearer token (made with the certificates; the JobManager asks for it on
/// every REST call that changes something).
pub const REST_TOKEN: &str = "rest-token";
/// Environment variable naming the TLS directory (clients; workers get it from their
/// TaskManager). Unset or empty: plaintext.
pub const TLS_DIR_ENV: &str = "HUMMER_TLS_DIR";
/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a process secures its connections.
#[derive(Clone)]
pub enum Security {
    /// Plaintext (only when asked for: `--insecure`).
    Plaintext,
    /// Mutual TLS with the certificates of a TLS directory.
    MutualTls(Arc<TlsConfigs>),
}

/// The rustls settings of a TLS directory, as a server and as a client.
pub struct TlsConfigs {
    server: Arc<ServerConfig>,
    /// HTTPS for the REST API: the node certificate, no client certificate asked.
    rest_server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
    dir: PathBuf,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Security::Plaintext => f.write_str("plaintext"),
            Security::MutualTls(t) => write!(f, "mutual TLS ({})", t.dir.display()),
        }
    }
}

fn bad(path: &Path, reason: impl std::fmt::Display) -> HummerError {
    HummerError::BadInput {
        input: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl Security {
    /// Mutual TLS with the certificates of the TLS directory `dir`.
    pub fn load(dir: &Path) -> Result<Security> {
        let ca_path = dir.join(CA_CERT);
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(&ca_path).map_err(|e| bad(&ca_path, e))? {
            roots
                .add(cert.map_err(|e| bad(&ca_path, e))?)
                .map_err(|e| bad(&ca_path, e))?;
        }
        if roots.is_empty() {
            return Err(bad(&ca_path, "holds no certificate"));
        }
        let roots = Arc::new(roots);
        let cert_path = dir.join(NODE_CERT);
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
            .map_err(|e| bad(&cert_path, e))?
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| bad(&cert_path, e))?;
        let key_path = dir.join(NODE_KEY);
        let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| bad(&key_path, e))?;
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map_err(|e| bad(&ca_path, e))?;
        let mut server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(dir, e))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| bad(&cert_path, e))?;
        // Connections are long-lived and never resumed: no session tickets (one flight less
        // after every handshake).
        server.send_tls13_tickets = 0;
        let rest_server = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(dir, e))?
            .with_no_client_auth()
            .with_single_cert(chain.clone(), key.clone_key())
            .map_err(|e| bad(&cert_path, e))?;
        let client = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(dir, e))?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| bad(&cert_path, e))?;
        Ok(Security::MutualTls(Arc::new(TlsConfigs {
            server: Arc::new(server),
            rest_server: Arc::new(rest_server),
            client: Arc::new(client),
            dir: dir.to_path_buf(),
        })))
    }

    /// What the environment says: the TLS directory of [`TLS_DIR_ENV`], else plaintext.
    pub fn from_env() -> Result<Security> {
        match std::env::var_os(TLS_DIR_ENV) {
            Some(dir) if !dir.is_empty() => Security::load(Path::new(&dir)),
            _ => Ok(Security::Plaintext),
        }
    }

    /// The security of this process's cluster connections as its environment says
    /// ([`Security::from_env`]), read once: what clients, workers and their data channels
    /// use.
    pub fn of_process() -> Result<Security> {
        static PROCESS: std::sync::OnceLock<std::result::Result<Security, String>> =
            std::sync::OnceLock::new();
        PROCESS
            .get_or_init(|| Security::from_env().map_err(|e| e.to_string()))
            .clone()
            .map_err(|reason| HummerError::BadInput {
                input: format!("${TLS_DIR_ENV}"),
                reason,
            })
    }

    /// The environment that gives a child process (a worker) the same security.
    pub fn env(&self) -> Vec<(String, String)> {
        match self {
            Security::Plaintext => vec![(TLS_DIR_ENV.into(), String::new())],
            Security::MutualTls(t) => {
                vec![(TLS_DIR_ENV.into(), t.dir.display().to_string())]
            }
        }
    }

    /// The rustls settings, with TLS.
    pub fn tls(&self) -> Option<&TlsConfigs> {
        match self {
            Security::Plaintext => None,
            Security::MutualTls(t) => Some(t),
        }
    }

    /// Secures a connection this process opened (the TLS client side).
    pub fn connect(&self, stream: TcpStream) -> io::Result<Stream> {
        match self {
            Security::Plaintext => Ok(Stream::Plain(stream)),
            Security::MutualTls(t) => {
                let name = ServerName::try_from(SERVER_NAME).map_err(io::Error::other)?;
                let conn =
                    ClientConnection::new(t.client.clone(), name).map_err(io::Error::other)?;
                SplitTls::handshake(stream, conn.into())
            }
        }
    }

    /// Secures a connection this process accepted (the TLS server side).
    pub fn accept(&self, stream: TcpStream) -> io::Result<Stream> {
        match self {
            Security::Plaintext => Ok(Stream::Plain(stream)),
            Security::MutualTls(t) => {
                let conn = ServerConnection::new(t.server.clone()).map_err(io::Error::other)?;
                SplitTls::handshake(stream, conn.into())
            }
        }
    }

    /// [`Security::connect`] for async code.
    pub async fn connect_async(&self, stream: tokio::net::TcpStream) -> io::Result<AsyncStream> {
        match self {
            Security::Plaintext => Ok(Box::new(stream)),
            Security::MutualTls(t) => {
                let name = ServerName::try_from(SERVER_NAME).map_err(io::Error::other)?;
                let connector = tokio_rustls::TlsConnector::from(t.client.clone());
                let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, stream))
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake"))??;
                Ok(Box::new(tls))
            }
        }
    }

    /// [`Security::accept`] for async code.
    pub async fn accept_async(&self, stream: tokio::net::TcpStream) -> io::Result<AsyncStream> {
        match self {
            Security::Plaintext => Ok(Box::new(stream)),
            Security::MutualTls(t) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(t.server.clone());
                let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake"))??;
                Ok(Box::new(tls))
            }
        }
    }
}

/// Whether the peer of an accepted connection opens with a TLS handshake, from its first
/// byte (not consumed): a TLS record starts with 22 (handshake), a length-prefixed frame of
/// the cluster protocol with the high byte of a length under 16 MiB, 0. Lets a server tell a
/// peer that speaks the other security setting what to do instead of failing a handshake.
pub async fn peer_starts_tls(stream: &tokio::net::TcpStream) -> io::Result<bool> {
    const TLS_HANDSHAKE_RECORD: u8 = 22;
    let mut first = [0u8; 1];
    let read = tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "nothing sent within 10 s"))??;
    if read == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(first[0] == TLS_HANDSHAKE_RECORD)
}

impl TlsConfigs {
    /// The server settings (the REST server uses them).
    pub fn server(&self) -> Arc<ServerConfig> {
        self.server.clone()
    }

    /// The HTTPS settings of the REST API.
    pub fn rest_server(&self) -> Arc<ServerConfig> {
        self.rest_server.clone()
    }

    /// The client settings.
    pub fn client(&self) -> Arc<ClientConfig> {
        self.client.clone()
    }
}

/// An async connection, plain or TLS.
pub type AsyncStream = Box<dyn AsyncConnection>;

/// What an async connection does.
pub trait AsyncConnection: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> AsyncConnection for T {}

/// A blocking connection, plain or TLS. Clones ([`Stream::try_clone`]) share it: one thread
/// may read while another writes.
pub enum Stream {
    /// Plaintext.
    Plain(TcpStream),
    /// TLS, shared by the clones.
    Tls(Arc<SplitTls>),
}

impl Stream {
    /// A second handle on the same connection.
    pub fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Plain(s) => s.try_clone().map(Stream::Plain),
            Stream::Tls(t) => Ok(Stream::Tls(t.clone())),
        }
    }

    /// Ends this side's writing: the peer reads the end of the stream (after a TLS
    /// close_notify). What is still pending is written first, waiting out socket timeouts
    /// for up to `patience`.
    pub fn shutdown_write(&self, patience: Duration) -> io::Result<()> {
        if let Stream::Tls(t) = self {
            lock(&t.conn).send_close_notify();
            let started = std::time::Instant::now();
            loop {
                match t.flush() {
                    Ok(()) => break,
                    Err(e) if is_timeout(&e) && started.elapsed() < patience => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.tcp().shutdown(std::net::Shutdown::Write)
    }

    /// The TCP socket underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.socket,
        }
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match *self {
            Stream::Plain(s) => (&*s).read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match *self {
            Stream::Plain(s) => (&*s).write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match *self {
            Stream::Plain(s) => (&*s).flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self).flush()
    }
}

/// A TLS connection whose reading and writing ends may be used from two threads. The rustls
/// state is locked only to move bytes in and out of it, never across a socket call; writers
/// are serialised (records go out in the order they were made) and so are readers.
pub struct SplitTls {
    conn: Mutex<Connection>,
    /// What was read from the socket and not yet given to rustls, for the reader.
    reading: Mutex<RawInput>,
    /// Encrypted bytes not yet on the socket, for the writer.
    writing: Mutex<Outgoing>,
    socket: TcpStream,
}

/// Encrypted bytes for the socket: `bytes[sent..]` are still to be written. A write that
/// times out (a slow receiver) keeps them here; the next write, flush or read sends them.
#[derive(Default)]
struct Outgoing {
    bytes: Vec<u8>,
    sent: usize,
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Bytes read from the socket: `bytes[start..end]` are not yet given to rustls (which takes
/// at most a few records at a time).
struct RawInput {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl SplitTls {
    /// Runs the handshake (bounded by [`HANDSHAKE_TIMEOUT`]) and wraps the connection.
    fn handshake(mut socket: TcpStream, mut conn: Connection) -> io::Result<Stream> {
        let (read_timeout, write_timeout) = (socket.read_timeout()?, socket.write_timeout()?);
        socket.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        socket.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
        while conn.is_handshaking() {
            conn.complete_io(&mut socket)?;
        }
        socket.set_read_timeout(read_timeout)?;
        socket.set_write_timeout(write_timeout)?;
        Ok(Stream::Tls(Arc::new(SplitTls {
            conn: Mutex::new(conn),
            reading: Mutex::new(RawInput {
                bytes: vec![0; 32 * 1024],
                start: 0,
                end: 0,
            }),
            writing: Mutex::new(Outgoing::default()),
            socket,
        })))
    }

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut raw = lock(&self.reading);
        loop {
            match lock(&self.conn).reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // Before waiting for the peer: what a timed-out write left (the peer may be
            // waiting for it), unless a writer is at it.
            if let Ok(mut out) = self.writing.try_lock() {
                match self.send(&mut out) {
                    Err(e) if !is_timeout(&e) => return Err(e),
                    _ => {}
                }
            }
            if raw.start == raw.end {
                let RawInput { bytes, start, end } = &mut *raw;
                *end = (&self.socket).read(&mut bytes[..])?;
                *start = 0;
            }
            let wants_write = {
                let mut conn = lock(&self.conn);
                // Nothing read: the end of the connection, which rustls takes as such.
                let mut rest = &raw.bytes[raw.start..raw.end];
                let before = rest.len();
                conn.read_tls(&mut rest)?;
                raw.start += before - rest.len();
                conn.process_new_packets().map_err(tls_error)?;
                conn.wants_write()
            };
            if wants_write {
                // Answers the peer may wait for (a key update, say).
                match self.send(&mut lock(&self.writing)) {
                    Err(e) if !is_timeout(&e) => return Err(e),
                    _ => {}
                }
            }
        }
    }

    /// Takes `buf` once what earlier writes left is on the socket (a timeout then: nothing is
    /// taken, try again); what it takes is sent now or, after a timeout, by the next call.
    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let mut out = lock(&self.writing);
        self.send(&mut out)?;
        let n = lock(&self.conn).writer().write(buf)?;
        match self.send(&mut out) {
            Err(e) if !is_timeout(&e) => Err(e),
            _ => Ok(n),
        }
    }

    fn flush(&self) -> io::Result<()> {
        self.send(&mut lock(&self.writing))
    }

    /// Writes out what is pending and what the rustls state has to send; the caller holds
    /// the writing lock. A socket timeout leaves the rest pending.
    fn send(&self, out: &mut Outgoing) -> io::Result<()> {
        loop {
            if out.sent == out.bytes.len() {
                out.bytes.clear();
                out.sent = 0;
                let mut conn = lock(&self.conn);
                if !conn.wants_write() {
                    return Ok(());
                }
                conn.write_tls(&mut out.bytes)?;
                continue;
            }
            match (&self.socket).write(&out.bytes[out.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => out.sent += n,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Makes a cluster's TLS directory: a CA, and a node certificate for [`SERVER_NAME`],
/// `localhost`, `127.0.0.1` and `hosts` (server and client use; the names let HTTPS clients
/// of the REST API check it) signed by it, their keys and a REST token (the secrets readable
/// by the owner only). Refuses to overwrite a directory that already holds a CA.
pub fn make_cluster_certificates(dir: &Path, hosts: &[String]) -> Result<()> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let fail = |e: rcgen::Error| crate::error::internal!("cannot make certificates: {e}");
    if dir.join(CA_CERT).exists() {
        return Err(bad(dir, "already holds a cluster CA (ca.pem)"));
    }
    std::fs::create_dir_all(dir).map_err(|e| HummerError::io("cannot create", dir, e))?;
    let ca_key = KeyPair::generate().map_err(fail)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca.distinguished_name
        .push(DnType::CommonName, "Hummer cluster CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(fail)?;
    let issuer = Issuer::new(ca, &ca_key);
    let node_key = KeyPair::generate().map_err(fail)?;
    let mut names = vec![
        SERVER_NAME.to_string(),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
    ];
    names.extend(hosts.iter().cloned());
    let mut node = CertificateParams::new(names).map_err(fail)?;
    node.distinguished_name
        .push(DnType::CommonName, "Hummer cluster node");
    node.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    node.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let node_cert = node.signed_by(&node_key, &issuer).map_err(fail)?;
    let write = |name: &str, text: String, private: bool| -> Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| HummerError::io("cannot write", &path, e))?;
        if private {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| HummerError::io("cannot restrict", &path, e))?;
        }
        Ok(())
    };
    let mut token = [0u8; 32];
    provider()
        .secure_random
        .fill(&mut token)
        .map_err(|e| crate::error::internal!("no randomness for the REST token: {e:?}"))?;
    write(REST_TOKEN, hex::encode(token), true)?;
    write(CA_KEY, ca_key.serialize_pem(), true)?;
    write(NODE_KEY, node_key.serialize_pem(), true)?;
    write(NODE_CERT, node_cert.pem(), false)?;
    write(CA_CERT, ca_cert.pem(), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair(server: &Security, client: &Security) -> (io::Result<Stream>, io::Result<Stream>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = server.clone();
        let accepted = std::thread::spawn(move || server.accept(listener.accept().unwrap().0));
        let connected = client.connect(TcpStream::connect(addr).unwrap());
        (accepted.join().unwrap(), connected)
    }

    #[test]
    fn both_ends_of_a_tls_connection_work_from_two_threads() {
        let dir = tempfile::tempdir().unwrap();
        make_cluster_certificates(dir.path(), &[]).unwrap();
        let tls = Security::load(dir.path()).unwrap();
        let (server, client) = pair(&tls, &tls);
        let (server, client) = (server.unwrap(), client.unwrap());
        // The client writes a megabyte from one thread while another reads the echo of
        // credits; the server reads it and answers every 64 KiB.
        let reader = client.try_clone().unwrap();
        let credits = std::thread::spawn(move || {
            let mut got = [0u8; 16];
            (&reader).read_exact(&mut got).unwrap();
            got
        });
        let echo = std::thread::spawn(move || {
            let mut total = 0;
            let mut buf = vec![0u8; 64 * 1024];
            while total < 1 << 20 {
                let n = (&server).read(&mut buf).unwrap();
                assert!(buf[..n].iter().all(|&b| b == 7));
                total += n;
            }
            (&server).write_all(&[9u8; 16]).unwrap();
            total
        });
        (&client).write_all(&vec![7u8; 1 << 20]).unwrap();
        assert_eq!(echo.join().unwrap(), 1 << 20);
        assert_eq!(credits.join().unwrap(), [9u8; 16]);
    }

    #[test]
    fn a_peer_without_a_cluster_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        make_cluster_certificates(dir.path(), &[]).unwrap();
        let other = tempfile::tempdir().unwrap();
        make_cluster_certificates(other.path(), &[]).unwrap();
        let tls = Security::load(dir.path()).unwrap();
        // Plaintext (an HTTP request) to a TLS server: refused.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        assert!(tls.accept(listener.accept().unwrap().0).is_err());
        // Certificates of another cluster CA: refused on both sides.
        let foreign = Security::load(other.path()).unwrap();
        let (server, client) = pair(&tls, &foreign);
        assert!(server.is_err() || client.is_err());
        // A second `certs` run on the same directory is refused.
        assert!(make_cluster_certificates(dir.path(), &[]).is_err());
    }
}
