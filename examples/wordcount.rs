//! Batch WordCount over text files, written against the public API.
//!
//! ```sh
//! cargo run --release --example wordcount -- INPUT [OUTPUT_DIR]
//! ```
//!
//! Reads INPUT (a file or a directory) in parallel, counts words (see
//! `hummer::jobs::words` for the word definition) and writes `word<TAB>count` lines into
//! OUTPUT_DIR (default `wordcount-out`), one part file per subtask. `hummer wordcount` runs the
//! same pipeline, `hummer::jobs::wordcount::word_counts`.

use anyhow::{Context, bail};
use hummer::jobs::wordcount::{CountLine, Word, word_counts};
use hummer::prelude::*;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(input) = args.next() else {
        bail!("usage: wordcount INPUT [OUTPUT_DIR]");
    };
    let output = args.next().unwrap_or_else(|| "wordcount-out".to_string());

    let env = StreamExecutionEnvironment::local();
    env.set_runtime_mode(RuntimeMode::Batch);
    let lines = env.read_text_file(&input);
    word_counts(&lines)
        .map(|(word, count): (Word, u64)| CountLine(word, count))
        .write_text_file(&output);

    let result = env.execute("WordCount").context("WordCount failed")?;
    println!(
        "counted {} lines of {input} in {:.3} s; results in {output}/part-*",
        result.source_records,
        result.duration.as_secs_f64()
    );
    Ok(())
}
