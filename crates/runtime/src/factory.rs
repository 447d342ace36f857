//! How a graph node becomes a running operator instance.
//!
//! The API stores one factory per node, made where the node's types are known. The executor
//! calls it once per subtask with the downstream [`ErasedOutput`] it built first, so a chain is
//! assembled from its tail to its head.

use std::sync::Arc;

use crate::chain::Link;
use crate::connectors::{Source, SourceContext};
use crate::error::Result;
use crate::operators::{Operator, OperatorContext};
use crate::source_splits::SourceSplits;
use crate::state::task_state::{Pieces, RestoredState};
use crate::task::{SourceTask, TaskBody, TwoInputTask};
use crate::type_ops::{ErasedOutput, ErasedReceiver, input_gate};

/// Makes the task of a source subtask.
pub trait SourceNodeFactory: Send + Sync {
    /// Whether the source ends (batch execution needs every source bounded).
    fn is_bounded(&self) -> bool;
    /// The most subtasks the source can have, if it has a limit.
    fn max_parallelism(&self) -> Option<usize>;
    /// Checks the source's configuration before the job starts.
    fn validate(&self) -> Result<()>;
    /// Whether the source's readers can rewind to a checkpointed position.
    fn is_replayable(&self) -> bool;
    /// Creates the task of one source subtask.
    fn create_task(
        &self,
        ctx: &OperatorContext,
        source_ctx: &SourceContext,
        out: ErasedOutput,
        restored: Option<&RestoredState>,
    ) -> Result<Box<dyn TaskBody>>;
}

/// Makes one fused link (a one-input operator with its downstream).
pub trait OneInputNodeFactory: Send + Sync {
    /// `restored`: the node's snapshots from every subtask of a restored run (none if none).
    fn create_link(
        &self,
        ctx: &OperatorContext,
        out: ErasedOutput,
        restored: Pieces<'_>,
    ) -> Result<ErasedOutput>;
}

/// Makes the task of a two-input chain head.
pub trait TwoInputNodeFactory: Send + Sync {
    /// Creates the task of one subtask of a two-input operator.
    fn create_task(
        &self,
        ctx: &OperatorContext,
        out: ErasedOutput,
        input1: Vec<ErasedReceiver>,
        input2: Vec<ErasedReceiver>,
        restored: Pieces<'_>,
    ) -> Result<Box<dyn TaskBody>>;
}

/// The factory of a node, by the number of its inputs.
#[derive(Clone)]
pub enum NodeFactory {
    /// A source.
    Source(Arc<dyn SourceNodeFactory>),
    /// An operator with one input.
    OneInput(Arc<dyn OneInputNodeFactory>),
    /// An operator with two inputs.
    TwoInput(Arc<dyn TwoInputNodeFactory>),
}

/// A source node: wraps a user-visible [`Source`], and the watermark strategy its splits
/// apply (`from_source`), if any.
pub struct SourceFactory<T>(
    pub Arc<dyn Source<T>>,
    pub Option<crate::operators::WatermarkStrategy<T>>,
);

impl<T: Send + 'static> SourceNodeFactory for SourceFactory<T> {
    fn is_bounded(&self) -> bool {
        self.0.is_bounded()
    }

    fn max_parallelism(&self) -> Option<usize> {
        self.0.max_parallelism()
    }

    fn validate(&self) -> Result<()> {
        self.0.validate()
    }

    fn is_replayable(&self) -> bool {
        self.0.is_replayable()
    }

    fn create_task(
        &self,
        ctx: &OperatorContext,
        source_ctx: &SourceContext,
        out: ErasedOutput,
        restored: Option<&RestoredState>,
    ) -> Result<Box<dyn TaskBody>> {
        let splits = SourceSplits::open(&*self.0, ctx.node, source_ctx, restored, self.1.as_ref())
            .map_err(|e| e.attribute(&ctx.name, ctx.subtask))?;
        Ok(Box::new(SourceTask {
            ctx: ctx.clone(),
            splits,
            head: out.downcast::<T>()?,
        }))
    }
}

/// What builds an operator for each subtask (`transform`): called with the subtask's
/// context; its error fails the job naming the operator and subtask.
pub trait MakeOperator<Op>: Fn(&OperatorContext) -> Result<Op> + Send + Sync + 'static {}

impl<Op, F> MakeOperator<Op> for F where
    F: Fn(&OperatorContext) -> Result<Op> + Send + Sync + 'static
{
}

/// A node built by calling `make` for every subtask: a one-input or a two-input operator,
/// by what the operator reads.
pub struct OperatorFactory<Op> {
    make: Box<dyn MakeOperator<Op>>,
}

impl<Op: Operator> OperatorFactory<Op> {
    /// A factory that builds each subtask's operator with `make`.
    pub fn new(make: impl Fn(&OperatorContext) -> Result<Op> + Send + Sync + 'static) -> Self {
        OperatorFactory {
            make: Box::new(make),
        }
    }

    /// The link of one subtask's operator, writing to `out`, with its `restored` state
    /// loaded; a failure to make it names the operator and subtask.
    fn link(
        &self,
        ctx: &OperatorContext,
        out: ErasedOutput,
        restored: Pieces<'_>,
    ) -> Result<Link<Op>>
    where
        Op::Out: Send + 'static,
    {
        let op = (self.make)(ctx).map_err(|e| e.attribute(&ctx.name, ctx.subtask))?;
        let mut link = Link::new(op, ctx.clone(), out.downcast::<Op::Out>()?);
        link.restore(restored)?;
        Ok(link)
    }
}

impl<T, Op> OneInputNodeFactory for OperatorFactory<Op>
where
    Op: Operator<In = (T,)>,
    T: Send + 'static,
    Op::Out: Send + 'static,
{
    fn create_link(
        &self,
        ctx: &OperatorContext,
        out: ErasedOutput,
        restored: Pieces<'_>,
    ) -> Result<ErasedOutput> {
        let link = self.link(ctx, out, restored)?;
        Ok(ErasedOutput::new::<T>(Box::new(link)))
    }
}

impl<L, R, Op> TwoInputNodeFactory for OperatorFactory<Op>
where
    Op: Operator<In = (L, R)>,
    L: Send + 'static,
    R: Send + 'static,
    Op::Out: Send + 'static,
{
    fn create_task(
        &self,
        ctx: &OperatorContext,
        out: ErasedOutput,
        input1: Vec<ErasedReceiver>,
        input2: Vec<ErasedReceiver>,
        restored: Pieces<'_>,
    ) -> Result<Box<dyn TaskBody>> {
        Ok(Box::new(TwoInputTask {
            input1: input_gate::<L>(input1)?,
            input2: input_gate::<R>(input2)?,
            head: self.link(ctx, out, restored)?,
        }))
    }
}
