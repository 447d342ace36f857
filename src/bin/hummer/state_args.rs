//! `--state-memory` and `--state-dir`: the memory budget for keyed state and where the state
//! that leaves memory goes, on every command that runs jobs.

use std::path::PathBuf;

use anyhow::Result;
use hummer::state::disk_tier::{Budget, DiskTier};

/// The state budget flags.
#[derive(clap::Args, Debug, Clone, Default, PartialEq)]
#[command(next_help_heading = "State options")]
pub struct StateArgs {
    /// Memory budget for keyed state (e.g. 2g, 512m, 1.5GiB): past it, cold entries of keyed
    /// tables move to local disk and are read back when their key comes again. A
    /// TaskManager splits it over its slots. Default: none, all state in memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub state_memory: Option<u64>,
    /// Directory for the state that leaves memory (a directory of its own is made there and
    /// removed at the end). Default: the system's temporary directory.
    #[arg(long, value_name = "DIR", requires = "state_memory")]
    pub state_dir: Option<PathBuf>,
}

impl StateArgs {
    /// Gives this process the budget, if one was asked for.
    pub fn apply(&self) -> Result<()> {
        if let Some(bytes) = self.state_memory {
            DiskTier::ensure_process(Budget::Bytes(bytes), self.state_dir.as_deref())?;
        }
        Ok(())
    }

    /// The command-line arguments that give another `hummer` command these flags.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(bytes) = self.state_memory {
            args.push(format!("--state-memory={bytes}"));
        }
        if let Some(dir) = &self.state_dir {
            args.push(format!("--state-dir={}", dir.display()));
        }
        args
    }
}

/// A size: a number of bytes, or a number with a unit `k`, `m`, `g`, `t` (powers of 1024;
/// `kb`, `KiB`, `mb`, `MiB`, ... too), as Flink's memory options take them.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let shift = match unit.trim() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown unit '{other}' in '{text}' (use a number of bytes, or k, m, g, t)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (e.g. 2g, 512m, 1048576)"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 1.0 || bytes > u64::MAX as f64 {
        return Err(format!("'{text}' is not a size of at least one byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_flink_memory_options_do() {
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("64 mb"), Ok(64 << 20));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert!(parse_size("2x").unwrap_err().contains("unknown unit 'x'"));
        assert!(parse_size("g").is_err());
        assert!(parse_size("0").is_err());
    }
}
