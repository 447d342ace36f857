//! A generator source for benchmarks and demos: `f(0), f(1), ...`, optionally bounded and
//! rate-limited (Flink's `DataGeneratorSource` with a `RateLimiterStrategy`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{HummerError, Result};
use crate::{Source, SourceContext, SourceReader, SourceStatus};

/// Generates `f(i)` for `i = 0, 1, ...`. Subtask `s` of `p` generates the indices
/// `s, s + p, s + 2p, ...`, so every index is produced exactly once at any parallelism.
///
/// ```
/// use hummer::prelude::*;
/// let env = StreamExecutionEnvironment::local();
/// let squares = env
///     .add_source(GeneratorSource::new(|i| i * i).with_count(4))
///     .collect();
/// let mut result = env.execute("squares").unwrap();
/// let mut out = result.collected(&squares).unwrap();
/// out.sort();
/// assert_eq!(out, vec![0, 1, 4, 9]);
/// ```
pub struct GeneratorSource<T> {
    f: Arc<dyn Fn(u64) -> T + Send + Sync>,
    count: Option<u64>,
    rate: Option<f64>,
}

impl<T> GeneratorSource<T> {
    /// An unbounded, unthrottled generator of `f(i)`.
    pub fn new(f: impl Fn(u64) -> T + Send + Sync + 'static) -> Self {
        GeneratorSource {
            f: Arc::new(f),
            count: None,
            rate: None,
        }
    }

    /// Stops after `count` records in total (makes the source bounded).
    pub fn with_count(mut self, count: u64) -> Self {
        self.count = Some(count);
        self
    }

    /// Emits at most `per_second` records per second in total, spread evenly in time.
    pub fn with_rate(mut self, per_second: f64) -> Self {
        self.rate = Some(per_second);
        self
    }
}

struct GeneratorReader<T> {
    f: Arc<dyn Fn(u64) -> T + Send + Sync>,
    next: u64,
    step: u64,
    end: Option<u64>,
    /// Records per second of this subtask.
    rate: Option<f64>,
    start: Instant,
    emitted: u64,
}

impl<T: Send + 'static> Source<T> for GeneratorSource<T> {
    fn is_replayable(&self) -> bool {
        true
    }

    fn name(&self) -> String {
        "Generator Source".into()
    }
    fn is_bounded(&self) -> bool {
        self.count.is_some()
    }
    fn validate(&self) -> Result<()> {
        match self.rate {
            Some(r) if !(r.is_finite() && r > 0.0) => Err(HummerError::Config(format!(
                "generator rate must be a positive number of records per second, got {r}"
            ))),
            _ => Ok(()),
        }
    }
    fn create_reader(&self, ctx: &SourceContext) -> Result<Box<dyn SourceReader<T>>> {
        self.validate()?;
        Ok(Box::new(GeneratorReader {
            f: self.f.clone(),
            next: ctx.subtask as u64,
            step: ctx.parallelism as u64,
            end: self.count,
            rate: self.rate.map(|r| r / ctx.parallelism as f64),
            start: Instant::now(),
            emitted: 0,
        }))
    }
}

impl<T: Send> SourceReader<T> for GeneratorReader<T> {
    fn snapshot_position(&self) -> Option<Vec<u8>> {
        postcard::to_stdvec(&(self.next, self.emitted)).ok()
    }

    fn restore_position(&mut self, position: &[u8]) -> Result<()> {
        let (next, emitted): (u64, u64) =
            crate::state::snapshot::decode_checkpointed("a generator source", position)?;
        self.next = next;
        self.emitted = emitted;
        // Keep the rate: as if the records emitted so far had just been emitted on time.
        if let Some(rate) = self.rate {
            self.start = Instant::now()
                .checked_sub(Duration::from_secs_f64(emitted as f64 / rate))
                .unwrap_or_else(Instant::now);
        }
        Ok(())
    }

    fn poll_next(&mut self, out: &mut Vec<T>, max: usize) -> Result<SourceStatus> {
        let mut budget = max as u64;
        if let Some(rate) = self.rate {
            // Records are released in bursts of about a millisecond's worth (at least one), so a
            // fast generator wakes up about a thousand times a second, not once per record.
            let burst = ((rate / 1000.0) as u64).max(1);
            let due = (self.start.elapsed().as_secs_f64() * rate) as u64;
            let allowed = due.saturating_sub(self.emitted);
            if allowed < burst {
                let next_at = (self.emitted + burst) as f64 / rate;
                let wait = next_at - self.start.elapsed().as_secs_f64();
                return Ok(SourceStatus::Idle(Duration::from_secs_f64(wait.max(0.0))));
            }
            budget = budget.min(allowed);
        }
        for _ in 0..budget {
            if self.end.is_some_and(|end| self.next >= end) {
                return Ok(SourceStatus::Finished);
            }
            out.push((self.f)(self.next));
            self.next += self.step;
            self.emitted += 1;
        }
        if self.end.is_some_and(|end| self.next >= end) {
            return Ok(SourceStatus::Finished);
        }
        Ok(SourceStatus::MoreAvailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::read_after_restore;

    #[test]
    fn a_restored_generator_continues_where_it_stopped() {
        let source = GeneratorSource::new(|i| i).with_count(100);
        let ctx = SourceContext::standalone(1, 2);
        let mut reader = source.create_reader(&ctx).unwrap();
        let mut first = Vec::new();
        reader.poll_next(&mut first, 10).unwrap();
        first.extend(read_after_restore(&source, &ctx, &*reader, 7));
        assert_eq!(first, (0..100).filter(|i| i % 2 == 1).collect::<Vec<u64>>());
        assert!(reader.restore_position(b"\xff").is_err());
    }
}
