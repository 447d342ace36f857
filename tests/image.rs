//! The job as a VM image: built from this checkout (a static binary, Debian's cloud kernel,
//! an initramfs), booted with qemu (TCG on these machines), registering as a TaskManager with
//! a JobManager on the host, running a WordCount whose result equals the local run's, and
//! powering off when its JobManager goes away; a bad kernel command line is reported on the
//! console and powers the VM off instead of hanging.
//!
//! Each test runs its VMs, its JobManager and its clients in a network namespace of its own
//! (needs root and iproute2), with the bridge and tap devices of the VMs' network: none of its
//! traffic, nor its private addresses, is on the host's network. The namespace goes when the
//! test ends, also when it fails.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

mod common;

use common::cluster::TestCluster;
use common::netns::Netns;

const BIN: &str = env!("CARGO_BIN_EXE_hummer");

/// The image, built once per test run (the static build and the kernel are cached).
fn image() -> &'static Path {
    static IMAGE: OnceLock<PathBuf> = OnceLock::new();
    static BUILDING: Mutex<()> = Mutex::new(());
    let _guard = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    IMAGE.get_or_init(|| {
        let dir = PathBuf::from("/var/tmp/hummer-image-test");
        let out = Command::new(BIN)
            .args(["image", "build", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "image build failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
        dir
    })
}

/// A qemu process whose console lines arrive on a channel; killed when dropped.
struct Vm {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
    console: Vec<String>,
}

impl Vm {
    /// Boots the image in `ns`.
    fn boot(ns: &Netns, args: &[&str]) -> Vm {
        let mut child = ns
            .command(BIN)
            .args(["image", "run"])
            .arg(image())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send((Instant::now(), line)).is_err() {
                    return;
                }
            }
        });
        Vm {
            child,
            lines,
            console: Vec::new(),
        }
    }

    /// Waits for a console line containing `text`; returns when it came.
    fn wait_for(&mut self, text: &str, timeout: Duration) -> Instant {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    self.console.push(line.clone());
                    if line.contains(text) {
                        return at;
                    }
                }
                Err(_) => panic!(
                    "no console line with {text:?} after {timeout:?}:\n{}",
                    self.console.join("\n")
                ),
            }
        }
    }

    /// Waits for qemu to exit (the VM powered off).
    fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            while let Ok((_, line)) = self.lines.try_recv() {
                self.console.push(line);
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100));
                while let Ok((_, line)) = self.lines.try_recv() {
                    self.console.push(line);
                }
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the VM did not power off within {timeout:?}:\n{}",
                self.console.join("\n")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_bad_kernel_command_line_is_reported_and_powers_the_vm_off() {
    crate::require_heavy!("root, iproute2, qemu and a kernel build");
    for (args, expected) in [
        (vec!["--role", "worker"], "unknown role hummer.role=worker"),
        (
            vec!["--role", "taskmanager"],
            "a taskmanager needs hummer.jobmanager=IP:PORT",
        ),
    ] {
        let ns = Netns::new("hmrvm");
        let mut vm = Vm::boot(&ns, &args);
        let status = vm.wait_exit(Duration::from_secs(120));
        let console = vm.console.join("\n");
        assert!(status.success(), "{console}");
        assert!(
            console.contains(expected) && console.contains("powering off"),
            "{args:?}: {console}"
        );
    }
}

/// A JobManager on `host` in `ns` (RPC and REST on free ports), without TaskManagers: the VMs
/// are its TaskManagers.
fn jobmanager_in(ns: &Netns, host: &str) -> TestCluster {
    TestCluster::builder()
        .jobmanager_wrapper(ns.wrapper())
        .host(host)
        .taskmanagers(0)
        .start()
}

/// WordCount over 3000 generated lines at parallelism 2 with the image's static binary, in
/// `ns`, on the JobManager `jm` or locally; returns its output (the whole ranking).
fn wordcount(ns: &Netns, jm: Option<&str>) -> String {
    let mut cmd = ns.command(image().join("hummer"));
    cmd.args(["wordcount", "--corpus-lines", "3000", "--parallelism", "2"])
        .args(["--top", "100000"]);
    match jm {
        Some(jm) => cmd.env("HUMMER_JOBMANAGER", jm),
        None => cmd.env_remove("HUMMER_JOBMANAGER"),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The `ranking` lines of a WordCount summary (`   1. word<TAB>count`), as (word, count).
fn ranking(stdout: &str) -> Vec<(String, u64)> {
    let mut r: Vec<(String, u64)> = stdout
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.trim().split_once(". ")?;
            let (word, count) = rest.split_once('\t')?;
            Some((word.to_string(), count.parse().ok()?))
        })
        .collect();
    r.sort();
    r
}

#[test]
fn a_vm_registers_as_a_taskmanager_runs_a_job_and_powers_off() {
    crate::require_heavy!("root, iproute2, qemu and a kernel build");
    let ns = Netns::new("hmrvm");
    let mut cluster = jobmanager_in(&ns, "127.0.0.1");
    let rpc = cluster.rpc();
    let port = rpc.rsplit(':').next().unwrap().to_string();

    let launched = Instant::now();
    let mut vm = Vm::boot(
        &ns,
        &[
            "--role",
            "taskmanager",
            "--jobmanager",
            &format!("10.0.2.2:{port}"),
            "--slots",
            "2",
        ],
    );
    let ready = vm.wait_for("registered with", Duration::from_secs(120));
    eprintln!(
        "boot to registered: {:.2} s",
        ready.duration_since(launched).as_secs_f64()
    );

    let in_vm = wordcount(&ns, Some(&format!("127.0.0.1:{port}")));
    let local = wordcount(&ns, None);
    assert!(!ranking(&local).is_empty(), "{local}");
    assert_eq!(ranking(&in_vm), ranking(&local), "{in_vm}");

    // Without its JobManager the TaskManager ends, and so does the VM.
    cluster.kill_jobmanager(0);
    let status = vm.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "{}", vm.console.join("\n"));
    assert!(
        vm.console.iter().any(|l| l.contains("powering off")),
        "{}",
        vm.console.join("\n")
    );
}

/// A bridge with two tap devices in a namespace of their own, with the host's address on the
/// bridge; removed with the namespace when dropped.
struct Bridge {
    ns: Netns,
    taps: [String; 2],
    subnet: String,
}

impl Bridge {
    fn new() -> Bridge {
        let bridge = Bridge {
            ns: Netns::new("hmrvm"),
            taps: ["tap0".into(), "tap1".into()],
            subnet: "10.79.0".into(),
        };
        let ns = &bridge.ns;
        ns.ip(&["link", "add", "br0", "type", "bridge"]);
        ns.ip(&[
            "addr",
            "add",
            &format!("{}.1/24", bridge.subnet),
            "dev",
            "br0",
        ]);
        ns.ip(&["link", "set", "br0", "up"]);
        for tap in &bridge.taps {
            ns.ip(&["tuntap", "add", tap, "mode", "tap"]);
            ns.ip(&["link", "set", tap, "master", "br0"]);
            ns.ip(&["link", "set", tap, "up"]);
        }
        bridge
    }
}

#[test]
fn a_jobmanager_and_two_taskmanager_vms_run_a_distributed_wordcount() {
    crate::require_heavy!("root, iproute2, qemu and a kernel build");
    let net = Bridge::new();
    let host = format!("{}.1", net.subnet);
    let mut cluster = jobmanager_in(&net.ns, &host);
    let rpc = cluster.rpc();
    let mut vms: Vec<Vm> = net
        .taps
        .iter()
        .enumerate()
        .map(|(i, tap)| {
            Vm::boot(
                &net.ns,
                &[
                    "--role",
                    "taskmanager",
                    "--net",
                    "tap",
                    "--tap",
                    tap,
                    "--ip",
                    &format!("{}.{}/24", net.subnet, 11 + i),
                    "--jobmanager",
                    &rpc,
                    "--slots",
                    "1",
                ],
            )
        })
        .collect();
    for vm in &mut vms {
        vm.wait_for("registered with", Duration::from_secs(120));
    }
    // Parallelism 2 on two single-slot TaskManagers: every shuffle crosses between the VMs.
    let in_vms = wordcount(&net.ns, Some(&rpc));
    let local = wordcount(&net.ns, None);
    assert!(!ranking(&local).is_empty(), "{local}");
    assert_eq!(ranking(&in_vms), ranking(&local), "{in_vms}");
    cluster.kill_jobmanager(0);
    for vm in &mut vms {
        assert!(vm.wait_exit(Duration::from_secs(60)).success());
    }
}
