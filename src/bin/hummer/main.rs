//! The `hummer` command line.

mod cluster;
mod image;
mod kafka;
mod nexmark;
mod run;
mod wordcount;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Hummer: a stream processing engine.
#[derive(Parser)]
#[command(name = "hummer", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the words of text files (or of a generated corpus) with the built-in WordCount job.
    Wordcount(wordcount::Args),
    /// Run a JobManager.
    Jobmanager(cluster::JobManagerArgs),
    /// Run a TaskManager.
    Taskmanager(cluster::TaskManagerArgs),
    /// Start or stop a local cluster (a JobManager and TaskManagers as processes).
    Cluster(cluster::ClusterArgs),
    /// List the jobs of a cluster.
    List(cluster::ClientArgs),
    /// Show one job.
    Status(cluster::JobArgs),
    /// Cancel a job.
    Cancel(cluster::JobArgs),
    /// Run a built-in job with checkpoints, restarts and savepoints (`event-count`,
    /// `kafka-count`, ...).
    Run(run::Args),
    /// Take a savepoint of a running cluster job.
    Savepoint(cluster::SavepointArgs),
    /// Stop a cluster job, optionally with a savepoint first.
    Stop(cluster::StopArgs),
    /// Build or boot a VM image of the job (unikernel style).
    Image(image::Args),
    /// Run a Nexmark query on the generator or on the harness's CSV files.
    Nexmark(nexmark::Args),
    /// Create, fill or check Kafka topics of the Kafka jobs.
    Kafka(kafka::Args),
}

fn main() -> ExitCode {
    // As `/init` of its VM image, the binary is the VM's PID 1.
    if std::process::id() == 1 {
        hummer::image::init::run();
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HUMMER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Wordcount(args) => wordcount::run(args),
        Command::Jobmanager(args) => cluster::jobmanager(args),
        Command::Taskmanager(args) => cluster::taskmanager(args),
        Command::Cluster(args) => cluster::local_cluster(args),
        Command::List(args) => cluster::list(args),
        Command::Status(args) => cluster::status(args),
        Command::Cancel(args) => cluster::cancel(args),
        Command::Run(args) => run::run(args),
        Command::Savepoint(args) => cluster::savepoint(args),
        Command::Stop(args) => cluster::stop(args),
        Command::Image(args) => image::run(args),
        Command::Nexmark(args) => nexmark::run(args),
        Command::Kafka(args) => kafka::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// mimalloc: cheaper than glibc malloc for the many short-lived line strings and batches
/// that move between threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
