//! Watermarks through a running job: from source readers, in band through memory rings and
//! shuffles, combined as the minimum over a task's inputs, monotone, seen by every operator of
//! a chain, and at the end of a bounded input the final watermark.

use std::sync::{Arc, Mutex};

use hummer::connectors::SourceContext;
use hummer::operators::{Batch, Operator, OperatorContext};
use hummer::prelude::*;
use hummer::types::{MAX_WATERMARK, Timestamp};

/// Reader `subtask` of `parallelism` emits its share of `0..count`; a record's event time is
/// its value in milliseconds, and after each batch the reader's watermark is its last
/// record's time (its records come in order).
#[derive(Clone)]
struct Ordered {
    count: u64,
}

struct OrderedReader {
    next: u64,
    step: u64,
    end: u64,
    last: Option<Timestamp>,
}

impl Source<u64> for Ordered {
    fn name(&self) -> String {
        "Ordered".into()
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<u64>>> {
        Ok(Box::new(OrderedReader {
            next: ctx.subtask as u64,
            step: ctx.parallelism as u64,
            end: self.count,
            last: None,
        }))
    }
}

impl SourceReader<u64> for OrderedReader {
    fn poll_next(&mut self, out: &mut Vec<u64>, max: usize) -> Result<SourceStatus> {
        for _ in 0..max.min(7) {
            if self.next >= self.end {
                return Ok(SourceStatus::Finished);
            }
            out.push(self.next);
            self.last = Some(self.next as Timestamp);
            self.next += self.step;
        }
        Ok(SourceStatus::MoreAvailable)
    }
    fn current_watermark(&self) -> Option<Timestamp> {
        self.last
    }
}

/// `(subtask, watermark)` in the order an observer saw them.
type WatermarkLog = Vec<(usize, Timestamp)>;

/// Records `(subtask, watermark)` for every watermark it gets, and
/// fails if a record arrives that the watermark already passed.
struct Observe {
    subtask: usize,
    seen: u64,
    watermark: Timestamp,
    log: Arc<Mutex<WatermarkLog>>,
}

impl Operator for Observe {
    type In = (u64,);
    type Out = u64;

    fn process(&mut self, batch: Batch<'_, u64>, out: &mut Collector<'_, u64>) -> Result<()> {
        batch.for_each(out, |r, out| {
            if (r as Timestamp) < self.watermark {
                return Err(HummerError::BadInput {
                    input: "the test stream".into(),
                    reason: format!("record {r} after watermark {}", self.watermark),
                });
            }
            self.seen += 1;
            out.collect(r);
            Ok(())
        })
    }

    fn on_watermark(&mut self, w: Timestamp, _: &mut Collector<'_, u64>) -> Result<()> {
        assert!(w > self.watermark, "watermarks only move forward");
        self.watermark = w;
        self.log.lock().unwrap().push((self.subtask, w));
        Ok(())
    }
}

fn observe(
    log: &Arc<Mutex<Vec<(usize, Timestamp)>>>,
) -> impl Fn(&OperatorContext) -> Result<Observe> + Send + Sync + 'static {
    let log = log.clone();
    move |ctx: &OperatorContext| {
        Ok(Observe {
            subtask: ctx.subtask,
            seen: 0,
            watermark: Timestamp::MIN,
            log: log.clone(),
        })
    }
}

fn run(parallelism: usize, mode: RuntimeMode) -> (Vec<u64>, WatermarkLog, WatermarkLog) {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_runtime_mode(mode)
        .set_batch_size(16);
    let before = Arc::new(Mutex::new(Vec::new()));
    let after = Arc::new(Mutex::new(Vec::new()));
    let out = env
        .add_source(Ordered { count: 5_000 })
        // Chained to the source: sees the source's own watermarks.
        .transform("before shuffle", observe(&before))
        .rebalance()
        // Behind a shuffle from every source subtask: sees their minimum.
        .transform("after shuffle", observe(&after))
        .map(|x: u64| x)
        .collect();
    let mut result = env.execute("watermarks").unwrap();
    let mut records = result.collected(&out).unwrap();
    records.sort_unstable();
    let before = before.lock().unwrap().clone();
    let after = after.lock().unwrap().clone();
    (records, before, after)
}

#[test]
fn watermarks_flow_in_band_and_end_at_the_maximum() {
    for parallelism in [1, 2, 3] {
        for mode in [RuntimeMode::Streaming, RuntimeMode::Batch] {
            let (records, before, after) = run(parallelism, mode);
            assert_eq!(
                records,
                (0..5_000).collect::<Vec<_>>(),
                "p={parallelism} {mode:?}"
            );
            for subtask in 0..parallelism {
                for log in [&before, &after] {
                    let mine: Vec<Timestamp> = log
                        .iter()
                        .filter(|(s, _)| *s == subtask)
                        .map(|(_, w)| *w)
                        .collect();
                    assert_eq!(
                        mine.last(),
                        Some(&MAX_WATERMARK),
                        "every subtask ends at the final watermark (p={parallelism} {mode:?})"
                    );
                    assert!(mine.windows(2).all(|w| w[0] < w[1]), "monotone: {mine:?}");
                }
                // A source's watermarks advance with its records, long before the end.
                let own = before.iter().filter(|(s, _)| *s == subtask).count();
                assert!(
                    own > 10,
                    "only {own} watermarks from source subtask {subtask}"
                );
            }
            // Behind the shuffle a watermark is a minimum over the sources' watermarks, so
            // one that some source emitted; and it never passed a record still to come (the
            // observer fails the job if a record arrives behind its watermark).
            let emitted: std::collections::HashSet<Timestamp> =
                before.iter().map(|(_, w)| *w).collect();
            assert!(
                after.iter().all(|(_, w)| emitted.contains(w)),
                "a watermark behind the shuffle that no source emitted: {after:?}"
            );
        }
    }
}

/// A two-input operator's watermark is the minimum over both inputs: the fast input cannot
/// carry it past the slow one, and it ends at the maximum when both have ended.
#[test]
fn a_two_input_task_waits_for_its_slower_input() {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_batch_size(16);
    let log = Arc::new(Mutex::new(Vec::new()));
    let fast = env.add_source(Ordered { count: 4_000 });
    let slow = env.add_source(Ordered { count: 400 }).map(|x: u64| x * 10);
    let out = fast
        .connect(&slow)
        .co_map(|a: u64| a, |b: u64| b)
        .transform("after join", observe(&log))
        .collect();
    let mut result = env.execute("two inputs").unwrap();
    let mut records = result.collected(&out).unwrap();
    records.sort_unstable();
    let mut expected: Vec<u64> = (0..4_000).chain((0..400).map(|x| x * 10)).collect();
    expected.sort_unstable();
    assert_eq!(records, expected);
    let log = log.lock().unwrap().clone();
    for subtask in 0..2 {
        let mine: Vec<Timestamp> = log
            .iter()
            .filter(|(s, _)| *s == subtask)
            .map(|(_, w)| *w)
            .collect();
        assert_eq!(mine.last(), Some(&MAX_WATERMARK), "{mine:?}");
    }
}

/// Source subtask 0 reads an endless ordered stream; subtask 1 never has anything, and says
/// it is idle if `idle` is set.
#[derive(Clone)]
struct HalfSilent {
    idle: bool,
}

struct HalfSilentReader {
    producing: bool,
    idle: bool,
    next: u64,
}

impl Source<u64> for HalfSilent {
    fn name(&self) -> String {
        "HalfSilent".into()
    }
    fn is_bounded(&self) -> bool {
        false
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<u64>>> {
        Ok(Box::new(HalfSilentReader {
            producing: ctx.subtask == 0,
            idle: self.idle,
            next: 0,
        }))
    }
}

impl SourceReader<u64> for HalfSilentReader {
    fn poll_next(&mut self, out: &mut Vec<u64>, _max: usize) -> Result<SourceStatus> {
        if !self.producing {
            return Ok(SourceStatus::Idle(std::time::Duration::from_millis(5)));
        }
        for _ in 0..10 {
            out.push(self.next);
            self.next += 1;
        }
        Ok(SourceStatus::Idle(std::time::Duration::from_millis(1)))
    }
    fn current_watermark(&self) -> Option<Timestamp> {
        self.producing.then_some(self.next as Timestamp - 1)
    }
    fn is_idle(&self) -> bool {
        !self.producing && self.idle
    }
}

/// Runs the half-silent job for up to `wait` and returns the largest watermark seen behind the
/// shuffle (none: `None`).
fn watermark_behind_a_silent_subtask(idle: bool, wait: std::time::Duration) -> Option<Timestamp> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    let log = Arc::new(Mutex::new(Vec::new()));
    env.add_source(HalfSilent { idle })
        .rebalance()
        .transform("behind the shuffle", observe(&log))
        .filter(|_: &u64| false)
        .collect();
    let job = env.execute_async("half silent").unwrap();
    let deadline = std::time::Instant::now() + wait;
    while std::time::Instant::now() < deadline {
        if log.lock().unwrap().iter().any(|(_, w)| *w > 1_000) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    job.cancel();
    assert!(matches!(job.wait(), Err(HummerError::Cancelled)));
    log.lock().unwrap().iter().map(|(_, w)| *w).max()
}

/// An idle source subtask does not hold back the watermark behind it; one that is silent
/// without saying so does, and no watermark passes it.
#[test]
fn an_idle_source_subtask_does_not_hold_the_watermark_back() {
    let advanced = watermark_behind_a_silent_subtask(true, std::time::Duration::from_secs(20));
    assert!(
        advanced.is_some_and(|w| w > 1_000),
        "the watermark should follow the producing subtask: {advanced:?}"
    );
    let held = watermark_behind_a_silent_subtask(false, std::time::Duration::from_millis(800));
    assert_eq!(
        held, None,
        "a silent subtask that is not idle holds the watermark"
    );
}

/// Emits `tag + 2 t` for event times `t` in `0..count` (ms), 100 per poll, sleeping `pause`
/// after each poll.
#[derive(Clone)]
struct Paced {
    tag: u64,
    count: u64,
    pause: std::time::Duration,
}

struct PacedReader {
    source: Paced,
    next: u64,
}

impl Source<u64> for Paced {
    fn name(&self) -> String {
        format!("Paced {}", self.tag)
    }
    fn is_bounded(&self) -> bool {
        true
    }
    fn create_reader(&self, _: &SourceContext) -> Result<Box<dyn SourceReader<u64>>> {
        Ok(Box::new(PacedReader {
            source: self.clone(),
            next: 0,
        }))
    }
}

impl SourceReader<u64> for PacedReader {
    fn poll_next(&mut self, out: &mut Vec<u64>, max: usize) -> Result<SourceStatus> {
        for _ in 0..max.min(100) {
            if self.next >= self.source.count {
                return Ok(SourceStatus::Finished);
            }
            out.push(self.source.tag + 2 * self.next);
            self.next += 1;
        }
        std::thread::sleep(self.source.pause);
        Ok(SourceStatus::MoreAvailable)
    }
}

/// The largest lead in event time of a fast source over a slow one, as one task sees their
/// records arrive, while the slow one has not finished.
fn largest_lead(aligned: bool) -> i64 {
    const COUNT: u64 = 100_000;
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1)
        .set_buffer_timeout(Some(std::time::Duration::ZERO))
        .set_auto_watermark_interval(std::time::Duration::from_millis(1));
    let strategy = || {
        let s = WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|x: &u64, _| (*x / 2) as Timestamp);
        if aligned {
            s.with_watermark_alignment("pair", std::time::Duration::from_millis(100))
        } else {
            s
        }
    };
    let fast = Paced {
        tag: 0,
        count: COUNT,
        pause: std::time::Duration::ZERO,
    };
    let slow = Paced {
        tag: 1,
        count: COUNT,
        pause: std::time::Duration::from_micros(500),
    };
    let (mut fast_max, mut slow_max, mut lead) = (-1i64, -1i64, 0i64);
    let leads = env
        .from_source(fast, strategy())
        .union(&[env.from_source(slow, strategy())])
        .flat_map(move |x: u64| {
            let t = (x / 2) as i64;
            if x.is_multiple_of(2) {
                fast_max = fast_max.max(t);
            } else {
                slow_max = slow_max.max(t);
            }
            if slow_max < COUNT as i64 - 1 {
                lead = lead.max(fast_max - slow_max);
            }
            Some(lead)
        })
        .collect();
    let mut result = env.execute("alignment").unwrap();
    let leads = result.collected(&leads).unwrap();
    leads.into_iter().max().unwrap_or(0)
}

/// Two sources of one alignment group advance together in event time: the fast one pauses
/// while it is ahead of the slow one by more than the drift (plus what it reads between two
/// periodic watermarks), where unaligned it finishes while the slow one has barely started.
#[test]
fn aligned_sources_advance_together_in_event_time() {
    let unaligned = largest_lead(false);
    let aligned = largest_lead(true);
    assert!(
        unaligned > 50_000,
        "unaligned, the fast source should run far ahead (lead {unaligned} ms)"
    );
    // The bound seen by the consumer is looser than the drift: its channels buffer records
    // of both sources, and it reads them in its own order. (Nexmark's joined tables, where
    // alignment matters, are measured in bench/nexmark_generator.sh: peak RSS and state.)
    assert!(
        aligned * 10 < unaligned * 8,
        "aligned, the fast source should be held back (lead {aligned} ms, unaligned {unaligned} ms)"
    );
}
