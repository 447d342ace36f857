//! What a job asked for to survive failures, and the rule that turns it into a
//! [`RecoveryPolicy`] for the job controller.
//!
//! As in Flink: checkpoints are taken in streaming mode only (a failed batch job reruns); the
//! restart strategy is the configured one, else a fixed-delay one with checkpoints and none
//! without; a job needs supervision only if it checkpoints, restarts or starts from a
//! savepoint.

use std::path::PathBuf;
use std::time::Duration;

use crate::checkpoint::coordinator::CheckpointConfig;
use crate::controller::RecoveryPolicy;
use crate::restart_strategy::RestartStrategy;
use crate::supervised::run_directory;
use crate::types::RuntimeMode;

/// Checkpoints, restart strategy and restore point as a program set them.
#[derive(Clone, Debug, Default)]
pub struct RecoverySettings {
    /// Checkpoints (streaming mode only); `dir` is the base directory of the job's runs.
    pub checkpointing: Option<CheckpointConfig>,
    /// What happens when a task fails (`None`: the default, see [`Self::restart_strategy`]).
    pub restart_strategy: Option<RestartStrategy>,
    /// A checkpoint or savepoint to start from.
    pub restore_from: Option<PathBuf>,
}

impl RecoverySettings {
    /// The checkpoint settings that apply in `mode`: none in batch mode.
    pub fn checkpoints_in(&self, mode: RuntimeMode) -> Option<&CheckpointConfig> {
        match (&self.checkpointing, mode) {
            (Some(_), RuntimeMode::Batch) => {
                tracing::info!("checkpoints are not taken in batch mode: a failed job reruns");
                None
            }
            (c, _) => c.as_ref(),
        }
    }

    /// The restart strategy: the configured one, else Flink's defaults (restarts with
    /// checkpoints, none without).
    pub fn restart_strategy(&self, checkpoints: bool) -> RestartStrategy {
        self.restart_strategy.unwrap_or(if checkpoints {
            RestartStrategy::default()
        } else {
            RestartStrategy::None
        })
    }

    /// The policy of a job run in this process, or `None` if it needs no supervision. Its
    /// checkpoints go to a directory of this run (see [`run_directory`]); a job restored
    /// from a savepoint takes checkpoints even if it asked for none (its sinks commit through
    /// them), every ten minutes by default. A batch job does not restore: it reruns.
    pub fn local_policy(&self, mode: RuntimeMode, job_name: &str) -> Option<RecoveryPolicy> {
        let restore_from = match mode {
            RuntimeMode::Batch => None,
            _ => self.restore_from.clone(),
        };
        let mut checkpoints = self.checkpoints_in(mode).cloned();
        if checkpoints.is_none() && restore_from.is_some() {
            checkpoints = Some(CheckpointConfig::new(
                Duration::from_secs(600),
                std::env::temp_dir().join("hummer-checkpoints"),
            ));
        }
        if let Some(c) = &mut checkpoints {
            c.dir = run_directory(&c.dir, job_name);
        }
        let restart = self.restart_strategy(checkpoints.is_some());
        if checkpoints.is_none() && restart == RestartStrategy::None && restore_from.is_none() {
            return None;
        }
        Some(RecoveryPolicy {
            checkpoints,
            restart,
            restore_from,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpointing() -> CheckpointConfig {
        CheckpointConfig::new(Duration::from_millis(100), "/tmp/hummer-test-base")
    }

    #[test]
    fn a_job_that_neither_checkpoints_nor_restarts_runs_bare() {
        let settings = RecoverySettings::default();
        assert!(settings.local_policy(RuntimeMode::Streaming, "j").is_none());
        assert_eq!(settings.restart_strategy(false), RestartStrategy::None);
    }

    #[test]
    fn checkpoints_apply_in_streaming_only_and_bring_the_default_restarts() {
        let settings = RecoverySettings {
            checkpointing: Some(checkpointing()),
            ..RecoverySettings::default()
        };
        assert!(settings.checkpoints_in(RuntimeMode::Batch).is_none());
        assert!(settings.local_policy(RuntimeMode::Batch, "j").is_none());
        let policy = settings
            .local_policy(RuntimeMode::Streaming, "my job")
            .expect("supervised");
        assert_eq!(policy.restart, RestartStrategy::default());
        let dir = policy.checkpoints.expect("checkpoints").dir;
        assert!(dir.starts_with("/tmp/hummer-test-base"), "{dir:?}");
        assert!(
            dir.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("my-job-")),
            "a directory of this run: {dir:?}"
        );
    }

    #[test]
    fn a_configured_restart_strategy_wins_and_a_restore_point_brings_checkpoints() {
        let restart: RestartStrategy = "fixed-delay:3:10ms".parse().unwrap();
        let settings = RecoverySettings {
            restart_strategy: Some(restart),
            ..RecoverySettings::default()
        };
        let policy = settings.local_policy(RuntimeMode::Batch, "j").unwrap();
        assert_eq!(
            (policy.restart, policy.checkpoints.is_none()),
            (restart, true)
        );

        let settings = RecoverySettings {
            restore_from: Some("/tmp/some-savepoint".into()),
            ..RecoverySettings::default()
        };
        let policy = settings.local_policy(RuntimeMode::Streaming, "j").unwrap();
        assert_eq!(
            policy.checkpoints.map(|c| c.interval),
            Some(Duration::from_secs(600)),
            "its sinks commit through checkpoints"
        );
        assert_eq!(policy.restore_from, settings.restore_from);
        // A batch job reruns instead of restoring.
        assert!(settings.local_policy(RuntimeMode::Batch, "j").is_none());
    }
}
