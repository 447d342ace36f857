//! The `hummer` command line.

mod cluster;
mod image;
mod kafka;
mod nexmark;
mod run;
mod sql;
mod state_args;
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
    /// Run a Flink SQL script (`-f FILE`, `-e 'STATEMENTS'`) or statements from standard input.
    Sql(sql::Args),
}

fn main() -> ExitCode {
    // As `/init` of its VM image, the binary is the VM's PID 1.
    if std::process::id() == 1 {
        hummer::image::init::run();
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HUMMER_LOG")
                // rskafka warns at every retry of a connection; the error that ends the
                // retries says it once.
                .unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new("warn,rskafka=error,lsm_tree=error")
                }),
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
        Command::Sql(args) => sql::run(args),
    };
    // The state that left memory goes with the process's disk tier (its directory too).
    if let Some(summary) = hummer::state::disk_tier::DiskTier::process().and_then(|t| t.summary()) {
        eprintln!("{summary}");
    }
    hummer::state::disk_tier::DiskTier::configure_process(None);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error as one line: each cause after the context it explains, except a cause whose
/// text the line already holds (many errors print their source themselves, and `{:#}` would
/// print it a second time).
fn report(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::report;

    #[test]
    fn a_cause_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = anyhow::Error::new(hummer::error::HummerError::Network {
            endpoint: "127.0.0.1:1".into(),
            source: io,
        });
        assert_eq!(report(&e), "network endpoint '127.0.0.1:1': refused");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(report(&e), "outer: inner");
    }
}

/// mimalloc: cheaper than glibc malloc for the many short-lived line strings and batches
/// that move between threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
