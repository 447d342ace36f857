//! A worker's data listener with mutual TLS: a raw TCP client that knows a job id and a
//! channel cannot inject into the channel; a peer with the cluster's certificate can. (A test
//! binary of its own: the process's security comes from its environment, read once.)

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use hummer::channels::network::DataListener;
use hummer::channels::secure::{Security, TLS_DIR_ENV, make_cluster_certificates};
use hummer::types::CancelToken;

/// A data connection's first frame: length, kind 0 (header), postcard (job, channel).
fn header_frame(job: &str, channel: u64) -> Vec<u8> {
    let body = postcard::to_stdvec(&(job, channel)).unwrap();
    let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    frame.push(0);
    frame.extend_from_slice(&body);
    frame
}

#[test]
fn a_raw_client_cannot_inject_into_a_channel_and_a_cluster_peer_can() {
    let dir = tempfile::tempdir().unwrap();
    make_cluster_certificates(dir.path(), &[]).unwrap();
    // SAFETY: the only test of this binary sets it before any thread reads the environment.
    unsafe { std::env::set_var(TLS_DIR_ENV, dir.path()) };
    let cancel = CancelToken::default();
    let listener = DataListener::bind("127.0.0.1", "job-7", cancel.clone()).unwrap();
    let address = format!("127.0.0.1:{}", listener.port());
    let arrived = listener.register_channel(3);

    let mut raw = TcpStream::connect(&address).unwrap();
    raw.write_all(&header_frame("job-7", 3)).unwrap();
    raw.write_all(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert!(
        arrived.recv_timeout(Duration::from_secs(2)).is_err(),
        "a raw connection reached the channel"
    );

    let tls = Security::load(dir.path()).unwrap();
    let peer = tls.connect(TcpStream::connect(&address).unwrap()).unwrap();
    (&peer).write_all(&header_frame("job-7", 3)).unwrap();
    assert!(
        arrived.recv_timeout(Duration::from_secs(5)).is_ok(),
        "the cluster peer's connection did not reach the channel"
    );
    cancel.cancel();
}
