//! The `filesystem` source: the rows of every file under a table's path (a line each, in the
//! table's `csv` or `json` format), each file one split with its own watermark.
//!
//! Flink's filesystem source reads each file as one split and keeps a watermark per split;
//! the watermark of a source subtask is the minimum over the splits it has not finished. A
//! subtask here reads its files in turn, a batch from each, so that no file runs ahead of the
//! others, and an event of an in-order file is never late just because another file was read
//! first. Files are dealt to subtasks by their place in the sorted listing (file `i` to
//! subtask `i mod parallelism`); hidden files (`.name`, `_name`) are not read, as Flink's
//! in-progress part files are not.
//!
//! A line is decoded into the table's physical columns, then its computed columns are
//! computed ([`Calc`]); a line that does not decode fails the job naming the file, the line
//! and what is wrong, unless the table says `'csv.ignore-parse-errors' = 'true'` (or
//! `'json.ignore-parse-errors'`): then a field that does not decode is `NULL`, and only a
//! line that cannot be read at all (not a JSON object) is skipped.

use std::path::{Path, PathBuf};

use hummer_connectors::text_file::TextFileSource;
use hummer_connectors::{Source, SourceContext, SourceReader, SourceStatus};
use hummer_operators::WatermarkStrategy;
use hummer_operators::watermark_strategy::WatermarkTracker;
use hummer_types::error::{HummerError, Result};
use hummer_types::{MIN_WATERMARK, NO_TIMESTAMP, Timestamp};
use serde::{Deserialize, Serialize};

use super::column_use::ColumnUse;
use crate::changelog::carry;
use crate::format::Format;
use crate::lower::Calc;
use crate::schema::Schema;
use crate::value::Row;

/// The rows of a `filesystem` table's files.
#[derive(Clone)]
pub struct TableFiles {
    /// The table's name, for errors.
    pub table: String,
    /// A file, or a directory of files.
    pub path: PathBuf,
    /// The format of its lines.
    pub format: Format,
    /// The physical columns, as the lines hold them.
    pub physical: Schema,
    /// The computed columns, appended to the physical ones.
    pub computed: Option<Calc>,
    /// The columns of the table's rows the query reads (the others stay `NULL`).
    pub used: ColumnUse,
    /// The physical columns to decode, once the readers are made (`None`: all).
    pub decoded: Option<Vec<bool>>,
}

impl TableFiles {
    /// The files under the path, sorted.
    fn files(&self) -> Result<Vec<PathBuf>> {
        list_files(&self.path)
    }

    /// The source as its readers run it: only the columns the query reads are decoded and
    /// computed.
    fn pruned(&self) -> TableFiles {
        let used = self.used.used();
        let mut source = self.clone();
        match &mut source.computed {
            None => source.decoded = Some(used),
            Some(calc) => {
                let (condition, mut projection) = calc.clone().into_parts();
                for (p, u) in projection.iter_mut().zip(&used) {
                    // A physical column not read is not decoded: it is NULL as it is.
                    if !u && !matches!(p.expr, crate::expr::Expr::Column(_)) {
                        p.expr = crate::expr::Expr::Literal(crate::value::Value::Null);
                    }
                }
                *calc = Calc::new(condition, projection);
                source.decoded = Some(calc.used(self.physical.columns.len()));
            }
        }
        source
    }

    /// The row of `line` (of `file`), `None` for a line that holds none or one skipped as
    /// unparsable; in a changelog format, the change it holds as [`carry`] makes a row of it.
    fn row(&self, line: &str, file: &Path) -> Result<Option<Row>> {
        if self.format.skips(line) {
            return Ok(None);
        }
        if self.format.takes_updates() {
            return self.change(line, file);
        }
        let physical = match self
            .format
            .decode(line, &self.physical, self.decoded.as_deref())
        {
            Ok(row) => row,
            Err(_) if self.format.ignores_parse_errors() => return Ok(None),
            Err(reason) => return Err(self.bad_line(line, file, reason)),
        };
        self.computed(physical)
    }

    /// The change of a changelog `line`, carried as one row.
    fn change(&self, line: &str, file: &Path) -> Result<Option<Row>> {
        let (kind, row, before) = match self.format.decode_change(line, &self.physical) {
            Ok(change) => change,
            Err(_) if self.format.ignores_parse_errors() => return Ok(None),
            Err(reason) => return Err(self.bad_line(line, file, reason)),
        };
        let Some(row) = self.computed(row)? else {
            return Ok(None);
        };
        let before = match before {
            Some(before) => self.computed(before)?,
            None => None,
        };
        Ok(Some(carry(kind, row, before)))
    }

    /// The error of a `line` of `file` that does not decode.
    fn bad_line(&self, line: &str, file: &Path, reason: String) -> HummerError {
        HummerError::BadInput {
            input: format!(
                "the line '{line}' of table '{}' (file '{}')",
                self.table,
                file.display()
            ),
            reason: format!(
                "{reason} (the table's '{}.ignore-parse-errors' = 'true' reads such fields \
                 as NULL)",
                self.format.name()
            ),
        }
    }

    /// The table's row of a `physical` row: its computed columns appended.
    fn computed(&self, physical: Row) -> Result<Option<Row>> {
        match &self.computed {
            None => Ok(Some(physical)),
            Some(calc) => calc.extend_row(physical),
        }
    }
}

impl TableFiles {
    /// Every row of every file, read here and now: a lookup join's table, which each subtask
    /// holds whole (Flink's lookup source of a bounded table, cached in full).
    pub fn read_all(&self) -> Result<Vec<Row>> {
        use std::io::BufRead;
        let mut rows = Vec::new();
        for file in self.files()? {
            let reader = std::fs::File::open(&file)
                .map(std::io::BufReader::new)
                .map_err(|e| HummerError::io("cannot read", &file, e))?;
            let mut open = None;
            let mut records = Vec::new();
            for line in reader.lines() {
                let line = line.map_err(|e| HummerError::io("cannot read", &file, e))?;
                let line = line.strip_suffix('\r').map(str::to_string).unwrap_or(line);
                records.extend(self.format.record(&mut open, line));
            }
            records.extend(open);
            for record in records {
                if let Some(row) = self.row(&record, &file)? {
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    }
}

/// The files of a table's `path`: the file itself, or every file below the directory, its
/// subdirectories too (as Flink's file source enumerates them), but hidden ones (`.` or `_`
/// first, an in-progress part file's), in path order.
pub fn list_files(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = std::fs::metadata(path).map_err(|e| HummerError::io("cannot read", path, e))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| HummerError::io("cannot list", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| HummerError::io("cannot list", &dir, e))?;
            if entry.file_name().to_string_lossy().starts_with(['.', '_']) {
                continue;
            }
            let kind = entry
                .file_type()
                .map_err(|e| HummerError::io("cannot read", entry.path(), e))?;
            if kind.is_file() {
                files.push(entry.path());
            } else if kind.is_dir() {
                dirs.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

impl Source<Row> for TableFiles {
    fn name(&self) -> String {
        // `CSV files: bid`, `JSON files: events`, `DEBEZIUM-JSON files: changes`.
        format!(
            "{} files: {}",
            self.format.name().to_uppercase(),
            self.table
        )
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn is_replayable(&self) -> bool {
        true
    }
    fn validate(&self) -> Result<()> {
        for file in self.files()? {
            std::fs::File::open(&file).map_err(|e| HummerError::io("cannot read", &file, e))?;
        }
        Ok(())
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<Row>>> {
        let files = self
            .files()?
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % ctx.parallelism.max(1) == ctx.subtask)
            .map(|(_, f)| f)
            .collect();
        let mut reader = TableFilesReader {
            source: self.pruned(),
            ctx: ctx.clone(),
            files: Vec::new(),
            next: 0,
            lines: Vec::new(),
            strategy: None,
        };
        reader.open(files, None)?;
        Ok(Box::new(reader))
    }
}

/// One file being read.
struct FileSplit {
    path: PathBuf,
    reader: Box<dyn SourceReader<String>>,
    finished: bool,
    /// Its timestamps and watermark, once the source has a watermark strategy.
    tracker: Option<WatermarkTracker<Row>>,
    /// The lines read of a record not ended yet (a csv field with line breaks).
    open_record: Option<String>,
}

/// Where each file of a reader stands: what a checkpoint keeps.
#[derive(Serialize, Deserialize)]
struct Position {
    files: Vec<FilePosition>,
}

/// Where one file's reading stands.
#[derive(Serialize, Deserialize)]
struct FilePosition {
    path: PathBuf,
    /// Read to the end.
    finished: bool,
    /// Its reader's position.
    reader: Option<Vec<u8>>,
    /// The lines of a record that goes on after that position.
    open_record: Option<String>,
}

/// The reader of one subtask's files.
struct TableFilesReader {
    source: TableFiles,
    ctx: SourceContext,
    files: Vec<FileSplit>,
    /// The file to read from next.
    next: usize,
    lines: Vec<String>,
    strategy: Option<WatermarkStrategy<Row>>,
}

impl TableFilesReader {
    /// Reads `files` from the start, or from where `positions` say.
    fn open(&mut self, files: Vec<PathBuf>, positions: Option<Position>) -> Result<()> {
        let mut positions = positions.map(|p| p.files.into_iter());
        self.files.clear();
        for path in files {
            // A file is one text-file split of its own, read whole.
            let ctx = SourceContext {
                subtask: 0,
                parallelism: 1,
                ..self.ctx.clone()
            };
            let mut reader = TextFileSource::new(&path).create_reader(&ctx)?;
            let (mut finished, mut open_record) = (false, None);
            if let Some(at) = positions.as_mut().and_then(Iterator::next) {
                (finished, open_record) = (at.finished, at.open_record);
                if let Some(position) = at.reader {
                    reader.restore_position(&position)?;
                }
            }
            self.files.push(FileSplit {
                path,
                reader,
                finished,
                tracker: self.strategy.as_ref().map(WatermarkStrategy::tracker),
                open_record,
            });
        }
        self.next = 0;
        Ok(())
    }

    /// Reads up to `max` rows from the next unfinished file; stamps them if `stamps` is given.
    fn poll(
        &mut self,
        out: &mut Vec<Row>,
        mut stamps: Option<&mut Vec<Timestamp>>,
        max: usize,
    ) -> Result<SourceStatus> {
        let n = self.files.len();
        let Some(i) = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| !self.files[i].finished)
        else {
            return Ok(SourceStatus::Finished);
        };
        self.next = (i + 1) % n;
        let file = &mut self.files[i];
        self.lines.clear();
        if file.reader.poll_next(&mut self.lines, max)? == SourceStatus::Finished {
            file.finished = true;
        }
        let format = &self.source.format;
        let mut records: Vec<String> = self
            .lines
            .drain(..)
            .filter_map(|line| format.record(&mut file.open_record, line))
            .collect();
        // At the file's end, an open record is what it is (an error, as a bad line).
        if file.finished {
            records.extend(file.open_record.take());
        }
        for record in records {
            let Some(row) = self.source.row(&record, &file.path)? else {
                continue;
            };
            if let Some(stamps) = stamps.as_deref_mut() {
                let t = match &mut file.tracker {
                    Some(tracker) => tracker.on_record(&row, NO_TIMESTAMP).0,
                    None => NO_TIMESTAMP,
                };
                stamps.push(t);
            }
            out.push(row);
        }
        Ok(if self.files.iter().all(|f| f.finished) {
            SourceStatus::Finished
        } else {
            SourceStatus::MoreAvailable
        })
    }
}

impl SourceReader<Row> for TableFilesReader {
    fn poll_next(&mut self, out: &mut Vec<Row>, max: usize) -> Result<SourceStatus> {
        self.poll(out, None, max)
    }

    fn poll_next_stamped(
        &mut self,
        out: &mut Vec<Row>,
        stamps: &mut Vec<Timestamp>,
        max: usize,
    ) -> Result<SourceStatus> {
        self.poll(out, Some(stamps), max)
    }

    fn use_watermark_strategy(&mut self, strategy: &WatermarkStrategy<Row>) -> bool {
        for f in &mut self.files {
            f.tracker = Some(strategy.tracker());
        }
        self.strategy = Some(strategy.clone());
        true
    }

    fn on_periodic_watermark(&mut self, now: Timestamp) {
        for t in self.files.iter_mut().filter_map(|f| f.tracker.as_mut()) {
            t.on_periodic(now);
        }
    }

    /// The minimum over the files not finished; a file without a watermark yet holds it at
    /// the start of time.
    fn current_watermark(&self) -> Option<Timestamp> {
        self.strategy.as_ref()?;
        self.files
            .iter()
            .filter(|f| !f.finished)
            .filter_map(|f| f.tracker.as_ref())
            .map(|t| t.watermark().unwrap_or(MIN_WATERMARK))
            .min()
    }

    fn snapshot_position(&self) -> Option<Vec<u8>> {
        let position = Position {
            files: self
                .files
                .iter()
                .map(|f| FilePosition {
                    path: f.path.clone(),
                    finished: f.finished,
                    reader: f.reader.snapshot_position(),
                    open_record: f.open_record.clone(),
                })
                .collect(),
        };
        postcard::to_stdvec(&position).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let position: Position =
            postcard::from_bytes(position).map_err(|e| HummerError::BadInput {
                input: format!("the checkpointed position of table '{}'", self.source.table),
                reason: format!("it does not decode: {e}"),
            })?;
        let files = position.files.iter().map(|f| f.path.clone()).collect();
        self.open(files, Some(position))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Csv;
    use crate::schema::Column;
    use crate::types::{DataType, SqlType};
    use crate::value::Value;

    fn source(dir: &Path) -> TableFiles {
        TableFiles {
            table: "t".into(),
            path: dir.to_path_buf(),
            format: Format::Csv(Csv::default()),
            physical: Schema::new(vec![Column {
                name: "ts".into(),
                ty: DataType::nullable(SqlType::BigInt),
            }]),
            computed: None,
            used: ColumnUse::default(),
            decoded: None,
        }
    }

    fn write(dir: &Path, name: &str, values: impl Iterator<Item = i64>) {
        let text: String = values.map(|v| format!("{v}\n")).collect();
        std::fs::write(dir.join(name), text).expect("write a test file");
    }

    /// Two in-order files read by one subtask: every row is stamped no lower than the
    /// watermark the reader held before it (none is late), and every row is read once.
    #[test]
    fn files_are_read_in_turn_and_none_is_late() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        write(dir.path(), "a.csv", 0..5_000);
        write(dir.path(), "b.csv", 0..5_000);
        write(dir.path(), ".hidden", 0..10);
        let src = source(dir.path());
        let mut reader = src
            .create_reader(&SourceContext::standalone(0, 1))
            .expect("a reader");
        let strategy = WatermarkStrategy::<Row>::for_monotonous_timestamps()
            .with_timestamp_assigner(|row: &Row, _| match row[0] {
                Value::BigInt(t) => t,
                _ => NO_TIMESTAMP,
            });
        assert!(reader.use_watermark_strategy(&strategy));
        let (mut rows, mut stamps, mut now) = (Vec::new(), Vec::new(), 0);
        loop {
            let before = rows.len();
            let watermark = reader.current_watermark().unwrap_or(MIN_WATERMARK);
            let status = reader
                .poll_next_stamped(&mut rows, &mut stamps, 100)
                .expect("a poll");
            for &t in &stamps[before..] {
                assert!(
                    t > watermark,
                    "a row at {t} is late for watermark {watermark}"
                );
            }
            now += 200;
            reader.on_periodic_watermark(now);
            if status == SourceStatus::Finished {
                break;
            }
        }
        assert_eq!(rows.len(), 10_000);
        let mut seen: Vec<i64> = stamps.clone();
        seen.sort_unstable();
        let mut expected: Vec<i64> = (0..5_000).chain(0..5_000).collect();
        expected.sort_unstable();
        assert_eq!(seen, expected);
    }

    /// Files dealt over subtasks are read exactly once in all, and a reader restored from
    /// its position mid-way reads the rest.
    #[test]
    fn subtasks_share_the_files_and_resume_from_a_position() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for f in 0..5 {
            write(
                dir.path(),
                &format!("part-{f}.csv"),
                f * 1_000..f * 1_000 + 700,
            );
        }
        let src = source(dir.path());
        let mut all = Vec::new();
        for subtask in 0..3 {
            let ctx = SourceContext::standalone(subtask, 3);
            let mut reader = src.create_reader(&ctx).expect("a reader");
            let mut rows = Vec::new();
            reader.poll_next(&mut rows, 250).expect("a poll");
            let position = reader.snapshot_position().expect("a position");
            let mut resumed = src.create_reader(&ctx).expect("a reader");
            resumed.restore_position(&position).expect("a restore");
            while resumed.poll_next(&mut rows, 250).expect("a poll") != SourceStatus::Finished {}
            all.extend(rows);
        }
        let mut got: Vec<i64> = all
            .iter()
            .map(|r| match r[0] {
                Value::BigInt(t) => t,
                _ => -1,
            })
            .collect();
        got.sort_unstable();
        let expected: Vec<i64> = (0..5).flat_map(|f| f * 1_000..f * 1_000 + 700).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_bad_line_names_the_file_and_the_line() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("x.csv"), "1\nabc\n").expect("write");
        let src = source(dir.path());
        let mut reader = src
            .create_reader(&SourceContext::standalone(0, 1))
            .expect("a reader");
        let err = reader
            .poll_next(&mut Vec::new(), 10)
            .expect_err("a bad line fails");
        let text = err.to_string();
        assert!(text.contains("'abc'") && text.contains("x.csv"), "{text}");
    }
}
