//! `WindowedStream`: a keyed stream cut into windows (`key_by(..).window(..)`), and
//! `AllWindowedStream`, the non-keyed form (`window_all`), with the functions that compute a
//! result per window.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::operators::Collector;
use crate::operators::window::{
    AggregateFunction, AggregateWindow, IncrementalProcess, ProcessWindow, ReduceWindow,
    TimeWindow, Trigger, WindowAssigner, WindowFunction, WindowOperator, WindowOutput,
    WindowResult, WindowSettings,
};
use crate::types::{Data, Key};
use crate::{DataStream, KeyedStream, UserFn};

/// Names a side output of records of type `T` (Flink's `OutputTag`).
///
/// ```
/// use hummer::api::OutputTag;
/// let late: OutputTag<(String, i64)> = OutputTag::new("late-clicks");
/// assert_eq!(late.name(), "late-clicks");
/// ```
pub struct OutputTag<T> {
    name: String,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for OutputTag<T> {
    fn clone(&self) -> Self {
        OutputTag {
            name: self.name.clone(),
            _type: PhantomData,
        }
    }
}

impl<T> OutputTag<T> {
    /// A tag called `name` (unique among the side outputs of one operator).
    pub fn new(name: impl Into<String>) -> Self {
        OutputTag {
            name: name.into(),
            _type: PhantomData,
        }
    }

    /// The tag's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A keyed stream cut into windows: set a trigger, an allowed lateness and a late-data side
/// output, then compute each window's result (`reduce`, `aggregate`, `process`, or
/// `reduce_with` / `aggregate_with` for incremental aggregation with a process function).
pub struct WindowedStream<T, K, KS, A> {
    keyed: KeyedStream<T, K, KS>,
    assigner: A,
    trigger: Option<Arc<dyn Trigger<T>>>,
    allowed_lateness: Duration,
    late: Option<OutputTag<T>>,
}

impl<T, K, KS, A> WindowedStream<T, K, KS, A>
where
    T: Data,
    K: Key,
    KS: Fn(&T) -> K + UserFn,
    A: WindowAssigner,
{
    pub(crate) fn new(keyed: KeyedStream<T, K, KS>, assigner: A) -> Self {
        WindowedStream {
            keyed,
            assigner,
            trigger: None,
            allowed_lateness: Duration::ZERO,
            late: None,
        }
    }

    /// Fires windows with `trigger` instead of the assigner's default.
    pub fn trigger(mut self, trigger: impl Trigger<T> + 'static) -> Self {
        self.trigger = Some(Arc::new(trigger));
        self
    }

    /// Keeps event-time windows for `lateness` after their end: a late record within it
    /// updates the window's result (a late firing) instead of being dropped.
    pub fn allowed_lateness(mut self, lateness: Duration) -> Self {
        self.allowed_lateness = lateness;
        self
    }

    /// Sends records too late for every window they belong to to the side output `tag`
    /// (read it with [`DataStream::get_side_output`] on the result), rather than only
    /// counting them.
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> Self {
        self.late = Some(tag.clone());
        self
    }

    /// Adds the window operator with `function` (made anew for every subtask), and the nodes
    /// that unpack its results and late records.
    fn build<F, M>(self, name: &str, make: M) -> DataStream<F::Out>
    where
        F: WindowFunction<K, T>,
        M: Fn() -> F + Send + Sync + 'static,
    {
        let trigger = self
            .trigger
            .unwrap_or_else(|| self.assigner.default_trigger::<T>());
        assert!(
            !self.assigner.is_merging() || trigger.can_merge(),
            "a session (merging) window assigner needs a trigger that can merge"
        );
        let settings = WindowSettings {
            assigner: self.assigner.clone(),
            trigger,
            allowed_lateness: self.allowed_lateness.as_millis() as i64,
            emit_late: self.late.is_some(),
        };
        let key_of = self.keyed.key_of.clone();
        let windowed: DataStream<WindowOutput<F::Out, T>> = self
            .keyed
            .stream
            .with_partitioning(self.keyed.hash_partitioning())
            .transform(
                &format!("{name} {}", self.assigner.describe()),
                move |ctx| {
                    Ok(WindowOperator::new(
                        key_of.clone(),
                        settings.clone(),
                        make(),
                        ctx,
                    ))
                },
            );
        let results = windowed
            .flat_map(|o: WindowOutput<F::Out, T>| match o {
                WindowOutput::Result(r) => Some(r),
                WindowOutput::Late(_) => None,
            })
            .name("Window results");
        let env = windowed.env.clone();
        let mut state = env.state.borrow_mut();
        state.unpacks.insert(results.node, windowed.node);
        if let Some(tag) = &self.late {
            drop(state);
            let late = windowed
                .flat_map(|o: WindowOutput<F::Out, T>| match o {
                    WindowOutput::Late(r) => Some(r),
                    WindowOutput::Result(_) => None,
                })
                .name(&format!("Late data '{}'", tag.name()));
            let mut state = env.state.borrow_mut();
            state.unpacks.insert(late.node, windowed.node);
            state.side_outputs.insert(
                (results.node, tag.name().to_string()),
                (late.node, std::any::TypeId::of::<T>()),
            );
        }
        results
    }

    /// Combines the records of each window with `f`: one [`WindowResult`] per firing.
    pub fn reduce<F>(self, f: F) -> DataStream<WindowResult<K, T>>
    where
        F: Fn(T, T) -> T + UserFn,
    {
        self.build("Window reduce", move || ReduceWindow {
            f: f.clone(),
            _types: PhantomData,
        })
    }

    /// Aggregates the records of each window incrementally: one [`WindowResult`] per firing.
    pub fn aggregate<Agg: AggregateFunction<T>>(
        self,
        agg: Agg,
    ) -> DataStream<WindowResult<K, Agg::Out>> {
        self.build("Window aggregate", move || AggregateWindow {
            agg: agg.clone(),
            _types: PhantomData,
        })
    }

    /// Calls `f(key, window, records, out)` with all records of a window when it fires.
    pub fn process<O, P>(self, f: P) -> DataStream<O>
    where
        O: Data,
        P: FnMut(&K, &TimeWindow, &[T], &mut Collector<'_, O>) + UserFn,
    {
        self.build("Window process", move || ProcessWindow {
            f: f.clone(),
            _types: PhantomData,
        })
    }

    /// Reduces incrementally and calls `process(key, window, reduced, out)` when the window
    /// fires: constant state per window, full context for the result.
    pub fn reduce_with<O, F, P>(self, f: F, process: P) -> DataStream<O>
    where
        O: Data,
        F: Fn(T, T) -> T + UserFn,
        P: FnMut(&K, &TimeWindow, T, &mut Collector<'_, O>) + UserFn,
    {
        self.build("Window reduce", move || IncrementalProcess {
            inner: ReduceWindow {
                f: f.clone(),
                _types: PhantomData,
            },
            f: process.clone(),
            _types: PhantomData,
        })
    }

    /// Aggregates incrementally and calls `process(key, window, result, out)` when the window
    /// fires.
    pub fn aggregate_with<O, Agg, P>(self, agg: Agg, process: P) -> DataStream<O>
    where
        O: Data,
        Agg: AggregateFunction<T>,
        P: FnMut(&K, &TimeWindow, Agg::Out, &mut Collector<'_, O>) + UserFn,
    {
        self.build("Window aggregate", move || IncrementalProcess {
            inner: AggregateWindow {
                agg: agg.clone(),
                _types: PhantomData,
            },
            f: process.clone(),
            _types: PhantomData,
        })
    }
}

/// The key of a non-keyed window: every record has it.
fn whole_stream<T>(_: &T) {}

/// A non-keyed stream cut into windows (`window_all`): one subtask sees every record, as in
/// Flink. Results carry their window: `(window, value)`.
pub struct AllWindowedStream<T, A> {
    inner: WindowedStream<T, (), fn(&T), A>,
}

impl<T: Data, A: WindowAssigner> AllWindowedStream<T, A> {
    pub(crate) fn new(stream: &DataStream<T>, assigner: A) -> Self {
        let keyed = KeyedStream::new(stream.clone(), whole_stream::<T> as fn(&T));
        AllWindowedStream {
            inner: WindowedStream::new(keyed, assigner),
        }
    }

    /// See [`WindowedStream::trigger`].
    pub fn trigger(self, trigger: impl Trigger<T> + 'static) -> Self {
        AllWindowedStream {
            inner: self.inner.trigger(trigger),
        }
    }

    /// See [`WindowedStream::allowed_lateness`].
    pub fn allowed_lateness(self, lateness: Duration) -> Self {
        AllWindowedStream {
            inner: self.inner.allowed_lateness(lateness),
        }
    }

    /// See [`WindowedStream::side_output_late_data`].
    pub fn side_output_late_data(self, tag: &OutputTag<T>) -> Self {
        AllWindowedStream {
            inner: self.inner.side_output_late_data(tag),
        }
    }

    /// Combines the records of each window (results keyed by `()`).
    pub fn reduce<F>(self, f: F) -> DataStream<WindowResult<(), T>>
    where
        F: Fn(T, T) -> T + UserFn,
    {
        self.inner.reduce(f).set_parallelism(1)
    }

    /// Aggregates the records of each window (results keyed by `()`).
    pub fn aggregate<Agg: AggregateFunction<T>>(
        self,
        agg: Agg,
    ) -> DataStream<WindowResult<(), Agg::Out>> {
        self.inner.aggregate(agg).set_parallelism(1)
    }

    /// Calls `f(window, records, out)` with all records of a window when it fires.
    pub fn process<O, P>(self, mut f: P) -> DataStream<O>
    where
        O: Data,
        P: FnMut(&TimeWindow, &[T], &mut Collector<'_, O>) + UserFn,
    {
        self.inner
            .process(
                move |_: &(), w: &TimeWindow, records: &[T], out: &mut Collector<'_, O>| {
                    f(w, records, out)
                },
            )
            .set_parallelism(1)
    }
}
