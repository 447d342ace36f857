//! Windows against a brute-force reference: random out-of-order event streams through real
//! jobs (parallel sources, shuffles, random batch sizes and watermark intervals), compared
//! with results computed directly from the event timestamps and the watermark rule.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hummer::prelude::*;
use proptest::prelude::*;

/// An event: (key, timestamp, id). The id makes every event distinct.
type Event = (u8, i64, u32);

/// Events whose timestamps are at most `disorder` out of order: non-decreasing bases plus a
/// jitter in `0..=disorder`, so no event is more than `disorder` behind any earlier one.
fn events(max_len: usize, keys: u8, disorder: i64) -> impl Strategy<Value = Vec<Event>> {
    proptest::collection::vec((0..keys, 0i64..300, 0..=disorder), 1..max_len).prop_map(|raw| {
        let mut base = 0i64;
        raw.into_iter()
            .enumerate()
            .map(|(i, (k, step, jitter))| {
                base += step;
                (k, base + jitter, i as u32)
            })
            .collect()
    })
}

/// A job reading `events` with a parallel generator, timestamps from field 1 and a bounded
/// out-of-orderness of `disorder`.
fn source(
    env: &StreamExecutionEnvironment,
    events: &[Event],
    parallelism: usize,
    disorder: i64,
) -> DataStream<Event> {
    let data = events.to_vec();
    env.add_source(GeneratorSource::new(move |i| data[i as usize]).with_count(events.len() as u64))
        .set_parallelism(parallelism)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(disorder as u64))
                .with_timestamp_assigner(|e: &Event, _| e.1),
        )
        .set_parallelism(parallelism)
}

fn environment(batch: usize, interval_ms: u64, parallelism: usize) -> StreamExecutionEnvironment {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_batch_size(batch)
        .set_auto_watermark_interval(Duration::from_millis(interval_ms))
        .set_runtime_mode(RuntimeMode::Streaming);
    env
}

type Counts = BTreeMap<(u8, TimeWindow), u64>;

fn run_count<A: hummer::operators::window::WindowAssigner>(
    events: &[Event],
    assigner: A,
    parallelism: usize,
    batch: usize,
    interval: u64,
    disorder: i64,
) -> Vec<WindowResult<u8, u64>> {
    let env = environment(batch, interval, parallelism);
    let out = source(&env, events, parallelism, disorder)
        .key_by(|e: &Event| e.0)
        .window(assigner)
        .aggregate(CountAggregate)
        .collect();
    let mut result = env.execute("windows").unwrap();
    let mut rows = result.collected(&out).unwrap();
    rows.sort();
    rows
}

fn as_rows(counts: Counts) -> Vec<WindowResult<u8, u64>> {
    counts
        .into_iter()
        .map(|((key, window), value)| WindowResult { key, window, value })
        .collect()
}

/// Tumbling and sliding windows from the definition: every window of `size`, a new one each
/// `slide` from the epoch, that contains the timestamp.
fn reference_sliding(events: &[Event], size: i64, slide: i64) -> Counts {
    let mut counts = Counts::new();
    for &(k, ts, _) in events {
        let mut start = ts - ts.rem_euclid(slide);
        while start > ts - size {
            *counts
                .entry((k, TimeWindow::new(start, start + size)))
                .or_default() += 1;
            start -= slide;
        }
    }
    counts
}

/// Sessions from the definition: per key, the intervals `[ts, ts + gap)` merged where they
/// overlap or touch.
fn reference_sessions(events: &[Event], gap: i64) -> Counts {
    let mut by_key: BTreeMap<u8, Vec<i64>> = BTreeMap::new();
    for &(k, ts, _) in events {
        by_key.entry(k).or_default().push(ts);
    }
    let mut counts = Counts::new();
    for (k, mut times) in by_key {
        times.sort();
        let mut current: Option<(TimeWindow, u64)> = None;
        for ts in times {
            current = match current {
                Some((w, n)) if ts <= w.end => {
                    Some((TimeWindow::new(w.start, w.end.max(ts + gap)), n + 1))
                }
                Some((w, n)) => {
                    counts.insert((k, w), n);
                    Some((TimeWindow::new(ts, ts + gap), 1))
                }
                None => Some((TimeWindow::new(ts, ts + gap), 1)),
            };
        }
        if let Some((w, n)) = current {
            counts.insert((k, w), n);
        }
    }
    counts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Nothing is late (the disorder bound holds), so every window's count is the reference's,
    /// whatever the parallelism, batch size and watermark interval.
    #[test]
    fn tumbling_windows_count_like_the_reference(
        events in events(300, 6, 50),
        parallelism in 1usize..=4,
        batch in 1usize..64,
        interval in 1u64..20,
        size in 1i64..400,
    ) {
        let got = run_count(&events, TumblingEventTimeWindows::of(Duration::from_millis(size as u64)), parallelism, batch, interval, 50);
        prop_assert_eq!(got, as_rows(reference_sliding(&events, size, size)));
    }

    #[test]
    fn sliding_windows_count_like_the_reference(
        events in events(200, 5, 40),
        parallelism in 1usize..=4,
        batch in 1usize..64,
        interval in 1u64..20,
        slide in 1i64..100,
        slides in 1i64..5,
    ) {
        let size = slide * slides;
        let got = run_count(&events, SlidingEventTimeWindows::of(Duration::from_millis(size as u64), Duration::from_millis(slide as u64)), parallelism, batch, interval, 40);
        prop_assert_eq!(got, as_rows(reference_sliding(&events, size, slide)));
    }

    #[test]
    fn session_windows_merge_like_the_reference(
        events in events(200, 4, 60),
        parallelism in 1usize..=4,
        batch in 1usize..64,
        interval in 1u64..20,
        gap in 1i64..500,
    ) {
        let got = run_count(&events, EventTimeSessionWindows::with_gap(Duration::from_millis(gap as u64)), parallelism, batch, interval, 60);
        prop_assert_eq!(got, as_rows(reference_sessions(&events, gap)));
    }
}

/// Emits `max - bound - 1` after every record: watermarks in a fixed place in the stream, so
/// which records are late is decided by the stream alone.
struct Punctuated {
    bound: i64,
    max: Option<i64>,
}

impl WatermarkGenerator<Event> for Punctuated {
    fn on_event(&mut self, _record: &Event, ts: Timestamp, output: &mut WatermarkOutput) {
        let max = self.max.map_or(ts, |m| m.max(ts));
        self.max = Some(max);
        output.emit_watermark(max - self.bound - 1);
    }
    fn on_periodic_emit(&mut self, _output: &mut WatermarkOutput) {}
}

/// The reference with lateness: records in stream order, each judged against the watermark
/// emitted before it; a window takes a record until the watermark passes its end plus the
/// allowed lateness; a record no window takes is late.
fn reference_with_lateness(
    events: &[Event],
    size: i64,
    slide: i64,
    bound: i64,
    lateness: i64,
) -> (Counts, BTreeSet<u32>) {
    let mut counts = Counts::new();
    let mut late = BTreeSet::new();
    let mut watermark = i64::MIN;
    let mut max = i64::MIN;
    for &(k, ts, id) in events {
        let mut taken = false;
        let mut start = ts - ts.rem_euclid(slide);
        while start > ts - size {
            let w = TimeWindow::new(start, start + size);
            if w.max_timestamp() + lateness > watermark {
                *counts.entry((k, w)).or_default() += 1;
                taken = true;
            }
            start -= slide;
        }
        if !taken {
            late.insert(id);
        }
        max = max.max(ts);
        watermark = watermark.max(max - bound - 1);
    }
    (counts, late)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Records later than the watermark plus the allowed lateness appear in the side output and
    /// nowhere else; every other record is counted in its windows (the last firing of a window
    /// has them all); nothing is lost or duplicated.
    #[test]
    fn late_records_go_to_the_side_output_and_nowhere_else(
        events in events(200, 4, 300),
        parallelism in 1usize..=4,
        batch in 1usize..32,
        bound in 0i64..100,
        lateness in 0i64..200,
        size in 10i64..200,
        sliding in any::<bool>(),
    ) {
        let slide = if sliding { (size / 2).max(1) } else { size };
        let env = environment(batch, 10_000, parallelism);
        let data = events.clone();
        let late_tag = OutputTag::<Event>::new("late");
        let counts = env
            .add_source(GeneratorSource::new(move |i| data[i as usize]).with_count(events.len() as u64))
            .set_parallelism(1)
            .assign_timestamps_and_watermarks(
                WatermarkStrategy::for_generator(move || Punctuated { bound, max: None })
                    .with_timestamp_assigner(|e: &Event, _| e.1),
            )
            .set_parallelism(1)
            .key_by(|e: &Event| e.0)
            .window(SlidingEventTimeWindows::of(Duration::from_millis(size as u64), Duration::from_millis(slide as u64)))
            .allowed_lateness(Duration::from_millis(lateness as u64))
            .side_output_late_data(&late_tag)
            .aggregate(CountAggregate);
        let late_out = counts.get_side_output(&late_tag).unwrap().collect();
        let counts_out = counts.collect();
        let mut result = env.execute("lateness").unwrap();
        // A window fires once on time and again for each late record it takes: its last
        // (largest) count is its total.
        let mut last = Counts::new();
        for WindowResult { key: k, window: w, value: c } in result.collected(&counts_out).unwrap() {
            let e = last.entry((k, w)).or_default();
            *e = (*e).max(c);
        }
        let late: Vec<u32> = result.collected(&late_out).unwrap().into_iter().map(|e| e.2).collect();
        let late_set: BTreeSet<u32> = late.iter().copied().collect();
        prop_assert_eq!(late.len(), late_set.len(), "no late record twice");
        let (expected_counts, expected_late) = reference_with_lateness(&events, size, slide, bound, lateness);
        prop_assert_eq!(last, expected_counts);
        prop_assert_eq!(late_set, expected_late);
    }
}

#[test]
fn reduce_process_and_incremental_functions_see_the_window() {
    let env = environment(7, 5, 2);
    let events: Vec<Event> = (0..100)
        .map(|i| ((i % 3) as u8, i as i64 * 37, i as u32))
        .collect();
    let s = source(&env, &events, 2, 0);
    let keyed = s.key_by(|e: &Event| e.0);
    let size = Duration::from_millis(500);
    let reduced = keyed
        .window(TumblingEventTimeWindows::of(size))
        .reduce(|a: Event, b: Event| (a.0, a.1.max(b.1), a.2 + b.2))
        .collect();
    let processed = keyed
        .window(TumblingEventTimeWindows::of(size))
        .process(
            |k: &u8, w: &TimeWindow, records: &[Event], out: &mut Collector<(u8, i64, usize)>| {
                out.collect((*k, w.start, records.len()))
            },
        )
        .collect();
    let incremental = keyed
        .window(TumblingEventTimeWindows::of(size))
        .aggregate_with(
            CountAggregate,
            |k: &u8, w: &TimeWindow, n: u64, out: &mut Collector<(u8, i64, u64)>| {
                out.collect((*k, w.end, n))
            },
        )
        .collect();
    let all = s
        .window_all(TumblingEventTimeWindows::of(size))
        .aggregate(CountAggregate)
        .collect();
    let mut result = env.execute("functions").unwrap();
    let expected = reference_sliding(&events, 500, 500);
    let mut reduced = result.collected(&reduced).unwrap();
    reduced.sort();
    assert_eq!(reduced.len(), expected.len());
    for WindowResult {
        key: k,
        window: w,
        value: (_, max_ts, _),
    } in &reduced
    {
        let in_window: Vec<&Event> = events
            .iter()
            .filter(|e| e.0 == *k && w.start <= e.1 && e.1 < w.end)
            .collect();
        assert_eq!(*max_ts, in_window.iter().map(|e| e.1).max().unwrap());
    }
    let mut processed = result.collected(&processed).unwrap();
    processed.sort();
    let expected_rows: Vec<(u8, i64, usize)> = expected
        .iter()
        .map(|((k, w), c)| (*k, w.start, *c as usize))
        .collect();
    assert_eq!(processed, expected_rows);
    let mut incremental = result.collected(&incremental).unwrap();
    incremental.sort();
    let expected_rows: Vec<(u8, i64, u64)> =
        expected.iter().map(|((k, w), c)| (*k, w.end, *c)).collect();
    assert_eq!(incremental, expected_rows);
    let mut all = result.collected(&all).unwrap();
    all.sort();
    let mut per_window: BTreeMap<TimeWindow, u64> = BTreeMap::new();
    for ((_, w), c) in &expected {
        *per_window.entry(*w).or_default() += c;
    }
    let expected_all: Vec<WindowResult<(), u64>> = per_window
        .into_iter()
        .map(|(window, value)| WindowResult {
            key: (),
            window,
            value,
        })
        .collect();
    assert_eq!(all, expected_all);
}

#[test]
fn count_windows_emit_every_n_records_of_a_key() {
    let env = environment(3, 5, 1);
    let out = env
        .from_collection((0..25u32).map(|i| (i % 2, i)).collect::<Vec<_>>())
        .key_by(|r: &(u32, u32)| r.0)
        .count_window(4)
        .reduce(|a: (u32, u32), b: (u32, u32)| (a.0, a.1 + b.1))
        .collect();
    let mut result = env.execute("count windows").unwrap();
    let mut rows: Vec<(u32, u32)> = result
        .collected(&out)
        .unwrap()
        .into_iter()
        .map(|r| r.value)
        .collect();
    rows.sort();
    // Key 0: 0,2,...,24 (13 records): three full windows; key 1: 12 records, three.
    assert_eq!(
        rows,
        vec![(0, 12), (0, 44), (0, 76), (1, 16), (1, 48), (1, 80)]
    );
}

#[test]
fn an_event_time_window_without_timestamps_fails_with_a_clear_error() {
    let env = environment(8, 5, 1);
    env.from_collection(vec![1u8, 2])
        .key_by(|x: &u8| *x)
        .window(TumblingEventTimeWindows::of(Duration::from_secs(1)))
        .aggregate(CountAggregate)
        .collect();
    let err = match env.execute("no timestamps") {
        Ok(_) => panic!("a job with untimestamped records in event-time windows succeeded"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("no timestamp") && err.contains("assign_timestamps_and_watermarks"),
        "{err}"
    );
}

#[test]
fn processing_time_windows_follow_an_injected_clock() {
    let clock = ManualClock::new(1_000_000);
    let env = StreamExecutionEnvironment::local();
    // One record per poll, so the first three reach the window before the source blocks.
    env.set_parallelism(1)
        .set_batch_size(1)
        .set_clock(std::sync::Arc::new(clock.clone()));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    // Three records at 1_000_000, then (after the clock moved) two at 1_010_500.
    let out = env
        .add_source(
            GeneratorSource::new(move |i| {
                if i == 3 {
                    // Wait for the test to move the clock.
                    let _ = rx.lock().unwrap().recv();
                }
                (0u8, i)
            })
            .with_count(5),
        )
        .key_by(|r: &(u8, u64)| r.0)
        .window(TumblingProcessingTimeWindows::of(Duration::from_secs(10)))
        .aggregate(CountAggregate)
        .collect();
    let client = env.execute_async("processing time").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    clock.set(1_010_500);
    tx.send(()).unwrap();
    let mut result = client.wait().unwrap();
    let rows = result.collected(&out).unwrap();
    assert_eq!(
        rows,
        vec![
            WindowResult {
                key: 0,
                window: TimeWindow::new(1_000_000, 1_010_000),
                value: 3
            },
            WindowResult {
                key: 0,
                window: TimeWindow::new(1_010_000, 1_020_000),
                value: 2
            },
        ]
    );
}

/// Text files read with a timestamp extractor per split (`from_source`): lines `key,ts`, in
/// order within each file, windows counted like the reference.
#[test]
fn a_text_file_source_with_a_timestamp_extractor_feeds_windows() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = Vec::new();
    for file in 0..3 {
        let mut text = String::new();
        for i in 0..500i64 {
            let (key, ts) = ((i % 4) as u8, i * 7 + file);
            text.push_str(&format!("{key},{ts}\n"));
            events.push((key, ts, 0u32));
        }
        std::fs::write(dir.path().join(format!("part-{file}.csv")), text).unwrap();
    }
    let env = environment(16, 2, 3);
    let parse = |line: &String| -> (u8, i64) {
        let (k, t) = line.split_once(',').unwrap();
        (k.parse().unwrap(), t.parse().unwrap())
    };
    let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(10))
        .with_timestamp_assigner(move |line: &String, _| parse(line).1);
    let out = env
        .from_source(
            hummer::connectors::text_file::TextFileSource::new(dir.path()),
            strategy,
        )
        .map(move |line: String| parse(&line))
        .key_by(|r: &(u8, i64)| r.0)
        .window(TumblingEventTimeWindows::of(Duration::from_millis(250)))
        .aggregate(CountAggregate)
        .collect();
    let plan = env.explain().unwrap();
    assert!(plan.contains("timestamps/watermarks per split"), "{plan}");
    let mut result = env.execute("text windows").unwrap();
    let mut rows = result.collected(&out).unwrap();
    rows.sort();
    assert_eq!(rows, as_rows(reference_sliding(&events, 250, 250)));
}
