//! Nexmark queries through real jobs, at parallelism 1 and 3, on the generator and on CSV
//! files written from it, against references computed directly from the generator's events.

use std::collections::HashMap;
use std::path::Path;

use ::nexmark::EventGenerator;
use ::nexmark::event::Event;
use hummer::jobs::nexmark::generator::config;
use hummer::jobs::nexmark::model::{Auction, Bid, Person};
use hummer::jobs::nexmark::{self, NexmarkInput, format};
use hummer::prelude::*;

const EVENTS: u64 = 20_000;

/// The first `EVENTS` events, split into tables.
fn tables() -> (Vec<Person>, Vec<Auction>, Vec<Bid>) {
    let (mut p, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for e in EventGenerator::new(config()).take(EVENTS as usize) {
        match e {
            Event::Person(x) => p.push(x.into()),
            Event::Auction(x) => a.push(x.into()),
            Event::Bid(x) => b.push(x.into()),
        }
    }
    (p, a, b)
}

fn ts(ms: i64) -> String {
    let mut s = String::new();
    format::timestamp(&mut s, ms);
    s
}

/// The reference answer of `query`, sorted.
fn reference(query: &str) -> Vec<String> {
    let (persons, auctions, bids) = tables();
    let mut rows: Vec<String> = match query {
        "q0" => bids
            .iter()
            .map(|b| {
                format!(
                    "{},{},{},{},{}",
                    b.auction,
                    b.bidder,
                    b.price,
                    ts(b.date_time),
                    b.extra
                )
            })
            .collect(),
        "q1" => bids
            .iter()
            .map(|b| {
                let p = b.price * 908;
                format!(
                    "{},{},{}.{:03},{},{}",
                    b.auction,
                    b.bidder,
                    p / 1000,
                    p % 1000,
                    ts(b.date_time),
                    b.extra
                )
            })
            .collect(),
        "q2" => bids
            .iter()
            .filter(|b| b.auction.is_multiple_of(123))
            .map(|b| format!("{},{}", b.auction, b.price))
            .collect(),
        "q3" => {
            let by_id: HashMap<u64, &Person> = persons.iter().map(|p| (p.id, p)).collect();
            auctions
                .iter()
                .filter(|a| a.category == 10)
                .filter_map(|a| {
                    let p = by_id.get(&a.seller)?;
                    ["OR", "ID", "CA"]
                        .contains(&p.state.as_str())
                        .then(|| format!("{},{},{},{}", p.name, p.city, p.state, a.id))
                })
                .collect()
        }
        q => panic!("no reference for {q}"),
    };
    rows.sort();
    rows
}

/// Writes the tables as the harness does: `DIR/{persons,auctions,bids}/part-K.csv`.
fn write_csv(dir: &Path, parts: usize) {
    let (persons, auctions, bids) = tables();
    let mut files: HashMap<(&str, usize), String> = HashMap::new();
    let mut put = |table: &'static str, i: usize, line: String| {
        let f = files.entry((table, i % parts)).or_default();
        f.push_str(&line);
        f.push('\n');
    };
    for (i, p) in persons.iter().enumerate() {
        put(
            "persons",
            i,
            format!(
                "{},{},{},{},{},{},{},{}",
                p.id, p.name, p.email_address, p.credit_card, p.city, p.state, p.date_time, p.extra
            ),
        );
    }
    for (i, a) in auctions.iter().enumerate() {
        put(
            "auctions",
            i,
            format!(
                "{},{},{},{},{},{},{},{},{},{}",
                a.id,
                a.item_name,
                a.description,
                a.initial_bid,
                a.reserve,
                a.date_time,
                a.expires,
                a.seller,
                a.category,
                a.extra
            ),
        );
    }
    for (i, b) in bids.iter().enumerate() {
        put(
            "bids",
            i,
            format!(
                "{},{},{},{},{},{},{}",
                b.auction, b.bidder, b.price, b.channel, b.url, b.date_time, b.extra
            ),
        );
    }
    for ((table, k), text) in files {
        std::fs::create_dir_all(dir.join(table)).unwrap();
        std::fs::write(dir.join(table).join(format!("part-{k}.csv")), text).unwrap();
    }
}

fn run(query: &str, input: &NexmarkInput, parallelism: usize) -> Vec<String> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(parallelism)
        .set_runtime_mode(RuntimeMode::Streaming);
    let out = nexmark::build(query, &env, input).unwrap().collect();
    let mut result = env.execute(query).unwrap();
    let mut rows = result.collected(&out).unwrap();
    rows.sort();
    rows
}

#[test]
fn every_query_equals_the_reference_at_parallelism_1_and_3() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(dir.path(), 2);
    let inputs = [
        NexmarkInput::Generator {
            events: EVENTS,
            rate: None,
        },
        NexmarkInput::Csv(dir.path().to_path_buf()),
    ];
    for query in nexmark::QUERIES {
        let expected = reference(query);
        assert!(
            !expected.is_empty(),
            "{query}: an empty reference tests nothing"
        );
        for input in &inputs {
            for parallelism in [1, 3] {
                let got = run(query, input, parallelism);
                assert!(
                    got == expected,
                    "{query} on {input:?} at parallelism {parallelism}: {} rows, expected {}",
                    got.len(),
                    expected.len()
                );
            }
        }
    }
}

#[test]
fn a_bad_csv_row_fails_the_job_naming_the_table_and_row() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(dir.path(), 1);
    std::fs::write(
        dir.path().join("bids/part-1.csv"),
        "1,2,not-a-price,c,u,5,e\n",
    )
    .unwrap();
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1);
    nexmark::build("q2", &env, &NexmarkInput::Csv(dir.path().to_path_buf()))
        .unwrap()
        .collect();
    let err = match env.execute("bad row") {
        Ok(_) => panic!("a bad row was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("bids") && err.contains("price") && err.contains("not-a-price"),
        "{err}"
    );
}

#[test]
fn an_unknown_query_is_named() {
    let env = StreamExecutionEnvironment::local();
    let err = nexmark::build(
        "q99",
        &env,
        &NexmarkInput::Generator {
            events: 1,
            rate: None,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("q99"), "{err}");
}
