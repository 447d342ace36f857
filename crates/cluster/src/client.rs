//! Talking to a JobManager from a program: submitting the running binary as a job, waiting
//! for it, listing, querying and cancelling jobs.

use std::net::TcpStream;

use crate::channels::secure::{Security, Stream};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{HummerError, Result};
use crate::protocol::{
    Collected, JobId, JobSummary, Message, PROTOCOL_VERSION, Role, SubmitRequest, sync_io,
};

/// How long connecting to a JobManager and its hello may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A client connection to a JobManager.
pub struct ClusterClient {
    stream: Stream,
    address: String,
}

impl ClusterClient {
    /// Connects and says hello; `ha:DIR` connects to the leader of the HA directory DIR. The
    /// connection is secured as the process's environment says ([`Security::of_process`]).
    pub fn connect(address: &str) -> Result<Self> {
        Self::connect_with(address, &Security::of_process()?)
    }

    /// [`Self::connect`] with `security`.
    pub fn connect_with(address: &str, security: &Security) -> Result<Self> {
        let resolved = crate::ha::resolve(address)?;
        let address = resolved.as_str();
        let peer = || format!("the JobManager at {address}");
        let refused = |source| HummerError::Connect {
            peer: peer(),
            source,
            hint: "is it running? `hummer cluster start` starts a local cluster; \
                   --jobmanager or HUMMER_JOBMANAGER give the address of another",
        };
        let socket = std::net::ToSocketAddrs::to_socket_addrs(address)
            .map_err(refused)?
            .next()
            .ok_or_else(|| {
                refused(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the address resolves to nothing",
                ))
            })?;
        let stream = TcpStream::connect_timeout(&socket, HANDSHAKE_TIMEOUT).map_err(refused)?;
        let _ = stream.set_nodelay(true);
        // A peer that takes the connection and never answers (not a JobManager) is given up
        // on rather than waited for.
        let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
        let _ = stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT));
        let stream = security
            .connect(stream)
            .map_err(|source| HummerError::Connect {
                peer: peer(),
                source,
                hint: "the TLS handshake failed: a JobManager started with --insecure takes \
                   plaintext clients (no --tls-dir, HUMMER_TLS_DIR unset); otherwise the TLS \
                   directory must hold this cluster's certificates",
            })?;
        let mut client = ClusterClient {
            stream,
            address: address.to_string(),
        };
        let hello = Message::Hello {
            version: PROTOCOL_VERSION,
            role: Role::Client,
        };
        let answer = client.request(&hello).map_err(|e| match e {
            HummerError::Cluster(message) if message.contains("connection:") => {
                HummerError::Connect {
                    peer: peer(),
                    source: std::io::Error::new(std::io::ErrorKind::TimedOut, message),
                    hint: "no Hummer answer within the handshake's time: is this the address of \
                           a JobManager's RPC port (`hummer cluster start` prints it)?",
                }
            }
            other => other,
        })?;
        match answer {
            Message::Welcome => {
                let tcp = client.stream.tcp();
                let _ = tcp.set_read_timeout(None);
                let _ = tcp.set_write_timeout(None);
                Ok(client)
            }
            other => Err(unexpected(&other)),
        }
    }

    /// Sends a request and reads the answer (a JobManager `Error` becomes an error).
    pub fn request(&mut self, message: &Message) -> Result<Message> {
        let net = |e: crate::protocol::FrameError| {
            HummerError::Cluster(format!("JobManager {}: {e}", self.address))
        };
        sync_io::write(&mut self.stream, message).map_err(net)?;
        match sync_io::read(&mut self.stream).map_err(net)? {
            Message::Error(e) => Err(HummerError::Cluster(e)),
            m => Ok(m),
        }
    }

    /// Uploads `bytes` as an artifact unless the JobManager has it; returns its sha256.
    pub fn upload_artifact(&mut self, bytes: Vec<u8>) -> Result<String> {
        let sha256 = hex::encode(Sha256::digest(&bytes));
        if self.request(&Message::HasArtifact(sha256.clone())).is_err() {
            self.request(&Message::UploadArtifact {
                sha256: sha256.clone(),
                bytes,
            })?;
        }
        Ok(sha256)
    }

    /// Submits a job; returns its id.
    pub fn submit(&mut self, request: SubmitRequest) -> Result<JobId> {
        match self.request(&Message::Submit(request))? {
            Message::Submitted(id) => Ok(id),
            other => Err(unexpected(&other)),
        }
    }

    /// Waits until a job ends; returns its summary and its collected records.
    pub fn wait(&mut self, job: &str) -> Result<(JobSummary, Collected)> {
        self.stream
            .tcp()
            .set_read_timeout(None)
            .map_err(|e| HummerError::Cluster(e.to_string()))?;
        match self.request(&Message::WaitJob(job.to_string()))? {
            Message::JobEnded(summary, collected) => Ok((summary, collected)),
            other => Err(unexpected(&other)),
        }
    }

    /// Waits until a job ends, as [`Self::wait`]; with an HA address (`ha:DIR`) it follows the
    /// leader: when the JobManager goes, it asks the next leader, for up to
    /// [`FOLLOW_LEADER_FOR`] without one.
    pub fn wait_following(address: &str, job: &str) -> Result<(JobSummary, Collected)> {
        let mut last_success = std::time::Instant::now();
        loop {
            let result = ClusterClient::connect(address).and_then(|mut c| {
                last_success = std::time::Instant::now();
                c.wait(job)
            });
            match result {
                Err(e)
                    if crate::ha::ha_dir(address).is_some()
                        && last_success.elapsed() < FOLLOW_LEADER_FOR =>
                {
                    tracing::info!(
                        "lost the JobManager while waiting for job {job} ({e}); following the leader"
                    );
                    std::thread::sleep(Duration::from_millis(300));
                }
                other => return other,
            }
        }
    }

    /// All jobs.
    pub fn list(&mut self) -> Result<Vec<JobSummary>> {
        match self.request(&Message::ListJobs)? {
            Message::Jobs(jobs) => Ok(jobs),
            other => Err(unexpected(&other)),
        }
    }

    /// One job.
    pub fn status(&mut self, job: &str) -> Result<JobSummary> {
        match self.request(&Message::JobStatus(job.to_string()))? {
            Message::Jobs(mut jobs) if jobs.len() == 1 => Ok(jobs.remove(0)),
            other => Err(unexpected(&other)),
        }
    }

    /// Cancels a job.
    pub fn cancel(&mut self, job: &str) -> Result<()> {
        self.request(&Message::Cancel(job.to_string())).map(|_| ())
    }

    /// Takes a savepoint of a running job (and stops it with `stop`); returns its directory.
    pub fn savepoint(
        &mut self,
        job: &str,
        dir: Option<std::path::PathBuf>,
        stop: bool,
    ) -> Result<std::path::PathBuf> {
        match self.request(&Message::TriggerSavepoint {
            job: job.to_string(),
            dir,
            stop,
        })? {
            Message::Savepoint(path) => Ok(path),
            other => Err(unexpected(&other)),
        }
    }

    /// Fetches an artifact's bytes (TaskManagers use this).
    pub fn fetch_artifact(&mut self, sha256: &str) -> Result<Vec<u8>> {
        self.stream
            .tcp()
            .set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(|e| HummerError::Cluster(e.to_string()))?;
        match self.request(&Message::FetchArtifact(sha256.to_string()))? {
            Message::Artifact { bytes, .. } => Ok(bytes),
            other => Err(unexpected(&other)),
        }
    }
}

/// How long a client waiting for a job looks for a new leader before it gives up.
pub const FOLLOW_LEADER_FOR: Duration = Duration::from_secs(60);

fn unexpected(m: &Message) -> HummerError {
    HummerError::Cluster(format!("unexpected answer from the JobManager: {m:?}"))
}
