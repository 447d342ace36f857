//! `read_text_file`: the lines of a file, or of every file in a directory. Bounded and
//! parallel.
//!
//! The input's bytes (files sorted by name, taken as one sequence) are cut into one contiguous
//! range per subtask. A range owns every line that *starts* inside it: a reader whose range
//! starts mid-line skips to the next line start, and reads past its end to finish its last
//! line. So every line is read exactly once, at any parallelism, without coordination. Lines
//! are returned without their `\n` (or `\r\n`) terminator and must be UTF-8.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::error::{HummerError, Result};
use crate::{Source, SourceContext, SourceReader, SourceStatus};

/// Bytes read from a file at a time.
const READ_CHUNK: usize = 1 << 18;

/// Reads text lines from a file or a directory of files.
pub struct TextFileSource {
    path: PathBuf,
    /// Read only part `k` of `n` equal parts of the input.
    part: Option<(usize, usize)>,
}

impl TextFileSource {
    /// A source over `path` (a file, or a directory whose regular, non-hidden files are read).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        TextFileSource {
            path: path.into(),
            part: None,
        }
    }

    /// Reads only part `part` of `parts` equal parts of the input (by bytes, at line
    /// boundaries): the parts of all `part` values together read every line exactly once. For
    /// jobs split into independent tasks.
    pub fn part(mut self, part: usize, parts: usize) -> Self {
        self.part = Some((part, parts.max(1)));
        self
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
    fn is_replayable(&self) -> bool {
        true
    }

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
        // Part k of n, subtask s of p: range k * p + s of n * p equal ranges, which tile the
        // input exactly.
        let (k, n) = self.part.unwrap_or((0, 1));
        if k >= n {
            return Err(HummerError::Config(format!(
                "input part {k} of {n} does not exist"
            )));
        }
        let splits = splits_for(
            &self.files()?,
            k * ctx.parallelism + ctx.subtask,
            n * ctx.parallelism,
        );
        let bytes: u64 = splits.iter().map(|s| s.end - s.start).sum();
        ctx.progress.bytes_total.fetch_add(bytes, Ordering::Relaxed);
        Ok(Box::new(TextFileReader {
            splits: splits.into_iter().rev().collect(),
            current: None,
            ctx: ctx.clone(),
        }))
    }
}

/// A split being read.
///
/// The file is read in chunks of [`READ_CHUNK`] bytes. Each chunk is cut after its last
/// newline; the complete lines before the cut are validated as UTF-8 in one call and kept as
/// one `String`, and the bytes after it carry over to the next chunk. A line is then one
/// `memchr` and one copy out of the validated chunk.
struct OpenSplit {
    file: File,
    path: PathBuf,
    /// File offset of the next line to return.
    pos: u64,
    end: u64,
    /// Whole lines, validated; `chunk[next..]` are the ones not yet returned.
    chunk: String,
    next: usize,
    /// Bytes read after the chunk's last newline: the start of a line.
    carry: Vec<u8>,
    /// The split starts mid-file: the bytes up to the first newline belong to the split before.
    skip_partial_line: bool,
    eof: bool,
    /// Invalid UTF-8 found after the chunk's last good line: raised once that line is read.
    bad_input: Option<HummerError>,
}

struct TextFileReader {
    /// Splits still to read, last first.
    splits: Vec<Split>,
    current: Option<OpenSplit>,
    ctx: SourceContext,
}

fn open_split(split: &Split) -> Result<OpenSplit> {
    let path = &split.path;
    let mut file = File::open(path).map_err(|e| HummerError::io("cannot read input", path, e))?;
    // Start at the first line that begins at or after `start`: look at the byte before it.
    let pos = split.start.saturating_sub(1);
    file.seek(SeekFrom::Start(pos))
        .map_err(|e| HummerError::io("cannot read input", path, e))?;
    Ok(OpenSplit {
        file,
        path: path.clone(),
        pos,
        end: split.end,
        chunk: String::new(),
        next: 0,
        carry: Vec::new(),
        skip_partial_line: split.start > 0,
        eof: false,
        bad_input: None,
    })
}

impl OpenSplit {
    /// Reads the next line into `out`; returns the bytes it took in the file, 0 at the end.
    fn read_line(&mut self, out: &mut Vec<String>) -> Result<usize> {
        loop {
            if !self.skip_partial_line && self.pos >= self.end {
                // The next line starts in the next split.
                return Ok(0);
            }
            if let Some(len) = self.take_line(out) {
                return Ok(len);
            }
            if let Some(e) = self.bad_input.take() {
                return Err(e);
            }
            if self.eof {
                if self.carry.is_empty() {
                    return Ok(0);
                }
                // A last line without a newline.
                let line = std::mem::take(&mut self.carry);
                let n = line.len();
                out.push(decode(&line, &self.path, self.pos)?);
                self.pos += n as u64;
                return Ok(n);
            }
            self.refill()?;
        }
    }

    /// Takes the next whole line of the validated chunk, if any.
    #[inline]
    fn take_line(&mut self, out: &mut Vec<String>) -> Option<usize> {
        let rest = self.chunk.get(self.next..).filter(|r| !r.is_empty())?;
        // The chunk ends with a newline, so there always is one.
        let i = memchr::memchr(b'\n', rest.as_bytes()).unwrap_or(rest.len() - 1);
        let line = &rest[..i];
        out.push(line.strip_suffix('\r').unwrap_or(line).to_owned());
        self.next += i + 1;
        self.pos += i as u64 + 1;
        Some(i + 1)
    }

    /// Reads the next chunk of the file.
    fn refill(&mut self) -> Result<()> {
        let io_err = |e| HummerError::io("cannot read input", &self.path, e);
        let mut bytes = std::mem::take(&mut self.chunk).into_bytes();
        bytes.clear();
        bytes.append(&mut self.carry);
        let before = bytes.len();
        let n = (&mut self.file)
            .take(READ_CHUNK as u64)
            .read_to_end(&mut bytes)
            .map_err(io_err)?;
        self.eof = n == 0;
        if self.skip_partial_line {
            match memchr::memchr(b'\n', &bytes[before..]) {
                Some(i) => {
                    bytes.drain(..before + i + 1);
                    self.pos += (before + i + 1) as u64;
                    self.skip_partial_line = false;
                }
                None => {
                    self.pos += bytes.len() as u64;
                    bytes.clear();
                }
            }
        }
        let cut = match memchr::memrchr(b'\n', &bytes) {
            Some(i) if !self.eof => i + 1,
            _ if self.eof => 0,
            _ => {
                // No newline yet: the whole chunk is the start of one long line.
                self.carry = bytes;
                self.next = 0;
                return Ok(());
            }
        };
        self.carry = bytes.split_off(cut);
        self.next = 0;
        self.chunk = match String::from_utf8(bytes) {
            Ok(chunk) => chunk,
            Err(e) => {
                // Keep the good lines before the bad one; fail when they have been read.
                let at = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                let line_start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
                self.bad_input = Some(bad_utf8(
                    &self.path,
                    self.pos + at as u64,
                    self.pos + line_start as u64,
                ));
                bytes.truncate(line_start);
                String::from_utf8(bytes).unwrap_or_default()
            }
        };
        Ok(())
    }
}

fn bad_utf8(path: &std::path::Path, at: u64, line_start: u64) -> HummerError {
    HummerError::BadInput {
        input: path.display().to_string(),
        reason: format!("invalid UTF-8 at byte {at} (in the line starting at byte {line_start})"),
    }
}

/// A line without its terminator (`\n` already removed; a trailing `\r` is dropped) as text.
fn decode(line: &[u8], path: &std::path::Path, line_start: u64) -> Result<String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(text) => Ok(text.to_owned()),
        Err(e) => Err(bad_utf8(
            path,
            line_start + e.valid_up_to() as u64,
            line_start,
        )),
    }
}

impl SourceReader<String> for TextFileReader {
    /// The rest of the work: the current split from its next line, then the splits not
    /// started, as `(path, start, end)`.
    fn snapshot_position(&self) -> Option<Vec<u8>> {
        let mut rest: Vec<(String, u64, u64)> = Vec::new();
        if let Some(c) = &self.current
            && !c.skip_partial_line
        {
            rest.push((c.path.display().to_string(), c.pos, c.end));
        } else if let Some(c) = &self.current {
            // Still before the split's first line: the whole split is left.
            rest.push((c.path.display().to_string(), c.pos + 1, c.end));
        }
        for s in self.splits.iter().rev() {
            rest.push((s.path.display().to_string(), s.start, s.end));
        }
        postcard::to_stdvec(&rest).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let rest: Vec<(String, u64, u64)> =
            crate::state::snapshot::decode_checkpointed("a text file source", position)?;
        self.current = None;
        self.splits = rest
            .into_iter()
            .rev()
            .map(|(path, start, end)| Split {
                path: path.into(),
                start,
                end,
            })
            .collect();
        Ok(())
    }

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
            let n = split.read_line(out)?;
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
    use crate::testing::read_after_restore;
    use proptest::prelude::*;
    use std::io::Write;
    use std::path::Path;

    /// A file `name` holding `contents`, in a directory of its own that is removed when the
    /// returned handle drops.
    fn temp_file(name: &str, contents: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        (dir, path)
    }

    /// The lines in order: parallel readers read them in no particular one.
    fn sorted(mut lines: Vec<String>) -> Vec<String> {
        lines.sort();
        lines
    }

    fn read_all(path: &Path, parallelism: usize) -> Vec<String> {
        read_part(TextFileSource::new(path), parallelism)
    }

    fn read_part(source: TextFileSource, parallelism: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for subtask in 0..parallelism {
            let ctx = SourceContext::standalone(subtask, parallelism);
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
            prop_assert_eq!(sorted(read_all(dir.path(), parallelism)), sorted(expected));
        }
    }

    #[test]
    fn a_restored_position_reads_exactly_the_rest() {
        let lines: Vec<String> = (0..1000).map(|i| format!("line {i}")).collect();
        let (_dir, path) = temp_file("in.txt", lines.join("\n") + "\n");
        let ctx = SourceContext::standalone(1, 3);
        let source = TextFileSource::new(&path);
        let mut all = Vec::new();
        let mut reader = source.create_reader(&ctx).unwrap();
        while reader.poll_next(&mut all, 100).unwrap() != SourceStatus::Finished {}
        for taken in [0usize, 1, 57, 200] {
            let mut first = Vec::new();
            let mut reader = source.create_reader(&ctx).unwrap();
            while first.len() < taken {
                let max = taken - first.len();
                if reader.poll_next(&mut first, max).unwrap() == SourceStatus::Finished {
                    break;
                }
            }
            first.extend(read_after_restore(&source, &ctx, &*reader, 64));
            assert_eq!(first, all, "after {taken} lines");
        }
    }

    #[test]
    fn parts_read_every_line_once() {
        let lines: Vec<String> = (0..500)
            .map(|i| format!("line {i} {}", "x".repeat(i % 37)))
            .collect();
        let (_dir, path) = temp_file("in.txt", lines.join("\n") + "\n");
        for (parts, parallelism) in [(1, 1), (3, 2), (12, 1), (5, 4)] {
            let got = (0..parts)
                .flat_map(|k| read_part(TextFileSource::new(&path).part(k, parts), parallelism))
                .collect();
            assert_eq!(
                sorted(got),
                sorted(lines.clone()),
                "{parts} parts, parallelism {parallelism}"
            );
        }
    }

    #[test]
    fn lines_longer_than_a_read_chunk_and_crlf_survive_splitting() {
        let long = "x".repeat(READ_CHUNK * 2 + 17);
        let text = format!("a\r\n{long}\nb\n\n{long}é\r\nlast without newline");
        let (_dir, path) = temp_file("long.txt", &text);
        let expected: Vec<String> = vec![
            "a".into(),
            long.clone(),
            "b".into(),
            String::new(),
            format!("{long}é"),
            "last without newline".into(),
        ];
        for parallelism in [1, 2, 3, 7] {
            assert_eq!(
                sorted(read_all(&path, parallelism)),
                sorted(expected.clone()),
                "parallelism {parallelism}"
            );
        }
    }

    #[test]
    fn invalid_utf8_names_file_and_offset() {
        let (_dir, path) = temp_file("bad.txt", b"good line\nbad \xff line\n");
        let source = TextFileSource::new(&path);
        let ctx = SourceContext::standalone(0, 1);
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
