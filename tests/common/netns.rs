//! Test hosts: network namespaces made by a test and removed with everything in them.

use std::ffi::OsStr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Runs `ip` with `args`; panics when it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("the ip command (iproute2)");
    assert!(
        out.status.success(),
        "ip {} failed (root and iproute2 are needed): {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace made by this test, its loopback up. Dropping it kills whatever still
/// runs in it (qemu outlives a killed `hummer image run`) and deletes it, and with it its
/// devices.
pub struct Netns {
    /// Its name, for `ip -n` and `ip netns exec`.
    pub name: String,
}

impl Netns {
    /// A new namespace named after `prefix`, this process and a counter.
    pub fn new(prefix: &str) -> Netns {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}{}-{n}", std::process::id());
        ip(&["netns", "add", &name]);
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// `ip` in the namespace.
    pub fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", &self.name];
        all.extend(args);
        ip(&all);
    }

    /// The command that runs a program in the namespace when the program's path and
    /// arguments follow (a wrapper for the cluster harness).
    pub fn wrapper(&self) -> Vec<String> {
        ["ip", "netns", "exec", &self.name]
            .map(str::to_string)
            .to_vec()
    }

    /// A command that runs `program` in the namespace.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Ok(out) = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
        {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}
