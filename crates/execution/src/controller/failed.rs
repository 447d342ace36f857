//! `Failed`, or `Restarting` again: what a failure leads to.
//!
//! The give-up rule lives here: the restart strategy decides whether a failed attempt is
//! followed by another; when it says no, the job fails with the last failure as it is under
//! the strategy `none`, else with [`HummerError::JobFailed`] naming the limit reached.

use std::time::{Duration, Instant};

use crate::controller::{DEPLOY_RETRY_MIN, EXCEPTIONS_KEPT, ExceptionRecord, JobController, Phase};
use crate::error::HummerError;
use crate::restart_strategy::{RestartDecision, RestartStrategy};

/// What a failure leads to.
#[derive(Debug)]
pub enum FailureOutcome {
    /// The job restarts after this wait (it is `Restarting`).
    Restart {
        /// The restart delay.
        after: Duration,
    },
    /// The job has failed for good with this error (it is `Failed`).
    Failed(HummerError),
    /// The job had already ended or is already restarting: nothing changes.
    Ignored,
}

impl JobController {
    /// A running or deploying attempt failed: `-> Restarting` if the restart strategy
    /// allows, else `-> Failed`.
    pub fn failed(&mut self, error: HummerError, now: Instant) -> FailureOutcome {
        if !matches!(self.phase, Phase::Deploying | Phase::Running { .. }) {
            return FailureOutcome::Ignored;
        }
        self.on_failure(error, now, Duration::ZERO)
    }

    /// An attempt could not be deployed at all (no slots, its restore point unreadable): a
    /// failure of its own, retried no sooner than [`DEPLOY_RETRY_MIN`].
    pub fn deploy_failed(&mut self, error: HummerError, now: Instant) -> FailureOutcome {
        if !matches!(
            self.phase,
            Phase::Created | Phase::Deploying | Phase::Restarting { .. }
        ) {
            return FailureOutcome::Ignored;
        }
        self.on_failure(error, now, DEPLOY_RETRY_MIN)
    }

    fn on_failure(
        &mut self,
        error: HummerError,
        now: Instant,
        min_delay: Duration,
    ) -> FailureOutcome {
        let decision = self.tracker.on_failure(now);
        let restarted = matches!(decision, RestartDecision::RestartAfter(_));
        if self.exceptions.len() == EXCEPTIONS_KEPT {
            self.exceptions.remove(0);
        }
        self.exceptions
            .push(ExceptionRecord::of(&error, self.attempt, restarted));
        match decision {
            RestartDecision::GiveUp { reason } => {
                let error = match self.tracker.strategy() {
                    RestartStrategy::None => error,
                    _ => HummerError::JobFailed {
                        reason,
                        cause: Box::new(error),
                    },
                };
                self.fail();
                FailureOutcome::Failed(error)
            }
            RestartDecision::RestartAfter(delay) => {
                let delay = delay.max(min_delay);
                tracing::warn!(
                    restart = self.tracker.restarts(),
                    "job failed ({error}); restarting in {delay:?}"
                );
                self.enter(Phase::Restarting {
                    at: now + delay,
                    cause: error.to_string(),
                });
                FailureOutcome::Restart { after: delay }
            }
        }
    }

    /// Fails the job for good, whatever its restart strategy (`-> Failed`): nothing can run
    /// it any more.
    pub fn fail(&mut self) {
        if !self.status().is_terminal() {
            self.enter(Phase::Failed);
        }
    }
}
