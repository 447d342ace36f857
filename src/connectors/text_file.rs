//! `read_text_file`: the lines of a file, or of every file in a directory. Bounded and
//! parallel.
//!
//! The input's bytes (files sorted by name, taken as one sequence) are cut into one contiguous
//! range per subtask. A range owns every line that *starts* inside it: a reader whose range
//! starts mid-line skips to the next line start, and reads past its end to finish its last
//! line. So every line is read exactly once, at any parallelism, without coordination. Lines
//! are returned without their `\n` (or `\r\n`) terminator and must be UTF-8.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::connectors::{Source, SourceContext, SourceReader, SourceStatus};
use crate::error::{HummerError, Result};

const READ_BUFFER: usize = 1 << 20;

/// Reads text lines from a file or a directory of files.
pub struct TextFileSource {
    path: PathBuf,
}

impl TextFileSource {
    /// A source over `path` (a file, or a directory whose regular, non-hidden files are read).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TextFileSource { path: path.into() }
    }

    /// The input files with their sizes, sorted by path.
    fn files(&self) -> Result<Vec<(PathBuf, u64)>> {
        let meta = std::fs::metadata(&self.path)
            .map_err(|e| HummerError::io("cannot read input", &self.path, e))?;
        if meta.is_file() {
            return Ok(vec![(self.path.clone(), meta.len())]);
        }
        let mut files = Vec::new();
        let entries = std::fs::read_dir(&self.path)
            .map_err(|e| HummerError::io("cannot list input directory", &self.path, e))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| HummerError::io("cannot list input directory", &self.path, e))?;
            let path = entry.path();
            let hidden = entry.file_name().to_string_lossy().starts_with(['.', '_']);
            let meta = entry
                .metadata()
                .map_err(|e| HummerError::io("cannot read input", &path, e))?;
            if meta.is_file() && !hidden {
                files.push((path, meta.len()));
            }
        }
        files.sort();
        Ok(files)
    }
}

/// A byte range of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) path: PathBuf,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// The splits of subtask `subtask` of `parallelism` over `files` taken as one sequence.
pub(crate) fn splits_for(
    files: &[(PathBuf, u64)],
    subtask: usize,
    parallelism: usize,
) -> Vec<Split> {
    let total: u64 = files.iter().map(|(_, len)| len).sum();
    let lo = (total as u128 * subtask as u128 / parallelism as u128) as u64;
    let hi = (total as u128 * (subtask as u128 + 1) / parallelism as u128) as u64;
    let mut splits = Vec::new();
    let mut offset = 0u64;
    for (path, len) in files {
        let (fs, fe) = (offset, offset + len);
        let (s, e) = (lo.max(fs), hi.min(fe));
        if s < e {
            splits.push(Split {
                path: path.clone(),
                start: s - fs,
                end: e - fs,
            });
        }
        offset = fe;
    }
    splits
}

impl Source<String> for TextFileSource {
    fn name(&self) -> String {
        format!("Text File Source ({})", self.path.display())
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn validate(&self) -> Result<()> {
        for (path, _) in self.files()? {
            File::open(&path).map_err(|e| HummerError::io("cannot read input", &path, e))?;
        }
        Ok(())
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<String>>> {
        let splits = splits_for(&self.files()?, ctx.subtask, ctx.parallelism);
        let bytes: u64 = splits.iter().map(|s| s.end - s.start).sum();
        ctx.progress.bytes_total.fetch_add(bytes, Ordering::Relaxed);
        Ok(Box::new(TextFileReader {
            splits: splits.into_iter().rev().collect(),
            current: None,
            ctx: ctx.clone(),
            line: Vec::new(),
        }))
    }
}

struct OpenSplit {
    reader: BufReader<File>,
    path: PathBuf,
    /// Offset of the next unread byte.
    pos: u64,
    end: u64,
}

struct TextFileReader {
    /// Splits still to read, last first.
    splits: Vec<Split>,
    current: Option<OpenSplit>,
    ctx: SourceContext,
    line: Vec<u8>,
}

fn open_split(split: &Split) -> Result<OpenSplit> {
    let path = &split.path;
    let mut file = File::open(path).map_err(|e| HummerError::io("cannot read input", path, e))?;
    let mut pos = split.start;
    if pos > 0 {
        // Start at the first line that begins at or after `start`: look at the byte before.
        file.seek(SeekFrom::Start(pos - 1))
            .map_err(|e| HummerError::io("cannot read input", path, e))?;
    }
    let mut reader = BufReader::with_capacity(READ_BUFFER, file);
    if pos > 0 {
        let mut skipped = Vec::new();
        let n = reader
            .read_until(b'\n', &mut skipped)
            .map_err(|e| HummerError::io("cannot read input", path, e))?;
        pos = pos - 1 + n as u64;
    }
    Ok(OpenSplit {
        reader,
        path: path.clone(),
        pos,
        end: split.end,
    })
}

impl OpenSplit {
    /// Reads the next line into `out`; returns the bytes consumed, 0 at end of file.
    ///
    /// A line that lies whole in the read buffer (almost every line) is copied once, from the
    /// buffer into its `String`; only a line that straddles a buffer refill goes through
    /// `scratch`.
    fn read_line(&mut self, scratch: &mut Vec<u8>, out: &mut Vec<String>) -> Result<usize> {
        scratch.clear();
        let mut consumed = 0;
        loop {
            let io_err = |e| HummerError::io("cannot read input", &self.path, e);
            let buf = self.reader.fill_buf().map_err(io_err)?;
            if buf.is_empty() {
                break;
            }
            match memchr::memchr(b'\n', buf) {
                Some(i) if scratch.is_empty() => {
                    let line = decode(&buf[..i], &self.path, self.pos)?;
                    out.push(line);
                    self.reader.consume(i + 1);
                    self.pos += i as u64 + 1;
                    return Ok(i + 1);
                }
                Some(i) => {
                    scratch.extend_from_slice(&buf[..i]);
                    self.reader.consume(i + 1);
                    consumed += i + 1;
                    break;
                }
                None => {
                    let n = buf.len();
                    scratch.extend_from_slice(buf);
                    self.reader.consume(n);
                    consumed += n;
                }
            }
        }
        if consumed > 0 {
            out.push(decode(scratch, &self.path, self.pos)?);
            self.pos += consumed as u64;
        }
        Ok(consumed)
    }
}

/// A line without its terminator (`\n` already removed; a trailing `\r` is dropped) as text.
fn decode(line: &[u8], path: &std::path::Path, line_start: u64) -> Result<String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(text) => Ok(text.to_owned()),
        Err(e) => Err(HummerError::BadInput {
            input: path.display().to_string(),
            reason: format!(
                "invalid UTF-8 at byte {} (in the line starting at byte {line_start})",
                line_start + e.valid_up_to() as u64
            ),
        }),
    }
}

impl SourceReader<String> for TextFileReader {
    fn poll_next(&mut self, out: &mut Vec<String>, max: usize) -> Result<SourceStatus> {
        let mut read_bytes = 0u64;
        let mut emitted = 0;
        while emitted < max {
            let split = match &mut self.current {
                Some(s) => s,
                None => match self.splits.pop() {
                    Some(next) => self.current.insert(open_split(&next)?),
                    None => break,
                },
            };
            if split.pos >= split.end {
                self.current = None;
                continue;
            }
            let n = split.read_line(&mut self.line, out)?;
            if n == 0 {
                // The file is shorter than when it was listed.
                self.current = None;
                continue;
            }
            read_bytes += n as u64;
            emitted += 1;
        }
        self.ctx
            .progress
            .bytes_read
            .fetch_add(read_bytes, Ordering::Relaxed);
        if self.current.is_none() && self.splits.is_empty() {
            Ok(SourceStatus::Finished)
        } else {
            Ok(SourceStatus::MoreAvailable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::metrics::JobProgress;
    use proptest::prelude::*;
    use std::io::Write;
    use std::path::Path;
    use std::sync::Arc;

    fn read_all(path: &Path, parallelism: usize) -> Vec<String> {
        let source = TextFileSource::new(path);
        let mut lines = Vec::new();
        for subtask in 0..parallelism {
            let ctx = SourceContext {
                subtask,
                parallelism,
                progress: Arc::new(JobProgress::default()),
            };
            let mut reader = source.create_reader(&ctx).unwrap();
            loop {
                let status = reader.poll_next(&mut lines, 7).unwrap();
                if status == SourceStatus::Finished {
                    break;
                }
            }
        }
        lines
    }

    proptest! {
        #[test]
        fn every_line_is_read_once_at_any_parallelism(
            lines in proptest::collection::vec("[a-z \\r]{0,12}", 0..60),
            files in 1usize..4,
            parallelism in 1usize..9,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let chunk = lines.len().div_ceil(files).max(1);
            for (i, part) in lines.chunks(chunk).enumerate() {
                let mut f = File::create(dir.path().join(format!("in-{i}.txt"))).unwrap();
                for l in part {
                    writeln!(f, "{l}").unwrap();
                }
            }
            let expected: Vec<String> = lines
                .iter()
                .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
                .collect();
            let mut got = read_all(dir.path(), parallelism);
            let mut want = expected.clone();
            got.sort();
            want.sort();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn invalid_utf8_names_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.txt");
        std::fs::write(&path, b"good line\nbad \xff line\n").unwrap();
        let source = TextFileSource::new(&path);
        let ctx = SourceContext {
            subtask: 0,
            parallelism: 1,
            progress: Arc::new(JobProgress::default()),
        };
        let mut reader = source.create_reader(&ctx).unwrap();
        let mut out = Vec::new();
        let err = reader.poll_next(&mut out, 100).unwrap_err().to_string();
        assert!(err.contains("bad.txt") && err.contains("byte 14"), "{err}");
        assert_eq!(out, vec!["good line".to_string()]);
    }

    #[test]
    fn missing_input_is_a_clear_error() {
        let err = TextFileSource::new("/nonexistent/input.txt")
            .validate()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot read input '/nonexistent/input.txt'"),
            "{err}"
        );
    }
}
