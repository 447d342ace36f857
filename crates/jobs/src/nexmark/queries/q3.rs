//! q3, local item suggestion: `SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER
//! JOIN person AS P on A.seller = P.id WHERE A.category = 10 and (P.state = 'OR' OR P.state =
//! 'ID' OR P.state = 'CA')`: a regular (unwindowed) join, each pair emitted when its second
//! row arrives.
//!
//! The SQL (as the benchmark runs it on Flink):
//!
//! ```sql
//! SELECT
//!     P.name, P.city, P.state, A.id
//! FROM
//!     auction AS A INNER JOIN person AS P on A.seller = P.id
//! WHERE
//!     A.category = 10 and (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
//! ```

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::nexmark::format;
use crate::nexmark::input::NexmarkInput;
use crate::nexmark::model::{Auction, Person};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    // Only the columns the result needs are joined (and kept as the join's state): the
    // person's name, city and state, the auction's id.
    let auctions = input
        .auctions(env)
        .filter(|a: &Auction| a.category == 10)
        .map(|a: Auction| (a.seller, a.id))
        .key_by(|a: &(u64, u64)| a.0);
    input
        .persons(env)
        .filter(|p: &Person| matches!(p.state.as_str(), "OR" | "ID" | "CA"))
        .map(|p: Person| {
            let mut line = String::new();
            format::string(&mut line, &p.name);
            line.push(',');
            format::string(&mut line, &p.city);
            line.push(',');
            format::string(&mut line, &p.state);
            (p.id, line)
        })
        .key_by(|p: &(u64, String)| p.0)
        .join(&auctions, |_: &u64, p: &(u64, String), a: &(u64, u64)| {
            format!("{},{}", p.1, a.1)
        })
}
