//! `hummer sql`: runs a Flink SQL script (`-f FILE`, `-e 'STATEMENTS'`), or, with neither, the
//! interactive client: line editing and history on a terminal, statements that span lines
//! until their `;`, a query's rows shown while it runs (an updating table, or Flink's
//! tableau of changes) and stopped with Ctrl-C. Statements piped in run one by one.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use hummer::sql::{LiveResult, Outcome, Session};

/// What to run.
#[derive(clap::Args)]
pub struct Args {
    /// A script file of statements separated by `;`.
    #[arg(short = 'f', long = "file", conflicts_with = "execute")]
    file: Option<PathBuf>,
    /// Statements separated by `;`.
    #[arg(short = 'e', long = "execute", allow_hyphen_values = true)]
    execute: Option<String>,
    /// Run the jobs on the cluster of this JobManager (TLS as the other commands: with
    /// `HUMMER_TLS_DIR`) instead of the embedded one; Hummer itself is the job's program.
    #[arg(long, env = "HUMMER_JOBMANAGER")]
    jobmanager: Option<String>,
    #[command(flatten)]
    state: crate::state_args::StateArgs,
}

/// Runs the script, or the statements typed or piped in.
pub fn run(args: Args) -> Result<()> {
    args.state.apply()?;
    let mut session = Session::new();
    session.jobmanager = args.jobmanager.clone();
    // A cluster job's worker: the statements of its job, as the submitting client handed
    // them over (the script file may not be on this machine).
    if let Ok(script) = std::env::var(hummer::sql::session::SCRIPT_ENV) {
        return session
            .run_script(&script, |_| {})
            .map_err(|e| anyhow::anyhow!("the job's statements: {e}"));
    }
    let script = match (&args.file, args.execute) {
        (Some(path), _) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the script '{}'", path.display()))?,
        (None, Some(statements)) => statements,
        (None, None) if std::io::stdin().is_terminal() => return interactive(&mut session),
        (None, None) => return piped(&mut session),
    };
    let source = args
        .file
        .as_ref()
        .map_or_else(|| "-e".to_string(), |p| p.display().to_string());
    // A query that never ends is printed as Flink's tableau, change by change; one that
    // ends, as one table at its end.
    let mut streamed = LiveView::new(false, Arc::new(AtomicBool::new(false)));
    streamed.bounded_as_table = true;
    if let Err(e) = session.run_script_live(&script, show, Some(&mut streamed)) {
        bail!("{source}: {e}");
    }
    if session.has_open_statement_set() {
        bail!("{source}: the statement set has no END, so its INSERTs did not run");
    }
    Ok(())
}

fn show(outcome: &Outcome) {
    match outcome {
        Outcome::Info(line) => print_line(line),
        Outcome::Table(table) => print_line(&table.to_string()),
        Outcome::Quit => print_line("[INFO] Exiting Hummer SQL."),
        Outcome::Shown => {}
    }
}

/// Prints `text`; a reader that went away (`hummer sql -e .. | head`) ends the command
/// quietly, as command-line tools do.
fn print_line(text: &str) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{text}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// Whether `buffer` holds a whole statement: it ends with `;` outside quotes and comments.
fn complete(buffer: &str) -> bool {
    let trimmed = buffer.trim_end();
    trimmed.ends_with(';')
        && hummer::sql::script::split(trimmed).is_ok_and(|statements| {
            // The last `;` ended a statement (it was not inside a string).
            statements
                .last()
                .is_some_and(|s| !s.text.trim_end().ends_with(';'))
        })
}

/// Runs `script`; an error is shown and the session goes on. Whether the client is to end.
fn run_one(session: &mut Session, script: &str, live: Option<&mut dyn LiveResult>) -> bool {
    let mut quit = false;
    if let Err(e) = session.run_script_live(
        script,
        |o| {
            quit |= *o == Outcome::Quit;
            show(o);
        },
        live,
    ) {
        println!("[ERROR] {e}");
    }
    quit
}

/// Statements piped in: each run once its `;` is read.
fn piped(session: &mut Session) -> Result<()> {
    let mut buffer = String::new();
    for line in std::io::stdin().lock().lines() {
        buffer.push_str(&line?);
        buffer.push('\n');
        if complete(&buffer) && run_one(session, &std::mem::take(&mut buffer), None) {
            return Ok(());
        }
    }
    if !buffer.trim().is_empty() {
        run_one(session, &buffer, None);
    }
    Ok(())
}

/// The client on a terminal: line editing, history (kept in `~/.hummer_sql_history`), and
/// live results.
fn interactive(session: &mut Session) -> Result<()> {
    let mut editor = rustyline::DefaultEditor::new().context("cannot set up the terminal")?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".hummer_sql_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        // Ctrl-C while a query runs stops the query, not the client.
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot handle Ctrl-C")?;
    }
    println!(
        "Hummer SQL: statements end with ';'. HELP lists them, QUIT ends the client; Ctrl-C \
         stops a running query."
    );
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "Hummer SQL> "
        } else {
            "> "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                buffer.push_str(&line);
                buffer.push('\n');
            }
            Err(rustyline::error::ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(e).context("cannot read the terminal"),
        }
        if !complete(&buffer) {
            continue;
        }
        let statement = std::mem::take(&mut buffer);
        let _ = editor.add_history_entry(statement.trim_end());
        stop.store(false, Ordering::SeqCst);
        let mode = session
            .options
            .get("sql-client.execution.result-mode")
            .map(|m| m.to_ascii_lowercase());
        let mut view = LiveView::new(mode.as_deref() != Some("tableau"), stop.clone());
        if run_one(session, &statement, Some(&mut view)) {
            break;
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}

/// A query's rows on the terminal while it runs: the result table redrawn as changes come
/// (Flink's `table` mode: updates replace rows), or each change printed as a line of
/// Flink's tableau (`tableau` mode).
struct LiveView {
    table: bool,
    stop: Arc<AtomicBool>,
    header: Vec<String>,
    /// The result so far (table mode): rows without their kind.
    rows: Vec<Vec<String>>,
    /// Lines drawn by the last redraw, to draw over.
    drawn: usize,
    widths: Vec<usize>,
    /// See [`LiveResult::bounded_as_table`].
    bounded_as_table: bool,
}

/// The most rows the updating table shows (the last ones).
const SHOWN_ROWS: usize = 40;

impl LiveView {
    fn new(table: bool, stop: Arc<AtomicBool>) -> Self {
        LiveView {
            table,
            stop,
            header: Vec::new(),
            rows: Vec::new(),
            drawn: 0,
            widths: Vec::new(),
            bounded_as_table: false,
        }
    }

    fn rule(&self) -> String {
        self.widths
            .iter()
            .map(|w| format!("+{}", "-".repeat(w + 2)))
            .collect::<String>()
            + "+"
    }

    fn line(&self, cells: &[String]) -> String {
        let mut text = String::new();
        for (w, cell) in self.widths.iter().zip(cells) {
            let cell = if cell.chars().count() > *w {
                let cut: String = cell.chars().take(w.saturating_sub(3)).collect();
                format!("{cut}...")
            } else {
                cell.clone()
            };
            text.push_str(&format!("| {cell:>w$} "));
        }
        text + "|"
    }

    /// The table mode's view: the result's last rows in a box.
    fn redraw(&mut self) {
        let mut out = std::io::stdout().lock();
        if self.drawn > 0 {
            // Up over what was drawn, and clear it.
            let _ = write!(out, "\x1b[{}A\x1b[J", self.drawn);
        }
        let cells: &[String] = &self.header[1..];
        let rule = self.rule();
        let mut lines = vec![rule.clone(), self.line(cells), rule.clone()];
        let skip = self.rows.len().saturating_sub(SHOWN_ROWS);
        lines.extend(self.rows[skip..].iter().map(|r| self.line(r)));
        lines.push(rule);
        if skip > 0 {
            lines.push(format!(
                "(the last {SHOWN_ROWS} of {} rows)",
                self.rows.len()
            ));
        }
        for l in &lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = out.flush();
        self.drawn = lines.len();
    }
}

impl LiveResult for LiveView {
    fn start(&mut self, header: &[String]) {
        // A fresh result: one view may show several queries typed on one line.
        self.rows.clear();
        self.drawn = 0;
        self.header = header.to_vec();
        let shown = if self.table { &header[1..] } else { header };
        // The change's kind (`op`, tableau only) is two wide, as Flink's.
        self.widths = shown
            .iter()
            .enumerate()
            .map(|(i, h)| match (self.table, i) {
                (false, 0) => 2,
                _ => h.chars().count().max(12),
            })
            .collect();
        if self.table {
            self.redraw();
        } else {
            let rule = self.rule();
            println!("{rule}\n{}\n{rule}", self.line(shown));
        }
    }

    fn rows(&mut self, rows: Vec<Vec<String>>) {
        if !self.table {
            let mut out = std::io::stdout().lock();
            for r in &rows {
                let _ = writeln!(out, "{}", self.line(r));
            }
            // Seen as they come, also through a pipe.
            let _ = out.flush();
            return;
        }
        for mut r in rows {
            let kind = r.remove(0);
            if kind == "-U" || kind == "-D" {
                if let Some(i) = self.rows.iter().position(|x| *x == r) {
                    self.rows.remove(i);
                }
            } else {
                self.rows.push(r);
            }
        }
        self.redraw();
    }

    fn stop_requested(&mut self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn bounded_as_table(&self) -> bool {
        self.bounded_as_table
    }

    fn end(&mut self, count: usize, cancelled: bool) {
        if !self.table {
            println!("{}", self.rule());
        }
        match (cancelled, self.table) {
            (true, _) => println!("[INFO] Query stopped after {count} changes."),
            (false, true) => println!("{} rows in the result ({count} changes).", self.rows.len()),
            (false, false) => println!("Received a total of {count} rows"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::complete;

    #[test]
    fn a_statement_is_complete_at_a_semicolon_outside_quotes() {
        assert!(complete("SELECT 1;\n"));
        assert!(complete("SELECT\n  1;  \n"));
        assert!(!complete("SELECT 'a;\n"));
        assert!(!complete("SELECT 1\n"));
        assert!(!complete("SELECT 1 -- done;\n"));
    }
}
