//! q3, local item suggestion: `SELECT P.name, P.city, P.state, A.id FROM auction AS A INNER
//! JOIN person AS P on A.seller = P.id WHERE A.category = 10 and (P.state = 'OR' OR P.state =
//! 'ID' OR P.state = 'CA')`: a regular (unwindowed) join, each pair emitted when its second
//! row arrives.

use crate::api::{DataStream, StreamExecutionEnvironment};
use crate::jobs::nexmark::format;
use crate::jobs::nexmark::input::NexmarkInput;
use crate::jobs::nexmark::model::{Auction, Person};

/// The query's result lines.
pub fn build(env: &StreamExecutionEnvironment, input: &NexmarkInput) -> DataStream<String> {
    let auctions = input
        .auctions(env)
        .filter(|a: &Auction| a.category == 10)
        .key_by(|a: &Auction| a.seller);
    input
        .persons(env)
        .filter(|p: &Person| matches!(p.state.as_str(), "OR" | "ID" | "CA"))
        .key_by(|p: &Person| p.id)
        .join(&auctions, |_: &u64, p: &Person, a: &Auction| {
            let mut line = String::new();
            format::string(&mut line, &p.name);
            line.push(',');
            format::string(&mut line, &p.city);
            line.push(',');
            format::string(&mut line, &p.state);
            line.push_str(&format!(",{}", a.id));
            line
        })
}
