//! `hummer image build|run`: the job as a bootable VM image.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use hummer::image::build::{KERNEL_CACHE, KernelChoice, build_image, build_static_binary};
use hummer::image::qemu::{VmNet, VmOptions, ensure_tools, mac_for, qemu_command};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Build an image: the static job binary as /init of an initramfs, and a kernel.
    Build {
        /// A statically linked job binary (default: this crate's `hummer`, built statically).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Output directory.
        #[arg(long, short)]
        out: PathBuf,
        /// small (built by the project from Debian's kernel source, cached) or cloud
        /// (Debian's cloud kernel with its virtio modules).
        #[arg(long, default_value = "small", value_parser = ["small", "cloud"])]
        kernel: String,
    },
    /// Boot an image with qemu (KVM when usable, TCG otherwise); the console is stdout.
    Run {
        /// The image directory.
        image: PathBuf,
        /// What the VM runs: jobmanager or taskmanager.
        #[arg(long)]
        role: String,
        /// The VM's address and prefix (default with --net user: 10.0.2.15/24).
        #[arg(long)]
        ip: Option<String>,
        /// The JobManager's RPC address (taskmanager; with --net user the host is 10.0.2.2).
        #[arg(long)]
        jobmanager: Option<String>,
        /// Task slots (taskmanager).
        #[arg(long, default_value_t = 1)]
        slots: usize,
        /// Default gateway.
        #[arg(long)]
        gw: Option<String>,
        /// user (qemu's NAT, outbound only) or tap (a tap device, see --tap).
        #[arg(long, default_value = "user", value_parser = ["user", "tap"])]
        net: String,
        /// The tap device for --net tap.
        #[arg(long)]
        tap: Option<String>,
        /// Memory in MiB.
        #[arg(long, default_value_t = 512)]
        memory: u32,
        /// Virtual CPUs.
        #[arg(long, default_value_t = 1)]
        cpus: u32,
        /// Further kernel command line words (e.g. `hummer.slots=2`), after the ones above.
        #[arg(long = "append")]
        append: Vec<String>,
    },
}

pub fn run(args: Args) -> Result<()> {
    match args.action {
        Action::Build {
            binary,
            out,
            kernel,
        } => {
            let kernel: KernelChoice = kernel.parse().map_err(anyhow::Error::msg)?;
            ensure_tools(kernel == KernelChoice::Small)?;
            let binary = match binary {
                Some(b) => b,
                None => {
                    eprintln!("building the static job binary (cargo, profile `image`)...");
                    build_static_binary()?
                }
            };
            let info = build_image(&binary, &out, std::path::Path::new(KERNEL_CACHE), kernel)
                .context("cannot build the image")?;
            println!(
                "image {}: kernel {} ({:.1} MB), initramfs {:.1} MB (job binary {:.1} MB), total {:.1} MB",
                out.display(),
                info.kernel_release,
                info.kernel_bytes as f64 / 1e6,
                info.initramfs_bytes as f64 / 1e6,
                info.binary_bytes as f64 / 1e6,
                info.total_bytes() as f64 / 1e6
            );
            Ok(())
        }
        Action::Run {
            image,
            role,
            ip,
            jobmanager,
            slots,
            gw,
            net,
            tap,
            memory,
            cpus,
            append,
        } => {
            ensure_tools(false)?;
            let net = match (net.as_str(), tap) {
                ("tap", Some(t)) => VmNet::Tap(t),
                ("tap", None) => bail!("--net tap needs --tap NAME"),
                _ => VmNet::User,
            };
            let ip = ip.unwrap_or_else(|| "10.0.2.15/24".into());
            let mut cmdline = vec![format!("hummer.role={role}"), format!("hummer.ip={ip}")];
            if let Some(jm) = jobmanager {
                cmdline.push(format!("hummer.jobmanager={jm}"));
            }
            if let Some(gw) = gw {
                cmdline.push(format!("hummer.gw={gw}"));
            }
            cmdline.push(format!("hummer.slots={slots}"));
            cmdline.extend(append);
            let mut cmd = qemu_command(&VmOptions {
                image,
                cmdline,
                net,
                mac: mac_for(&ip),
                memory_mb: memory,
                cpus,
            })?;
            let status = cmd.status().context("cannot start qemu")?;
            if !status.success() {
                bail!("qemu ended with {status}");
            }
            Ok(())
        }
    }
}
