//! `hummer wordcount`: the paper's WordCount job on files or on the generated corpus.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use std::path::Path;

use hummer::connectors::text_file::TextFileSource;
use hummer::jobs::corpus::{self, GeneratedCorpus};
use hummer::jobs::wordcount::{CountLine, TopWords, Word, top_words, word_counts};
use hummer::prelude::*;
use hummer::types::metrics::JobProgress;

/// Lines of the generated corpus used when no input is given.
const DEFAULT_CORPUS_LINES: u64 = 2_000_000;

#[derive(clap::Args)]
pub struct Args {
    /// Text files or directories to read (default: a generated corpus).
    input: Vec<PathBuf>,
    /// Write `word<TAB>count` lines into DIR, one part file per sink subtask.
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// Parallelism of every operator (default: the number of CPU cores).
    #[arg(long, short)]
    parallelism: Option<usize>,
    /// Runtime mode: batch (final counts) or streaming (a running count per word occurrence).
    #[arg(long, default_value = "batch", value_parser = ["batch", "streaming"])]
    mode: String,
    /// Show the K most frequent words in the summary (0: none).
    #[arg(long, default_value_t = 10, value_name = "K")]
    top: usize,
    /// Lines of the generated corpus when no INPUT is given (0: without end, a streaming job).
    #[arg(long, default_value_t = DEFAULT_CORPUS_LINES)]
    corpus_lines: u64,
    /// Lines per second of the generated corpus (default: as fast as it goes).
    #[arg(long)]
    corpus_rate: Option<f64>,
    /// Print the job's plan (stream graph, fused job graph, subtasks) and exit.
    #[arg(long)]
    explain: bool,
    /// Print the plan as JSON or Graphviz DOT and exit.
    #[arg(long, value_parser = ["json", "dot"], value_name = "FORMAT")]
    explain_format: Option<String>,
    /// Submit to this JobManager instead of running locally.
    #[arg(long, env = "HUMMER_JOBMANAGER")]
    jobmanager: Option<String>,
    /// In cluster mode, wait for a streaming job to end instead of returning its id.
    #[arg(long)]
    wait: bool,
    /// Split the input into N independent tasks (one single-slot job each, waiting in the
    /// TaskManagers' queues when slots are short), then merge their counts into OUTPUT.
    #[arg(long, value_name = "N")]
    tasks: Option<usize>,
    /// In cluster mode, wait in a TaskManager's queue when no slots are free.
    #[arg(long)]
    queue: bool,
    /// Priority among waiting jobs (higher first).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    priority: i32,
    /// In cluster mode, where the senders of remote channels run: fused or dedicated.
    #[arg(long, default_value = "fused", value_parser = ["fused", "dedicated"])]
    network_task: String,
    /// In cluster mode, the data network (declared by the TaskManagers) the shuffles use.
    #[arg(long = "data-net", value_name = "NAME")]
    data_net: Option<String>,
}

pub fn run(args: Args) -> Result<()> {
    if let Some(tasks) = args.tasks {
        return run_tasks(&args, tasks);
    }
    let env = StreamExecutionEnvironment::local();
    if let Some(p) = args.parallelism {
        if p == 0 {
            bail!("--parallelism must be at least 1");
        }
        env.set_parallelism(p);
    }
    let mode: RuntimeMode = args.mode.parse().map_err(anyhow::Error::msg)?;
    env.set_runtime_mode(mode);
    env.set_jobmanager(args.jobmanager.clone());
    env.set_data_network(args.data_net.clone());
    env.set_queue_when_busy(args.queue, args.priority);
    env.set_network_task_mode(args.network_task.parse().map_err(anyhow::Error::msg)?);
    for path in &args.input {
        if !path.exists() {
            bail!("input '{}' does not exist", path.display());
        }
    }

    // With no input, a bounded run in this process reads the corpus from a file generated
    // once (the figure printed is then the engine's, not the generator's); a cluster's
    // TaskManagers may not see this machine's files, so there it is generated where it is read.
    let demo = args.input.is_empty() && env.runs_in_process();
    let cached = match (args.corpus_lines, args.corpus_rate) {
        (n, None) if demo && n > 0 && mode == RuntimeMode::Batch && !explaining(&args) => {
            let dir = corpus_cache_dir();
            if !corpus::cached_path(&dir, n).is_file() {
                eprintln!(
                    "generating the corpus once ({n} lines) into {}",
                    dir.display()
                );
            }
            Some(corpus::cached_file(&dir, n)?)
        }
        _ => None,
    };
    let input = match &cached {
        Some(path) => vec![path.clone()],
        None => args.input.clone(),
    };

    let lines = match input.split_first() {
        None => {
            let corpus = match args.corpus_lines {
                0 => GeneratedCorpus::unbounded(),
                n => GeneratedCorpus::new(n),
            };
            env.add_source(match args.corpus_rate {
                Some(rate) => corpus.with_rate(rate),
                None => corpus,
            })
        }
        Some((first, rest)) => {
            let first = env.read_text_file(first);
            let rest: Vec<_> = rest.iter().map(|p| env.read_text_file(p)).collect();
            if rest.is_empty() {
                first
            } else {
                first.union(&rest)
            }
        }
    };
    let counts = word_counts(&lines);
    if let Some(dir) = &args.output {
        counts
            .map(|(w, c): (Word, u64)| CountLine(w, c))
            .name("Format")
            .write_text_file(dir)
            .name("Output");
    }
    // In streaming mode the ranking is updated with every count: keep only the latest.
    let top = (args.top > 0).then(|| top_words(&counts, args.top).collect_latest());

    if explaining(&args) {
        let plan = match args.explain_format.as_deref() {
            Some("json") => env.explain_json()?,
            Some("dot") => env.explain_dot()?,
            _ => env.explain()?,
        };
        print!("{plan}");
        return Ok(());
    }

    let progress = env.progress();
    let job = env
        .execute_async("WordCount")
        .context("cannot start WordCount")?;
    if let Some(id) = job.job_id() {
        println!("submitted job {id}");
        if job.mode() == RuntimeMode::Streaming && !args.wait {
            return Ok(());
        }
        let input_bytes: u64 = args.input.iter().map(|p| dir_size(p)).sum();
        progress.bytes_read.store(input_bytes, Ordering::Relaxed);
    }
    let local = job.job_id().is_none();
    let bar = (local && job.mode() == RuntimeMode::Batch)
        .then(|| ProgressThread::start(progress.clone()));
    let result = job.wait();
    if let Some(bar) = bar {
        bar.stop();
    }
    let mut result = result.context("WordCount failed")?;
    print_summary(&mut result, &progress, top.as_ref())?;
    if demo {
        print_next_steps(cached.as_deref());
    }
    Ok(())
}

fn explaining(args: &Args) -> bool {
    args.explain || args.explain_format.is_some()
}

/// Where the demo's corpus is cached: `$HUMMER_CACHE_DIR`, else `$XDG_CACHE_HOME/hummer`,
/// else `~/.cache/hummer`, else the system's temporary directory.
fn corpus_cache_dir() -> PathBuf {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HUMMER_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("hummer")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/hummer")))
        .unwrap_or_else(|| std::env::temp_dir().join("hummer"))
}

/// The demo's last lines: how to go on from here.
fn print_next_steps(corpus: Option<&Path>) {
    if let Some(path) = corpus {
        println!(
            "(input: the generated corpus, cached in {})",
            path.display()
        );
    }
    println!("Next:");
    println!(
        "  your own files:  hummer wordcount FILE_OR_DIR... [--output DIR] [--mode streaming]"
    );
    println!(
        "  on a cluster:    hummer cluster start --taskmanagers 2 --dir /tmp/hc  (prints the exports),"
    );
    println!(
        "                   then the same command with HUMMER_JOBMANAGER and HUMMER_TLS_DIR set"
    );
    println!(
        "  dashboard:       the cluster's REST address in a browser (printed by cluster start as \"rest https://...\")"
    );
}

/// Bytes of a file, or of the files of a directory (for the cluster-mode summary).
fn dir_size(path: &std::path::Path) -> u64 {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => std::fs::read_dir(path)
            .map(|entries| entries.flatten().map(|e| dir_size(&e.path())).sum())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

fn print_summary(
    result: &mut JobResult,
    progress: &JobProgress,
    top: Option<&CollectHandle<TopWords>>,
) -> Result<()> {
    let secs = result.duration.as_secs_f64();
    let bytes = progress.bytes_read.load(Ordering::Relaxed);
    println!(
        "WordCount ({:?} mode): {} records, {} bytes in {:.3} s ({:.1} MB/s)",
        result.mode,
        result.source_records,
        bytes,
        secs,
        bytes as f64 / 1e6 / secs.max(1e-9)
    );
    if let Some(handle) = top {
        let ranking = result
            .collected(handle)?
            .into_iter()
            .reduce(TopWords::merge)
            .unwrap_or_default();
        for (i, (word, count)) in ranking.words().iter().enumerate() {
            println!("{:>4}. {word}\t{count}", i + 1);
        }
    }
    Ok(())
}

/// Draws a byte progress bar on stderr (when it is a terminal) while a batch job runs.
struct ProgressThread {
    done: std::sync::mpsc::Sender<()>,
    handle: std::thread::JoinHandle<()>,
}

impl ProgressThread {
    fn start(progress: Arc<JobProgress>) -> Self {
        let (done, stopped) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            // Short jobs finish before the bar would be useful.
            if stopped.recv_timeout(Duration::from_millis(500)).is_ok() {
                return;
            }
            let bar = indicatif::ProgressBar::new(progress.bytes_total.load(Ordering::Relaxed));
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            loop {
                bar.set_length(progress.bytes_total.load(Ordering::Relaxed));
                bar.set_position(progress.bytes_read.load(Ordering::Relaxed));
                match stopped.recv_timeout(Duration::from_millis(100)) {
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    _ => break,
                }
            }
            bar.finish_and_clear();
        });
        ProgressThread { done, handle }
    }

    fn stop(self) {
        let _ = self.done.send(());
        let _ = self.handle.join();
    }
}

/// Environment variable telling a worker which task of a split WordCount it is.
const TASK_ENV: &str = "HUMMER_TASK";

/// The job of task `k` of `n`: count part `k` of the input into `out/task-k`.
fn task_job(
    args: &Args,
    input: &Path,
    out: &Path,
    k: usize,
    n: usize,
) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1).set_runtime_mode(RuntimeMode::Batch);
    env.set_jobmanager(args.jobmanager.clone());
    // Every task may wait for a slot; earlier parts first.
    env.set_queue_when_busy(true, args.priority + (n - k) as i32);
    env.set_worker_env(TASK_ENV, &k.to_string());
    let lines = env.add_source(TextFileSource::new(input).part(k, n));
    word_counts(&lines)
        .map(|(w, c): (Word, u64)| CountLine(w, c))
        .write_text_file(out.join(format!("task-{k}")));
    env
}

/// `--tasks N`: N independent single-slot jobs, then a merge of their counts.
fn run_tasks(args: &Args, n: usize) -> Result<()> {
    let (Some(input), Some(out), 1) = (args.input.first(), args.output.as_ref(), args.input.len())
    else {
        bail!("--tasks needs exactly one INPUT (a file or a directory) and --output DIR");
    };
    if n == 0 {
        bail!("--tasks must be at least 1");
    }
    // A worker builds and runs only its own task (the call does not return there).
    if let Ok(k) = std::env::var(TASK_ENV) {
        let k: usize = k.parse().context("bad task number")?;
        task_job(args, input, out, k, n).execute("WordCount task")?;
        return Ok(());
    }
    if !input.exists() {
        bail!("input '{}' does not exist", input.display());
    }
    let started = std::time::Instant::now();
    let mut records = 0;
    let mut running = Vec::new();
    for k in 0..n {
        let env = task_job(args, input, out, k, n);
        if env.runs_in_process() {
            records += env
                .execute(&format!("WordCount task {k}/{n}"))?
                .source_records;
        } else {
            let job = env.execute_async(&format!("WordCount task {k}/{n}"))?;
            println!("submitted task {k} as job {}", job.job_id().unwrap_or("?"));
            running.push(job);
        }
    }
    for job in running {
        records += job
            .wait()
            .context("a WordCount task failed")?
            .source_records;
    }
    // Merge the tasks' counts.
    let mut totals: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for k in 0..n {
        let dir = out.join(format!("task-{k}"));
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let path = entry?.path();
            for line in std::fs::read_to_string(&path)?.lines() {
                let (word, count) = line
                    .split_once('\t')
                    .with_context(|| format!("bad line in {}", path.display()))?;
                *totals.entry(word.to_string()).or_default() += count.parse::<u64>()?;
            }
        }
        std::fs::remove_dir_all(&dir)?;
    }
    let mut merged = String::new();
    for (word, count) in &totals {
        merged.push_str(&format!("{word}\t{count}\n"));
    }
    std::fs::write(out.join("part-0"), merged)?;
    let secs = started.elapsed().as_secs_f64();
    let bytes = dir_size(input);
    println!(
        "WordCount ({n} tasks): {records} records, {bytes} bytes in {secs:.3} s ({:.1} MB/s), {} words",
        bytes as f64 / 1e6 / secs.max(1e-9),
        totals.len()
    );
    Ok(())
}
