//! Job-wide settings.

use std::time::Duration;

use crate::state::key_groups::DEFAULT_MAX_PARALLELISM;
use crate::types::RuntimeMode;

/// Settings of one job.
#[derive(Clone, Debug)]
pub struct ExecutionConfig {
    /// Parallelism of operators that set none. Default: the number of CPU cores.
    pub parallelism: usize,
    /// Number of key groups, the upper bound of any parallelism. Default 128.
    pub max_parallelism: usize,
    /// Runtime mode. Default `Automatic`.
    pub mode: RuntimeMode,
    /// Longest a record waits in an output buffer while its task is busy; `None` flushes only
    /// full batches (and whenever a task runs out of input). Default 1 ms. This is the
    /// latency/throughput knob (Flink's buffer timeout, whose default is 100 ms).
    pub buffer_timeout: Option<Duration>,
    /// Records per batch. Default 1024.
    pub batch_size: usize,
    /// Batches in flight per channel before the producer waits (backpressure). Default 8.
    pub channel_capacity: usize,
    /// In cluster mode, where the sending ends of remote channels run. Default: fused into the
    /// producing subtask.
    pub network_task: crate::channels::network::NetworkTaskMode,
    /// Checkpoints (streaming mode only). Default: off.
    pub checkpointing: Option<crate::checkpoint::coordinator::CheckpointConfig>,
    /// What happens when a task fails. Default (`None`): fail the job without checkpoints; with
    /// checkpoints, restart up to 10 times, 1 s apart.
    pub restart_strategy: Option<crate::execution::restart_strategy::RestartStrategy>,
    /// A checkpoint or savepoint to start from (its directory). Default: none.
    pub restore_from: Option<std::path::PathBuf>,
    /// How often timestamp assigners and sources emit periodic watermarks. Default 200 ms (as
    /// Flink's `autoWatermarkInterval`).
    pub auto_watermark_interval: Duration,
    /// The processing-time clock (windows, timers, idleness, periodic watermarks). Default the
    /// system clock; tests set a [`crate::types::ManualClock`].
    pub clock: std::sync::Arc<dyn crate::types::Clock>,
    /// The memory budget for keyed state, in bytes: past it, cold entries move to disk (see
    /// [`crate::state::disk_tier`]). Default: none, all state in memory.
    pub state_memory: Option<u64>,
    /// Where the disk tier keeps its files (a directory of its own is made there). Default:
    /// the system's temporary directory.
    pub state_dir: Option<std::path::PathBuf>,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        ExecutionConfig {
            parallelism: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            mode: RuntimeMode::Automatic,
            buffer_timeout: Some(Duration::from_millis(1)),
            batch_size: 1024,
            channel_capacity: 8,
            network_task: crate::channels::network::NetworkTaskMode::Fused,
            checkpointing: None,
            restart_strategy: None,
            restore_from: None,
            auto_watermark_interval: Duration::from_millis(200),
            clock: std::sync::Arc::new(crate::types::SystemClock),
            state_memory: None,
            state_dir: None,
        }
    }
}

impl ExecutionConfig {
    /// Checks the settings; names the first bad one.
    pub fn validate(&self) -> crate::error::Result<()> {
        let bad = |what: String| Err(crate::error::HummerError::Config(what));
        if self.parallelism == 0 {
            return bad("parallelism must be at least 1".into());
        }
        if self.max_parallelism == 0 {
            return bad("max parallelism must be at least 1".into());
        }
        if self.parallelism > self.max_parallelism {
            return bad(format!(
                "parallelism {} exceeds the max parallelism (key groups) {}",
                self.parallelism, self.max_parallelism
            ));
        }
        if self.batch_size == 0 {
            return bad("batch size must be at least 1".into());
        }
        if self.auto_watermark_interval.is_zero() {
            return bad("the auto watermark interval must be positive".into());
        }
        if self.channel_capacity == 0 {
            return bad("channel capacity must be at least 1".into());
        }
        if let Some(c) = &self.checkpointing {
            c.validate()?;
        }
        Ok(())
    }
}
