//! Batch or streaming.

use crate::error::HummerError;

/// How a job runs (Flink's `RuntimeExecutionMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RuntimeMode {
    /// Bounded input processed to the end; keyed aggregations emit final values only.
    Batch,
    /// Records processed as they come; keyed aggregations emit an update per record.
    Streaming,
    /// `Batch` when every source is bounded, else `Streaming`.
    Automatic,
}

impl std::str::FromStr for RuntimeMode {
    type Err = HummerError;
    fn from_str(s: &str) -> Result<Self, HummerError> {
        match s.to_ascii_lowercase().as_str() {
            "batch" => Ok(RuntimeMode::Batch),
            "streaming" => Ok(RuntimeMode::Streaming),
            "automatic" | "auto" => Ok(RuntimeMode::Automatic),
            other => Err(HummerError::Config(format!(
                "unknown runtime mode '{other}': expected batch, streaming or automatic"
            ))),
        }
    }
}
