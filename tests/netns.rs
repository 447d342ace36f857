//! Two TaskManagers on separate hosts: Linux network namespaces joined by two veth pairs (two
//! networks), created and removed by the test (needs root, as CI runs). A job exchanges data
//! across the namespaces on the default network; a job bound to the second network moves its
//! shuffle over that network's interface and leaves the other one alone.

mod common;

use common::cluster::{TaskManager, TestCluster};
use common::netns::{Netns, ip};

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_hummer");

/// Two namespaces, removed (with their veths) on drop.
struct Hosts {
    a: Netns,
    b: Netns,
}

impl Hosts {
    fn create() -> Hosts {
        let hosts = Hosts {
            a: Netns::new("hmra"),
            b: Netns::new("hmrb"),
        };
        let (a, b) = (hosts.a.name.clone(), hosts.b.name.clone());
        for (net, (ia, ib)) in [("1", ("ha1", "hb1")), ("2", ("ha2", "hb2"))] {
            ip(&[
                "link", "add", ia, "netns", &a, "type", "veth", "peer", "name", ib, "netns", &b,
            ]);
            ip(&[
                "-n",
                &a,
                "addr",
                "add",
                &format!("10.20{net}.0.1/24"),
                "dev",
                ia,
            ]);
            ip(&[
                "-n",
                &b,
                "addr",
                "add",
                &format!("10.20{net}.0.2/24"),
                "dev",
                ib,
            ]);
            ip(&["-n", &a, "link", "set", ia, "up"]);
            ip(&["-n", &b, "link", "set", ib, "up"]);
        }
        hosts
    }

    fn run(&self, ns: &Netns, args: &[&str]) -> Output {
        ns.command(BIN).args(args).output().unwrap()
    }

    fn tx_bytes(&self, ns: &str, dev: &str) -> u64 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "cat",
                &format!("/sys/class/net/{dev}/statistics/tx_bytes"),
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    /// Bytes sent over (network 1, network 2), both directions.
    fn traffic(&self) -> (u64, u64) {
        (
            self.tx_bytes(&self.a.name, "ha1") + self.tx_bytes(&self.b.name, "hb1"),
            self.tx_bytes(&self.a.name, "ha2") + self.tx_bytes(&self.b.name, "hb2"),
        )
    }
}

fn check(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn taskmanagers_in_two_namespaces_exchange_data_on_the_chosen_network() {
    crate::require_heavy!("root and iproute2 (network namespaces)");
    let hosts = Hosts::create();
    let (a, b) = (&hosts.a, &hosts.b);
    // The JobManager and TaskManager a on host a, TaskManager b on host b; each TaskManager
    // with its address on network 1 and on network 2 ("second").
    let taskmanager = |ns: &Netns, host: &str, second: &str| {
        TaskManager::new().wrapper(ns.wrapper()).args([
            "--data-addr".to_string(),
            host.to_string(),
            "--data-net".to_string(),
            format!("second={second}"),
        ])
    };
    let cluster = TestCluster::builder()
        .host("10.201.0.1")
        .jobmanager_wrapper(a.wrapper())
        .taskmanagers(0)
        .taskmanager(taskmanager(a, "10.201.0.1", "10.202.0.1"))
        .taskmanager(taskmanager(b, "10.201.0.2", "10.202.0.2"))
        .slots(2)
        .start();
    let rpc = cluster.rpc();
    let dir = cluster.dir();
    let input = dir.join("corpus.txt");
    common::write_corpus(&input, 20_000);
    let expected = common::reference_counts(&std::fs::read_to_string(&input).unwrap());
    let out = |name: &str| dir.join(name).display().to_string();

    // Default network: the job's subtasks are spread over both namespaces.
    let first = hosts.run(
        a,
        &[
            "wordcount",
            input.to_str().unwrap(),
            "--parallelism",
            "4",
            "--jobmanager",
            &rpc,
            "--output",
            &out("net1"),
        ],
    );
    check(&first);
    assert_eq!(common::read_counts(Path::new(&out("net1"))), expected);

    // The second network: a streaming run shuffles every word, over that network only.
    let (net1_before, net2_before) = hosts.traffic();
    let second = hosts.run(
        a,
        &[
            "wordcount",
            input.to_str().unwrap(),
            "--parallelism",
            "4",
            "--mode",
            "streaming",
            "--wait",
            "--data-net",
            "second",
            "--jobmanager",
            &rpc,
            "--output",
            &out("net2"),
        ],
    );
    check(&second);
    assert_eq!(common::read_counts(Path::new(&out("net2"))), expected);
    let (net1_after, net2_after) = hosts.traffic();
    let (net1, net2) = (net1_after - net1_before, net2_after - net2_before);
    // About half of the 20,000 lines' words cross between the TaskManagers (some 600 KB).
    assert!(
        net2 > 250_000,
        "the shuffle moved only {net2} bytes over network 2"
    );
    assert!(
        net1 * 10 < net2,
        "network 1 carried {net1} bytes, network 2 {net2}: not only control traffic"
    );

    // A network no TaskManager declared is refused.
    let refused = hosts.run(
        a,
        &[
            "wordcount",
            "--corpus-lines",
            "10",
            "--data-net",
            "third",
            "--jobmanager",
            &rpc,
        ],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("data network 'third' is not declared")
    );
}
