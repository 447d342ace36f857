//! Timers in keyed process functions and time-bounded joins, through real jobs, against
//! brute-force references; idleness of a source subtask that never produces.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hummer::api::OutputTag;
use hummer::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use hummer::prelude::*;
use proptest::prelude::*;

type Event = (u8, i64);

/// Emits `max - 1` after every record: a watermark at a fixed place in the stream.
struct EveryRecord {
    max: i64,
}

impl WatermarkGenerator<Event> for EveryRecord {
    fn on_event(&mut self, _r: &Event, ts: Timestamp, output: &mut WatermarkOutput) {
        self.max = self.max.max(ts);
        output.emit_watermark(self.max - 1);
    }
    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

/// The events of one source subtask, stamped by one assigner subtask (so its watermarks
/// follow the stream's order).
fn stamped(env: &StreamExecutionEnvironment, events: Vec<Event>) -> DataStream<Event> {
    env.from_collection(events)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_generator(|| EveryRecord { max: i64::MIN + 1 })
                .with_timestamp_assigner(|e: &Event, _| e.1),
        )
        .set_parallelism(1)
}

/// Alerts `(key, last seen)` when a key has been silent for `gap` of event time.
#[derive(Clone)]
struct Silence {
    gap: i64,
}

impl KeyedProcessFunction<u8, Event> for Silence {
    type State = i64;
    type Out = (u8, i64);
    fn process_element(&mut self, e: Event, ctx: &mut ProcessContext<'_, '_, u8, i64, (u8, i64)>) {
        if let Some(last) = ctx.state().value().copied() {
            ctx.timer_service().delete_event_time_timer(last + self.gap);
        }
        ctx.state().update(e.1);
        ctx.timer_service()
            .register_event_time_timer(e.1 + self.gap);
    }
    fn on_timer(&mut self, t: Timestamp, ctx: &mut ProcessContext<'_, '_, u8, i64, (u8, i64)>) {
        let key = *ctx.key();
        assert_eq!(ctx.timestamp(), Some(t));
        ctx.collect((key, t - self.gap));
        ctx.state().clear();
    }
}

/// The silence alerts by simulation: records in order, each followed by the watermark
/// `max - 1`; a key's timer (its last time plus the gap) fires once the watermark reaches it;
/// the end of input fires what is left.
fn reference_silence(events: &[Event], gap: i64) -> Vec<(u8, i64)> {
    let mut timers: BTreeMap<u8, i64> = BTreeMap::new();
    let mut alerts = Vec::new();
    let mut max = i64::MIN + 1;
    for &(k, ts) in events {
        timers.insert(k, ts + gap);
        max = max.max(ts);
        let w = max - 1;
        timers.retain(|k, t| {
            if *t <= w {
                alerts.push((*k, *t - gap));
                false
            } else {
                true
            }
        });
    }
    alerts.extend(timers.into_iter().map(|(k, t)| (k, t - gap)));
    alerts.sort();
    alerts
}

fn in_order(max_len: usize) -> impl Strategy<Value = Vec<Event>> {
    proptest::collection::vec((0u8..5, 0i64..400), 1..max_len).prop_map(|raw| {
        let mut t = 0;
        raw.into_iter()
            .map(|(k, step)| {
                t += step;
                (k, t)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn event_time_timers_fire_like_the_reference(
        events in in_order(150),
        gap in 1i64..1000,
        parallelism in 1usize..=4,
    ) {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(parallelism).set_batch_size(5);
        let out = stamped(&env, events.clone())
            .key_by(|e: &Event| e.0)
            .process_function(Silence { gap })
            .collect();
        let mut result = env.execute("silence").unwrap();
        let mut got = result.collected(&out).unwrap();
        got.sort();
        prop_assert_eq!(got, reference_silence(&events, gap));
    }

    /// Every pair with equal keys and `a + lower <= b <= a + upper`, nothing else.
    #[test]
    fn the_interval_join_emits_exactly_the_pairs_in_the_interval(
        left in proptest::collection::vec((0u8..4, 0i64..2_000), 0..80),
        right in proptest::collection::vec((0u8..4, 0i64..2_000), 0..80),
        lower in -300i64..300,
        width in 0i64..400,
        parallelism in 1usize..=3,
    ) {
        let upper = lower + width;
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(parallelism).set_batch_size(7);
        // Out of order by up to 2 s, and a bound that covers it: nothing is late.
        let strategy = || WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(2_000))
            .with_timestamp_assigner(|e: &Event, _| e.1);
        let l = env.from_collection(left.clone()).assign_timestamps_and_watermarks(strategy());
        let r = env.from_collection(right.clone()).assign_timestamps_and_watermarks(strategy());
        let out = l
            .key_by(|e: &Event| e.0)
            .interval_join(&r.key_by(|e: &Event| e.0))
            .between(lower, upper)
            .process(|a: &Event, b: &Event, out: &mut Collector<(Event, Event)>| out.collect((*a, *b)))
            .collect();
        let mut result = env.execute("interval join").unwrap();
        let mut got = result.collected(&out).unwrap();
        got.sort();
        let mut expected = Vec::new();
        for a in &left {
            for b in &right {
                if a.0 == b.0 && a.1 + lower <= b.1 && b.1 <= a.1 + upper {
                    expected.push((*a, *b));
                }
            }
        }
        expected.sort();
        prop_assert_eq!(got, expected);
    }

    /// Pairs with equal keys in the same tumbling window.
    #[test]
    fn the_window_join_emits_the_pairs_of_each_window(
        left in proptest::collection::vec((0u8..4, 0i64..3_000), 0..60),
        right in proptest::collection::vec((0u8..4, 0i64..3_000), 0..60),
        size in 1i64..1_000,
    ) {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(2).set_batch_size(5);
        let strategy = || WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(3_000))
            .with_timestamp_assigner(|e: &Event, _| e.1);
        let l = env.from_collection(left.clone()).assign_timestamps_and_watermarks(strategy());
        let r = env.from_collection(right.clone()).assign_timestamps_and_watermarks(strategy());
        let out = l
            .join(&r)
            .where_key(|e: &Event| e.0)
            .equal_to(|e: &Event| e.0)
            .window(TumblingEventTimeWindows::of(Duration::from_millis(size as u64)))
            .apply(|a: &Event, b: &Event| (*a, *b))
            .collect();
        let mut result = env.execute("window join").unwrap();
        let mut got = result.collected(&out).unwrap();
        got.sort();
        let mut expected = Vec::new();
        for a in &left {
            for b in &right {
                if a.0 == b.0 && a.1.div_euclid(size) == b.1.div_euclid(size) {
                    expected.push((*a, *b));
                }
            }
        }
        expected.sort();
        prop_assert_eq!(got, expected);
    }
}

/// Fires a processing-time timer a second after each key's first record.
#[derive(Clone)]
struct AfterASecond;

impl KeyedProcessFunction<u8, Event> for AfterASecond {
    type State = bool;
    type Out = (u8, i64);
    fn process_element(
        &mut self,
        _e: Event,
        ctx: &mut ProcessContext<'_, '_, u8, bool, (u8, i64)>,
    ) {
        if ctx.state().value().is_none() {
            ctx.state().update(true);
            let at = ctx.timer_service().current_processing_time() + 1_000;
            ctx.timer_service().register_processing_time_timer(at);
            // Registering twice is one timer.
            ctx.timer_service().register_processing_time_timer(at);
        }
    }
    fn on_timer(&mut self, t: Timestamp, ctx: &mut ProcessContext<'_, '_, u8, bool, (u8, i64)>) {
        let key = *ctx.key();
        ctx.collect((key, t));
    }
}

#[test]
fn processing_time_timers_fire_when_the_injected_clock_passes_them() {
    let clock = ManualClock::new(50_000);
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1)
        .set_clock(Arc::new(clock.clone()))
        .set_runtime_mode(RuntimeMode::Streaming);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let out = env
        .add_source(
            GeneratorSource::new(move |i| {
                if i == 2 {
                    // Hold the source open until the test has moved the clock.
                    let _ = rx.lock().unwrap().recv();
                }
                ((i % 2) as u8, 0i64)
            })
            .with_count(3),
        )
        .key_by(|e: &Event| e.0)
        .process_function(AfterASecond)
        .collect();
    env.set_batch_size(1);
    let client = env.execute_async("processing-time timers").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    clock.set(50_999);
    std::thread::sleep(Duration::from_millis(300));
    clock.set(51_000);
    std::thread::sleep(Duration::from_millis(300));
    tx.send(()).unwrap();
    let mut result = client.wait().unwrap();
    let mut got = result.collected(&out).unwrap();
    got.sort();
    assert_eq!(got, vec![(0, 51_000), (1, 51_000)]);
}

/// A source of two subtasks of which the second never produces (and never ends).
#[derive(Clone)]
struct OneSilentSplit {
    events: Vec<Event>,
}

struct OneSilentReader {
    events: Vec<Event>,
}

impl Source<Event> for OneSilentSplit {
    fn name(&self) -> String {
        "one silent split".into()
    }
    fn is_bounded(&self) -> bool {
        false
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<Event>>> {
        let events = if ctx.subtask == 0 {
            self.events.clone()
        } else {
            Vec::new()
        };
        Ok(Box::new(OneSilentReader { events }))
    }
}

impl SourceReader<Event> for OneSilentReader {
    fn poll_next(&mut self, out: &mut Vec<Event>, _max: usize) -> Result<SourceStatus> {
        out.append(&mut self.events);
        Ok(SourceStatus::Idle(Duration::from_millis(5)))
    }
}

/// Keeps what reaches it in a shared vector (readable while the job runs).
#[derive(Clone, Default)]
struct Shared(Arc<std::sync::Mutex<Vec<WindowResult<u8, u64>>>>);

impl Sink<WindowResult<u8, u64>> for Shared {
    fn name(&self) -> String {
        "shared".into()
    }
    fn create_writer(
        &self,
        _ctx: &hummer::operators::OperatorContext,
    ) -> Result<Box<dyn SinkWriter<WindowResult<u8, u64>>>> {
        Ok(Box::new(self.clone()))
    }
}

impl SinkWriter<WindowResult<u8, u64>> for Shared {
    fn write_batch(&mut self, batch: &mut Vec<WindowResult<u8, u64>>) -> Result<()> {
        self.0.lock().unwrap().append(batch);
        Ok(())
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Runs a tumbling count over the source above for a while and returns what fired and the
/// window vertex's watermarks.
fn run_with_one_silent_split(idleness: Option<Duration>) -> (Vec<WindowResult<u8, u64>>, Vec<i64>) {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_auto_watermark_interval(Duration::from_millis(10));
    let mut strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::ZERO)
        .with_timestamp_assigner(|e: &Event, _| e.1);
    if let Some(d) = idleness {
        strategy = strategy.with_idleness(d);
    }
    let events: Vec<Event> = (0..10).map(|i| (1, i * 1_000)).collect();
    let sink = Shared::default();
    env.add_source(OneSilentSplit { events })
        .assign_timestamps_and_watermarks(strategy)
        .key_by(|e: &Event| e.0)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(2)))
        .aggregate(CountAggregate)
        .name("counts")
        .add_sink(sink.clone());
    let client = env.execute_async("idleness").unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let metrics = client.metrics().expect("a local job has live metrics");
    let watermarks: Vec<i64> = metrics
        .iter()
        .find(|v| v.name.contains("counts"))
        .map(|v| v.watermarks.iter().map(|w| w.1).collect())
        .unwrap_or_default();
    client.cancel();
    let _ = client.wait();
    let rows = sink.0.lock().unwrap().clone();
    (rows, watermarks)
}

#[test]
fn an_idle_source_subtask_holds_windows_back_only_without_an_idleness_timeout() {
    let (rows, watermarks) = run_with_one_silent_split(None);
    assert!(
        rows.is_empty(),
        "no window may fire while a split holds the watermark: {rows:?}"
    );
    assert!(
        !watermarks.is_empty() && watermarks.iter().all(|w| *w == i64::MIN),
        "the reason is visible: the window's watermark stays at the minimum ({watermarks:?})"
    );
    let (mut rows, _) = run_with_one_silent_split(Some(Duration::from_millis(100)));
    rows.sort();
    // Events at 0..9 s: the watermark reaches 8_999, closing [0,2) .. [6,8).
    let fired: Vec<i64> = rows.iter().map(|r| r.window.start).collect();
    assert_eq!(fired, vec![0, 2_000, 4_000, 6_000], "{rows:?}");
    assert!(rows.iter().all(|r| r.value == 2));
}

#[test]
fn get_side_output_names_a_missing_tag() {
    let env = StreamExecutionEnvironment::local();
    let s = env.from_collection(vec![1u8]);
    let err = match s.get_side_output(&OutputTag::<u8>::new("nope")) {
        Ok(_) => panic!("a side output that was never set"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("nope"), "{err}");
}
