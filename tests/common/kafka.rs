//! A real Kafka-protocol broker for the tests: tansu, installed by `scripts/install-tansu.sh`
//! (once per machine, under /var/tmp) and started on a free loopback port with in-memory
//! storage. Dropping the broker kills it.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tansu binary (installed if missing).
fn tansu() -> PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-tansu.sh");
    let out = Command::new(script)
        .stderr(Stdio::inherit())
        .output()
        .expect("cannot run scripts/install-tansu.sh");
    assert!(out.status.success(), "installing tansu failed");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// A running broker.
pub struct Broker {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
}

impl Broker {
    /// Starts a broker and waits until it accepts connections.
    pub fn start() -> Broker {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("no free port")
            .port();
        let address = format!("127.0.0.1:{port}");
        let url = format!("tcp://{address}");
        let child = Command::new(tansu())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
                "--storage-engine",
                "memory://tansu/",
            ])
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start tansu");
        let started = Instant::now();
        while TcpStream::connect(&address).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "tansu did not listen on {address}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Broker { child, address }
    }

    /// Stops the broker answering (SIGSTOP) until [`Broker::resume`]: to the clients it is
    /// unreachable, and it keeps its data.
    #[allow(dead_code)]
    pub fn pause(&self) {
        signal(self.child.id(), "STOP");
    }

    /// Lets a paused broker run again.
    #[allow(dead_code)]
    pub fn resume(&self) {
        signal(self.child.id(), "CONT");
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cannot send SIG{sig} to the broker");
}

impl Drop for Broker {
    fn drop(&mut self) {
        signal(self.child.id(), "CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
