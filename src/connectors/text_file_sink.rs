//! `write_text_file(dir)`: one part file per subtask, `{record}\n` per record (Display).
//!
//! Subtask *i* writes `dir/.part-i.inprogress` and renames it to `dir/part-i` when its input
//! ends, so a reader never sees a half-written part file. Part files left by an earlier run
//! with a higher parallelism are removed when the job starts.

use std::fmt::Display;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use crate::error::{HummerError, Result};
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};

/// Writes records as text lines into a directory of part files.
pub struct TextFileSink<T> {
    dir: PathBuf,
    _types: PhantomData<fn(T)>,
}

impl<T> TextFileSink<T> {
    /// A sink writing into `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TextFileSink {
            dir: dir.into(),
            _types: PhantomData,
        }
    }
}

/// The committed name of subtask `subtask`'s part file.
pub fn part_file(dir: &Path, subtask: usize) -> PathBuf {
    dir.join(format!("part-{subtask}"))
}

fn remove_stale_parts(dir: &Path, parallelism: usize) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| HummerError::io("cannot list output directory", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let index = name
            .strip_prefix("part-")
            .or_else(|| {
                name.strip_prefix(".part-")
                    .and_then(|n| n.strip_suffix(".inprogress"))
            })
            .and_then(|n| n.parse::<usize>().ok());
        if index.is_some_and(|i| i >= parallelism) {
            std::fs::remove_file(entry.path())
                .map_err(|e| HummerError::io("cannot remove stale part file", entry.path(), e))?;
        }
    }
    Ok(())
}

struct TextFileWriter<T> {
    out: BufWriter<File>,
    in_progress: PathBuf,
    committed: PathBuf,
    _types: PhantomData<fn(T)>,
}

impl<T: Display + Send + 'static> Sink<T> for TextFileSink<T> {
    fn name(&self) -> String {
        format!("Text File Sink ({})", self.dir.display())
    }

    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| HummerError::io("cannot create output directory", &self.dir, e))?;
        if ctx.subtask == 0 {
            remove_stale_parts(&self.dir, ctx.parallelism)?;
        }
        let in_progress = self.dir.join(format!(".part-{}.inprogress", ctx.subtask));
        let file = File::create(&in_progress)
            .map_err(|e| HummerError::io("cannot create output file", &in_progress, e))?;
        Ok(Box::new(TextFileWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            in_progress,
            committed: part_file(&self.dir, ctx.subtask),
            _types: PhantomData,
        }))
    }
}

impl<T: Display + Send> SinkWriter<T> for TextFileWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        for r in batch.drain(..) {
            writeln!(self.out, "{r}")
                .map_err(|e| HummerError::io("cannot write output file", &self.in_progress, e))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| HummerError::io("cannot write output file", &self.in_progress, e))?;
        std::fs::rename(&self.in_progress, &self.committed)
            .map_err(|e| HummerError::io("cannot commit output file", &self.committed, e))
    }
}
