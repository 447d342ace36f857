//! `print()`: records to standard output, one per line, prefixed by the subtask number when
//! the sink is parallel (as Flink's `print()`).

use std::fmt::Debug;
use std::io::Write;
use std::marker::PhantomData;

use crate::error::{HummerError, Result};
use crate::operators::OperatorContext;
use crate::operators::sink::{Sink, SinkWriter};

/// Prints `{:?}` of every record.
pub struct PrintSink<T>(PhantomData<fn(T)>);

impl<T> Default for PrintSink<T> {
    fn default() -> Self {
        PrintSink(PhantomData)
    }
}

struct PrintWriter<T> {
    prefix: String,
    text: String,
    _types: PhantomData<fn(T)>,
}

impl<T: Debug + Send + 'static> Sink<T> for PrintSink<T> {
    fn name(&self) -> String {
        "Print".into()
    }
    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>> {
        let prefix = if ctx.parallelism > 1 {
            format!("{}> ", ctx.subtask + 1)
        } else {
            String::new()
        };
        Ok(Box::new(PrintWriter {
            prefix,
            text: String::new(),
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
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(self.text.as_bytes())
            .and_then(|_| stdout.flush())
            .map_err(|e| HummerError::io("cannot write to", "<stdout>", e))
    }
}
