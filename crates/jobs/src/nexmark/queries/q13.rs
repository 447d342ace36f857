//! q13, bounded side-input join: every bid enriched with the value that a bounded side table
//! gives its `auction mod 10000` (`JOIN side_input FOR SYSTEM_TIME AS OF proctime ON
//! mod(auction, 10000) = key`): `auction, bidder, price, dateTime, value`. A bid whose key
//! the table lacks is dropped (an inner join).
//!
//! The side table is a lookup table read once per job: `side_input.txt` (`key,value` lines,
//! as the nexmark project's `SideInputGenerator` writes them) beside the CSV tables when the
//! input directory has one, else the generator's own: keys 0 to 9999, each its own value.
//! Every subtask shares one read-only copy, so the join is a probe of a hash map per bid,
//! with no shuffle.
//!
//! The SQL upstream (its side input uses a connector option Flink 2 removed, so the benchmark
//! does not run it):
//!
//! ```sql
//! CREATE TABLE side_input (
//!   key BIGINT,
//!   `value` VARCHAR
//! ) WITH (
//!   'connector.type' = 'filesystem',
//!   'connector.path' = 'file://${FLINK_HOME}/data/side_input.txt',
//!   'format.type' = 'csv'
//! );
//!
//! SELECT
//!     B.auction,
//!     B.bidder,
//!     B.price,
//!     B.`dateTime`,
//!     S.`value`
//! FROM (SELECT *, PROCTIME() as p_time FROM bid) B
//! JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
//! ON mod(B.auction, 10000) = S.key;
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::error::{HummerError, Result};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::Bid;

/// Rows of the default side table (the nexmark project's `side_input_gen.sh --num 10000`).
pub const DEFAULT_ROWS: u64 = 10_000;

/// The file name of the side table in a CSV input directory.
pub const FILE_NAME: &str = "side_input.txt";

/// The side table: key → value.
pub type SideTable = HashMap<u64, String>;

/// The default side table: `i → "i"` for `i` below [`DEFAULT_ROWS`].
pub fn default_side_table() -> SideTable {
    (0..DEFAULT_ROWS).map(|i| (i, i.to_string())).collect()
}

/// Parses a side table file of `key,value` lines (blank lines skipped); an error names the
/// file, the line and what is wrong.
pub fn read_side_table(path: &Path) -> Result<SideTable> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| HummerError::io("cannot read the side table", path, e))?;
    let mut table = SideTable::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        let bad = |reason: String| HummerError::BadInput {
            input: path.display().to_string(),
            reason: format!("line {}: {reason}: '{line}'", i + 1),
        };
        let (key, value) = line
            .split_once(',')
            .ok_or_else(|| bad("expected 'key,value'".into()))?;
        let key = key
            .trim()
            .parse::<u64>()
            .map_err(|e| bad(format!("the key is not a non-negative integer ({e})")))?;
        table.insert(key, value.to_string());
    }
    Ok(table)
}

/// The side table of `input`: its directory's `side_input.txt`, else the default.
pub fn side_table(input: &NexmarkInput) -> Result<SideTable> {
    match input {
        NexmarkInput::Csv(dir) if dir.join(FILE_NAME).exists() => {
            read_side_table(&dir.join(FILE_NAME))
        }
        _ => Ok(default_side_table()),
    }
}

/// The result line of a bid and its side value.
pub fn line(b: &Bid, value: &str) -> String {
    let mut line = format!("{},{},{},", b.auction, b.bidder, b.price);
    format::timestamp(&mut line, b.date_time);
    line.push(',');
    format::string(&mut line, value);
    line
}

/// The query's result lines, joining with `side`.
pub fn build_with(
    input: &NexmarkInput,
    env: &StreamExecutionEnvironment,
    side: SideTable,
) -> DataStream<String> {
    let side = Arc::new(side);
    input
        .bids(env)
        .flat_map(move |b: Bid| side.get(&(b.auction % 10_000)).map(|v| line(&b, v)))
        .name("Join with the side table")
}

/// The query's result lines, joining with the side table of `input`.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> Result<DataStream<String>> {
    Ok(build_with(input, env, side_table(input)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_side_table_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "0,zero\n\n1,one,with comma\nx,two\n").unwrap();
        let err = read_side_table(&path).unwrap_err().to_string();
        assert!(err.contains("line 4") && err.contains("x,two"), "{err}");
        std::fs::write(&path, "0,zero\n1,one,with comma\n").unwrap();
        let table = read_side_table(&path).unwrap();
        assert_eq!(table[&1], "one,with comma");
        assert_eq!(
            line_of(1, &table),
            "1,2,3,1970-01-01 00:00:00.004,\"one,with comma\""
        );
    }

    fn line_of(auction: u64, table: &SideTable) -> String {
        let b = Bid {
            auction,
            bidder: 2,
            price: 3,
            channel: String::new(),
            url: String::new(),
            date_time: 4,
            extra: String::new(),
        };
        line(&b, &table[&auction])
    }
}
