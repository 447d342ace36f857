//! SQL tables on Kafka topics, against a real Kafka-protocol broker (tansu, see
//! `common/kafka.rs`): the `kafka` connector written and read back in event time, and
//! `upsert-kafka` carrying an updating result as upserts and tombstones.

mod common;

use std::collections::BTreeMap;

use hummer::connectors::kafka::{KafkaConfig, KafkaRecord, KafkaSource, create_topic};
use hummer::prelude::*;

use common::kafka::Broker;
use common::sql::{apply_debezium, hummer_sql, sorted_lines};

/// Bids `(auction, price, ms)` in event-time order, 0-300 ms apart.
fn bids(count: usize, auctions: u64, seed: u64) -> Vec<(i64, i64, i64)> {
    let mut rng = common::Rng::new(seed);
    let mut t = 0i64;
    (0..count)
        .map(|_| {
            t += rng.below(300) as i64;
            (rng.below(auctions) as i64, rng.below(1000) as i64, t)
        })
        .collect()
}

fn write_csv(path: &std::path::Path, bids: &[(i64, i64, i64)]) {
    let text: String = bids
        .iter()
        .map(|(a, p, t)| format!("{a},{p},{t}\n"))
        .collect();
    std::fs::write(path, text).expect("write the bids");
}

/// Every message of `topic` as (partition, offset, key, value), in offset order per
/// partition.
fn messages(broker: &Broker, topic: &str) -> Vec<(i32, i64, Option<String>, Option<String>)> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1);
    let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
    let out = env
        .add_source(
            KafkaSource::builder()
                .bootstrap_servers(&broker.address)
                .topics([topic])
                .bounded()
                .deserializer(move |r: &KafkaRecord<'_>| {
                    Ok((r.partition, r.offset, text(r.key), text(r.value)))
                })
                .build()
                .expect("the source"),
        )
        .collect();
    let mut result = env.execute("read the topic").expect("read the topic");
    let mut messages = result.collected(&out).expect("collected");
    messages.sort();
    messages
}

/// A `kafka` table in json written by one job and read back by another at another
/// parallelism with a watermark per partition: the tumbling-window counts are brute force's,
/// none dropped as late though one subtask reads several partitions; an updating query into
/// the same table is refused before it runs, with Flink's error.
#[test]
fn a_kafka_table_is_written_and_read_back_in_event_time() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&KafkaConfig::new(&broker.address), "bids", 3).expect("create the topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let bids = bids(2_000, 7, 5);
    write_csv(&dir.path().join("bids.csv"), &bids);
    let kafka = format!(
        "'connector' = 'kafka', 'topic' = 'bids', 'properties.bootstrap.servers' = '{}'",
        broker.address
    );
    let write = format!(
        "CREATE TABLE src (auction BIGINT, price BIGINT, ms BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE k (auction BIGINT, price BIGINT, ms BIGINT)\n\
         WITH ({kafka}, 'format' = 'json', 'key.format' = 'csv', 'key.fields' = 'auction');\n",
        dir.path().join("bids.csv").display()
    );
    let (ok, out, err) = hummer_sql(
        &["-e", &format!("{write}INSERT INTO k SELECT * FROM src;")],
        "",
    );
    assert!(ok, "{out}\n{err}");
    let written = messages(&broker, "bids");
    assert_eq!(written.len(), bids.len());
    // Keyed by auction: each auction in one partition, its bids in order there.
    let mut partition_of = BTreeMap::new();
    for (partition, _, key, _) in &written {
        let key = key.clone().expect("a key");
        assert_eq!(*partition_of.entry(key).or_insert(*partition), *partition);
    }

    let output = dir.path().join("out");
    let read = format!(
        "SET 'parallelism.default' = '2';\n\
         CREATE TABLE k (auction BIGINT, price BIGINT, ms BIGINT,\n\
           ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)),\n\
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n\
         WITH ({kafka}, 'format' = 'json', 'scan.startup.mode' = 'earliest-offset',\n\
           'scan.bounded.mode' = 'latest-offset', 'properties.group.id' = 'sql');\n\
         CREATE TABLE out (auction BIGINT, window_start TIMESTAMP(3), n BIGINT, top BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         INSERT INTO out SELECT auction, window_start, COUNT(*), MAX(price)\n\
         FROM TABLE(TUMBLE(TABLE k, DESCRIPTOR(ts), INTERVAL '5' SECOND))\n\
         GROUP BY auction, window_start, window_end;",
        output.display()
    );
    let (ok, out, err) = hummer_sql(&["-e", &read], "");
    assert!(ok, "{out}\n{err}");
    let mut expected: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    for &(auction, price, t) in &bids {
        let e = expected.entry((auction, t / 5_000 * 5_000)).or_default();
        e.0 += 1;
        e.1 = e.1.max(price);
    }
    let mut expected: Vec<String> = expected
        .into_iter()
        .map(|((a, start), (n, top))| {
            let (s, ms) = (start / 1000, start % 1000);
            format!(
                "{a},1970-01-01 {:02}:{:02}:{:02}.{ms:03},{n},{top}",
                s / 3600,
                s / 60 % 60,
                s % 60
            )
        })
        .collect();
    expected.sort();
    assert_eq!(sorted_lines(&output), expected);

    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            &format!(
                "{write}INSERT INTO k SELECT auction, MAX(price), 0 FROM src GROUP BY auction;"
            ),
        ],
        "",
    );
    assert!(!ok, "an updating query into a json kafka table is refused");
    assert!(
        err.contains("doesn't support consuming update changes"),
        "{err}"
    );
}

/// An updating GROUP BY whose rows leave the result (a filter on the count) written into an
/// `upsert-kafka` table: per key, the last message is the key's row in the brute-force
/// result, or a tombstone where the key has left it; every message of a key is in one
/// partition. Read back as an `upsert-kafka` table, the topic is that result again: as
/// rows, and summed over (a GROUP BY over its normalized changelog).
#[test]
fn an_upsert_kafka_table_holds_the_updating_result_by_key() {
    crate::require_heavy!("a Kafka broker (tansu)");
    let broker = Broker::start();
    create_topic(&KafkaConfig::new(&broker.address), "counts", 2).expect("create the topic");
    let dir = tempfile::tempdir().expect("temp dir");
    let bids = bids(1_500, 40, 9);
    write_csv(&dir.path().join("bids.csv"), &bids);
    let script = format!(
        "SET 'parallelism.default' = '2';\n\
         CREATE TABLE src (auction BIGINT, price BIGINT, ms BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE counts (auction BIGINT, n BIGINT, top BIGINT,\n\
           PRIMARY KEY (auction) NOT ENFORCED)\n\
         WITH ('connector' = 'upsert-kafka', 'topic' = 'counts',\n\
           'properties.bootstrap.servers' = '{}', 'key.format' = 'json',\n\
           'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY');\n\
         INSERT INTO counts SELECT auction, n, top FROM\n\
           (SELECT auction, COUNT(*) AS n, MAX(price) AS top FROM src GROUP BY auction)\n\
         WHERE n < 40;",
        dir.path().join("bids.csv").display(),
        broker.address
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(ok, "{out}\n{err}");
    let mut expected: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for &(auction, price, _) in &bids {
        let e = expected.entry(auction).or_default();
        e.0 += 1;
        e.1 = e.1.max(price);
    }
    let mut last: BTreeMap<String, (i32, Option<String>)> = BTreeMap::new();
    for (partition, _, key, value) in messages(&broker, "counts") {
        let key = key.expect("every message has a key");
        let previous = last.insert(key.clone(), (partition, value));
        if let Some((p, _)) = previous {
            assert_eq!(p, partition, "the key {key} is in one partition");
        }
    }
    for (&auction, &(n, top)) in &expected {
        let key = format!("{{\"auction\":{auction}}}");
        let value = last.get(&key).and_then(|(_, v)| v.clone());
        if n < 40 {
            assert_eq!(value, Some(format!("{{\"n\":{n},\"top\":{top}}}")), "{key}");
        } else {
            assert!(
                last.contains_key(&key) && value.is_none(),
                "{key} left the result: its last message is a tombstone"
            );
        }
    }
    let kept: Vec<(i64, i64, i64)> = expected
        .iter()
        .filter(|(_, (n, _))| *n < 40)
        .map(|(a, (n, top))| (*a, *n, *top))
        .collect();
    let mut rows: Vec<String> = kept
        .iter()
        .map(|(a, n, top)| format!("{a},{n},{top}"))
        .collect();
    rows.sort();
    let summary = vec![format!(
        "{},{}",
        kept.len(),
        kept.iter().map(|(_, n, _)| n).sum::<i64>()
    )];
    let (copy, sums) = (dir.path().join("copy"), dir.path().join("sums"));
    let read = format!(
        "SET 'parallelism.default' = '2';\n\
         CREATE TABLE counts (auction BIGINT, n BIGINT, top BIGINT,\n\
           PRIMARY KEY (auction) NOT ENFORCED)\n\
         WITH ('connector' = 'upsert-kafka', 'topic' = 'counts',\n\
           'properties.bootstrap.servers' = '{}', 'key.format' = 'json',\n\
           'value.format' = 'json', 'value.fields-include' = 'EXCEPT_KEY',\n\
           'scan.bounded.mode' = 'latest-offset');\n\
         CREATE TABLE copy (auction BIGINT, n BIGINT, top BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
         CREATE TABLE sums (keys BIGINT, total BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
         INSERT INTO copy SELECT * FROM counts;\n\
         INSERT INTO sums SELECT COUNT(*), SUM(n) FROM counts;",
        broker.address,
        copy.display(),
        sums.display()
    );
    let (ok, out, err) = hummer_sql(&["-e", &read], "");
    assert!(ok, "{out}\n{err}");
    assert_eq!(apply_debezium(&copy, &["auction", "n", "top"]), rows);
    assert_eq!(apply_debezium(&sums, &["keys", "total"]), summary);
}

/// Writes `bids` as `seq,auction,price,ms` into `topic`, keyed by auction (so each auction's
/// bids are in one partition, in time order), with a SQL job.
fn write_bids(broker: &Broker, topic: &str, bids: &[(i64, i64, i64)], dir: &std::path::Path) {
    let file = dir.join(format!("{topic}.csv"));
    let text: String = bids
        .iter()
        .enumerate()
        .map(|(seq, (a, p, t))| format!("{seq},{a},{p},{t}\n"))
        .collect();
    std::fs::write(&file, text).expect("write the bids");
    let script = format!(
        "CREATE TABLE src (seq BIGINT, auction BIGINT, price BIGINT, ms BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE k (seq BIGINT, auction BIGINT, price BIGINT, ms BIGINT)\n\
         WITH ('connector' = 'kafka', 'topic' = '{topic}',\n\
           'properties.bootstrap.servers' = '{}', 'format' = 'csv',\n\
           'key.format' = 'csv', 'key.fields' = 'auction');\n\
         INSERT INTO k SELECT * FROM src;",
        file.display(),
        broker.address
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(ok, "{out}\n{err}");
}

type PerKey = BTreeMap<Option<String>, Vec<Option<String>>>;

/// Where the messages of one key differ between `expected` and `got`, if they do.
fn first_difference(expected: &PerKey, got: &PerKey) -> Option<String> {
    let keys: std::collections::BTreeSet<_> = expected.keys().chain(got.keys()).collect();
    for key in keys {
        let (e, g) = (
            expected.get(key).cloned().unwrap_or_default(),
            got.get(key).cloned().unwrap_or_default(),
        );
        if e == g {
            continue;
        }
        let at = e.iter().zip(&g).take_while(|(a, b)| a == b).count();
        return Some(format!(
            "key {key:?}: {} messages expected, {} got; from message {at}: expected {:?}, got {:?}",
            e.len(),
            g.len(),
            &e[at..(at + 4).min(e.len())],
            &g[at..(at + 4).min(g.len())],
        ));
    }
    None
}

/// The messages of `topic` per key, in order: (key, value) lists.
fn per_key(broker: &Broker, topic: &str) -> BTreeMap<Option<String>, Vec<Option<String>>> {
    let mut keys: BTreeMap<Option<String>, Vec<Option<String>>> = BTreeMap::new();
    for (_, _, key, value) in messages(broker, topic) {
        keys.entry(key).or_default().push(value);
    }
    keys
}

/// The exactly-once trials of SQL jobs: a window aggregation into a `kafka` table and an
/// updating aggregation into an `upsert-kafka` table, both with
/// `'sink.delivery-guarantee' = 'exactly-once'`, fail at random rows (a registered function
/// fails once at each chosen row) and restart from their checkpoints, at a random
/// parallelism over a random number of partitions. What they committed equals what an
/// uninterrupted run of the same script committed, message for message per key, and that
/// is brute force's result.
#[test]
fn sql_jobs_into_exactly_once_kafka_sinks_survive_randomized_failures() {
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};

    use hummer::sql::Session;
    use hummer::sql::expr::udf::ScalarUdf;
    use hummer::sql::types::SqlType;
    use hummer::sql::value::Value;

    crate::require_heavy!("a Kafka broker (tansu)");
    let dir = tempfile::tempdir().expect("temp dir");
    for seed in common::trial_seeds(2, 7_919) {
        let broker = Broker::start();
        let mut rng = common::Rng::new(seed);
        let events = 1_500 + rng.below(2_500) as usize;
        let auctions = 1 + rng.below(20);
        let partitions = 1 + rng.below(3) as i32;
        let parallelism = 1 + rng.below(3);
        let failures: BTreeSet<i64> = (0..1 + rng.below(3))
            .map(|_| rng.below(events as u64) as i64)
            .collect();
        let label = format!(
            "trial seed {seed}: {events} bids, {auctions} auctions, {partitions} partitions, \
             p={parallelism}, failures at rows {failures:?}"
        );
        eprintln!("{label}");
        let input = format!("bids-{seed}");
        create_topic(&KafkaConfig::new(&broker.address), &input, partitions).expect("topic");
        let bids = bids(events, auctions, seed);
        write_bids(&broker, &input, &bids, dir.path());

        let mut committed = Vec::new();
        for (run, fail_at) in [("calm", BTreeSet::new()), ("failing", failures.clone())] {
            let (windows, counts) = (format!("win-{seed}-{run}"), format!("cnt-{seed}-{run}"));
            let config = KafkaConfig::new(&broker.address);
            create_topic(&config, &windows, 2).expect("topic");
            create_topic(&config, &counts, 2).expect("topic");
            let pending = Arc::new(Mutex::new(BTreeSet::new()));
            let mut session = Session::new();
            let armed = pending.clone();
            session.register_function(
                "fail_once",
                Arc::new(ScalarUdf::new(
                    [SqlType::BigInt],
                    SqlType::BigInt,
                    move |args| {
                        let [Value::BigInt(seq)] = args else {
                            return Err(format!("unexpected {args:?}"));
                        };
                        // Slow enough that checkpoints complete between failures.
                        std::thread::sleep(std::time::Duration::from_micros(40));
                        if armed.lock().expect("the failures").remove(seq) {
                            return Err(format!("the planned failure at row {seq}"));
                        }
                        Ok(Value::BigInt(*seq))
                    },
                )),
            );
            let definitions = format!(
                "SET 'parallelism.default' = '{parallelism}';\n\
                 SET 'execution.checkpointing.interval' = '40 ms';\n\
                 SET 'state.checkpoints.dir' = 'file://{}';\n\
                 SET 'restart-strategy.type' = 'fixed-delay';\n\
                 SET 'restart-strategy.fixed-delay.attempts' = '20';\n\
                 SET 'restart-strategy.fixed-delay.delay' = '10 ms';\n\
                 CREATE TABLE bids (seq BIGINT, auction BIGINT, price BIGINT, ms BIGINT,\n\
                   ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)),\n\
                   WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n\
                 WITH ('connector' = 'kafka', 'topic' = '{input}',\n\
                   'properties.bootstrap.servers' = '{address}', 'format' = 'csv',\n\
                   'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset');\n\
                 CREATE VIEW checked AS SELECT * FROM bids WHERE fail_once(seq) >= 0;\n\
                 CREATE TABLE windows (auction BIGINT, window_start TIMESTAMP(3), n BIGINT,\n\
                   total BIGINT)\n\
                 WITH ('connector' = 'kafka', 'topic' = '{windows}',\n\
                   'properties.bootstrap.servers' = '{address}', 'format' = 'json',\n\
                   'key.format' = 'json', 'key.fields' = 'auction',\n\
                   'sink.delivery-guarantee' = 'exactly-once',\n\
                   'sink.transactional-id-prefix' = '{windows}');\n\
                 CREATE TABLE counts (auction BIGINT, n BIGINT, total BIGINT,\n\
                   PRIMARY KEY (auction) NOT ENFORCED)\n\
                 WITH ('connector' = 'upsert-kafka', 'topic' = '{counts}',\n\
                   'properties.bootstrap.servers' = '{address}', 'key.format' = 'json',\n\
                   'value.format' = 'json', 'sink.delivery-guarantee' = 'exactly-once',\n\
                   'sink.transactional-id-prefix' = '{counts}');\n",
                dir.path()
                    .join(format!("checkpoints-{seed}-{run}"))
                    .display(),
                address = broker.address,
            );
            session
                .run_script(&definitions, |_| {})
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let mut run_script = |script: &str| {
                pending.lock().expect("the failures").clone_from(&fail_at);
                session
                    .run_script(script, |_| {})
                    .unwrap_or_else(|e| panic!("{label} ({run}): {e}"));
                assert!(
                    pending.lock().expect("the failures").is_empty(),
                    "{label} ({run}): every planned failure happened"
                );
            };
            run_script(
                "INSERT INTO windows SELECT auction, window_start, COUNT(*), SUM(price)\n\
                 FROM TABLE(TUMBLE(TABLE checked, DESCRIPTOR(ts), INTERVAL '2' SECOND))\n\
                 GROUP BY auction, window_start, window_end;",
            );
            run_script(
                "INSERT INTO counts SELECT auction, COUNT(*), SUM(price) FROM checked\n\
                 GROUP BY auction;",
            );
            let checkpoints = dir.path().join(format!("checkpoints-{seed}-{run}"));
            // Both jobs checkpointed where the script said.
            let jobs = std::fs::read_dir(&checkpoints).expect("the checkpoint directory");
            let checkpointed = jobs
                .filter_map(|job| std::fs::read_dir(job.ok()?.path()).ok())
                .map(|chk| chk.collect::<Vec<_>>())
                .filter(|chk| {
                    chk.iter()
                        .flatten()
                        .any(|c| c.file_name().to_string_lossy().starts_with("chk-"))
                })
                .count();
            assert_eq!(
                checkpointed, 2,
                "{label} ({run}): both jobs took checkpoints"
            );
            committed.push((per_key(&broker, &windows), per_key(&broker, &counts)));
        }
        let (calm, failing) = (&committed[0], &committed[1]);
        // The calm run is brute force's result.
        let mut windows: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
        let mut totals: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
        for &(auction, price, t) in &bids {
            let w = windows.entry((auction, t / 2_000 * 2_000)).or_default();
            w.0 += 1;
            w.1 += price;
            let c = totals.entry(auction).or_default();
            c.0 += 1;
            c.1 += price;
        }
        let window_count: usize = calm.0.values().map(Vec::len).sum();
        assert_eq!(
            window_count,
            windows.len(),
            "{label}: one message per window"
        );
        for (auction, (n, total)) in &totals {
            let key = Some(format!("{{\"auction\":{auction}}}"));
            let last = calm.1.get(&key).and_then(|values| values.last().cloned());
            assert_eq!(
                last,
                Some(Some(format!(
                    "{{\"auction\":{auction},\"n\":{n},\"total\":{total}}}"
                ))),
                "{label}"
            );
        }
        // What the failing run committed is the calm run's, message for message per key.
        for (what, calm, failing) in [
            ("the window results", &calm.0, &failing.0),
            ("the upserts", &calm.1, &failing.1),
        ] {
            if let Some(difference) = first_difference(calm, failing) {
                panic!("{label}: {what} differ: {difference}");
            }
        }
    }
}
