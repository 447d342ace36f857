//! `hummer image run`: boots an image with qemu's `microvm` machine.
//!
//! `microvm` has no PCI bus and no firmware to speak of: qemu loads the kernel and the
//! initramfs itself and attaches the network as a virtio-mmio device, which keeps
//! boot short. KVM is used when it can boot the image ([`kvm_usable`]); otherwise qemu
//! emulates the CPU (TCG), and the kernel is told the host's TSC rate (`tsc_early_khz`),
//! without which it hangs calibrating the clock under TCG. The console is the serial port, on qemu's stdout.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{HummerError, Result};

/// How the VM is networked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmNet {
    /// qemu's user-mode network: the guest is 10.0.2.15, the host's loopback is 10.0.2.2.
    /// Outbound connections only.
    User,
    /// A tap device (on a bridge, set up beforehand): the guest is a host on that network.
    Tap(String),
}

/// What to boot.
#[derive(Debug, Clone)]
pub struct VmOptions {
    /// The image directory (`vmlinuz`, `initramfs.cpio`).
    pub image: PathBuf,
    /// `hummer.*` settings and anything else for the kernel command line.
    pub cmdline: Vec<String>,
    /// Network.
    pub net: VmNet,
    /// MAC address of the network device.
    pub mac: String,
    /// Memory in MiB.
    pub memory_mb: u32,
    /// Virtual CPUs.
    pub cpus: u32,
}

/// Whether KVM can run the image whose kernel and initramfs these are. `/dev/kvm` may exist,
/// create VMs and even start them without working: in a nested VM a guest kernel can hit an
/// instruction the host's KVM cannot emulate ("KVM internal error ... emulation failure", seen
/// on the XSAVE state restore of the small kernel's boot), and qemu then hangs with the guest
/// stopped. So the image itself is booted under KVM with a role its init refuses: it prints
/// why and powers off, in about a second, where KVM works. The answer is kept for the
/// machine's boot in `/var/tmp/hummer-kvm-usable` (the probe costs a boot).
pub fn kvm_usable(kernel: &Path, initramfs: &Path) -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let cache = Path::new("/var/tmp/hummer-kvm-usable");
        // Answers of earlier builds (a paused VM's probe) are not trusted: version 2.
        let id = format!("{} v2", boot.trim());
        if let Ok(saved) = std::fs::read_to_string(cache)
            && let Some((saved_id, answer)) = saved.trim().rsplit_once(' ')
            && saved_id == id
        {
            return answer == "yes";
        }
        let usable = probe_kvm(kernel, initramfs);
        let answer = if usable { "yes" } else { "no" };
        let _ = std::fs::write(cache, format!("{id} {answer}\n"));
        usable
    })
}

/// Boots the image under KVM with an unknown role; true if it powered off by itself, with
/// success, within 15 s.
fn probe_kvm(kernel: &Path, initramfs: &Path) -> bool {
    if std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return false;
    }
    let mut append: Vec<String> = BASE_CMDLINE.iter().map(|a| a.to_string()).collect();
    append.push("hummer.role=kvm-probe".into());
    let Ok(mut probe) = microvm(kernel, initramfs, true, &append)
        .args(["-m", "256", "-display", "none"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        return false;
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        match probe.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Err(_) => break,
        }
    }
    let _ = probe.kill();
    let _ = probe.wait();
    false
}

/// The host's TSC rate in kHz, from `/proc/cpuinfo`.
pub fn host_tsc_khz() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = info
        .lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    Some((mhz * 1000.0) as u64)
}

/// A MAC address derived from an IPv4 address (locally administered).
pub fn mac_for(ip: &str) -> String {
    let octets: Vec<u8> = ip
        .split('/')
        .next()
        .unwrap_or("")
        .split('.')
        .filter_map(|o| o.parse().ok())
        .collect();
    let o = |i: usize| octets.get(i).copied().unwrap_or(0);
    format!("52:54:{:02x}:{:02x}:{:02x}:{:02x}", o(0), o(1), o(2), o(3))
}

/// The qemu command that boots `options`.
pub fn qemu_command(options: &VmOptions) -> Result<Command> {
    let kernel = options.image.join(crate::build::KERNEL_FILE);
    let initramfs = options.image.join("initramfs.cpio");
    for f in [&kernel, &initramfs] {
        if !f.exists() {
            return Err(HummerError::BadInput {
                input: options.image.display().to_string(),
                reason: format!("not an image: {} is missing", f.display()),
            });
        }
    }
    let kvm = kvm_usable(&kernel, &initramfs);
    let mut append: Vec<String> = BASE_CMDLINE.iter().map(|a| a.to_string()).collect();
    if !kvm && let Some(khz) = host_tsc_khz() {
        append.push(format!("tsc_early_khz={khz}"));
    }
    append.extend(options.cmdline.iter().cloned());
    let mut cmd = microvm(&kernel, &initramfs, kvm, &append);
    cmd.args(["-m", &options.memory_mb.to_string()])
        .args(["-smp", &options.cpus.to_string()])
        .args(["-nographic", "-serial", "stdio"]);
    let netdev = match &options.net {
        VmNet::User => "user,id=n0".to_string(),
        VmNet::Tap(name) => format!("tap,id=n0,ifname={name},script=no,downscript=no"),
    };
    cmd.args(["-netdev", &netdev]).args([
        "-device",
        &format!("virtio-net-device,netdev=n0,mac={}", options.mac),
    ]);
    Ok(cmd)
}

/// The kernel command line every boot starts with: the serial console, power off instead of
/// rebooting, no reboot on a panic, one UART.
const BASE_CMDLINE: [&str; 5] = [
    "console=ttyS0",
    "reboot=t",
    "panic=-1",
    "quiet",
    "8250.nr_uarts=1",
];

/// qemu booting `kernel` and `initramfs` on a `microvm` machine, under KVM or TCG, with the
/// kernel command line `append`; the caller adds memory, CPUs and the console.
fn microvm(kernel: &Path, initramfs: &Path, kvm: bool, append: &[String]) -> Command {
    let mut cmd = Command::new(qemu_binary());
    // No ACPI: qemu then lists the virtio-mmio devices on the kernel command line, which the
    // small kernel (built without ACPI) needs. The PIT stays: that kernel calibrates its
    // timers with it.
    cmd.args(["-M", "microvm,x-option-roms=off,rtc=off,acpi=off"])
        .args(["-accel", if kvm { "kvm" } else { "tcg" }])
        .args(["-cpu", if kvm { "host" } else { "max" }])
        .args(["-nodefaults", "-no-user-config", "-no-reboot"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initramfs)
        .args(["-append", &append.join(" ")]);
    cmd
}

fn qemu_binary() -> &'static str {
    "qemu-system-x86_64"
}

/// Installs qemu when missing, and with `kernel_build` what building the small kernel takes
/// (make, gcc, flex, bison, bc, libelf), as root with apt.
pub fn ensure_tools(kernel_build: bool) -> Result<()> {
    let have = |bin: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {bin}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let mut missing = Vec::new();
    if !have(qemu_binary()) {
        missing.push("qemu-system-x86");
    }
    if kernel_build {
        for (bin, package) in [
            ("make", "make"),
            ("gcc", "gcc"),
            ("flex", "flex"),
            ("bison", "bison"),
            ("bc", "bc"),
            ("xz", "xz-utils"),
        ] {
            if !have(bin) {
                missing.push(package);
            }
        }
        if !std::path::Path::new("/usr/include/libelf.h").exists() {
            missing.push("libelf-dev");
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let install = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| HummerError::Config(format!("cannot run apt-get: {e}")))
    };
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(&missing);
    if !install(&args)?.success() {
        install(&["update", "-q"])?;
        if !install(&args)?.success() {
            return Err(HummerError::Config(format!(
                "cannot install {} with apt-get",
                missing.join(", ")
            )));
        }
    }
    Ok(())
}

/// The image directory's files, for messages.
pub fn describe(image: &Path) -> String {
    [crate::build::KERNEL_FILE, "initramfs.cpio"]
        .iter()
        .map(|f| {
            let size = std::fs::metadata(image.join(f)).map_or(0, |m| m.len());
            format!("{f} {:.1} MB", size as f64 / 1e6)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_follow_the_ip_and_the_command_names_the_image() {
        assert_eq!(mac_for("10.77.0.11/24"), "52:54:0a:4d:00:0b");
        let err = qemu_command(&VmOptions {
            image: PathBuf::from("/nonexistent-image"),
            cmdline: vec![],
            net: VmNet::User,
            mac: mac_for("10.0.2.15"),
            memory_mb: 256,
            cpus: 1,
        })
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent-image"), "{err}");
    }
}
