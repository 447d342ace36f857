//! A secured cluster with real processes: a JobManager and a TaskManager with mutual TLS (the
//! certificates of `hummer cluster certs`). Clients without the cluster's certificate cannot
//! list, submit, upload or register; raw frames are refused before they are decoded; REST is
//! HTTPS and its mutations need the token; garbage and TLS noise on every port never take a
//! process down.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use common::cli::Client;
use common::cluster::{TestCluster, make_certs};
use hummer::cluster::protocol::{self, Message, Role};

/// A JobManager and one TaskManager with mutual TLS.
fn secure_cluster() -> TestCluster {
    TestCluster::builder()
        .tls()
        .taskmanagers(1)
        .slots(2)
        .start()
}

/// A client of the cluster with the TLS directory `tls_dir` (`None`: plaintext).
fn client(cluster: &TestCluster, tls_dir: Option<&Path>) -> Client {
    Client {
        jobmanager: cluster.rpc(),
        tls_dir: tls_dir.map(Path::to_path_buf),
    }
}

/// Both processes still run, and the JobManager still answers a client with the
/// certificates.
fn assert_alive(cluster: &mut TestCluster, after: &str) {
    cluster.assert_running(after);
    let list = cluster.hummer(&["list"]);
    assert!(list.status.success(), "{after}: {list:?}");
}

/// The TaskManagers REST lists.
fn registered_taskmanagers(cluster: &TestCluster) -> usize {
    let response = cluster.http().get("/taskmanagers");
    assert_eq!(response.status, 200, "{}", response.body);
    response.body.matches("\"id\"").count()
}

#[test]
fn only_holders_of_the_cluster_certificate_get_in() {
    let mut cluster = secure_cluster();
    // With the certificates: a job runs through the secured control and data connections.
    let input = cluster.dir().join("words.txt");
    std::fs::write(&input, "to be or not to be\n".repeat(200)).unwrap();
    let out = cluster.dir().join("counts");
    let run = cluster.hummer(&[
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
    let plain = client(&cluster, None).hummer(&["list"]);
    assert!(!plain.status.success(), "a plaintext client was served");
    // ... and told what to do, once.
    let said = String::from_utf8_lossy(&plain.stderr);
    assert!(
        said.contains("uses mutual TLS")
            && said.contains("--tls-dir")
            && said.contains("HUMMER_TLS_DIR"),
        "{said}"
    );
    let other = cluster.dir().join("other-tls");
    make_certs(&other);
    let foreign = client(&cluster, Some(&other)).hummer(&["list"]);
    assert!(
        !foreign.status.success(),
        "a foreign certificate was accepted"
    );
    let said = String::from_utf8_lossy(&foreign.stderr);
    assert!(said.contains("the TLS handshake failed"), "{said}");
    let submit = client(&cluster, None).hummer(&[
        "wordcount",
        input.to_str().unwrap(),
        "--output",
        cluster.dir().join("x").to_str().unwrap(),
    ]);
    assert!(
        !submit.status.success(),
        "a plaintext client submitted a job"
    );

    // Raw frames, as a TaskManager registering and as a client uploading an artifact, are
    // refused before they are decoded: the only answer is the error saying that the cluster
    // uses mutual TLS, and nothing is registered.
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
        let mut raw = TcpStream::connect(cluster.rpc()).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = protocol::sync_io::write(&mut raw, &hello);
        match protocol::sync_io::read(&mut raw) {
            Ok(Message::Error(e)) => assert!(e.contains("mutual TLS"), "{e}"),
            other => panic!("a raw frame got {other:?} instead of the mutual-TLS error"),
        }
        assert!(
            protocol::sync_io::read(&mut raw).is_err(),
            "the connection stayed open after the refusal"
        );
    }
    assert_eq!(registered_taskmanagers(&cluster), before);
    assert_alive(&mut cluster, "refused clients");
}

#[test]
fn rest_is_https_and_mutations_need_the_token() {
    let mut cluster = secure_cluster();
    let rest = cluster.http();
    let overview = rest.get("/overview");
    assert_eq!(overview.status, 200, "{}", overview.body);
    let patch = rest.request("PATCH", "/jobs/0000000000000001", "");
    assert_eq!(patch.status, 401, "{}", patch.body);
    let wrong = rest.clone().with_token("wrong");
    assert_eq!(
        wrong.request("PATCH", "/jobs/0000000000000001", "").status,
        401
    );
    let token = cluster.token();
    let patch = rest
        .with_token(&token)
        .request("PATCH", "/jobs/0000000000000001", "");
    assert_eq!(patch.status, 404, "{}", patch.body);
    // Plain HTTP to the HTTPS port gets no HTTP answer.
    let mut plain = TcpStream::connect(cluster.rest()).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    plain
        .write_all(b"GET /overview HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = plain.read_to_string(&mut answer);
    assert!(!answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_alive(&mut cluster, "plain HTTP");
}

#[test]
fn garbage_and_tls_noise_on_every_port_never_take_a_process_down() {
    let mut cluster = secure_cluster();
    let mut rng = common::Rng::new(7);
    // A TLS ClientHello cut short, then random bytes, then a half-open connection.
    let hello_start: &[u8] = &[
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    for port in [cluster.rpc(), cluster.rest()] {
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
    assert_alive(&mut cluster, "garbage");
}
