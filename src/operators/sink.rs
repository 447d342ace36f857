//! Sinks: the end of a stream. A [`Sink`] creates one [`SinkWriter`] per parallel subtask.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::error::Result;
use crate::operators::{Collector, OneInputOperator, OperatorContext};

/// A destination for the records of a stream (Flink's `Sink`).
pub trait Sink<T>: Send + Sync + 'static {
    /// Name shown in plans and error messages.
    fn name(&self) -> String;
    /// Creates the writer of one subtask. Called on the task's thread before any record.
    fn create_writer(&self, ctx: &OperatorContext) -> Result<Box<dyn SinkWriter<T>>>;
}

/// Writes the records of one subtask.
pub trait SinkWriter<T>: Send {
    /// Writes and drains a batch.
    fn write_batch(&mut self, batch: &mut Vec<T>) -> Result<()>;
    /// Called once at end of input: make everything written durable and visible.
    fn finish(&mut self) -> Result<()>;
}

/// Adapts a [`Sink`] to the operator interface; it emits nothing.
pub(crate) struct SinkOperator<T> {
    writer: Box<dyn SinkWriter<T>>,
    _types: PhantomData<fn(T)>,
}

impl<T: 'static> SinkOperator<T> {
    pub(crate) fn create(sink: &Arc<dyn Sink<T>>, ctx: &OperatorContext) -> Result<Self> {
        Ok(SinkOperator {
            writer: sink.create_writer(ctx)?,
            _types: PhantomData,
        })
    }
}

impl<T: 'static> OneInputOperator for SinkOperator<T> {
    type In = T;
    type Out = ();

    fn process_batch(&mut self, batch: &mut Vec<T>, _out: &mut Collector<'_, ()>) -> Result<()> {
        self.writer.write_batch(batch)
    }

    fn end_of_input(&mut self, _out: &mut Collector<'_, ()>) -> Result<()> {
        self.writer.finish()
    }
}
