//! Restart strategies: whether, and after how long, a failed job is restarted from its last
//! completed checkpoint.
//!
//! They follow Flink's, which users of stream engines know:
//! - `none`: the first failure fails the job;
//! - `fixed-delay`: up to `attempts` restarts in the job's life, each after `delay`;
//! - `failure-rate`: restart after `delay` unless more than `max_failures` failures fall
//!   within a sliding window of length `interval`;
//! - `exponential-delay`: restart after a backoff that starts at `initial_backoff` and grows
//!   by `multiplier` with each failure up to `max_backoff`; a run of `reset_threshold`
//!   without a failure starts it over, and more than `attempts` restarts since then give up
//!   (Flink's jitter is left out: the delays are exact).
//!
//! A strategy is a pure description; [`RestartTracker`] applies it to the failures of one
//! job. The tracker takes the time of each failure as an argument instead of reading the
//! clock, so that its decisions are deterministic and testable.
//!
//! ```
//! use hummer::execution::restart_strategy::{RestartDecision, RestartStrategy, RestartTracker};
//! use std::time::{Duration, Instant};
//!
//! let strategy: RestartStrategy = "fixed-delay:2:500ms".parse().unwrap();
//! let mut tracker = RestartTracker::new(strategy);
//! let now = Instant::now();
//! assert_eq!(tracker.on_failure(now), RestartDecision::RestartAfter(Duration::from_millis(500)));
//! assert_eq!(tracker.on_failure(now), RestartDecision::RestartAfter(Duration::from_millis(500)));
//! assert!(matches!(tracker.on_failure(now), RestartDecision::GiveUp { .. }));
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::error::{HummerError, Result};

/// How a job reacts to a failure of one of its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RestartStrategy {
    /// Never restart: the first failure fails the job.
    None,
    /// Restart at most `attempts` times over the job's life, waiting `delay` before each.
    FixedDelay {
        /// Restarts allowed in total.
        attempts: u32,
        /// Wait before each restart.
        delay: Duration,
    },
    /// Restart after `delay` as long as no more than `max_failures` failures happened in the
    /// last `interval`.
    FailureRate {
        /// Failures tolerated within one `interval`.
        max_failures: u32,
        /// Length of the sliding window over which failures are counted.
        interval: Duration,
        /// Wait before each restart.
        delay: Duration,
    },
    /// Restart after a backoff that grows with each failure (Flink's default with
    /// checkpoints since Flink 1.19).
    ExponentialDelay {
        /// The first backoff, and the backoff after a reset.
        initial_backoff: Duration,
        /// The longest backoff.
        max_backoff: Duration,
        /// The factor the backoff grows by per failure, in thousandths (1500: 1.5).
        multiplier_milli: u32,
        /// A failure this long after the one before starts the backoff over.
        reset_threshold: Duration,
        /// Restarts allowed since the backoff last started over (`u32::MAX`: no limit).
        attempts: u32,
    },
}

impl RestartStrategy {
    /// Flink's `exponential-delay` with its defaults: 1 s growing by 1.5 to 1 min, reset
    /// after an hour without failure, no limit of attempts.
    pub fn exponential_delay() -> Self {
        RestartStrategy::ExponentialDelay {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            multiplier_milli: 1500,
            reset_threshold: Duration::from_secs(3600),
            attempts: u32::MAX,
        }
    }
}

impl Default for RestartStrategy {
    /// Flink's default when checkpointing is on: fixed delay, practically unlimited attempts,
    /// one second apart. Hummer takes a bounded number so that a job that can never succeed
    /// still ends.
    fn default() -> Self {
        RestartStrategy::FixedDelay {
            attempts: 10,
            delay: Duration::from_secs(1),
        }
    }
}

impl fmt::Display for RestartStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestartStrategy::None => write!(f, "none"),
            RestartStrategy::FixedDelay { attempts, delay } => {
                write!(f, "fixed-delay:{attempts}:{}ms", delay.as_millis())
            }
            RestartStrategy::FailureRate {
                max_failures,
                interval,
                delay,
            } => write!(
                f,
                "failure-rate:{max_failures}/{}ms:{}ms",
                interval.as_millis(),
                delay.as_millis()
            ),
            RestartStrategy::ExponentialDelay {
                initial_backoff,
                max_backoff,
                multiplier_milli,
                reset_threshold,
                attempts,
            } => write!(
                f,
                "exponential-delay:{}ms:{}ms:{}:{}ms:{attempts}",
                initial_backoff.as_millis(),
                max_backoff.as_millis(),
                f64::from(*multiplier_milli) / 1000.0,
                reset_threshold.as_millis()
            ),
        }
    }
}

impl FromStr for RestartStrategy {
    type Err = HummerError;

    /// Parses `none`, `fixed-delay:ATTEMPTS:DELAY`, `failure-rate:MAX/INTERVAL:DELAY` or
    /// `exponential-delay:INITIAL:MAX[:MULTIPLIER[:RESET[:ATTEMPTS]]]`, where durations are
    /// written `250ms`, `2s` or `1min`.
    fn from_str(text: &str) -> Result<Self> {
        let bad = |reason: String| {
            HummerError::Config(format!(
                "restart strategy '{text}': {reason}; expected 'none', 'fixed-delay:ATTEMPTS:DELAY', 'failure-rate:MAX/INTERVAL:DELAY' or 'exponential-delay:INITIAL:MAX[:MULTIPLIER[:RESET[:ATTEMPTS]]]' (durations like 500ms, 2s, 1min)"
            ))
        };
        let mut parts = text.trim().split(':');
        let kind = parts.next().unwrap_or_default();
        let rest: Vec<&str> = parts.collect();
        match (kind, rest.as_slice()) {
            ("none", []) => Ok(RestartStrategy::None),
            ("fixed-delay", [attempts, delay]) => Ok(RestartStrategy::FixedDelay {
                attempts: attempts
                    .parse()
                    .map_err(|_| bad(format!("attempts '{attempts}' is not a whole number")))?,
                delay: parse_duration(delay).map_err(|e| bad(e.to_string()))?,
            }),
            ("failure-rate", [rate, delay]) => {
                let (max, interval) = rate
                    .split_once('/')
                    .ok_or_else(|| bad(format!("rate '{rate}' is not MAX/INTERVAL")))?;
                let max_failures = max
                    .parse()
                    .map_err(|_| bad(format!("maximum '{max}' is not a whole number")))?;
                let interval = parse_duration(interval).map_err(|e| bad(e.to_string()))?;
                if interval.is_zero() {
                    return Err(bad("the interval must be longer than zero".into()));
                }
                Ok(RestartStrategy::FailureRate {
                    max_failures,
                    interval,
                    delay: parse_duration(delay).map_err(|e| bad(e.to_string()))?,
                })
            }
            ("exponential-delay", [initial, max, more @ ..]) if more.len() <= 3 => {
                let duration = |d: &str| parse_duration(d).map_err(|e| bad(e.to_string()));
                let RestartStrategy::ExponentialDelay {
                    multiplier_milli,
                    reset_threshold,
                    attempts,
                    ..
                } = RestartStrategy::exponential_delay()
                else {
                    return Err(bad("internal: the default is not exponential".into()));
                };
                let multiplier_milli = match more.first() {
                    Some(m) => multiplier(m).map_err(bad)?,
                    None => multiplier_milli,
                };
                let reset_threshold = match more.get(1) {
                    Some(r) => duration(r)?,
                    None => reset_threshold,
                };
                let attempts = match more.get(2) {
                    Some(a) => a
                        .parse()
                        .map_err(|_| bad(format!("attempts '{a}' is not a whole number")))?,
                    None => attempts,
                };
                let (initial_backoff, max_backoff) = (duration(initial)?, duration(max)?);
                if max_backoff < initial_backoff {
                    return Err(bad("the longest backoff is shorter than the first".into()));
                }
                Ok(RestartStrategy::ExponentialDelay {
                    initial_backoff,
                    max_backoff,
                    multiplier_milli,
                    reset_threshold,
                    attempts,
                })
            }
            ("none" | "fixed-delay" | "failure-rate" | "exponential-delay", _) => {
                Err(bad(format!("wrong number of fields for '{kind}'")))
            }
            _ => Err(bad(format!("unknown strategy '{kind}'"))),
        }
    }
}

/// A backoff multiplier (at least 1, as Flink requires) in thousandths: `1.5` is 1500.
pub fn multiplier(text: &str) -> std::result::Result<u32, String> {
    match text.trim().parse::<f64>() {
        Ok(m) if (1.0..=1000.0).contains(&m) => Ok((m * 1000.0).round() as u32),
        _ => Err(format!(
            "the multiplier '{text}' is not a number from 1 to 1000"
        )),
    }
}

/// Why a duration does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadDuration {
    /// No unit after the number.
    #[error("duration '{0}' has no unit (ms, s or min)")]
    NoUnit(String),
    /// It does not start with a whole number.
    #[error("duration '{0}' does not start with a whole number")]
    NotANumber(String),
    /// An unknown unit.
    #[error("duration '{text}' has unknown unit '{unit}'")]
    UnknownUnit {
        /// The duration as written.
        text: String,
        /// Its unit.
        unit: String,
    },
    /// Longer than a `u64` of milliseconds.
    #[error("duration '{0}' is too long")]
    TooLong(String),
}

/// Parses a duration written as a whole number and a unit: `ms`, `s` or `min`.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, BadDuration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| BadDuration::NoUnit(text.to_string()))?;
    let (number, unit) = text.split_at(split);
    let value: u64 = number
        .parse()
        .map_err(|_| BadDuration::NotANumber(text.to_string()))?;
    let millis = match unit {
        "ms" => Some(value),
        "s" => value.checked_mul(1_000),
        "min" => value.checked_mul(60_000),
        _ => {
            return Err(BadDuration::UnknownUnit {
                text: text.to_string(),
                unit: unit.to_string(),
            });
        }
    }
    .ok_or_else(|| BadDuration::TooLong(text.to_string()))?;
    Ok(Duration::from_millis(millis))
}

/// What to do about a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartDecision {
    /// Restart every task from the last completed checkpoint after this wait.
    RestartAfter(Duration),
    /// Fail the job; the reason says which limit was reached.
    GiveUp {
        /// The limit that was reached, for the job's failure message.
        reason: String,
    },
}

/// Applies a [`RestartStrategy`] to the failures of one job.
///
/// Invariant: `restarts` counts the restarts granted so far; `recent` holds the times of the
/// failures still inside the failure-rate window, oldest first; `backoff` is the exponential
/// delay's last backoff and the restarts since it started over, `None` before any.
#[derive(Debug, Clone)]
pub struct RestartTracker {
    strategy: RestartStrategy,
    restarts: u32,
    recent: VecDeque<Instant>,
    backoff: Option<(Duration, u32)>,
}

impl RestartTracker {
    /// A tracker for a job that has not failed yet.
    pub fn new(strategy: RestartStrategy) -> Self {
        RestartTracker {
            strategy,
            restarts: 0,
            recent: VecDeque::new(),
            backoff: None,
        }
    }

    /// The strategy being applied.
    pub fn strategy(&self) -> RestartStrategy {
        self.strategy
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Records a failure that happened at `at` and decides what to do about it.
    pub fn on_failure(&mut self, at: Instant) -> RestartDecision {
        match self.next_delay(at) {
            Ok(delay) => {
                self.restarts += 1;
                RestartDecision::RestartAfter(delay)
            }
            Err(reason) => RestartDecision::GiveUp { reason },
        }
    }

    /// The wait before the restart after a failure at `at`, or why there is none.
    fn next_delay(&mut self, at: Instant) -> std::result::Result<Duration, String> {
        match self.strategy {
            RestartStrategy::None => Err("the restart strategy is 'none'".into()),
            RestartStrategy::FixedDelay { attempts, delay } => {
                if self.restarts >= attempts {
                    Err(format!("all {attempts} restart attempts are used up"))
                } else {
                    Ok(delay)
                }
            }
            RestartStrategy::FailureRate {
                max_failures,
                interval,
                delay,
            } => {
                while let Some(&oldest) = self.recent.front() {
                    if at.saturating_duration_since(oldest) >= interval {
                        self.recent.pop_front();
                    } else {
                        break;
                    }
                }
                self.recent.push_back(at);
                if self.recent.len() > max_failures as usize {
                    Err(format!(
                        "{} failures within {} ms exceed the limit of {max_failures}",
                        self.recent.len(),
                        interval.as_millis()
                    ))
                } else {
                    Ok(delay)
                }
            }
            RestartStrategy::ExponentialDelay {
                initial_backoff,
                max_backoff,
                multiplier_milli,
                reset_threshold,
                attempts,
            } => {
                let since_last = self
                    .recent
                    .back()
                    .map(|last| at.saturating_duration_since(*last));
                self.recent.clear();
                self.recent.push_back(at);
                let (backoff, since_reset) = match (self.backoff, since_last) {
                    (Some((backoff, n)), Some(gap)) if gap < reset_threshold => {
                        let grown = backoff.mul_f64(f64::from(multiplier_milli) / 1000.0);
                        (grown.min(max_backoff), n + 1)
                    }
                    _ => (initial_backoff, 1),
                };
                self.backoff = Some((backoff, since_reset));
                if since_reset > attempts {
                    Err(format!(
                        "{attempts} restart attempts since the backoff last started over are \
                         used up"
                    ))
                } else {
                    Ok(backoff)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(
            "none".parse::<RestartStrategy>().unwrap(),
            RestartStrategy::None
        );
        assert_eq!(
            "fixed-delay:3:2s".parse::<RestartStrategy>().unwrap(),
            RestartStrategy::FixedDelay {
                attempts: 3,
                delay: ms(2_000)
            }
        );
        assert_eq!(
            "failure-rate:4/1min:250ms"
                .parse::<RestartStrategy>()
                .unwrap(),
            RestartStrategy::FailureRate {
                max_failures: 4,
                interval: ms(60_000),
                delay: ms(250)
            }
        );
    }

    #[test]
    fn bad_text_is_refused_with_the_input_named() {
        for (text, needle) in [
            ("sometimes", "unknown strategy 'sometimes'"),
            ("fixed-delay:3", "wrong number of fields"),
            ("fixed-delay:x:1s", "attempts 'x'"),
            ("fixed-delay:3:1", "no unit"),
            ("fixed-delay:3:1h", "unknown unit 'h'"),
            ("failure-rate:3:1s", "not MAX/INTERVAL"),
            ("failure-rate:3/0s:1s", "longer than zero"),
            ("exponential-delay:1s", "wrong number of fields"),
            ("exponential-delay:2s:1s", "shorter than the first"),
            ("exponential-delay:1s:1min:0.5", "multiplier '0.5'"),
            ("fixed-delay:1:99999999999999999999min", "whole number"),
        ] {
            let err = text.parse::<RestartStrategy>().unwrap_err().to_string();
            assert!(err.contains(text), "{err}");
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn none_gives_up_at_once() {
        let mut t = RestartTracker::new(RestartStrategy::None);
        assert!(matches!(
            t.on_failure(Instant::now()),
            RestartDecision::GiveUp { .. }
        ));
        assert_eq!(t.restarts(), 0);
    }

    #[test]
    fn failure_rate_forgets_failures_outside_the_window() {
        let strategy = RestartStrategy::FailureRate {
            max_failures: 2,
            interval: ms(1_000),
            delay: ms(10),
        };
        let mut t = RestartTracker::new(strategy);
        let t0 = Instant::now();
        assert_eq!(t.on_failure(t0), RestartDecision::RestartAfter(ms(10)));
        assert_eq!(
            t.on_failure(t0 + ms(500)),
            RestartDecision::RestartAfter(ms(10))
        );
        // The first failure has left the window by now: two in the window, allowed.
        assert_eq!(
            t.on_failure(t0 + ms(1_200)),
            RestartDecision::RestartAfter(ms(10))
        );
        // Three within one second: refused.
        assert!(matches!(
            t.on_failure(t0 + ms(1_300)),
            RestartDecision::GiveUp { .. }
        ));
    }

    proptest! {
        /// Fixed delay grants exactly `attempts` restarts, whatever the failure times.
        #[test]
        fn fixed_delay_grants_exactly_its_attempts(attempts in 0u32..20, failures in 0usize..40) {
            let mut t = RestartTracker::new(RestartStrategy::FixedDelay { attempts, delay: ms(1) });
            let now = Instant::now();
            let granted = (0..failures)
                .filter(|_| matches!(t.on_failure(now), RestartDecision::RestartAfter(_)))
                .count();
            prop_assert_eq!(granted, failures.min(attempts as usize));
        }

        /// A failure-rate tracker gives up exactly when some window of `interval` holds more
        /// than `max_failures` failures (counted over the failures seen so far).
        #[test]
        fn failure_rate_matches_a_brute_force_count(
            max_failures in 0u32..5,
            gaps in proptest::collection::vec(0u64..400, 1..30),
        ) {
            let interval = ms(1_000);
            let strategy = RestartStrategy::FailureRate { max_failures, interval, delay: ms(1) };
            let mut t = RestartTracker::new(strategy);
            let t0 = Instant::now();
            let mut times = Vec::new();
            let mut at = 0u64;
            for gap in gaps {
                at += gap;
                times.push(at);
                let decision = t.on_failure(t0 + ms(at));
                let in_window = times.iter().filter(|&&x| at - x < 1_000).count();
                let expected_restart = in_window <= max_failures as usize;
                prop_assert_eq!(matches!(decision, RestartDecision::RestartAfter(_)), expected_restart);
            }
        }

        /// The exponential delay's backoffs follow a brute-force model: the first, and any
        /// after a gap of at least the reset threshold, is the initial backoff; each other is
        /// the one before times the multiplier, at most the longest; more restarts since the
        /// last reset than `attempts` give up.
        #[test]
        fn exponential_delay_matches_a_brute_force_model(
            attempts in 1u32..8,
            multiplier_milli in 1000u32..3000,
            gaps in proptest::collection::vec(0u64..3_000, 1..30),
        ) {
            let (initial, max, reset) = (100.0, 1_000.0, 2_000u64);
            let mut t = RestartTracker::new(RestartStrategy::ExponentialDelay {
                initial_backoff: ms(100),
                max_backoff: ms(1_000),
                multiplier_milli,
                reset_threshold: ms(reset),
                attempts,
            });
            let t0 = Instant::now();
            let (mut at, mut backoff, mut since_reset) = (0u64, initial, 0u32);
            for (i, gap) in gaps.into_iter().enumerate() {
                at += gap;
                if i == 0 || gap >= reset {
                    (backoff, since_reset) = (initial, 1);
                } else {
                    backoff = (backoff * f64::from(multiplier_milli) / 1000.0).min(max);
                    since_reset += 1;
                }
                match t.on_failure(t0 + ms(at)) {
                    RestartDecision::RestartAfter(d) => {
                        prop_assert!(since_reset <= attempts);
                        prop_assert!((d.as_secs_f64() * 1000.0 - backoff).abs() < 0.01, "{:?} vs {}", d, backoff);
                    }
                    RestartDecision::GiveUp { .. } => {
                        prop_assert!(since_reset > attempts);
                        break;
                    }
                }
            }
        }

        /// Display and parse agree.
        #[test]
        fn display_round_trips(attempts in 0u32..100, max in 0u32..100, a in 1u64..100_000, b in 0u64..100_000) {
            for s in [
                RestartStrategy::None,
                RestartStrategy::FixedDelay { attempts, delay: ms(b) },
                RestartStrategy::FailureRate { max_failures: max, interval: ms(a), delay: ms(b) },
                RestartStrategy::ExponentialDelay {
                    initial_backoff: ms(b),
                    max_backoff: ms(b + a),
                    multiplier_milli: 1000 + max * 37,
                    reset_threshold: ms(a),
                    attempts,
                },
            ] {
                prop_assert_eq!(s.to_string().parse::<RestartStrategy>().unwrap(), s);
            }
        }
    }
}
