//! The `hummer` command line.

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
}

fn main() -> ExitCode {
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
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
