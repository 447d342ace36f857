//! Typed glue behind the type-erased graph.
//!
//! The graphs (`graph::*`) are not generic: a node's record type is known only where the API
//! call that made it was compiled. Each node therefore carries a [`TypeOps`] object made for
//! its output type; the executor asks it to create that type's channels, writers, fan-outs
//! and input tasks. Values cross the erased boundary as `Box<dyn Any>` and are downcast once,
//! while the job is being built; nothing is downcast per batch or per record.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::chain::FanOut;
use crate::channels::local::ChannelReceiver;
use crate::channels::{ChannelAllocator, ChannelSpec, Outbox};
use crate::error::{HummerError, Result, internal};
use crate::operators::{Discard, Output};
use crate::record_writer::RecordWriter;
use crate::task::{InputGate, OneInputTask, TaskBody};
use crate::types::CancelToken;
use crate::types::Data;
use crate::types::Partitioning;
use crate::types::metrics::SubtaskMetrics;

/// A `Box<dyn Output<T>>` with `T` erased.
pub struct ErasedOutput(Box<dyn Any + Send>);

impl ErasedOutput {
    /// Erases the record type of `output`.
    pub fn new<T: 'static>(output: Box<dyn Output<T>>) -> Self {
        ErasedOutput(Box::new(output))
    }

    /// The output back with its record type; an error if `T` is not that type.
    pub fn downcast<T: 'static>(self) -> Result<Box<dyn Output<T>>> {
        self.0
            .downcast::<Box<dyn Output<T>>>()
            .map(|b| *b)
            .map_err(|_| type_mismatch::<T>("output"))
    }
}

/// A `ChannelSender<T>` with `T` erased.
pub struct ErasedSender(Box<dyn Any + Send>);

/// A `ChannelReceiver<T>` with `T` erased.
pub struct ErasedReceiver(Box<dyn Any + Send>);

impl ErasedReceiver {
    /// The receiver back with its record type; an error if `T` is not that type.
    pub fn downcast<T: 'static>(self) -> Result<ChannelReceiver<T>> {
        self.0
            .downcast::<ChannelReceiver<T>>()
            .map(|b| *b)
            .map_err(|_| type_mismatch::<T>("channel"))
    }
}

/// Downcasts all receivers of one input to an input gate.
pub fn input_gate<T: 'static>(receivers: Vec<ErasedReceiver>) -> Result<InputGate<T>> {
    let channels = receivers
        .into_iter()
        .map(ErasedReceiver::downcast::<T>)
        .collect::<Result<Vec<_>>>()?;
    Ok(InputGate::new(channels))
}

/// The error for a value that is not of type `T`, naming `what` it was.
pub fn type_mismatch<T>(what: &str) -> HummerError {
    internal!(
        "{what} is not of record type {}",
        std::any::type_name::<T>()
    )
}

/// What a writer needs besides its channels.
pub struct WriterContext {
    /// Records per output batch.
    pub batch_size: usize,
    /// The number of key groups.
    pub max_parallelism: usize,
    /// Cancels the writer.
    pub cancel: CancelToken,
    /// The subtask's counters.
    pub metrics: Arc<SubtaskMetrics>,
}

/// Operations on the streams of one record type.
pub trait TypeOps: Send + Sync {
    /// The Rust type name, for plans.
    fn type_name(&self) -> &'static str;
    /// The ends of a channel of this type that this process holds (see
    /// [`ChannelAllocator::allocate`]).
    fn allocate(
        &self,
        alloc: &mut ChannelAllocator<'_>,
        channel: ChannelSpec,
    ) -> Result<(Option<ErasedSender>, Option<ErasedReceiver>)>;
    /// A writer that partitions into `senders`.
    fn writer(
        &self,
        senders: Vec<ErasedSender>,
        partitioning: &Partitioning,
        ctx: &WriterContext,
    ) -> Result<ErasedOutput>;
    /// One output feeding all of `outputs` (none: records are dropped, as after a sink).
    fn fan_out(&self, outputs: Vec<ErasedOutput>) -> Result<ErasedOutput>;
    /// A task whose chain head (`head`) reads from `receivers`.
    fn input_task(
        &self,
        receivers: Vec<ErasedReceiver>,
        head: ErasedOutput,
    ) -> Result<Box<dyn TaskBody>>;
}

/// The [`TypeOps`] of records of type `T`.
pub struct TypeOpsImpl<T>(PhantomData<fn() -> T>);

/// The [`TypeOps`] of record type `T`.
pub fn type_ops<T: Data>() -> Arc<dyn TypeOps> {
    Arc::new(TypeOpsImpl::<T>(PhantomData))
}

/// The [`TypeOps`] of the unit type that sinks emit (never sent through a channel).
pub fn unit_type_ops() -> Arc<dyn TypeOps> {
    type_ops::<()>()
}

impl<T: Data> TypeOps for TypeOpsImpl<T> {
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }

    fn allocate(
        &self,
        alloc: &mut ChannelAllocator<'_>,
        channel: ChannelSpec,
    ) -> Result<(Option<ErasedSender>, Option<ErasedReceiver>)> {
        let ends = alloc.allocate::<T>(channel)?;
        Ok((
            ends.push.map(|p| ErasedSender(Box::new(p))),
            ends.pull.map(|r| ErasedReceiver(Box::new(r))),
        ))
    }

    fn writer(
        &self,
        senders: Vec<ErasedSender>,
        partitioning: &Partitioning,
        ctx: &WriterContext,
    ) -> Result<ErasedOutput> {
        let channels = senders
            .into_iter()
            .map(|s| {
                s.0.downcast::<Outbox<T>>()
                    .map(|b| *b)
                    .map_err(|_| type_mismatch::<T>("channel"))
            })
            .collect::<Result<Vec<_>>>()?;
        let writer = RecordWriter::new(
            channels,
            partitioning,
            ctx.batch_size,
            ctx.max_parallelism,
            ctx.cancel.clone(),
            ctx.metrics.clone(),
        )?;
        Ok(ErasedOutput::new::<T>(Box::new(writer)))
    }

    fn fan_out(&self, outputs: Vec<ErasedOutput>) -> Result<ErasedOutput> {
        let mut outputs = outputs
            .into_iter()
            .map(ErasedOutput::downcast::<T>)
            .collect::<Result<Vec<_>>>()?;
        let out: Box<dyn Output<T>> = match outputs.len() {
            0 => Box::new(Discard::<T>::default()),
            1 => outputs.pop().ok_or_else(|| internal!("fan-out"))?,
            _ => Box::new(FanOut { outputs }),
        };
        Ok(ErasedOutput::new::<T>(out))
    }

    fn input_task(
        &self,
        receivers: Vec<ErasedReceiver>,
        head: ErasedOutput,
    ) -> Result<Box<dyn TaskBody>> {
        Ok(Box::new(OneInputTask {
            input: input_gate::<T>(receivers)?,
            head: head.downcast::<T>()?,
        }))
    }
}
