//! The harness's CSV files of one table as a source: `DIR/<table>/part-*.csv`.
//!
//! Each part file is in event-time order, but the parts are not in order with each other, so
//! a subtask that reads several files must not let one of them run ahead: it reads its files
//! interleaved, a few rows from each in turn, and holds its watermark at the minimum over its
//! unfinished files (each file's largest event time less the watermark delay). Subtask `s` of
//! `p` reads files `s, s + p, ...` (sorted by name). A row that does not parse fails the job
//! with the file and line. Positions (byte offset and line per file) are checkpointed.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::connectors::{Source, SourceContext, SourceReader, SourceStatus};
use crate::error::{HummerError, Result};
use crate::nexmark::generator::Table;
use crate::types::{MIN_WATERMARK, Timestamp};

/// A table that can be read from CSV rows.
pub trait CsvTable: Table {
    /// Parses one row, only `columns` of its text columns; `Err` says what is wrong with it.
    fn parse(line: &str, columns: Self::Columns) -> std::result::Result<Self, String>;
}

/// One table's part files.
pub struct CsvTableSource<T: CsvTable> {
    dir: PathBuf,
    /// How far behind a file's largest event time its watermark trails.
    delay_ms: i64,
    columns: T::Columns,
}

impl<T: CsvTable> CsvTableSource<T> {
    /// The files of `dir` (the table's directory).
    pub fn new(dir: impl Into<PathBuf>, delay_ms: i64) -> Self {
        CsvTableSource {
            dir: dir.into(),
            delay_ms,
            columns: T::ALL_COLUMNS,
        }
    }

    /// Only these columns (the others left empty).
    pub fn with_columns(mut self, columns: T::Columns) -> Self {
        self.columns = columns;
        self
    }

    fn files(&self) -> Result<Vec<PathBuf>> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| HummerError::io("cannot list the table", &self.dir, e))?;
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && !is_hidden(p))
            .collect();
        files.sort();
        Ok(files)
    }
}

fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

struct PartFile {
    path: PathBuf,
    reader: BufReader<File>,
    offset: u64,
    line: u64,
    max_time: Option<Timestamp>,
    done: bool,
}

struct CsvTableReader<T: CsvTable> {
    files: Vec<PartFile>,
    next: usize,
    delay_ms: i64,
    /// A line that spans the end of the reader's buffer.
    buf: Vec<u8>,
    columns: T::Columns,
}

impl<T: CsvTable> Source<T> for CsvTableSource<T> {
    fn name(&self) -> String {
        format!("CSV {}", self.dir.display())
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn is_replayable(&self) -> bool {
        true
    }
    fn validate(&self) -> Result<()> {
        if self.files()?.is_empty() {
            return Err(HummerError::BadInput {
                input: self.dir.display().to_string(),
                reason: format!("no part files of the {} table", T::NAME),
            });
        }
        Ok(())
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        let p = ctx.parallelism.max(1);
        let mut files = Vec::new();
        for path in self.files()?.into_iter().skip(ctx.subtask).step_by(p) {
            let file = File::open(&path).map_err(|e| HummerError::io("cannot open", &path, e))?;
            files.push(PartFile {
                path,
                reader: BufReader::with_capacity(1 << 18, file),
                offset: 0,
                line: 0,
                max_time: None,
                done: false,
            });
        }
        Ok(Box::new(CsvTableReader::<T> {
            files,
            next: 0,
            delay_ms: self.delay_ms,
            buf: Vec::new(),
            columns: self.columns,
        }))
    }
}

/// One row of a part file (`None` for an empty line); a bad one is named with file and line.
fn parse_line<T: CsvTable>(
    line: &[u8],
    columns: T::Columns,
    path: &Path,
    number: u64,
) -> Result<Option<T>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Ok(None);
    }
    let bad = |reason: String| HummerError::BadInput {
        input: format!("{} line {number}", path.display()),
        reason,
    };
    let text = std::str::from_utf8(line).map_err(|e| bad(format!("not UTF-8 text: {e}")))?;
    T::parse(text, columns).map(Some).map_err(bad)
}

impl<T: CsvTable> SourceReader<T> for CsvTableReader<T> {
    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        let open = self.files.iter().filter(|f| !f.done).count();
        if open == 0 {
            return Ok(SourceStatus::Finished);
        }
        // A few rows from each open file in turn keeps the files close in event time.
        let per_file = (max / open).max(1);
        for _ in 0..self.files.len() {
            let i = self.next;
            self.next = (self.next + 1) % self.files.len();
            let f = &mut self.files[i];
            if f.done {
                continue;
            }
            for _ in 0..per_file {
                // A line is parsed where it lies in the reader's buffer; only one that spans
                // the buffer's end is copied out first.
                let available = f
                    .reader
                    .fill_buf()
                    .map_err(|e| HummerError::io("cannot read", &f.path, e))?;
                if available.is_empty() {
                    f.done = true;
                    break;
                }
                let found = memchr::memchr(b'\n', available);
                f.line += 1;
                let parsed = match found {
                    Some(end) => {
                        let line = &f.reader.buffer()[..end];
                        let parsed = parse_line::<T>(line, self.columns, &f.path, f.line)?;
                        f.reader.consume(end + 1);
                        f.offset += end as u64 + 1;
                        parsed
                    }
                    None => {
                        self.buf.clear();
                        let n = f
                            .reader
                            .read_until(b'\n', &mut self.buf)
                            .map_err(|e| HummerError::io("cannot read", &f.path, e))?;
                        f.offset += n as u64;
                        let line = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
                        parse_line::<T>(line, self.columns, &f.path, f.line)?
                    }
                };
                let Some(row) = parsed else {
                    continue;
                };
                let t = row.time();
                f.max_time = Some(f.max_time.map_or(t, |m| m.max(t)));
                out.push(row);
            }
        }
        Ok(if self.files.iter().all(|f| f.done) {
            SourceStatus::Finished
        } else {
            SourceStatus::MoreAvailable
        })
    }

    /// The minimum over the unfinished files of their largest event time less the delay; the
    /// minimum watermark while one of them has not produced a row.
    fn current_watermark(&self) -> Option<Timestamp> {
        let mut w: Option<Timestamp> = None;
        for f in self.files.iter().filter(|f| !f.done) {
            let own = f
                .max_time
                .map_or(MIN_WATERMARK, |m| m.saturating_sub(self.delay_ms + 1));
            w = Some(w.map_or(own, |x| x.min(own)));
        }
        w
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        let positions: Vec<(u64, u64, Option<Timestamp>, bool)> = self
            .files
            .iter()
            .map(|f| (f.offset, f.line, f.max_time, f.done))
            .collect();
        postcard::to_stdvec(&positions).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let bad = |reason: String| HummerError::BadInput {
            input: format!("checkpointed position of the CSV {} source", T::NAME),
            reason,
        };
        let positions: Vec<(u64, u64, Option<Timestamp>, bool)> =
            postcard::from_bytes(position).map_err(|e| bad(e.to_string()))?;
        if positions.len() != self.files.len() {
            return Err(bad(format!(
                "{} files in the checkpoint, {} now",
                positions.len(),
                self.files.len()
            )));
        }
        for (f, (offset, line, max_time, done)) in self.files.iter_mut().zip(positions) {
            f.reader
                .seek(SeekFrom::Start(offset))
                .map_err(|e| HummerError::io("cannot seek", &f.path, e))?;
            (f.offset, f.line, f.max_time, f.done) = (offset, line, max_time, done);
        }
        Ok(())
    }
}
