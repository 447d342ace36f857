//! `print()`: records to standard output, one per line, prefixed by the subtask number when
//! the sink is parallel (as Flink's `print()`), and by an identifier if it has one
//! (`id:2> `, as Flink's `PrintSinkFunction`); or to standard error.

use std::fmt::Debug;
use std::io::Write;
use std::marker::PhantomData;

use crate::error::{HummerError, Result};
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};

/// Prints `{:?}` of every record.
pub struct PrintSink<T> {
    identifier: Option<String>,
    to_stderr: bool,
    _types: PhantomData<fn(T)>,
}

impl<T> Default for PrintSink<T> {
    fn default() -> Self {
        PrintSink {
            identifier: None,
            to_stderr: false,
            _types: PhantomData,
        }
    }
}

impl<T> PrintSink<T> {
    /// Lines prefixed with `identifier` (`identifier> `, or `identifier:2> ` when parallel).
    pub fn with_identifier(mut self, identifier: impl Into<String>) -> Self {
        self.identifier = Some(identifier.into());
        self
    }

    /// Lines to standard error instead of standard output.
    pub fn to_stderr(mut self) -> Self {
        self.to_stderr = true;
        self
    }
}

struct PrintWriter<T> {
    prefix: String,
    text: String,
    to_stderr: bool,
    _types: PhantomData<fn(T)>,
}

impl<T: Debug + Send + 'static> Sink<T> for PrintSink<T> {
    fn name(&self) -> String {
        "Print".into()
    }
    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        let prefix = match (&self.identifier, ctx.parallelism > 1) {
            (None, false) => String::new(),
            (None, true) => format!("{}> ", ctx.subtask + 1),
            (Some(id), false) => format!("{id}> "),
            (Some(id), true) => format!("{id}:{}> ", ctx.subtask + 1),
        };
        Ok(Box::new(PrintWriter {
            prefix,
            text: String::new(),
            to_stderr: self.to_stderr,
            _types: PhantomData,
        }))
    }
}

impl<T: Debug + Send> SinkWriter<T> for PrintWriter<T> {
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()> {
        use std::fmt::Write as _;
        self.text.clear();
        for r in batch.drain(..) {
            let _ = writeln!(self.text, "{}{r:?}", self.prefix);
        }
        let written = if self.to_stderr {
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(self.text.as_bytes())
        } else {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(self.text.as_bytes())
                .and_then(|_| stdout.flush())
        };
        written.map_err(|e| HummerError::io("cannot write to", "<stdout>", e))
    }
}
