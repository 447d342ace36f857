//! Unikernel-style deployment: a job packaged as a minimal bootable VM image.
//!
//! The Hummer paper ships the engine and the job as a unikernel image, so that a compiled job
//! deploys with no local compilation and no library drift. Here the job's static binary is the
//! whole userland of a single-application VM: [`build`] packs it as `/init` of an initramfs
//! beside a kernel, [`init`] is what that binary does as PID 1 (mounts, modules, network from
//! the kernel command line, the role as a child, power-off at the end), and [`qemu`] boots an
//! image with qemu's `microvm` machine; [`cpio`] writes the initramfs archive.
//!
//! Layer 2 of 12, beside `scheduler`, `state` and `channels`: depends on `types` only. The
//! roles a VM runs (TaskManager, JobManager) are started as a child process of `/init`, so
//! nothing of `cluster` is imported here (the layers are listed in `tests/layering.rs`).

#![warn(missing_docs)]

// The layers below, under their module names (docs/architecture.md).
use hummer_types::error;

pub mod build;
pub mod cpio;
pub mod init;
pub mod qemu;
