//! `hummer sql`: runs a Flink SQL script (`-f FILE`, `-e 'STATEMENTS'`), or reads statements
//! from standard input, each one run once its `;` is read.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use hummer::sql::{Outcome, Session};

/// What to run.
#[derive(clap::Args)]
pub struct Args {
    /// A script file of statements separated by `;`.
    #[arg(short = 'f', long = "file", conflicts_with = "execute")]
    file: Option<PathBuf>,
    /// Statements separated by `;`.
    #[arg(short = 'e', long = "execute", allow_hyphen_values = true)]
    execute: Option<String>,
}

/// Runs the script, or the statements typed or piped in.
pub fn run(args: Args) -> Result<()> {
    let mut session = Session::new();
    let script = match (&args.file, args.execute) {
        (Some(path), _) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the script '{}'", path.display()))?,
        (None, Some(statements)) => statements,
        (None, None) => return interactive(&mut session),
    };
    let source = args
        .file
        .as_ref()
        .map_or_else(|| "-e".to_string(), |p| p.display().to_string());
    if let Err(e) = session.run_script(&script, show) {
        bail!("{source}: {e}");
    }
    Ok(())
}

fn show(outcome: &Outcome) {
    match outcome {
        Outcome::Info(line) => println!("{line}"),
        Outcome::Table(table) => println!("{table}"),
        Outcome::Quit => println!("[INFO] Exiting Hummer SQL."),
    }
}

/// Reads lines until a statement is complete (its `;` is read), runs it, and goes on; an
/// error is shown and the session continues.
fn interactive(session: &mut Session) -> Result<()> {
    let stdin = std::io::stdin();
    let prompt = stdin.is_terminal();
    let mut buffer = String::new();
    let mut lines = stdin.lock().lines();
    loop {
        if prompt {
            print!(
                "{}",
                if buffer.trim().is_empty() {
                    "Hummer SQL> "
                } else {
                    "> "
                }
            );
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next() else {
            break;
        };
        buffer.push_str(&line?);
        buffer.push('\n');
        if !buffer.trim_end().ends_with(';') {
            continue;
        }
        let script = std::mem::take(&mut buffer);
        let mut quit = false;
        if let Err(e) = session.run_script(&script, |o| {
            quit |= *o == Outcome::Quit;
            show(o);
        }) {
            println!("[ERROR] {e}");
        }
        if quit {
            return Ok(());
        }
    }
    if !buffer.trim().is_empty()
        && let Err(e) = session.run_script(&buffer, show)
    {
        println!("[ERROR] {e}");
    }
    Ok(())
}
