//! A secured cluster with real processes: a JobManager and a TaskManager with mutual TLS (the
//! certificates of `hummer cluster certs`). Clients without the cluster's certificate cannot
//! list, submit, upload or register; raw frames are refused before they are decoded; REST is
//! HTTPS and its mutations need the token; garbage and TLS noise on every port never take a
//! process down.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::cli::{BIN, Client};
use hummer::cluster::protocol::{self, Message, Role};

/// A JobManager and one TaskManager with mutual TLS, killed when dropped.
struct SecureCluster {
    dir: tempfile::TempDir,
    jobmanager: Child,
    taskmanager: Child,
    rpc: String,
    rest: String,
}

fn certs(dir: &Path) {
    let out = Command::new(BIN)
        .args(["cluster", "certs", "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

impl SecureCluster {
    fn start() -> SecureCluster {
        let dir = tempfile::tempdir().unwrap();
        let tls = dir.path().join("tls");
        certs(&tls);
        let mut jobmanager = Command::new(BIN)
            .args([
                "jobmanager",
                "--rpc",
                "127.0.0.1:0",
                "--rest",
                "127.0.0.1:0",
            ])
            .arg("--tls-dir")
            .arg(&tls)
            .arg("--data-dir")
            .arg(dir.path().join("jm"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let found = common::cli::read_lines(
            &mut jobmanager,
            &["jobmanager rest on ", "jobmanager listening on "],
        );
        let (rest, rpc) = (found[0].clone(), found[1].clone());
        let mut taskmanager = Command::new(BIN)
            .args(["taskmanager", "--jobmanager", &rpc, "--slots", "2"])
            .arg("--tls-dir")
            .arg(&tls)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        common::cli::read_lines(&mut taskmanager, &["taskmanager "]);
        SecureCluster {
            dir,
            jobmanager,
            taskmanager,
            rpc,
            rest,
        }
    }

    fn tls_dir(&self) -> PathBuf {
        self.dir.path().join("tls")
    }

    fn client(&self, tls_dir: Option<PathBuf>) -> Client {
        Client {
            jobmanager: self.rpc.clone(),
            tls_dir,
        }
    }

    fn token(&self) -> String {
        std::fs::read_to_string(self.tls_dir().join("rest-token"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// An HTTPS request to REST (the CA of the cluster trusted, `localhost` checked);
    /// returns the status code and the body.
    fn https(&self, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
        let mut roots = rustls::RootCertStore::empty();
        for cert in
            rustls::pki_types::pem::PemObject::pem_file_iter(self.tls_dir().join("ca.pem")).unwrap()
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
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(&self.rest).unwrap());
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        write!(
            tls,
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        let _ = tls.read_to_string(&mut response);
        let code = response
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (code, response)
    }

    /// Both processes still run, and the JobManager still answers a client with the
    /// certificates.
    fn assert_alive(&mut self, after: &str) {
        assert!(
            self.jobmanager.try_wait().unwrap().is_none(),
            "{after}: the JobManager exited"
        );
        assert!(
            self.taskmanager.try_wait().unwrap().is_none(),
            "{after}: the TaskManager exited"
        );
        let list = self.client(Some(self.tls_dir())).hummer(&["list"]);
        assert!(list.status.success(), "{after}: {list:?}");
    }
}

impl Drop for SecureCluster {
    fn drop(&mut self) {
        for c in [&mut self.taskmanager, &mut self.jobmanager] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The TaskManagers REST lists.
fn registered_taskmanagers(cluster: &SecureCluster) -> usize {
    let (code, body) = cluster.https("GET", "/taskmanagers", None);
    assert_eq!(code, 200, "{body}");
    body.matches("\"id\"").count()
}

#[test]
fn only_holders_of_the_cluster_certificate_get_in() {
    let mut cluster = SecureCluster::start();
    // With the certificates: a job runs through the secured control and data connections.
    let input = cluster.dir.path().join("words.txt");
    std::fs::write(&input, "to be or not to be\n".repeat(200)).unwrap();
    let out = cluster.dir.path().join("counts");
    let run = cluster.client(Some(cluster.tls_dir())).hummer(&[
        "wordcount",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--parallelism",
        "2",
    ]);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(common::read_counts(&out)["be"], 400);

    // Without them (plaintext), or with another cluster's: refused.
    let plain = cluster.client(None).hummer(&["list"]);
    assert!(!plain.status.success(), "a plaintext client was served");
    let other = cluster.dir.path().join("other-tls");
    certs(&other);
    let foreign = cluster.client(Some(other)).hummer(&["list"]);
    assert!(
        !foreign.status.success(),
        "a foreign certificate was accepted"
    );
    let submit = cluster.client(None).hummer(&[
        "wordcount",
        input.to_str().unwrap(),
        "--output",
        cluster.dir.path().join("x").to_str().unwrap(),
    ]);
    assert!(
        !submit.status.success(),
        "a plaintext client submitted a job"
    );

    // Raw frames, as a TaskManager registering and as a client uploading an artifact, are
    // refused before they are decoded: no answer, nothing registered.
    let before = registered_taskmanagers(&cluster);
    for hello in [
        Message::Hello {
            version: protocol::PROTOCOL_VERSION,
            role: Role::TaskManager(protocol::TaskManagerInfo {
                id: "intruder".into(),
                slots: 64,
                cores: 1,
                memory_bytes: 1 << 30,
                data_host: "127.0.0.1".into(),
                data_networks: Vec::new(),
                running: Vec::new(),
            }),
        },
        Message::UploadArtifact {
            sha256: "00".repeat(32),
            bytes: vec![0; 1024],
        },
    ] {
        let mut raw = TcpStream::connect(&cluster.rpc).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = protocol::sync_io::write(&mut raw, &hello);
        assert!(
            protocol::sync_io::read(&mut raw).is_err(),
            "a raw frame got an answer"
        );
    }
    assert_eq!(registered_taskmanagers(&cluster), before);
    cluster.assert_alive("refused clients");
}

#[test]
fn rest_is_https_and_mutations_need_the_token() {
    let mut cluster = SecureCluster::start();
    let (code, body) = cluster.https("GET", "/overview", None);
    assert_eq!(code, 200, "{body}");
    let (code, body) = cluster.https("PATCH", "/jobs/0000000000000001", None);
    assert_eq!(code, 401, "{body}");
    let (code, _) = cluster.https("PATCH", "/jobs/0000000000000001", Some("wrong"));
    assert_eq!(code, 401);
    let token = cluster.token();
    let (code, body) = cluster.https("PATCH", "/jobs/0000000000000001", Some(&token));
    assert_eq!(code, 404, "{body}");
    // Plain HTTP to the HTTPS port gets no HTTP answer.
    let mut plain = TcpStream::connect(&cluster.rest).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    plain
        .write_all(b"GET /overview HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = plain.read_to_string(&mut answer);
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    cluster.assert_alive("plain HTTP");
}

#[test]
fn garbage_and_tls_noise_on_every_port_never_take_a_process_down() {
    let mut cluster = SecureCluster::start();
    let mut rng = common::Rng::new(7);
    // A TLS ClientHello cut short, then random bytes, then a half-open connection.
    let hello_start: &[u8] = &[
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    for port in [cluster.rpc.clone(), cluster.rest.clone()] {
        for round in 0..20 {
            let Ok(mut s) = TcpStream::connect(&port) else {
                continue;
            };
            let bytes: Vec<u8> = match round % 3 {
                0 => hello_start.to_vec(),
                1 => (0..1 + rng.below(4096))
                    .map(|_| rng.below(256) as u8)
                    .collect(),
                _ => Vec::new(),
            };
            let _ = s.write_all(&bytes);
            if round % 2 == 0 {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    cluster.assert_alive("garbage");
}
