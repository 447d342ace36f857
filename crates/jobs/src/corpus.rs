//! A generated text corpus: the embedded default input of `hummer wordcount`.
//!
//! Line `i` is a pure function of `i` (a counter-based generator), so the corpus is the same
//! at any parallelism and in every run. Words follow a Zipf-like law over a vocabulary of common
//! English words and generated ones, with capitals and punctuation mixed in so the tokenizer's
//! rules are exercised.

use std::sync::atomic::Ordering;

use crate::connectors::{Source, SourceContext, SourceReader, SourceStatus};
use crate::error::Result;

const COMMON: &[&str] = &[
    "the", "and", "of", "to", "that", "in", "he", "shall", "unto", "for", "i", "his", "a", "lord",
    "they", "be", "is", "him", "not", "them", "it", "with", "all", "thou", "thy", "was", "god",
    "which", "my", "me", "said", "but", "ye", "their", "have", "will", "thee", "from", "as", "are",
    "when", "this", "out", "were", "upon", "man", "by", "you", "israel", "king", "son", "up",
    "there", "hath", "then", "people", "came", "had", "house", "into", "on", "her", "come", "one",
    "we", "children", "s", "before", "your", "also", "day", "land", "men", "let", "go", "against",
    "made", "if", "no", "hand", "at", "even", "do", "what", "every", "saying", "now", "so", "may",
    "name", "earth", "over", "father",
];

/// Approximate bytes per generated line, for progress bars.
const APPROX_LINE_BYTES: u64 = 70;

/// Generated lines of text: a bounded corpus, or an endless stream.
pub struct GeneratedCorpus {
    lines: Option<u64>,
    rate: Option<f64>,
}

impl GeneratedCorpus {
    /// A corpus of `lines` lines (a bounded source).
    pub fn new(lines: u64) -> Self {
        GeneratedCorpus {
            lines: Some(lines),
            rate: None,
        }
    }

    /// Lines without end (an unbounded source), for streaming jobs.
    pub fn unbounded() -> Self {
        GeneratedCorpus {
            lines: None,
            rate: None,
        }
    }

    /// At most `per_second` lines per second in total.
    pub fn with_rate(mut self, per_second: f64) -> Self {
        self.rate = Some(per_second);
        self
    }
}

/// SplitMix64: a fast, well-mixed function of a counter.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Line `i` of the corpus.
pub fn line(i: u64) -> String {
    let mut state = mix(i);
    let words = 4 + state % 14;
    let mut text = String::with_capacity(96);
    text.push_str(&format!("Gen{}:{} ", i / 100 + 1, i % 100 + 1));
    for w in 0..words {
        state = mix(state ^ w);
        // Log-uniform rank: frequency falls roughly as 1/rank (Zipf).
        let u = (state >> 11) as f64 / (1u64 << 53) as f64;
        let rank = (20_000f64.powf(u) as usize).saturating_sub(1);
        let word = match COMMON.get(rank) {
            Some(common) => (*common).to_string(),
            None => format!("w{rank}"),
        };
        if state & 0xF0 == 0 {
            let mut cap = word.clone();
            cap[..1].make_ascii_uppercase();
            text.push_str(&cap);
        } else {
            text.push_str(&word);
        }
        text.push_str(match state & 0xF00 {
            0x100 => ", ",
            0x200 => "; ",
            0x300 => ": ",
            _ => " ",
        });
    }
    text.pop();
    text.push('.');
    text
}

/// Writes the first `lines` lines of the corpus into `path`, a line each.
pub fn write_file(path: &std::path::Path, lines: u64) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for i in 0..lines {
        out.write_all(line(i).as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// Where [`cached_file`] keeps the corpus of `lines` lines in `dir`.
pub fn cached_path(dir: &std::path::Path, lines: u64) -> std::path::PathBuf {
    dir.join(format!("corpus-{lines}.txt"))
}

/// The corpus of `lines` lines as a text file, generated once into `dir` and reused by every
/// later call: the demo then measures the engine reading a file, not the generator. The file
/// is written under a temporary name and renamed, so a run that is killed leaves no half file.
pub fn cached_file(dir: &std::path::Path, lines: u64) -> Result<std::path::PathBuf> {
    let path = cached_path(dir, lines);
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| crate::error::HummerError::io("cannot create the corpus cache", dir, e))?;
    let partial = path.with_extension(format!("txt.{}.partial", std::process::id()));
    write_file(&partial, lines)
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            crate::error::HummerError::io("cannot write the cached corpus", &path, e)
        })?;
    Ok(path)
}

struct CorpusReader {
    next: u64,
    step: u64,
    end: u64,
    ctx: SourceContext,
    /// Lines per second of this reader, and when it started.
    rate: Option<(f64, std::time::Instant)>,
    emitted: u64,
}

impl Source<String> for GeneratedCorpus {
    fn name(&self) -> String {
        match self.lines {
            Some(n) => format!("Generated Corpus ({n} lines)"),
            None => "Generated Corpus (unbounded)".into(),
        }
    }
    fn is_bounded(&self) -> bool {
        self.lines.is_some()
    }
    fn validate(&self) -> Result<()> {
        match self.rate {
            Some(r) if !(r.is_finite() && r > 0.0) => Err(crate::error::HummerError::Config(
                format!("corpus rate must be a positive number of lines per second, got {r}"),
            )),
            _ => Ok(()),
        }
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<String>>> {
        let end = self.lines.unwrap_or(u64::MAX);
        let mine = end
            .saturating_sub(ctx.subtask as u64)
            .div_ceil(ctx.parallelism as u64);
        if self.lines.is_some() {
            ctx.progress
                .bytes_total
                .fetch_add(mine * APPROX_LINE_BYTES, Ordering::Relaxed);
        }
        Ok(Box::new(CorpusReader {
            next: ctx.subtask as u64,
            step: ctx.parallelism as u64,
            end,
            ctx: ctx.clone(),
            rate: self
                .rate
                .map(|r| (r / ctx.parallelism as f64, std::time::Instant::now())),
            emitted: 0,
        }))
    }
}

impl SourceReader<String> for CorpusReader {
    fn poll_next(&mut self, out: &mut Vec<String>, max: usize) -> Result<SourceStatus> {
        let mut bytes = 0u64;
        let mut max = max as u64;
        if let Some((rate, start)) = self.rate {
            let due = (start.elapsed().as_secs_f64() * rate) as u64;
            max = max.min(due.saturating_sub(self.emitted));
            if max == 0 {
                return Ok(SourceStatus::Idle(std::time::Duration::from_millis(1)));
            }
        }
        self.emitted += max;
        for _ in 0..max {
            if self.next >= self.end {
                break;
            }
            let l = line(self.next);
            bytes += l.len() as u64 + 1;
            out.push(l);
            self.next += self.step;
        }
        self.ctx
            .progress
            .bytes_read
            .fetch_add(bytes, Ordering::Relaxed);
        Ok(if self.next >= self.end {
            SourceStatus::Finished
        } else {
            SourceStatus::MoreAvailable
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_deterministic_and_varied() {
        assert_eq!(line(42), line(42));
        assert_ne!(line(42), line(43));
        let distinct: std::collections::HashSet<String> = (0..2000)
            .flat_map(|i| crate::wordcount::Words::new(line(i)).map(|w| w.to_string()))
            .collect();
        assert!(
            distinct.len() > 500,
            "only {} distinct words",
            distinct.len()
        );
    }
}
