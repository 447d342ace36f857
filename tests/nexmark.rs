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
        "q5" => {
            let mut counts: HashMap<(i64, u64), u64> = HashMap::new();
            for b in &bids {
                for k in 0..5 {
                    let ws = b.date_time - b.date_time.rem_euclid(2_000) - 2_000 * k;
                    *counts.entry((ws, b.auction)).or_default() += 1;
                }
            }
            let mut max: HashMap<i64, u64> = HashMap::new();
            for ((ws, _), n) in &counts {
                let m = max.entry(*ws).or_default();
                *m = (*m).max(*n);
            }
            counts
                .iter()
                .filter(|((ws, _), n)| **n == max[ws])
                .map(|((_, a), n)| format!("{a},{n}"))
                .collect()
        }
        "q7" => {
            let mut max: HashMap<i64, u64> = HashMap::new();
            for b in &bids {
                let m = max
                    .entry(b.date_time - b.date_time.rem_euclid(10_000))
                    .or_default();
                *m = (*m).max(b.price);
            }
            let mut rows = Vec::new();
            for (ws, m) in &max {
                for b in bids
                    .iter()
                    .filter(|b| b.price == *m && *ws <= b.date_time && b.date_time <= ws + 10_000)
                {
                    rows.push(format!(
                        "{},{},{},{},{}",
                        b.auction,
                        b.price,
                        b.bidder,
                        ts(b.date_time),
                        b.extra
                    ));
                }
            }
            rows
        }
        "q8" => {
            let ws = |t: i64| t - t.rem_euclid(10_000);
            let sellers: std::collections::HashSet<(u64, i64)> = auctions
                .iter()
                .map(|a| (a.seller, ws(a.date_time)))
                .collect();
            let people: std::collections::BTreeSet<(u64, String, i64)> = persons
                .iter()
                .map(|p| (p.id, p.name.clone(), ws(p.date_time)))
                .collect();
            people
                .into_iter()
                .filter(|(id, _, w)| sellers.contains(&(*id, *w)))
                .map(|(id, name, w)| format!("{id},{name},{}", ts(w)))
                .collect()
        }
        "q10" => bids
            .iter()
            .map(|b| {
                let t = ts(b.date_time);
                format!(
                    "{},{},{},{},{},{},{}",
                    b.auction,
                    b.bidder,
                    b.price,
                    t,
                    b.extra,
                    &t[..10],
                    &t[11..16]
                )
            })
            .collect(),
        "q11" => {
            let mut by_bidder: HashMap<u64, Vec<i64>> = HashMap::new();
            for b in &bids {
                by_bidder.entry(b.bidder).or_default().push(b.date_time);
            }
            let mut rows = Vec::new();
            for (bidder, mut times) in by_bidder {
                times.sort();
                let (mut start, mut last, mut n) = (times[0], times[0], 0);
                for t in times {
                    if t - last > 10_000 {
                        rows.push(format!("{bidder},{n},{},{}", ts(start), ts(last + 10_000)));
                        (start, n) = (t, 0);
                    }
                    last = t;
                    n += 1;
                }
                rows.push(format!("{bidder},{n},{},{}", ts(start), ts(last + 10_000)));
            }
            rows
        }
        "q14" => bids
            .iter()
            .filter(|b| b.price * 908 > 1_000_000_000 && b.price * 908 < 50_000_000_000)
            .map(|b| {
                let p = b.price * 908;
                let hour = b.date_time.rem_euclid(86_400_000) / 3_600_000;
                let when = if (8..=18).contains(&hour) {
                    "dayTime"
                } else if hour <= 6 || hour >= 20 {
                    "nightTime"
                } else {
                    "otherTime"
                };
                let c = b.extra.matches('c').count();
                format!(
                    "{},{},{}.{:03},{when},{},{},{c}",
                    b.auction,
                    b.bidder,
                    p / 1000,
                    p % 1000,
                    ts(b.date_time),
                    b.extra
                )
            })
            .collect(),
        "q21" => bids
            .iter()
            .filter_map(|b| {
                let id = match b.channel.to_lowercase().as_str() {
                    "apple" => "0".to_string(),
                    "google" => "1".to_string(),
                    "facebook" => "2".to_string(),
                    "baidu" => "3".to_string(),
                    _ => {
                        // `(&|^)channel_id=([^&]*)`: a `&`-separated segment of the
                        // URL (the first one starts it) that begins with the key.
                        b.url
                            .split('&')
                            .find_map(|kv| kv.strip_prefix("channel_id="))?
                            .to_string()
                    }
                };
                Some(format!(
                    "{},{},{},{},{id}",
                    b.auction, b.bidder, b.price, b.channel
                ))
            })
            .collect(),
        "q22" => bids
            .iter()
            .map(|b| {
                let parts: Vec<&str> = b.url.split('/').collect();
                let part = |i: usize| parts.get(i).copied().unwrap_or("");
                format!(
                    "{},{},{},{},{},{},{}",
                    b.auction,
                    b.bidder,
                    b.price,
                    b.channel,
                    part(3),
                    part(4),
                    part(5)
                )
            })
            .collect(),
        "q4" | "q6" | "q9" => {
            // Per auction the highest (then earliest, lower bidder, smaller extra) bid made
            // while it was open.
            let mut rows = Vec::new();
            let mut by_category: HashMap<u64, (u64, u64)> = HashMap::new();
            // q6: per seller, (winning bid time, auction, price).
            let mut by_seller: HashMap<u64, Vec<(i64, u64, u64)>> = HashMap::new();
            for a in &auctions {
                let best = bids
                    .iter()
                    .filter(|b| {
                        b.auction == a.id && a.date_time <= b.date_time && b.date_time <= a.expires
                    })
                    .min_by_key(|b| {
                        (
                            std::cmp::Reverse(b.price),
                            b.date_time,
                            b.bidder,
                            b.extra.clone(),
                        )
                    });
                let Some(b) = best else { continue };
                by_seller
                    .entry(a.seller)
                    .or_default()
                    .push((b.date_time, a.id, b.price));
                let e = by_category.entry(a.category).or_default();
                (e.0, e.1) = (e.0 + b.price, e.1 + 1);
                rows.push(format!(
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    a.id,
                    a.item_name,
                    a.description,
                    a.initial_bid,
                    a.reserve,
                    ts(a.date_time),
                    ts(a.expires),
                    a.seller,
                    a.category,
                    a.extra,
                    b.auction,
                    b.bidder,
                    b.price,
                    ts(b.date_time),
                    b.extra
                ));
            }
            if query == "q6" {
                // Each sale with the average of it and the seller's 10 sales before it.
                let mut rows = Vec::new();
                for (seller, mut sales) in by_seller {
                    sales.sort();
                    for i in 0..sales.len() {
                        let window = &sales[i.saturating_sub(10)..=i];
                        let sum: u64 = window.iter().map(|s| s.2).sum();
                        rows.push(format!("{seller},{}", sum / window.len() as u64));
                    }
                }
                rows
            } else if query == "q4" {
                by_category
                    .iter()
                    .map(|(c, (sum, n))| format!("{c},{}", sum / n))
                    .collect()
            } else {
                rows
            }
        }
        "q15" | "q16" => {
            // (group) -> bids, bidders and auctions, in all and per rank; latest time of day.
            type Group = (
                [u64; 4],
                [std::collections::HashSet<u64>; 4],
                [std::collections::HashSet<u64>; 4],
                i64,
            );
            let mut groups: std::collections::BTreeMap<String, Group> = Default::default();
            for b in &bids {
                let day = ts(b.date_time)[..10].to_string();
                let key = if query == "q15" {
                    day
                } else {
                    format!("{},{day}", b.channel)
                };
                let g = groups.entry(key).or_default();
                let rank = if b.price < 10_000 {
                    1
                } else if b.price < 1_000_000 {
                    2
                } else {
                    3
                };
                for i in [0, rank] {
                    g.0[i] += 1;
                    g.1[i].insert(b.bidder);
                    g.2[i].insert(b.auction);
                }
                g.3 = g.3.max(b.date_time);
            }
            groups
                .into_iter()
                .map(|(key, (n, bidders, auctions, latest))| {
                    let mut cols = vec![key];
                    if query == "q16" {
                        cols.push(ts(latest)[11..16].to_string());
                    }
                    cols.extend(n.iter().map(|x| x.to_string()));
                    cols.extend(bidders.iter().map(|s| s.len().to_string()));
                    cols.extend(auctions.iter().map(|s| s.len().to_string()));
                    cols.join(",")
                })
                .collect()
        }
        "q17" => {
            let mut groups: HashMap<(u64, String), Vec<u64>> = HashMap::new();
            for b in &bids {
                groups
                    .entry((b.auction, ts(b.date_time)[..10].to_string()))
                    .or_default()
                    .push(b.price);
            }
            groups
                .into_iter()
                .map(|((a, day), prices)| {
                    let n = prices.len() as u64;
                    let r =
                        |lo: u64, hi: u64| prices.iter().filter(|p| lo <= **p && **p < hi).count();
                    let sum: u64 = prices.iter().sum();
                    format!(
                        "{a},{day},{n},{},{},{},{},{},{},{sum}",
                        r(0, 10_000),
                        r(10_000, 1_000_000),
                        r(1_000_000, u64::MAX),
                        prices.iter().min().unwrap(),
                        prices.iter().max().unwrap(),
                        sum / n
                    )
                })
                .collect()
        }
        "q18" => {
            let mut last: HashMap<(u64, u64), &Bid> = HashMap::new();
            for b in &bids {
                let e = last.entry((b.bidder, b.auction)).or_insert(b);
                if (b.date_time, b.price, std::cmp::Reverse(&b.extra))
                    > (e.date_time, e.price, std::cmp::Reverse(&e.extra))
                {
                    *e = b;
                }
            }
            last.values()
                .map(|b| {
                    format!(
                        "{},{},{},{},{},{},{}",
                        b.auction,
                        b.bidder,
                        b.price,
                        b.channel,
                        b.url,
                        ts(b.date_time),
                        b.extra
                    )
                })
                .collect()
        }
        "q19" => {
            let mut by_auction: HashMap<u64, Vec<&Bid>> = HashMap::new();
            for b in &bids {
                by_auction.entry(b.auction).or_default().push(b);
            }
            let mut rows = Vec::new();
            for (_, mut list) in by_auction {
                list.sort_by_key(|b| {
                    (
                        std::cmp::Reverse(b.price),
                        b.date_time,
                        b.bidder,
                        b.extra.clone(),
                    )
                });
                for (i, b) in list.iter().take(10).enumerate() {
                    rows.push(format!(
                        "{},{},{},{},{},{},{},{}",
                        b.auction,
                        b.bidder,
                        b.price,
                        b.channel,
                        b.url,
                        ts(b.date_time),
                        b.extra,
                        i + 1
                    ));
                }
            }
            rows
        }
        "q20" => {
            let by_id: HashMap<u64, &Auction> = auctions
                .iter()
                .filter(|a| a.category == 10)
                .map(|a| (a.id, a))
                .collect();
            bids.iter()
                .filter_map(|b| {
                    let a = by_id.get(&b.auction)?;
                    Some(format!(
                        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                        b.auction,
                        b.bidder,
                        b.price,
                        b.channel,
                        b.url,
                        ts(b.date_time),
                        b.extra,
                        a.item_name,
                        a.description,
                        a.initial_bid,
                        a.reserve,
                        ts(a.date_time),
                        ts(a.expires),
                        a.seller,
                        a.category,
                        a.extra
                    ))
                })
                .collect()
        }
        // The default side table maps every key below 10000 to itself.
        "q13" => bids
            .iter()
            .map(|b| {
                format!(
                    "{},{},{},{},{}",
                    b.auction,
                    b.bidder,
                    b.price,
                    ts(b.date_time),
                    b.auction % 10_000
                )
            })
            .collect(),
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
        if nexmark::PROCESSING_TIME_QUERIES.contains(query) {
            continue; // tested on a frozen clock below
        }
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

/// Windowed queries under a failure: the job panics once after some results, restarts from
/// its last checkpoint (window state and source positions restored) and its committed output
/// equals an uninterrupted run's. q7 (per-window maximum and the bids at it) fires windows
/// as it goes; q16 (distinct counts per channel and day, checkpointed as the ids its sets
/// gained) and q19 (top ten per auction) fire at the end, after checkpoints whose deltas patch
/// the windows of the one before; q18's final table (latest bid per bidder and auction, kept
/// in a compact form) comes back from a chain of deltas the same way.
#[test]
fn windowed_queries_are_exactly_once_under_a_failure() {
    for query in ["q7", "q16", "q18", "q19"] {
        windowed_query_is_exactly_once_under_a_failure(query);
    }
}

fn windowed_query_is_exactly_once_under_a_failure(query: &str) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Duration;

    use hummer::checkpoint::coordinator::CheckpointConfig;
    use hummer::execution::restart_strategy::RestartStrategy;

    let events = 600_000;
    let input = NexmarkInput::Generator {
        events,
        rate: Some(600_000.0),
    };
    let mut expected = run(query, &NexmarkInput::Generator { events, rate: None }, 2);
    expected.sort();

    let dir = tempfile::tempdir().unwrap();
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming)
        .set_checkpoint_config(CheckpointConfig::new(
            Duration::from_millis(50),
            dir.path().join("checkpoints"),
        ))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 3,
            delay: Duration::from_millis(10),
        });
    let (seen, failed) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    nexmark::build(query, &env, &input)
        .unwrap()
        .map(move |line: String| {
            if seen.fetch_add(1, Ordering::SeqCst) == 2 && !failed.swap(true, Ordering::SeqCst) {
                panic!("injected failure after 2 results");
            }
            line
        })
        .write_text_file(dir.path().join("out"));
    let result = env.execute(&format!("{query} under a failure")).unwrap();
    assert_eq!(
        result.restarts, 1,
        "{query}: the injected failure restarted the job once"
    );
    let mut committed = Vec::new();
    for entry in std::fs::read_dir(dir.path().join("out")).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("part-") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            committed.extend(text.lines().map(String::from));
        }
    }
    committed.sort();
    assert_eq!(committed.len(), expected.len(), "{query}");
    assert!(
        committed == expected,
        "{query}: the committed output differs from an uninterrupted run's"
    );
}

/// q12 on a frozen clock: every bid falls in the one processing-time window holding that
/// instant, so the result is each bidder's number of bids in that window.
#[test]
fn processing_time_windows_count_on_the_task_clock() {
    let now = 1_700_000_012_345;
    let (start, end) = (now - now % 10_000, now - now % 10_000 + 10_000);
    let (_, _, bids) = tables();
    let mut counts: HashMap<u64, u64> = HashMap::new();
    for b in &bids {
        *counts.entry(b.bidder).or_default() += 1;
    }
    let mut expected: Vec<String> = counts
        .iter()
        .map(|(bidder, n)| format!("{bidder},{n},{},{}", ts(start), ts(end)))
        .collect();
    expected.sort();
    for parallelism in [1, 3] {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(parallelism)
            .set_runtime_mode(RuntimeMode::Streaming)
            .set_clock(std::sync::Arc::new(ManualClock::new(now)));
        let input = NexmarkInput::Generator {
            events: EVENTS,
            rate: None,
        };
        let out = nexmark::build("q12", &env, &input).unwrap().collect();
        let mut result = env.execute("q12").unwrap();
        let mut rows = result.collected(&out).unwrap();
        rows.sort();
        assert!(
            rows == expected,
            "q12 at parallelism {parallelism}: {} rows, expected {}",
            rows.len(),
            expected.len()
        );
    }
}

/// q13 with a side table of its own beside the CSV files: only bids whose `auction mod
/// 10000` the table holds come out, with its value (quoted when it has a comma); a bad line of
/// the table is named.
#[test]
fn the_side_input_join_uses_the_side_table_of_the_input() {
    let dir = tempfile::tempdir().unwrap();
    write_csv(dir.path(), 2);
    let mut side = String::new();
    for k in (0..10_000u64).filter(|k| k % 3 != 0) {
        side.push_str(&format!(
            "{k},v{k}{}\n",
            if k % 2 == 0 { ",even" } else { "" }
        ));
    }
    std::fs::write(dir.path().join("side_input.txt"), side).unwrap();
    let (_, _, bids) = tables();
    let mut expected: Vec<String> = bids
        .iter()
        .filter(|b| b.auction % 10_000 % 3 != 0)
        .map(|b| {
            let k = b.auction % 10_000;
            let value = if k % 2 == 0 {
                format!("\"v{k},even\"")
            } else {
                format!("v{k}")
            };
            format!(
                "{},{},{},{},{value}",
                b.auction,
                b.bidder,
                b.price,
                ts(b.date_time)
            )
        })
        .collect();
    expected.sort();
    assert!(!expected.is_empty() && expected.len() < bids.len());
    let input = NexmarkInput::Csv(dir.path().to_path_buf());
    for parallelism in [1, 3] {
        assert!(
            run("q13", &input, parallelism) == expected,
            "q13 at parallelism {parallelism}"
        );
    }
    std::fs::write(dir.path().join("side_input.txt"), "1,a\nnot-a-key,b\n").unwrap();
    let env = StreamExecutionEnvironment::local();
    let err = nexmark::build("q13", &env, &input)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("side_input.txt") && err.contains("line 2") && err.contains("not-a-key"),
        "{err}"
    );
}

/// Applies an update stream in order: the table it ends with, sorted. Panics on a change
/// that is not one, or that removes a row the table does not hold.
fn apply(changes: &[String]) -> Vec<String> {
    let mut table: HashMap<&str, usize> = HashMap::new();
    for change in changes {
        let (kind, row) = change.split_once(',').expect("a change is KIND,row");
        match kind {
            "+I" | "+U" => *table.entry(row).or_default() += 1,
            "-U" | "-D" => {
                let n = table
                    .get_mut(row)
                    .unwrap_or_else(|| panic!("{change}: no such row"));
                *n -= 1;
                if *n == 0 {
                    table.remove(row);
                }
            }
            other => panic!("unknown change kind {other} in {change}"),
        }
    }
    let mut rows: Vec<String> = table
        .into_iter()
        .flat_map(|(row, n)| std::iter::repeat_n(row.to_string(), n))
        .collect();
    rows.sort();
    rows
}

/// The update stream of every updating query, applied in order, ends at the final table;
/// the queries whose rows change emit retractions (`-U`), and an append-only query's update
/// stream is its rows as insertions.
#[test]
fn update_streams_end_at_the_final_table() {
    let input = NexmarkInput::Generator {
        events: EVENTS,
        rate: None,
    };
    for query in nexmark::UPDATING_QUERIES.iter().chain(&["q2", "q9"]) {
        let expected = reference(query);
        for parallelism in [1, 3] {
            let env = StreamExecutionEnvironment::local();
            env.set_parallelism(parallelism)
                .set_runtime_mode(RuntimeMode::Streaming);
            let out = nexmark::build_updates(query, &env, &input)
                .unwrap()
                .collect();
            let mut result = env.execute(query).unwrap();
            let changes = result.collected(&out).unwrap();
            assert!(
                apply(&changes) == expected,
                "{query} at parallelism {parallelism}: the update stream does not end at the final table"
            );
            let retractions = changes.iter().filter(|c| c.starts_with("-U,")).count();
            if nexmark::UPDATING_QUERIES.contains(query) {
                assert!(retractions > 0, "{query}: no row was ever updated");
                assert!(
                    changes.len() > expected.len(),
                    "{query}: no more changes than rows"
                );
            } else {
                assert!(
                    changes.iter().all(|c| c.starts_with("+I,")),
                    "{query}: not insertions only"
                );
            }
        }
    }
}

mod common;

/// Nexmark through Kafka (a real broker): `produce` writes the generator's events into a
/// topic as JSON; every query reading the three tables from that topic (three sources on
/// one topic, per-partition watermarks) equals the reference.
#[test]
fn every_query_read_from_kafka_equals_the_reference() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = common::kafka::Broker::start();
    nexmark::kafka::produce(&broker.address, "nexmark", EVENTS, 3).unwrap();
    let input = NexmarkInput::Kafka(std::sync::Arc::new(
        nexmark::kafka::KafkaTables::new(&broker.address, "nexmark").unwrap(),
    ));
    for query in nexmark::QUERIES {
        if nexmark::PROCESSING_TIME_QUERIES.contains(query) {
            continue;
        }
        let expected = reference(query);
        let got = run(query, &input, 2);
        assert!(
            got == expected,
            "{query} from Kafka: {} rows, expected {}",
            got.len(),
            expected.len()
        );
    }
}
