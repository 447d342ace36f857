//! `hummer image build`: a static job binary, a kernel and an initramfs, in one directory.
//!
//! Two kernels, both from Debian packages that are downloaded (`apt-get download`) and
//! unpacked (`dpkg -x`) into a cache, never installed on the host:
//! - `small` (the default): built by the project from Debian's kernel source with
//!   `make tinyconfig` plus the options in `kernel.config` (serial console, initramfs, the
//!   system calls the job binary uses, IPv4 over virtio-net on virtio-mmio; no PCI, no ACPI,
//!   no modules): a 2.3 MB bzImage that reaches `/init` in about half a second under TCG. The
//!   first build takes a few minutes; it is cached.
//! - `cloud`: Debian's cloud kernel as it is (a 14 MB bzImage), with the six modules its
//!   virtio network needs put into the initramfs and loaded by `/init`.
//!
//! The initramfs (gzip-compressed) holds the binary as `/init`, the modules if any,
//! `/dev/console` and the mount points. Nothing else: the job binary is the whole userland.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::cpio::CpioWriter;
use crate::error::{HummerError, Result, internal};

/// The modules the virtio network needs on `microvm` (loaded in the order of their
/// dependencies, see [`load_order`]).
pub const MODULES: [&str; 6] = [
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio_mmio.ko",
    "net/core/failover.ko",
    "drivers/net/net_failover.ko",
    "drivers/net/virtio_net.ko",
];

/// The kernel's file name in an image.
pub const KERNEL_FILE: &str = "vmlinuz";

/// Where downloaded kernel packages and the small kernel are cached.
pub const KERNEL_CACHE: &str = "/var/tmp/hummer-kernel";

/// Which kernel an image boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelChoice {
    /// Built by the project from Debian's kernel source (see the module documentation).
    Small,
    /// Debian's cloud kernel, with its virtio modules.
    Cloud,
}

impl std::str::FromStr for KernelChoice {
    type Err = HummerError;
    fn from_str(s: &str) -> std::result::Result<Self, HummerError> {
        match s {
            "small" => Ok(KernelChoice::Small),
            "cloud" => Ok(KernelChoice::Cloud),
            other => Err(HummerError::Config(format!(
                "unknown kernel '{other}' (expected small or cloud)"
            ))),
        }
    }
}

/// The options added to `make tinyconfig` for the small kernel.
pub const SMALL_KERNEL_CONFIG: &str = include_str!("kernel.config");

/// Downloads a package into `dir` (running `apt-get update` once if the download fails).
fn apt_download(dir: &Path, package: &str) -> Result<()> {
    let attempt = || {
        run(
            Command::new("apt-get")
                .current_dir(dir)
                .args(["download", "-q", package]),
            "apt-get download",
        )
    };
    attempt()
        .or_else(|_| {
            run(
                Command::new("apt-get").args(["update", "-q"]),
                "apt-get update",
            )?;
            attempt()
        })
        .map(|_| ())
}

/// The package a Debian meta-package depends on whose name starts with `prefix`.
fn meta_dependency(dir: &Path, meta: &str, prefix: &str) -> Result<String> {
    apt_download(dir, meta)?;
    let deb = newest(dir, &format!("{meta}_"))?;
    let depends = run(
        Command::new("dpkg-deb")
            .args(["-f"])
            .arg(&deb)
            .arg("Depends"),
        "dpkg-deb -f",
    )?;
    String::from_utf8_lossy(&depends.stdout)
        .split(',')
        .map(|d| d.split_whitespace().next().unwrap_or("").to_string())
        .find(|d| d.starts_with(prefix))
        .ok_or_else(|| HummerError::Config(format!("{meta} depends on no {prefix}* package")))
}

/// An exclusive lock on a directory, shared by every process of this host (an `flock` on
/// `DIR/.lock`), held until dropped: two builds (two checkouts' tests, say) never write the
/// same kernel tree or image at once; the second waits and then finds the first one's work.
struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    fn acquire(dir: &Path) -> Result<DirLock> {
        use std::os::fd::AsRawFd;
        std::fs::create_dir_all(dir).map_err(|e| HummerError::io("cannot create", dir, e))?;
        let path = dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| HummerError::io("cannot open the lock", &path, e))?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(HummerError::io("cannot lock", &path, e));
        }
        Ok(DirLock { _file: file })
    }
}

/// Builds (once) the small kernel from Debian's kernel source; returns its bzImage.
pub fn small_kernel(cache: &Path) -> Result<PathBuf> {
    let _lock = DirLock::acquire(cache)?;
    let config_hash = {
        use sha2::{Digest, Sha256};
        hex::encode(&Sha256::digest(SMALL_KERNEL_CONFIG.as_bytes())[..6])
    };
    let built = cache.join(format!("small-{config_hash}.bzImage"));
    if built.exists() {
        return Ok(built);
    }
    let src_root = cache.join("source");
    std::fs::create_dir_all(&src_root)
        .map_err(|e| HummerError::io("cannot create", &src_root, e))?;
    let package = meta_dependency(&src_root, "linux-source", "linux-source-")?;
    let tree = src_root.join(&package);
    if !tree.join("Makefile").exists() {
        apt_download(&src_root, &package)?;
        let deb = newest(&src_root, &format!("{package}_"))?;
        let unpacked = src_root.join("pkg");
        run(
            Command::new("dpkg").arg("-x").arg(&deb).arg(&unpacked),
            "dpkg -x",
        )?;
        let tarball = unpacked.join("usr/src").join(format!("{package}.tar.xz"));
        run(
            Command::new("tar")
                .current_dir(&src_root)
                .arg("xf")
                .arg(&tarball),
            "tar xf (kernel source)",
        )?;
        let _ = std::fs::remove_dir_all(&unpacked);
    }
    let fragment = tree.join("hummer.config");
    std::fs::write(&fragment, SMALL_KERNEL_CONFIG)
        .map_err(|e| HummerError::io("cannot write", &fragment, e))?;
    let make =
        |args: &[&str], what: &str| run(Command::new("make").current_dir(&tree).args(args), what);
    make(&["-s", "tinyconfig"], "make tinyconfig")?;
    run(
        Command::new("scripts/kconfig/merge_config.sh")
            .current_dir(&tree)
            .args(["-m", ".config", "hummer.config"]),
        "merge_config.sh",
    )?;
    make(&["-s", "olddefconfig"], "make olddefconfig")?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    make(&[&format!("-j{jobs}"), "bzImage"], "make bzImage")?;
    std::fs::copy(tree.join("arch/x86/boot/bzImage"), &built)
        .map_err(|e| HummerError::io("cannot copy the kernel to", &built, e))?;
    Ok(built)
}

/// What `image.json` records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    /// Kernel release (`6.1.0-57-cloud-amd64`).
    pub kernel_release: String,
    /// Bytes of the kernel.
    pub kernel_bytes: u64,
    /// Bytes of `initramfs.cpio`.
    pub initramfs_bytes: u64,
    /// Bytes of the job binary inside it.
    pub binary_bytes: u64,
}

impl ImageInfo {
    /// Kernel and initramfs together: what a VM boots.
    pub fn total_bytes(&self) -> u64 {
        self.kernel_bytes + self.initramfs_bytes
    }
}

fn run(cmd: &mut Command, what: &str) -> Result<std::process::Output> {
    let out = cmd
        .output()
        .map_err(|e| HummerError::Config(format!("cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(HummerError::Config(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out)
}

/// The `depends=` list in a module's `.modinfo`.
fn module_depends(bytes: &[u8]) -> Vec<String> {
    let key = b"depends=";
    bytes
        .windows(key.len())
        .position(|w| w == key)
        .map(|at| {
            let rest = &bytes[at + key.len()..];
            let end = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            String::from_utf8_lossy(&rest[..end])
                .split(',')
                .filter(|d| !d.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Orders modules (name without `.ko`, contents) so that each comes after those it depends on.
pub fn load_order(modules: &[(String, Vec<u8>)]) -> Result<Vec<String>> {
    let mut order: Vec<String> = Vec::new();
    let mut left: Vec<(&String, Vec<String>)> = modules
        .iter()
        .map(|(name, bytes)| (name, module_depends(bytes)))
        .collect();
    while !left.is_empty() {
        let before = left.len();
        left.retain(|(name, deps)| {
            let ready = deps.iter().all(|d| order.contains(d));
            if ready {
                order.push((*name).clone());
            }
            !ready
        });
        if left.len() == before {
            let missing: Vec<String> = left
                .iter()
                .map(|(n, d)| format!("{n} (needs {})", d.join(", ")))
                .collect();
            return Err(HummerError::Config(format!(
                "kernel modules with dependencies outside the image: {}",
                missing.join("; ")
            )));
        }
    }
    Ok(order)
}

/// Whether an ELF file is statically linked (has no program interpreter).
pub fn is_static_elf(bytes: &[u8]) -> Result<bool> {
    let bad = |reason: &str| HummerError::BadInput {
        input: "job binary".into(),
        reason: reason.into(),
    };
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return Err(bad("not a 64-bit ELF executable"));
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[o..o + 8]);
        u64::from_le_bytes(b) as usize
    };
    let (phoff, phentsize, phnum) = (u64_at(32), u16_at(54), u16_at(56));
    for i in 0..phnum {
        let at = phoff + i * phentsize;
        if at + 4 > bytes.len() {
            return Err(bad("truncated program headers"));
        }
        // PT_INTERP: the binary needs a dynamic loader.
        if u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) == 3 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Builds the workspace's `hummer` binary statically (`-C target-feature=+crt-static`) and
/// returns its path.
pub fn build_static_binary() -> Result<PathBuf> {
    let manifest = source_tree()?;
    let target_dir = std::env::var_os("HUMMER_STATIC_TARGET_DIR").map_or_else(
        || PathBuf::from("/var/tmp/hummer-target-static"),
        PathBuf::from,
    );
    let triple = "x86_64-unknown-linux-gnu";
    // With an explicit --target the flags apply to the binary only, not to build scripts
    // and proc macros (which cannot be static).
    run(
        Command::new("cargo")
            .current_dir(&manifest)
            .args([
                "build",
                "--profile",
                "image",
                "--bin",
                "hummer",
                "--target",
                triple,
            ])
            .env("CARGO_TARGET_DIR", &target_dir)
            .env("RUSTFLAGS", "-C target-feature=+crt-static"),
        "cargo build (static job binary)",
    )?;
    Ok(target_dir.join(triple).join("image").join("hummer"))
}

/// Hummer's source tree, to build the static binary from: `HUMMER_SOURCE_DIR`, else the tree
/// the current directory is in, else the one this binary was built from. Never only the
/// compile-time path: a build directory shared between clones at different paths reuses this
/// crate compiled in another clone, which may be gone.
fn source_tree() -> Result<PathBuf> {
    let is_tree = |dir: &Path| dir.join("crates/image/Cargo.toml").is_file();
    if let Some(dir) = std::env::var_os("HUMMER_SOURCE_DIR").map(PathBuf::from) {
        return if is_tree(&dir) {
            Ok(dir)
        } else {
            Err(HummerError::Config(format!(
                "HUMMER_SOURCE_DIR={} is not Hummer's source tree (no crates/image/Cargo.toml)",
                dir.display()
            )))
        };
    }
    let current = std::env::current_dir().ok();
    // This crate is `crates/image` of the workspace whose root package has the binary.
    let built_from = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf();
    current
        .iter()
        .flat_map(|dir| dir.ancestors())
        .map(Path::to_path_buf)
        .chain(std::iter::once(built_from))
        .find(|dir| is_tree(dir))
        .ok_or_else(|| {
            HummerError::Config(
                "cannot find Hummer's source tree to build the static job binary: run \
                 `hummer image build` inside it, or set HUMMER_SOURCE_DIR"
                    .into(),
            )
        })
}

/// The cloud kernel's package, unpacked in the cache; returns its directory and release.
pub fn fetch_kernel(cache: &Path) -> Result<(PathBuf, String)> {
    let _lock = DirLock::acquire(cache)?;
    if let Some(found) = cached_kernel(cache) {
        return Ok(found);
    }
    let package = meta_dependency(cache, "linux-image-cloud-amd64", "linux-image-")?;
    apt_download(cache, &package)?;
    let deb = newest(cache, &format!("{package}_"))?;
    let release = package.trim_start_matches("linux-image-").to_string();
    let unpacked = cache.join(&release);
    run(
        Command::new("dpkg").arg("-x").arg(&deb).arg(&unpacked),
        "dpkg -x",
    )?;
    Ok((unpacked, release))
}

fn cached_kernel(cache: &Path) -> Option<(PathBuf, String)> {
    let entries = std::fs::read_dir(cache).ok()?;
    entries.flatten().find_map(|e| {
        let release = e.file_name().to_str()?.to_string();
        let dir = e.path();
        dir.join(format!("boot/vmlinuz-{release}"))
            .exists()
            .then_some((dir, release))
    })
}

fn newest(dir: &Path, prefix: &str) -> Result<PathBuf> {
    std::fs::read_dir(dir)
        .map_err(|e| HummerError::io("cannot list the kernel cache", dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".deb"))
        })
        .max()
        .ok_or_else(|| HummerError::Config(format!("no {prefix}*.deb was downloaded")))
}

/// Builds an image into `out` from a static `binary` and the cached kernel.
pub fn build_image(
    binary: &Path,
    out: &Path,
    cache: &Path,
    kernel_choice: KernelChoice,
) -> Result<ImageInfo> {
    let bin =
        std::fs::read(binary).map_err(|e| HummerError::io("cannot read job binary", binary, e))?;
    if !is_static_elf(&bin)? {
        return Err(HummerError::BadInput {
            input: binary.display().to_string(),
            reason: "the job binary is dynamically linked; a VM has no libraries: build it with \
                     RUSTFLAGS='-C target-feature=+crt-static' (or leave out --binary)"
                .into(),
        });
    }
    let _lock = DirLock::acquire(out)?;
    let (kernel, release, modules) = match kernel_choice {
        KernelChoice::Small => (small_kernel(cache)?, "small".to_string(), None),
        KernelChoice::Cloud => {
            let (kernel_dir, release) = fetch_kernel(cache)?;
            let modules = kernel_dir.join("lib/modules").join(&release).join("kernel");
            (
                kernel_dir.join(format!("boot/vmlinuz-{release}")),
                release,
                Some(modules),
            )
        }
    };
    let kernel_out = out.join(KERNEL_FILE);
    std::fs::copy(&kernel, &kernel_out)
        .map_err(|e| HummerError::io("cannot copy the kernel to", &kernel_out, e))?;

    let mut cpio = CpioWriter::default();
    for dir in ["dev", "proc", "sys", "tmp", "lib", "lib/modules"] {
        cpio.dir(dir, 0o755);
    }
    cpio.char_device("dev/console", 0o600, 5, 1);
    cpio.char_device("dev/null", 0o666, 1, 3);
    let mut loaded = Vec::new();
    for module in modules.iter().flat_map(|dir| MODULES.map(|m| dir.join(m))) {
        let bytes = std::fs::read(&module)
            .map_err(|e| HummerError::io("cannot read module", &module, e))?;
        let name = module
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or("module")
            .to_string();
        loaded.push((name, bytes));
    }
    let mut order = String::new();
    for name in load_order(&loaded)? {
        if let Some((_, bytes)) = loaded.iter().find(|(n, _)| *n == name) {
            cpio.file(&format!("lib/modules/{name}.ko"), 0o644, bytes);
        }
        order.push_str(&name);
        order.push_str(".ko\n");
    }
    cpio.file("lib/modules/order", 0o644, order.as_bytes());
    cpio.file("init", 0o755, &bin);
    // Compressed: the kernel unpacks it in a fraction of the time it takes to load it.
    let initramfs = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&cpio.finish())
            .and_then(|()| gz.finish())
            .map_err(|e| internal!("cannot compress the initramfs: {e}"))?
    };
    let initramfs_out = out.join("initramfs.cpio");
    std::fs::write(&initramfs_out, &initramfs)
        .map_err(|e| HummerError::io("cannot write", &initramfs_out, e))?;
    let info = ImageInfo {
        kernel_release: release,
        kernel_bytes: std::fs::metadata(&kernel_out).map_or(0, |m| m.len()),
        initramfs_bytes: initramfs.len() as u64,
        binary_bytes: bin.len() as u64,
    };
    // The static binary beside the image, to submit jobs to the VMs with (a job's workers run
    // the submitting program, which must run without libraries in the VM).
    let copy = out.join("hummer");
    std::fs::write(&copy, &bin).map_err(|e| HummerError::io("cannot write", &copy, e))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| HummerError::io("cannot make executable", &copy, e))?;
    let json = serde_json::to_vec_pretty(&info).map_err(|e| internal!("image.json: {e}"))?;
    std::fs::write(out.join("image.json"), json)
        .map_err(|e| HummerError::io("cannot write", out.join("image.json"), e))?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_load_after_their_dependencies() {
        let m = |name: &str, deps: &str| {
            (
                name.to_string(),
                format!("\0license=GPL\0depends={deps}\0name={name}\0").into_bytes(),
            )
        };
        let order = load_order(&[
            m("virtio_net", "virtio_ring,virtio,net_failover"),
            m("virtio", "virtio_ring"),
            m("virtio_ring", ""),
            m("net_failover", "failover"),
            m("failover", ""),
        ])
        .unwrap();
        let at = |n: &str| order.iter().position(|o| o == n).unwrap();
        assert!(at("virtio_ring") < at("virtio") && at("virtio") < at("virtio_net"));
        assert!(at("failover") < at("net_failover") && at("net_failover") < at("virtio_net"));
        let err = load_order(&[m("virtio", "virtio_ring")]).unwrap_err();
        assert!(
            err.to_string().contains("virtio (needs virtio_ring)"),
            "{err}"
        );
    }

    #[test]
    fn static_and_dynamic_binaries_are_told_apart() {
        // The test binary itself is dynamically linked.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(!is_static_elf(&me).unwrap());
        assert!(
            is_static_elf(b"not an elf file at all, but long enough to have a header..").is_err()
        );
    }
}
