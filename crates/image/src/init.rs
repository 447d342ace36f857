//! The job binary as PID 1 of its VM.
//!
//! The image's initramfs holds this binary as `/init` and the few kernel modules the network
//! needs. When the kernel starts it, it is process 1: it mounts `/proc`, `/sys`, `/dev` and
//! `/tmp`, loads the modules (`finit_module`), reads its role and addresses from the kernel
//! command line (`hummer.role=taskmanager hummer.jobmanager=10.77.0.1:6123
//! hummer.ip=10.77.0.11/24 ...`), configures `lo` and `eth0`, and starts the role as a child
//! process of itself (the same binary, as an ordinary command). Then it reaps every process
//! that ends (orphaned workers included) and, when the role ends, syncs and powers the VM off.
//! Anything wrong (a missing or unknown setting, a module that does not load, no network
//! device) is printed on the console and powers the VM off too: it never hangs.

use std::ffi::CString;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// Settings read from the kernel command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmConfig {
    /// `jobmanager` or `taskmanager`.
    pub role: Role,
    /// `eth0`'s address and prefix length.
    pub ip: (Ipv4Addr, u8),
    /// Default gateway, if any.
    pub gateway: Option<Ipv4Addr>,
    /// The JobManager's RPC address (task managers).
    pub jobmanager: Option<String>,
    /// Task slots (task managers).
    pub slots: usize,
}

/// What the VM runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A JobManager (RPC on port 6123, REST on 8081).
    JobManager,
    /// A TaskManager.
    TaskManager,
}

/// Why PID 1 cannot bring the VM up.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A `hummer.*` setting of the kernel command line is missing or wrong; says which.
    #[error("{0}")]
    BadCommandLine(String),
    /// A system call failed.
    #[error("{action}: {source}")]
    System {
        /// What was being done, naming the device, file or address.
        action: String,
        /// The kernel's error.
        #[source]
        source: std::io::Error,
    },
}

impl From<String> for InitError {
    /// A message about the command line.
    fn from(message: String) -> Self {
        InitError::BadCommandLine(message)
    }
}

impl From<&str> for InitError {
    /// A message about the command line.
    fn from(message: &str) -> Self {
        InitError::BadCommandLine(message.to_string())
    }
}

/// Reads the `hummer.*` settings of a kernel command line.
pub fn parse_cmdline(cmdline: &str) -> Result<VmConfig, InitError> {
    let mut role = None;
    let mut ip = None;
    let mut gateway = None;
    let mut jobmanager = None;
    let mut slots = 1;
    for word in cmdline.split_whitespace() {
        let Some((key, value)) = word.split_once('=') else {
            continue;
        };
        match key {
            "hummer.role" => {
                role = Some(match value {
                    "jobmanager" => Role::JobManager,
                    "taskmanager" => Role::TaskManager,
                    other => {
                        return Err(InitError::BadCommandLine(format!(
                            "unknown role hummer.role={other} (expected jobmanager or taskmanager)"
                        )));
                    }
                })
            }
            "hummer.ip" => {
                let (addr, prefix) = value.split_once('/').unwrap_or((value, "24"));
                let addr: Ipv4Addr = addr
                    .parse()
                    .map_err(|e| format!("hummer.ip={value}: not an IPv4 address: {e}"))?;
                let prefix: u8 = prefix
                    .parse()
                    .ok()
                    .filter(|p| *p <= 32)
                    .ok_or_else(|| format!("hummer.ip={value}: bad prefix length"))?;
                ip = Some((addr, prefix));
            }
            "hummer.gw" => {
                gateway = Some(
                    value
                        .parse()
                        .map_err(|e| format!("hummer.gw={value}: not an IPv4 address: {e}"))?,
                )
            }
            "hummer.jobmanager" => {
                value
                    .parse::<std::net::SocketAddr>()
                    .map_err(|e| format!("hummer.jobmanager={value}: not IP:PORT: {e}"))?;
                jobmanager = Some(value.to_string());
            }
            "hummer.slots" => {
                slots = value
                    .parse()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| format!("hummer.slots={value}: not a positive number"))?
            }
            k if k.starts_with("hummer.") => {
                return Err(InitError::BadCommandLine(format!("unknown setting {word}")));
            }
            _ => {}
        }
    }
    let role = role.ok_or("no hummer.role= on the kernel command line")?;
    let ip = ip.ok_or("no hummer.ip= on the kernel command line")?;
    if role == Role::TaskManager && jobmanager.is_none() {
        return Err("a taskmanager needs hummer.jobmanager=IP:PORT".into());
    }
    Ok(VmConfig {
        role,
        ip,
        gateway,
        jobmanager,
        slots,
    })
}

impl VmConfig {
    /// The command line of the role's process.
    pub fn role_args(&self) -> Vec<String> {
        let ip = self.ip.0.to_string();
        match self.role {
            // A VM cluster runs on its own bridge, without the certificates in its image.
            Role::JobManager => vec![
                "jobmanager".into(),
                "--rpc".into(),
                format!("{ip}:6123"),
                "--rest".into(),
                format!("{ip}:8081"),
                "--insecure".into(),
            ],
            Role::TaskManager => vec![
                "taskmanager".into(),
                "--jobmanager".into(),
                self.jobmanager.clone().unwrap_or_default(),
                "--slots".into(),
                self.slots.to_string(),
                "--data-addr".into(),
                ip,
                "--cache-dir".into(),
                "/tmp/cache".into(),
                // A VM serves one JobManager: when it goes, the VM powers off.
                "--reconnect-timeout-ms".into(),
                "0".into(),
                "--insecure".into(),
            ],
        }
    }
}

/// Prints on the console, with the time since the kernel started.
fn say(message: &str) {
    let uptime = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next().map(str::to_string))
        .unwrap_or_default();
    println!("hummer init [{uptime} s]: {message}");
}

/// Powers the VM off; never returns. A kernel without ACPI (the small one) cannot power a
/// `microvm` off, it would only halt it: it reboots instead, which ends qemu (started with
/// `-no-reboot`) just the same.
fn power_off() -> ! {
    let how = if std::path::Path::new("/sys/firmware/acpi").exists() {
        libc::RB_POWER_OFF
    } else {
        libc::RB_AUTOBOOT
    };
    // SAFETY: plain system calls without pointers.
    unsafe {
        libc::sync();
        libc::reboot(how);
    }
    // Only reached if reboot failed (not PID 1): leave.
    std::process::exit(1)
}

fn fail(message: &str) -> ! {
    say(&format!("error: {message}; powering off"));
    power_off()
}

fn mount(source: &str, target: &str, fstype: &str) -> Result<(), InitError> {
    let _ = std::fs::create_dir_all(target);
    let c = |s: &str| {
        CString::new(s).map_err(|e| InitError::System {
            action: format!("cannot mount {fstype} on {target}"),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
        })
    };
    let (src, tgt, fs) = (c(source)?, c(target)?, c(fstype)?);
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(src.as_ptr(), tgt.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        unless_errno(libc::EBUSY, || format!("cannot mount {fstype} on {target}"))?;
    }
    Ok(())
}

/// The error of the system call that just failed, naming `action`; none where its errno is
/// `tolerated` (what the call would do is done already).
fn unless_errno(tolerated: i32, action: impl FnOnce() -> String) -> Result<(), InitError> {
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(tolerated) {
        Ok(())
    } else {
        Err(InitError::System {
            action: action(),
            source: e,
        })
    }
}

/// Loads the modules listed in `/lib/modules/order`, in that order.
fn load_modules() -> Result<usize, InitError> {
    let order = match std::fs::read_to_string("/lib/modules/order") {
        Ok(o) => o,
        Err(_) => return Ok(0),
    };
    let mut loaded = 0;
    for name in order.lines().filter(|l| !l.trim().is_empty()) {
        let path = format!("/lib/modules/{name}");
        let file = std::fs::File::open(&path).map_err(|source| InitError::System {
            action: format!("module {path}"),
            source,
        })?;
        let params = CString::default();
        // SAFETY: a valid file descriptor and an empty parameter string.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_finit_module,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                params.as_ptr(),
                0,
            )
        };
        if rc != 0 {
            unless_errno(libc::EEXIST, || format!("cannot load module {name}"))?;
        }
        loaded += 1;
    }
    Ok(loaded)
}

fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    req
}

fn sockaddr(addr: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; the kernel reads it as sockaddr_in.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// An IPv4 datagram socket, to configure interfaces and routes through (the caller closes it).
fn inet_socket() -> Result<libc::c_int, InitError> {
    // SAFETY: creating a socket has no memory effects.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    if fd < 0 {
        return Err(InitError::System {
            action: "socket".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(fd)
}

/// Sets an interface's address and netmask (if given) and brings it up.
fn configure(name: &str, addr: Option<(Ipv4Addr, u8)>) -> Result<(), InitError> {
    let fd = inet_socket()?;
    let ioctl = |request: libc::c_ulong, req: &mut libc::ifreq, what: &str| {
        // SAFETY: `req` is a valid ifreq for these requests.
        if unsafe { libc::ioctl(fd, request as _, req as *mut libc::ifreq) } < 0 {
            Err(InitError::System {
                action: format!("{what} {name}"),
                source: std::io::Error::last_os_error(),
            })
        } else {
            Ok(())
        }
    };
    let result = (|| {
        if let Some((ip, prefix)) = addr {
            let mut req = ifreq(name);
            req.ifr_ifru.ifru_addr = sockaddr(ip);
            ioctl(libc::SIOCSIFADDR, &mut req, "set address of")?;
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(prefix))
            };
            let mut req = ifreq(name);
            req.ifr_ifru.ifru_netmask = sockaddr(Ipv4Addr::from(mask));
            ioctl(libc::SIOCSIFNETMASK, &mut req, "set netmask of")?;
        }
        let mut req = ifreq(name);
        ioctl(libc::SIOCGIFFLAGS, &mut req, "get flags of")?;
        // SAFETY: the union holds the flags after SIOCGIFFLAGS.
        unsafe {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        }
        ioctl(libc::SIOCSIFFLAGS, &mut req, "bring up")
    })();
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    result
}

/// Adds a default route through `gateway`.
fn default_route(gateway: Ipv4Addr) -> Result<(), InitError> {
    let fd = inet_socket()?;
    // SAFETY: rtentry is plain old data.
    let mut route: libc::rtentry = unsafe { std::mem::zeroed() };
    route.rt_dst = sockaddr(Ipv4Addr::UNSPECIFIED);
    route.rt_genmask = sockaddr(Ipv4Addr::UNSPECIFIED);
    route.rt_gateway = sockaddr(gateway);
    route.rt_flags = libc::RTF_UP | libc::RTF_GATEWAY;
    // SAFETY: a valid rtentry.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCADDRT as _, &mut route as *mut libc::rtentry) };
    let e = std::io::Error::last_os_error();
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    if rc < 0 {
        return Err(InitError::System {
            action: format!("default route via {gateway}"),
            source: e,
        });
    }
    Ok(())
}

/// Runs PID 1; never returns.
pub fn run() -> ! {
    let started = Instant::now();
    for (source, target, fstype) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
        ("tmpfs", "/tmp", "tmpfs"),
    ] {
        if let Err(e) = mount(source, target, fstype) {
            fail(&e.to_string());
        }
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let config = match parse_cmdline(&cmdline) {
        Ok(c) => c,
        Err(e) => fail(&e.to_string()),
    };
    match load_modules() {
        Ok(n) => say(&format!("{n} modules loaded")),
        Err(e) => fail(&e.to_string()),
    }
    if let Err(e) = configure("lo", Some((Ipv4Addr::LOCALHOST, 8))) {
        fail(&e.to_string());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::path::Path::new("/sys/class/net/eth0").exists() {
        if Instant::now() > deadline {
            fail("no network device eth0 (is the VM started with a virtio network device?)");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Err(e) = configure("eth0", Some(config.ip)) {
        fail(&e.to_string());
    }
    if let Some(gw) = config.gateway
        && let Err(e) = default_route(gw)
    {
        fail(&e.to_string());
    }
    say(&format!(
        "eth0 {}/{} up after {} ms; starting {:?}",
        config.ip.0,
        config.ip.1,
        started.elapsed().as_millis(),
        config.role
    ));
    let role = std::process::Command::new("/init")
        .args(config.role_args())
        .env("HUMMER_LOG", "warn")
        .spawn();
    let role_pid = match role {
        Ok(child) => child.id() as libc::pid_t,
        Err(e) => fail(&format!("cannot start the {:?}: {e}", config.role)),
    };
    loop {
        let mut status = 0;
        // SAFETY: waiting for any child; `status` is a valid out-pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == role_pid {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                -1
            };
            say(&format!(
                "{:?} ended (status {code}); powering off",
                config.role
            ));
            power_off();
        }
        if pid < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            power_off();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taskmanager_command_line_is_read() {
        let c = parse_cmdline(
            "console=ttyS0 quiet hummer.role=taskmanager hummer.ip=10.77.0.11/24 \
             hummer.jobmanager=10.77.0.1:6123 hummer.slots=2 hummer.gw=10.77.0.1",
        )
        .unwrap();
        assert_eq!(c.role, Role::TaskManager);
        assert_eq!(c.ip, ("10.77.0.11".parse().unwrap(), 24));
        assert_eq!(c.slots, 2);
        assert_eq!(c.gateway, Some("10.77.0.1".parse().unwrap()));
        assert_eq!(
            c.role_args()[..5],
            [
                "taskmanager",
                "--jobmanager",
                "10.77.0.1:6123",
                "--slots",
                "2"
            ]
        );
    }

    #[test]
    fn bad_command_lines_are_refused_with_the_setting_named() {
        let err = |s: &str| parse_cmdline(s).unwrap_err().to_string();
        assert!(err("hummer.ip=10.0.0.2/24").contains("no hummer.role"));
        assert!(
            err("hummer.role=worker hummer.ip=10.0.0.2")
                .contains("unknown role hummer.role=worker")
        );
        assert!(
            err("hummer.role=taskmanager hummer.ip=10.0.0.2").contains("needs hummer.jobmanager")
        );
        assert!(err("hummer.role=jobmanager").contains("no hummer.ip"));
        assert!(
            err("hummer.role=jobmanager hummer.ip=10.0.0.300").contains("hummer.ip=10.0.0.300")
        );
        assert!(
            err("hummer.role=jobmanager hummer.ip=10.0.0.3 hummer.colour=red")
                .contains("hummer.colour=red")
        );
        assert!(
            err("hummer.role=taskmanager hummer.ip=10.0.0.2 hummer.jobmanager=nowhere")
                .contains("hummer.jobmanager=nowhere")
        );
    }
}
