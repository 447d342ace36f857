//! `hummer sql` with the query forms built on others: `DISTINCT`, `UNION`, `VALUES`, a
//! `SELECT` without `FROM`, `IN`/`EXISTS` subqueries (semi and anti joins), scalar
//! subqueries, a window over a window's `TUMBLE_ROWTIME` and outer interval joins; each result
//! checked against a brute-force evaluation of the same data, at parallelism 1 and 3.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::sql::{apply_debezium, check_csv_query, hummer_sql, timed_csv_table, write_parts};

/// Auctions (id, seller) and bids (auction, price; one with no auction) as csv tables.
struct Data {
    auctions: Vec<(i64, String)>,
    bids: Vec<(Option<i64>, i64)>,
    tables: String,
}

fn data(dir: &Path) -> Data {
    let (a_dir, b_dir) = (dir.join("a"), dir.join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let auctions: Vec<(i64, String)> = (0..30).map(|a| (a, format!("s{}", a % 4))).collect();
    let mut bids: Vec<(Option<i64>, i64)> =
        (0..200).map(|i| (Some(10 + (i * 7) % 35), i)).collect();
    bids.push((None, 500));
    let text: String = auctions.iter().map(|(a, s)| format!("{a},{s}\n")).collect();
    std::fs::write(a_dir.join("part-0.csv"), text).expect("write");
    let cell = |a: &Option<i64>| a.map_or(String::new(), |a| a.to_string());
    write_parts(
        &b_dir,
        bids.iter().map(|(a, p)| format!("{},{p}", cell(a))),
        2,
    );
    let tables = format!(
        "CREATE TABLE auction (id BIGINT, seller STRING)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE bid (auction BIGINT, price BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        a_dir.display(),
        b_dir.display()
    );
    Data {
        auctions,
        bids,
        tables,
    }
}

/// Runs `query` (an `INSERT INTO q_sink ..`) with a debezium-json sink of `columns` at
/// parallelism 1 and 3; checks the table its changelog leaves against `expected`.
fn check(
    dir: &Path,
    tables: &str,
    name: &str,
    columns: &[(&str, &str)],
    query: &str,
    mut expected: Vec<String>,
) {
    expected.sort();
    let declared: Vec<String> = columns.iter().map(|(c, t)| format!("{c} {t}")).collect();
    let names: Vec<&str> = columns.iter().map(|(c, _)| *c).collect();
    for parallelism in [1, 3] {
        let output = dir.join(format!("{name}-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{tables}\
             CREATE TABLE q_sink ({})\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             {query};",
            declared.join(", "),
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "{name} at parallelism {parallelism}: {out}\n{err}");
        assert_eq!(
            apply_debezium(&output, &names),
            expected,
            "{name} at parallelism {parallelism}"
        );
    }
}

#[test]
fn distinct_union_and_values_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = data(dir.path());
    let cell = |a: Option<i64>| a.map_or(String::new(), |a| a.to_string());
    let distinct: BTreeSet<String> = d.bids.iter().map(|(a, _)| cell(*a)).collect();
    check(
        dir.path(),
        &d.tables,
        "distinct",
        &[("auction", "BIGINT")],
        "INSERT INTO q_sink SELECT DISTINCT auction FROM bid",
        distinct.into_iter().collect(),
    );
    // Sellers of auctions with an id under 12, and auctions with a bid under 60: each once.
    let mut union: BTreeSet<String> = d
        .auctions
        .iter()
        .filter(|(a, _)| *a < 12)
        .map(|(_, s)| s.clone())
        .collect();
    union.extend(
        d.bids
            .iter()
            .filter(|(_, p)| *p < 60)
            .map(|(a, _)| format!("a{}", cell(*a))),
    );
    check(
        dir.path(),
        &d.tables,
        "union",
        &[("name", "STRING")],
        "INSERT INTO q_sink SELECT seller FROM auction WHERE id < 12 \
         UNION SELECT CONCAT('a', CAST(auction AS STRING)) FROM bid WHERE price < 60",
        union.into_iter().collect(),
    );
    check(
        dir.path(),
        "",
        "values",
        &[("x", "INT"), ("y", "STRING")],
        "INSERT INTO q_sink SELECT x + 1, y FROM (VALUES (1, 'a'), (2, 'b'), (2, 'b')) AS t(x, y) \
         UNION ALL SELECT 10 * 4, UPPER('c')",
        vec!["2,a".into(), "3,b".into(), "3,b".into(), "40,C".into()],
    );
}

#[test]
fn in_and_exists_subqueries_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = data(dir.path());
    let has_bid = |id: i64, over: &dyn Fn(i64) -> bool| {
        d.bids.iter().any(|(a, p)| *a == Some(id) && over(*p))
    };
    let auctions = |keep: &dyn Fn(i64) -> bool| -> Vec<String> {
        d.auctions
            .iter()
            .filter(|(a, _)| keep(*a))
            .map(|(a, s)| format!("{a},{s}"))
            .collect()
    };
    let columns = [("id", "BIGINT"), ("seller", "STRING")];
    check(
        dir.path(),
        &d.tables,
        "in",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction \
         WHERE id IN (SELECT auction FROM bid WHERE price > 150) AND seller <> 's1'",
        auctions(&|a| has_bid(a, &|p| p > 150) && a % 4 != 1),
    );
    // The subquery's bids include one with no auction: NOT IN is then never true.
    check(
        dir.path(),
        &d.tables,
        "not_in_null",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction \
         WHERE id NOT IN (SELECT auction FROM bid WHERE price > 150)",
        Vec::new(),
    );
    check(
        dir.path(),
        &d.tables,
        "not_in",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction \
         WHERE id NOT IN (SELECT auction FROM bid WHERE price > 150 AND auction IS NOT NULL)",
        auctions(&|a| !has_bid(a, &|p| p > 150)),
    );
    // Correlated NOT IN over a nullable value: per auction, the auctions of the bids whose
    // price has the auction's remainder by 4 (the correlation's key); a NULL among them makes
    // NOT IN never true.
    let not_in_correlated = |a: i64| {
        let values: Vec<Option<i64>> = d
            .bids
            .iter()
            .filter(|(_, p)| p % 4 == a % 4)
            .map(|(x, _)| *x)
            .collect();
        !values.contains(&None) && !values.contains(&Some(a))
    };
    check(
        dir.path(),
        &d.tables,
        "not_in_correlated",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction A \
         WHERE id NOT IN (SELECT auction FROM bid B WHERE MOD(B.price, 4) = MOD(A.id, 4))",
        auctions(&not_in_correlated),
    );
    check(
        dir.path(),
        &d.tables,
        "exists",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction A \
         WHERE EXISTS (SELECT * FROM bid B WHERE B.auction = A.id AND B.price > A.id * 6)",
        auctions(&|a| has_bid(a, &|p| p > a * 6)),
    );
    check(
        dir.path(),
        &d.tables,
        "not_exists",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction A \
         WHERE NOT EXISTS (SELECT auction FROM bid WHERE auction = A.id AND price < 100)",
        auctions(&|a| !has_bid(a, &|p| p < 100)),
    );
    // A grouped subquery, and a scalar one.
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for (a, _) in &d.bids {
        if let Some(a) = a {
            *counts.entry(*a).or_default() += 1;
        }
    }
    check(
        dir.path(),
        &d.tables,
        "in_grouped",
        &columns,
        "INSERT INTO q_sink SELECT id, seller FROM auction WHERE id IN \
         (SELECT auction FROM bid GROUP BY auction HAVING COUNT(*) >= 6)",
        auctions(&|a| counts.get(&a).is_some_and(|n| *n >= 6)),
    );
    let max = d.bids.iter().map(|(_, p)| *p).max().unwrap_or(0);
    let mut top: Vec<String> = d
        .bids
        .iter()
        .filter(|(_, p)| *p > max - 320)
        .map(|(a, p)| format!("{},{p}", a.map_or(String::new(), |a| a.to_string())))
        .collect();
    top.sort();
    check(
        dir.path(),
        &d.tables,
        "scalar",
        &[("auction", "BIGINT"), ("price", "BIGINT")],
        "INSERT INTO q_sink SELECT auction, price FROM bid \
         WHERE price > (SELECT MAX(price) FROM bid) - 320",
        top,
    );
    let high: Vec<String> = d
        .bids
        .iter()
        .filter(|(_, p)| *p > 190)
        .map(|(a, p)| {
            let a = a.map_or(String::new(), |a| a.to_string());
            format!("{a},{},{}", p - max, d.auctions.len())
        })
        .collect();
    check(
        dir.path(),
        &d.tables,
        "scalar_select",
        &[("auction", "BIGINT"), ("below", "BIGINT"), ("n", "BIGINT")],
        "INSERT INTO q_sink SELECT auction, price - (SELECT MAX(price) FROM bid), \
         (SELECT COUNT(*) FROM auction) FROM bid WHERE price > 190",
        high,
    );
    // Correlated: per auction its bids' highest price (NULL without bids) and the count of
    // its bids over 100 (0 without), and the bids that are their auction's highest.
    let bids_of = |a: i64| {
        d.bids
            .iter()
            .filter(move |(b, _)| *b == Some(a))
            .map(|(_, p)| *p)
    };
    check(
        dir.path(),
        &d.tables,
        "correlated_select",
        &[("id", "BIGINT"), ("best", "BIGINT"), ("n", "BIGINT")],
        "INSERT INTO q_sink SELECT id, (SELECT MAX(price) FROM bid B WHERE B.auction = A.id), \
         (SELECT COUNT(*) FROM bid B WHERE A.id = B.auction AND B.price > 100) FROM auction A",
        d.auctions
            .iter()
            .map(|(a, _)| {
                let best = bids_of(*a).max().map_or(String::new(), |p| p.to_string());
                format!("{a},{best},{}", bids_of(*a).filter(|p| *p > 100).count())
            })
            .collect(),
    );
    check(
        dir.path(),
        &d.tables,
        "correlated_where",
        &[("auction", "BIGINT"), ("price", "BIGINT")],
        "INSERT INTO q_sink SELECT auction, price FROM bid X \
         WHERE price = (SELECT MAX(price) FROM bid Y WHERE Y.auction = X.auction)",
        d.bids
            .iter()
            .filter_map(|(a, p)| {
                let a = (*a)?;
                (bids_of(a).max() == Some(*p)).then(|| format!("{a},{p}"))
            })
            .collect(),
    );
}

#[test]
fn not_in_is_null_aware_and_in_lists_of_values_work() {
    let dir = tempfile::tempdir().expect("temp dir");
    let xs = "(VALUES (1), (2), (3), (CAST(NULL AS INT))) AS t(x)";
    for (name, query, expected) in [
        (
            "in",
            format!(
                "SELECT x FROM {xs} WHERE x IN (SELECT y FROM (VALUES (1), (3), (CAST(NULL AS INT))) AS u(y))"
            ),
            vec!["1", "3"],
        ),
        (
            "not_in",
            format!("SELECT x FROM {xs} WHERE x NOT IN (SELECT y FROM (VALUES (1)) AS u(y))"),
            vec!["2", "3"],
        ),
        (
            "not_in_null",
            format!(
                "SELECT x FROM {xs} WHERE x NOT IN (SELECT y FROM (VALUES (1), (CAST(NULL AS INT))) AS u(y))"
            ),
            vec![],
        ),
        (
            "not_in_empty",
            format!(
                "SELECT x FROM {xs} WHERE x NOT IN (SELECT y FROM (VALUES (1)) AS u(y) WHERE y > 5)"
            ),
            vec!["", "1", "2", "3"],
        ),
    ] {
        check(
            dir.path(),
            "",
            name,
            &[("x", "INT")],
            &format!("INSERT INTO q_sink {query}"),
            expected.into_iter().map(String::from).collect(),
        );
    }
}

#[test]
fn a_window_over_a_windows_rowtime_counts_every_row() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bids_dir = dir.path().join("bids");
    std::fs::create_dir(&bids_dir).expect("mkdir");
    let mut per_window: BTreeMap<i64, i64> = BTreeMap::new();
    for part in 0..3i64 {
        let text: String = (0..300i64)
            .map(|i| {
                let ms = i * 97 + part * 13;
                *per_window.entry(ms / 10_000 * 10_000).or_default() += 1;
                format!("{},{ms}\n", (i + part) % 5)
            })
            .collect();
        std::fs::write(bids_dir.join(format!("part-{part}.csv")), text).expect("write");
    }
    let tables = timed_csv_table("bid", "auction BIGINT", &bids_dir);
    let expected = per_window
        .iter()
        .map(|(start, n)| format!("{},{n}", start / 1000))
        .collect();
    let output_query = "INSERT INTO q_sink \
        SELECT EXTRACT(SECOND FROM TUMBLE_START(rt, INTERVAL '10' SECOND)), SUM(c) \
        FROM (SELECT auction, TUMBLE_ROWTIME(ts, INTERVAL '2' SECOND) AS rt, COUNT(*) AS c \
              FROM bid GROUP BY TUMBLE(ts, INTERVAL '2' SECOND), auction) \
        GROUP BY TUMBLE(rt, INTERVAL '10' SECOND)";
    check(
        dir.path(),
        &tables,
        "cascade",
        &[("start", "BIGINT"), ("n", "BIGINT")],
        output_query,
        expected,
    );
}

#[test]
fn outer_interval_joins_pad_rows_without_a_match_in_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    // Auctions (id, ms) every 700 ms; bids (auction, price, ms) in two files, each in time
    // order, some with no auction id.
    let auctions: Vec<(i64, i64)> = (0..60).map(|i| (i % 7, i * 700)).collect();
    let bids: Vec<(Option<i64>, i64, i64)> = (0..150)
        .map(|i| ((i % 11 != 3).then_some((i * 5) % 9), i, i * 290 + i % 2))
        .collect();
    let text: String = auctions
        .iter()
        .map(|(a, ms)| format!("{a},{ms}\n"))
        .collect();
    std::fs::write(a_dir.join("part-0.csv"), text).expect("write");
    for part in 0..2 {
        let text: String = bids
            .iter()
            .filter(|(_, _, ms)| ms % 2 == part)
            .map(|(a, p, ms)| format!("{},{p},{ms}\n", a.map_or(String::new(), |a| a.to_string())))
            .collect();
        std::fs::write(b_dir.join(format!("part-{part}.csv")), text).expect("write");
    }
    let tables = timed_csv_table("auction", "id BIGINT", &a_dir)
        + &timed_csv_table("bid", "auction BIGINT, price BIGINT", &b_dir);
    let matches = |(a, ams): (i64, i64), (b, _, bms): (Option<i64>, i64, i64)| {
        b == Some(a) && (0..=2_000).contains(&(bms - ams))
    };
    let mut left = Vec::new();
    let mut full = Vec::new();
    for &a in &auctions {
        let mut any = false;
        for &b in bids.iter().filter(|&&b| matches(a, b)) {
            any = true;
            left.push(format!("{},{},{}", a.0, a.1, b.1));
        }
        if !any {
            left.push(format!("{},{},", a.0, a.1));
        }
    }
    full.extend(left.iter().cloned());
    for &b in &bids {
        if !auctions.iter().any(|&a| matches(a, b)) {
            full.push(format!(",,{}", b.1));
        }
    }
    let columns = [("id", "BIGINT"), ("ms", "BIGINT"), ("price", "BIGINT")];
    for (join, expected) in [("LEFT", left), ("FULL OUTER", full)] {
        check(
            dir.path(),
            &tables,
            &join.replace(' ', "_"),
            &columns,
            &format!(
                "INSERT INTO q_sink SELECT A.id, A.ms, B.price FROM auction A {join} JOIN bid B \
                 ON A.id = B.auction AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '2' SECOND"
            ),
            expected,
        );
    }
}

#[test]
fn time_functions_compute_as_flinks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let query = "INSERT INTO q_sink SELECT \
        CAST(TO_TIMESTAMP('2021-03-04 05:06:07') AS STRING), \
        CAST(TO_TIMESTAMP('04/03/2021', 'dd/MM/yyyy') AS STRING), \
        TO_TIMESTAMP('not a time') IS NULL, \
        UNIX_TIMESTAMP('1970-01-02 00:00:01'), \
        CAST(TIMESTAMPADD(MONTH, 1, TIMESTAMP '2024-01-31 10:00:00') AS STRING), \
        CAST(TIMESTAMPADD(HOUR, -3, TIMESTAMP '2024-01-01 01:00:00') AS STRING), \
        TIMESTAMPDIFF(DAY, TIMESTAMP '2020-01-01 00:00:00', TIMESTAMP '2020-03-01 12:00:00'), \
        TIMESTAMPDIFF(MONTH, TIMESTAMP '2020-01-31 12:00:00', TIMESTAMP '2020-02-29 11:00:00'), \
        CURRENT_TIMESTAMP IS NOT NULL AND UNIX_TIMESTAMP() > 1700000000";
    check(
        dir.path(),
        "",
        "time",
        &[
            ("a", "STRING"),
            ("b", "STRING"),
            ("c", "BOOLEAN"),
            ("d", "BIGINT"),
            ("e", "STRING"),
            ("f", "STRING"),
            ("g", "INT"),
            ("h", "INT"),
            ("i", "BOOLEAN"),
        ],
        query,
        vec![
            "2021-03-04 05:06:07.000,2021-03-04 00:00:00.000,true,86401,2024-02-29 10:00:00,\
             2023-12-31 22:00:00,60,0,true"
                .into(),
        ],
    );
}

#[test]
fn decimal_sums_and_averages_take_flinks_types() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rows = "(VALUES ('a', CAST('1.00' AS DECIMAL(10, 2))), ('a', CAST('2.00' AS DECIMAL(10, 2))), \
        ('a', CAST('2.50' AS DECIMAL(10, 2))), ('b', CAST('99999999.99' AS DECIMAL(10, 2))), \
        ('b', CAST('99999999.99' AS DECIMAL(10, 2)))) AS t(k, d)";
    check(
        dir.path(),
        "",
        "decimal",
        &[
            ("k", "STRING"),
            ("s", "DECIMAL(38, 2)"),
            ("a", "DECIMAL(38, 6)"),
        ],
        &format!("INSERT INTO q_sink SELECT k, SUM(d), AVG(d) FROM {rows} GROUP BY k"),
        // (JSON numbers: the trailing zeros of 5.50 are not kept by the reader here.)
        vec!["a,5.5,1.833333".into(), "b,199999999.98,99999999.99".into()],
    );
}

#[test]
fn more_scalar_functions_compute_as_flinks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let calls = [
        ("TRUNCATE(42.345, 2)", "DECIMAL(5, 2)", "42.34"),
        ("TRUNCATE(1290, -2)", "INT", "1200"),
        ("ROUND(ATAN2(1, 1) * 4, 6)", "DOUBLE", "3.141593"),
        ("DEGREES(PI())", "DOUBLE", "180.0"),
        ("MD5('abc')", "STRING", "900150983cd24fb0d6963f7d28e17f72"),
        (
            "SHA256('abc')",
            "STRING",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        ("TO_BASE64('hello')", "STRING", "aGVsbG8="),
        ("FROM_BASE64('aGVsbG8=')", "STRING", "hello"),
        ("HEX(255)", "STRING", "FF"),
        ("LOCATE('b', 'abcb', 3)", "INT", "4"),
        ("INSTR('abcb', 'c')", "INT", "3"),
        ("CHR(ASCII('A') + 1)", "STRING", "B"),
        ("1 IS DISTINCT FROM CAST(NULL AS INT)", "BOOLEAN", "true"),
        ("RAND() < 1 AND RAND_INTEGER(5) < 5", "BOOLEAN", "true"),
        ("CHAR_LENGTH(UUID())", "INT", "36"),
        (
            "DATE_FORMAT(TIMESTAMP '2021-03-04 15:06:07', 'EEE, dd MMM yyyy hh:mm a')",
            "STRING",
            "Thu, 04 Mar 2021 03:06 PM",
        ),
        ("CAST('abcdef' AS VARCHAR(3))", "STRING", "abc"),
        (
            "JSON_VALUE('{\"a\": {\"b\": [4, 5]}}', '$.a.b[1]')",
            "STRING",
            "5",
        ),
        (
            "JSON_QUERY('{\"a\": {\"x\": 1}}', '$.a')",
            "STRING",
            "{\"x\":1}",
        ),
        ("JSON_EXISTS('{\"a\": 1}', '$.b')", "BOOLEAN", "false"),
        ("CAST('ab' AS CHAR(4)) || '|'", "STRING", "ab  |"),
    ];
    let columns: Vec<(String, &str)> = calls
        .iter()
        .enumerate()
        .map(|(i, (_, ty, _))| (format!("c{i}"), *ty))
        .collect();
    let columns: Vec<(&str, &str)> = columns.iter().map(|(c, t)| (c.as_str(), *t)).collect();
    let select: Vec<&str> = calls.iter().map(|(call, _, _)| *call).collect();
    let expected: Vec<&str> = calls.iter().map(|(_, _, v)| *v).collect();
    check(
        dir.path(),
        "",
        "functions",
        &columns,
        &format!("INSERT INTO q_sink SELECT {}", select.join(", ")),
        vec![expected.join(",")],
    );
}

#[test]
fn window_joins_pair_each_windows_rows_once_the_window_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let a: Vec<(i64, i64, i64)> = (0..40).map(|i| (i % 3, i, i * 700)).collect();
    let b: Vec<(i64, i64, i64)> = (0..30).map(|i| (i % 4, 100 + i, i * 900 + 50)).collect();
    for (path, rows) in [(&a_dir, &a), (&b_dir, &b)] {
        let text: String = rows
            .iter()
            .map(|(k, v, ms)| format!("{k},{v},{ms}\n"))
            .collect();
        std::fs::write(path.join("part-0.csv"), text).expect("write");
    }
    let tables = timed_csv_table("a", "k BIGINT, v BIGINT", &a_dir)
        + &timed_csv_table("b", "k BIGINT, v BIGINT", &b_dir);
    let window = |ms: i64| ms / 2_000;
    let start = |w: i64| format!("1970-01-01 00:00:{:02}.000", w * 2);
    let mut inner = Vec::new();
    let mut full = Vec::new();
    for &(k, v, ms) in &a {
        let mut matched = false;
        for &(_, w, _) in b.iter().filter(|r| r.0 == k && window(r.2) == window(ms)) {
            matched = true;
            inner.push(format!("{k},{},{v},{w}", start(window(ms))));
        }
        if !matched {
            full.push(format!("{k},{},{v},", start(window(ms))));
        }
    }
    full.extend(inner.iter().cloned());
    for &(k, w, ms) in &b {
        if !a.iter().any(|r| r.0 == k && window(r.2) == window(ms)) {
            full.push(format!("{k},{},,{w}", start(window(ms))));
        }
    }
    let windowed = |t: &str| {
        format!("(SELECT * FROM TABLE(TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL '2' SECOND)))")
    };
    for (join, expected) in [("", inner), ("FULL OUTER", full)] {
        let query = format!(
            "INSERT INTO q_sink SELECT COALESCE(L.k, R.k), \
               CAST(COALESCE(L.window_start, R.window_start) AS STRING), L.v, R.v \
             FROM {} L {join} JOIN {} R \
             ON L.k = R.k AND L.window_start = R.window_start AND L.window_end = R.window_end",
            windowed("a"),
            windowed("b")
        );
        check_csv_query(
            dir.path(),
            &tables,
            &format!("window_join{}", join.replace(' ', "_")),
            "k BIGINT, ws STRING, v BIGINT, w BIGINT",
            &query,
            expected,
        );
    }
}

/// Keep-first deduplication on processing time is append-only (a csv sink takes it): one row
/// per key, one of that key's rows.
#[test]
fn proctime_keep_first_dedup_is_append_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = data(dir.path());
    for parallelism in [1, 3] {
        let output = dir.path().join(format!("dedup-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{}\
             CREATE TABLE q_sink (auction BIGINT, price BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO q_sink SELECT auction, price FROM (\
               SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY p ASC) AS rn \
               FROM (SELECT *, PROCTIME() AS p FROM bid)) WHERE rn = 1;",
            d.tables,
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "at parallelism {parallelism}: {out}\n{err}");
        let mut seen = BTreeSet::new();
        for file in std::fs::read_dir(&output).expect("sink dir") {
            let text = std::fs::read_to_string(file.expect("entry").path()).expect("part");
            for line in text.lines() {
                let (a, p) = line.split_once(',').expect("two columns");
                let auction = (!a.is_empty()).then(|| a.parse::<i64>().expect("a number"));
                let price: i64 = p.parse().expect("a number");
                assert!(d.bids.contains(&(auction, price)), "{line} is no bid");
                assert!(seen.insert(auction), "{line}: a second row of its auction");
            }
        }
        let auctions: BTreeSet<Option<i64>> = d.bids.iter().map(|(a, _)| *a).collect();
        assert_eq!(seen, auctions, "at parallelism {parallelism}");
    }
}

#[test]
fn dates_compute_and_compare_as_flinks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let calls = [
        ("CAST(DATE '2021-03-04' AS STRING)", "2021-03-04"),
        ("CAST(EXTRACT(DAY FROM DATE '2021-03-04') AS STRING)", "4"),
        (
            "CAST(CAST(TIMESTAMP '2021-03-04 05:06:07' AS DATE) AS STRING)",
            "2021-03-04",
        ),
        (
            "CAST(DATE '2021-03-04' < TIMESTAMP '2021-03-04 00:00:01' AS STRING)",
            "TRUE",
        ),
        (
            "CAST(TIMESTAMP '2021-03-04 05:06:07' > '2021-03-04 05:00:00' AS STRING)",
            "TRUE",
        ),
        (
            "CAST(TIMESTAMPADD(DAY, 1, DATE '2021-02-28') AS STRING)",
            "2021-03-01",
        ),
        ("DATE_FORMAT(DATE '2021-03-04', 'yyyy/MM/dd')", "2021/03/04"),
        (
            "CAST(TO_DATE('04.03.2021', 'dd.MM.yyyy') AS STRING)",
            "2021-03-04",
        ),
        ("CAST(TO_DATE('2021-03-04') AS STRING)", "2021-03-04"),
        ("CAST(CURRENT_DATE > DATE '2020-01-01' AS STRING)", "TRUE"),
    ];
    let columns: Vec<String> = (0..calls.len()).map(|i| format!("c{i}")).collect();
    let columns: Vec<(&str, &str)> = columns.iter().map(|c| (c.as_str(), "STRING")).collect();
    let select: Vec<&str> = calls.iter().map(|(call, _)| *call).collect();
    let expected: Vec<&str> = calls.iter().map(|(_, v)| *v).collect();
    check(
        dir.path(),
        "",
        "dates",
        &columns,
        &format!("INSERT INTO q_sink SELECT {}", select.join(", ")),
        vec![expected.join(",")],
    );
}

#[test]
fn first_last_value_and_listagg_follow_arrival_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rows =
        "(VALUES ('a', 1), ('a', CAST(NULL AS INT)), ('a', 3), ('b', 5), ('a', 4)) AS t(k, v)";
    check(
        dir.path(),
        "",
        "ordered",
        &[
            ("k", "STRING"),
            ("f", "INT"),
            ("l", "INT"),
            ("s", "STRING"),
            ("d", "STRING"),
        ],
        &format!(
            "INSERT INTO q_sink SELECT k, FIRST_VALUE(v), LAST_VALUE(v), \
             LISTAGG(CAST(v AS STRING), '-'), LISTAGG(CAST(v AS STRING)) FROM {rows} GROUP BY k"
        ),
        vec!["a,1,4,1-3-4,1,3,4".into(), "b,5,5,5,5".into()],
    );
}

#[test]
fn grouping_sets_rollup_and_cube_aggregate_each_set() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = data(dir.path());
    // Brute force: per set of (seller, parity) kept, the rows' counts, and GROUPING_ID's bits
    // of the keys left out.
    let count = |seller: bool, parity: bool| -> Vec<String> {
        let mut groups: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (id, s) in &d.auctions {
            let key = (
                if seller { s.clone() } else { String::new() },
                if parity {
                    (id % 2).to_string()
                } else {
                    String::new()
                },
            );
            *groups.entry(key).or_default() += 1;
        }
        groups
            .into_iter()
            .map(|((s, p), n)| {
                let bits = u8::from(!seller) << 1 | u8::from(!parity);
                format!("{s},{p},{n},{bits},{}", u8::from(!parity))
            })
            .collect()
    };
    let columns = [
        ("seller", "STRING"),
        ("parity", "BIGINT"),
        ("n", "BIGINT"),
        ("g", "BIGINT"),
        ("gp", "BIGINT"),
    ];
    let select = "INSERT INTO q_sink SELECT seller, MOD(id, 2), COUNT(*), \
                  GROUPING_ID(seller, MOD(id, 2)), GROUPING(MOD(id, 2)) FROM auction GROUP BY";
    for (name, group_by, sets) in [
        (
            "sets",
            "GROUPING SETS ((seller, MOD(id, 2)), (seller), ())",
            vec![(true, true), (true, false), (false, false)],
        ),
        (
            "rollup",
            "ROLLUP (seller, MOD(id, 2))",
            vec![(true, true), (true, false), (false, false)],
        ),
        (
            "cube",
            "CUBE (seller, MOD(id, 2))",
            vec![(true, true), (true, false), (false, true), (false, false)],
        ),
    ] {
        let expected = sets.iter().flat_map(|(s, p)| count(*s, *p)).collect();
        check(
            dir.path(),
            &d.tables,
            name,
            &columns,
            &format!("{select} {group_by}"),
            expected,
        );
    }
}

/// Variance and standard deviation in the argument's type's arithmetic, as Flink reduces
/// them (integer division for an INT), and NULL for a sample of one.
#[test]
fn variances_and_deviations_reduce_as_flinks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rows = "(VALUES ('a', 1), ('a', 2), ('a', 3), ('a', 4), ('a', 10), ('b', 5)) AS t(k, v)";
    check(
        dir.path(),
        "",
        "spread",
        &[
            ("k", "STRING"),
            ("vp", "INT"),
            ("vs", "INT"),
            ("sp", "INT"),
            ("ss", "INT"),
            ("dvs", "DOUBLE"),
            ("dsp", "DOUBLE"),
        ],
        &format!(
            "INSERT INTO q_sink SELECT k, VAR_POP(v), VAR_SAMP(v), STDDEV_POP(v), STDDEV(v), \
             VARIANCE(CAST(v AS DOUBLE)), STDDEV_POP(CAST(v AS DOUBLE)) FROM {rows} GROUP BY k"
        ),
        vec![
            "a,10,12,3,3,12.5,3.1622776601683795".into(),
            "b,0,,0,,,0.0".into(),
        ],
    );
}

/// INTERSECT and EXCEPT: distinct rows, NULL equal to NULL, as set operations take it.
#[test]
fn intersect_and_except_take_null_as_a_value() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = "SELECT x FROM (VALUES (1), (2), (2), (3), (CAST(NULL AS INT))) AS a(x)";
    let b = "SELECT y FROM (VALUES (2), (3), (4), (CAST(NULL AS INT))) AS b(y)";
    for (op, expected) in [("INTERSECT", vec!["", "2", "3"]), ("EXCEPT", vec!["1"])] {
        check(
            dir.path(),
            "",
            op,
            &[("x", "INT")],
            &format!("INSERT INTO q_sink {a} {op} {b}"),
            expected.into_iter().map(String::from).collect(),
        );
    }
}

/// LAG over each partition's rows in event time: the value so many rows before, NULLs
/// included, the default where there is none (windows named by `WINDOW` too).
#[test]
fn lag_reads_the_rows_before_in_event_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t");
    std::fs::create_dir(&path).expect("mkdir");
    // (k, v, ms), two files, each in time order.
    let rows: Vec<(i64, Option<i64>, i64)> = (0..40)
        .map(|i| (i % 3, (i % 7 != 2).then_some(i * 10), i * 100))
        .collect();
    let cell = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    write_parts(
        &path,
        rows.iter()
            .map(|(k, v, ms)| format!("{k},{},{ms}", cell(*v))),
        2,
    );
    let tables = timed_csv_table("t", "k BIGINT, v BIGINT", &path);
    let mut expected = Vec::new();
    for (i, (k, _, ms)) in rows.iter().enumerate() {
        let before: Vec<Option<i64>> = rows[..i]
            .iter()
            .filter(|r| r.0 == *k)
            .map(|r| r.1)
            .collect();
        let back = |n: usize| before.len().checked_sub(n).map(|j| before[j]);
        expected.push(format!(
            "{k},{ms},{},{},{}",
            cell(back(1).flatten()),
            back(1).map_or("-1".to_string(), cell),
            cell(back(2).flatten()),
        ));
    }
    check_csv_query(
        dir.path(),
        &tables,
        "lag",
        "k BIGINT, ms BIGINT, a BIGINT, b BIGINT, c BIGINT",
        "INSERT INTO q_sink SELECT k, ms, LAG(v) OVER (PARTITION BY k ORDER BY ts), \
         LAG(v, 1, -1) OVER w, LAG(v, 2) OVER w \
         FROM t WINDOW w AS (PARTITION BY k ORDER BY ts)",
        expected,
    );
}

/// Batch mode (`execution.runtime-mode` = `batch`): a statement's result is its final table,
/// as Flink's batch queries give it. An aggregation goes into an append-only csv sink (which
/// refuses its changelog in streaming mode); a bare query prints its rows without the `op`
/// column, sorted on any column by `ORDER BY` with `LIMIT`/`OFFSET`; a global aggregate over
/// no rows gives its one row; an outer join's padded rows that a match replaced are gone.
/// Each checked against a brute-force evaluation, at parallelism 1 and 3.
#[test]
fn batch_mode_gives_final_tables() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("s");
    std::fs::create_dir(&input).expect("mkdir");
    // (k, v): v NULL every 13th row.
    let rows: Vec<(String, Option<i64>)> = (0..400i64)
        .map(|i| {
            (
                format!("k{}", (i * 7) % 9),
                (i % 13 != 0).then_some((i * 31) % 50),
            )
        })
        .collect();
    let cell = |v: &Option<i64>| v.map_or(String::new(), |v| v.to_string());
    write_parts(
        &input,
        rows.iter().map(|(k, v)| format!("{k},{}", cell(v))),
        3,
    );
    let table = common::sql::csv_table("s", "k STRING, v BIGINT", &input);
    let mut groups: BTreeMap<String, (i64, Option<i64>)> = BTreeMap::new();
    for (k, v) in &rows {
        let g = groups.entry(k.clone()).or_insert((0, None));
        g.0 += 1;
        if let Some(v) = v {
            g.1 = Some(g.1.unwrap_or(0) + v);
        }
    }
    let batch = format!("SET 'execution.runtime-mode' = 'batch';\n{table}");
    check_csv_query(
        dir.path(),
        &batch,
        "counts",
        "k STRING, n BIGINT, total BIGINT",
        "INSERT INTO q_sink SELECT k, COUNT(*), SUM(v) FROM s GROUP BY k",
        groups
            .iter()
            .map(|(k, (n, t))| format!("{k},{n},{}", cell(t)))
            .collect(),
    );
    // Left join of every row with the rows whose v is one more: padded where none is.
    let mut joined: Vec<String> = Vec::new();
    for (k, v) in &rows {
        let matches: Vec<&String> = rows
            .iter()
            .filter(|(_, w)| matches!((v, w), (Some(v), Some(w)) if *w == v + 1))
            .map(|(k2, _)| k2)
            .collect();
        if matches.is_empty() {
            joined.push(format!("{k},"));
        }
        joined.extend(matches.iter().map(|k2| format!("{k},{k2}")));
    }
    check_csv_query(
        dir.path(),
        &batch,
        "left-join",
        "k STRING, k2 STRING",
        "INSERT INTO q_sink SELECT a.k, b.k FROM s a LEFT JOIN s b ON b.v = a.v + 1",
        joined,
    );
    // Sorted by count descending then key, the first skipped, two kept.
    let mut by_count: Vec<(&String, i64)> = groups.iter().map(|(k, (n, _))| (k, *n)).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for parallelism in [1, 3] {
        let out = common::sql::ran(&format!(
            "SET 'parallelism.default' = '{parallelism}';\n{batch}\
             SELECT k, COUNT(*) AS n FROM s GROUP BY k ORDER BY n DESC, k LIMIT 2 OFFSET 1;\n\
             SELECT COUNT(*) AS none, SUM(v) AS total FROM s WHERE v > 1000;"
        ));
        let shown: Vec<Vec<String>> = out
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| {
                l.split('|')
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .collect();
        let mut expected: Vec<Vec<String>> = vec![vec!["k".into(), "n".into()]];
        expected.extend(
            by_count[1..3]
                .iter()
                .map(|(k, n)| vec![k.to_string(), n.to_string()]),
        );
        expected.push(vec!["none".into(), "total".into()]);
        expected.push(vec!["0".into(), "NULL".into()]);
        assert_eq!(shown, expected, "parallelism {parallelism}: {out}");
        // An empty grouping set gives its row over no rows too.
        let out = common::sql::ran(&format!(
            "SET 'parallelism.default' = '{parallelism}';\n{batch}\
             SELECT k, COUNT(*) AS n FROM s WHERE v > 1000 GROUP BY GROUPING SETS ((k), ());"
        ));
        assert!(
            out.contains("| NULL | 0 |"),
            "parallelism {parallelism}: {out}"
        );
        assert_eq!(out.matches("| NULL |").count(), 1, "{out}");
    }
}

/// `EXISTS`, `NOT EXISTS` and `NOT IN` correlated on both windows' bounds of two window table
/// functions are window semi and anti joins, as Flink plans them: append-only (so a csv sink
/// takes them), each window's rows sent when it ends. Checked against brute force, with NULL
/// keys, at parallelism 1 and 3.
#[test]
fn window_semi_and_anti_joins_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (l_dir, r_dir) = (dir.path().join("l"), dir.path().join("r"));
    std::fs::create_dir(&l_dir).expect("mkdir");
    std::fs::create_dir(&r_dir).expect("mkdir");
    // (k, ms) in time order; k NULL now and then.
    let left: Vec<(Option<i64>, i64)> = (0..120)
        .map(|i| ((i % 11 != 0).then_some(i % 5), i * 97))
        .collect();
    let right: Vec<(Option<i64>, i64)> = (0..90)
        .map(|i| ((i % 13 != 0).then_some((i * 3) % 7), i * 131))
        .collect();
    let cell = |k: &Option<i64>| k.map_or(String::new(), |k| k.to_string());
    write_parts(
        &l_dir,
        left.iter().map(|(k, ms)| format!("{},{ms}", cell(k))),
        2,
    );
    write_parts(
        &r_dir,
        right.iter().map(|(k, ms)| format!("{},{ms}", cell(k))),
        2,
    );
    let tables =
        timed_csv_table("l", "k BIGINT", &l_dir) + &timed_csv_table("r", "k BIGINT", &r_dir);
    let window = |ms: i64| ms / 1000;
    let in_window = |ms: i64| -> Vec<Option<i64>> {
        right
            .iter()
            .filter(|(_, r)| window(*r) == window(ms))
            .map(|(k, _)| *k)
            .collect()
    };
    let rows = |keep: &dyn Fn(&Option<i64>, i64) -> bool| -> Vec<String> {
        left.iter()
            .filter(|(k, ms)| keep(k, *ms))
            .map(|(k, ms)| format!("{},{ms}", cell(k)))
            .collect()
    };
    let has_match = |k: &Option<i64>, ms: i64| k.is_some() && in_window(ms).contains(k);
    let windowed =
        |t: &str| format!("TABLE(TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL '1' SECOND))");
    let same_window = "L.window_start = R.window_start AND L.window_end = R.window_end";
    let columns = "k BIGINT, ms BIGINT";
    for (name, test, expected) in [
        (
            "exists",
            format!(
                "EXISTS (SELECT * FROM {} R WHERE L.k = R.k AND {same_window})",
                windowed("r")
            ),
            rows(&|k, ms| has_match(k, ms)),
        ),
        (
            "not-exists",
            format!(
                "NOT EXISTS (SELECT * FROM {} R WHERE L.k = R.k AND {same_window})",
                windowed("r")
            ),
            rows(&|k, ms| !has_match(k, ms)),
        ),
        (
            "not-in",
            format!(
                "L.k NOT IN (SELECT k FROM {} R WHERE {same_window})",
                windowed("r")
            ),
            rows(&|k, ms| {
                let values = in_window(ms);
                values.is_empty() || (k.is_some() && !values.contains(&None) && !values.contains(k))
            }),
        ),
    ] {
        check_csv_query(
            dir.path(),
            &tables,
            name,
            columns,
            &format!(
                "INSERT INTO q_sink SELECT k, ms FROM {} L WHERE {test}",
                windowed("l")
            ),
            expected,
        );
    }
    // Not windowed, the outer `L.k` is not the subquery's `k` of the same name.
    let right_keys: Vec<Option<i64>> = right.iter().map(|(k, _)| *k).collect();
    check_csv_query(
        dir.path(),
        &tables,
        "exists-same-names",
        columns,
        "INSERT INTO q_sink SELECT k, ms FROM l L WHERE EXISTS (SELECT * FROM r WHERE r.k = L.k)",
        rows(&|k, _| k.is_some() && right_keys.contains(k)),
    );
}

/// Joins without an equality between their sides (cross and theta joins: `CROSS JOIN`, a
/// comma with a `WHERE` comparison, `ON a.v > b.w`, a `LEFT JOIN` on one) run in one subtask
/// and give every pair the condition keeps, as Flink's; checked against brute force in batch
/// mode at parallelism 1 and 3.
#[test]
fn cross_and_theta_joins_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let a: Vec<(i64, i64)> = (0..30).map(|i| (i, (i * 37) % 50)).collect();
    let b: Vec<i64> = (0..12).map(|i| (i * 11) % 45).collect();
    write_parts(&a_dir, a.iter().map(|(k, v)| format!("{k},{v}")), 2);
    write_parts(&b_dir, b.iter().map(|w| w.to_string()), 2);
    let tables = format!(
        "SET 'execution.runtime-mode' = 'batch';\n{}{}",
        common::sql::csv_table("a", "k BIGINT, v BIGINT", &a_dir),
        common::sql::csv_table("b", "w BIGINT", &b_dir)
    );
    let pairs = |keep: &dyn Fn(i64, i64) -> bool| -> Vec<String> {
        a.iter()
            .flat_map(|&(k, v)| {
                b.iter()
                    .filter(move |&&w| keep(v, w))
                    .map(move |w| format!("{k},{w}"))
            })
            .collect()
    };
    let columns = "k BIGINT, w BIGINT";
    check_csv_query(
        dir.path(),
        &tables,
        "cross",
        columns,
        "INSERT INTO q_sink SELECT k, w FROM a CROSS JOIN b",
        pairs(&|_, _| true),
    );
    check_csv_query(
        dir.path(),
        &tables,
        "comma",
        columns,
        "INSERT INTO q_sink SELECT k, w FROM a, b WHERE a.v < b.w AND a.k > 3",
        pairs(&|v, w| v < w)
            .into_iter()
            .filter(|p| p.split(',').next().and_then(|k| k.parse::<i64>().ok()) > Some(3))
            .collect(),
    );
    check_csv_query(
        dir.path(),
        &tables,
        "theta",
        columns,
        "INSERT INTO q_sink SELECT k, w FROM a JOIN b ON a.v > b.w + 5",
        pairs(&|v, w| v > w + 5),
    );
    let mut left = pairs(&|v, w| v > 2 * w);
    for (k, v) in &a {
        if !b.iter().any(|w| *v > 2 * w) {
            left.push(format!("{k},"));
        }
    }
    check_csv_query(
        dir.path(),
        &tables,
        "left-theta",
        columns,
        "INSERT INTO q_sink SELECT k, w FROM a LEFT JOIN b ON a.v > 2 * b.w",
        left,
    );
}

/// `JOIN .. USING (k)` and `NATURAL JOIN`: the equal columns once, first (the left's value,
/// the right's for a right join, the one not NULL for a full join), then each side's others,
/// as Flink shows them with `SELECT *`; checked against brute force in batch mode at
/// parallelism 1 and 3, with NULL keys.
#[test]
fn using_and_natural_joins_show_their_columns_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let a: Vec<(Option<i64>, i64)> = (0..20)
        .map(|i| ((i % 7 != 0).then_some(i % 6), i))
        .collect();
    let b: Vec<(Option<i64>, i64)> = (0..15)
        .map(|i| ((i % 5 != 0).then_some((i * 2) % 9), 100 + i))
        .collect();
    let cell = |k: &Option<i64>| k.map_or(String::new(), |k| k.to_string());
    write_parts(&a_dir, a.iter().map(|(k, v)| format!("{},{v}", cell(k))), 2);
    write_parts(&b_dir, b.iter().map(|(k, w)| format!("{},{w}", cell(k))), 2);
    let tables = format!(
        "SET 'execution.runtime-mode' = 'batch';\n{}{}",
        common::sql::csv_table("a", "k BIGINT, v BIGINT", &a_dir),
        common::sql::csv_table("b", "k BIGINT, w BIGINT", &b_dir)
    );
    let matches = |k: &Option<i64>, j: &Option<i64>| k.is_some() && k == j;
    let mut inner = Vec::new();
    let mut full = Vec::new();
    for (k, v) in &a {
        let found: Vec<&(Option<i64>, i64)> = b.iter().filter(|(j, _)| matches(k, j)).collect();
        for (_, w) in &found {
            inner.push(format!("{},{v},{w}", cell(k)));
        }
        if found.is_empty() {
            full.push(format!("{},{v},", cell(k)));
        }
    }
    let left: Vec<String> = inner.iter().chain(&full).cloned().collect();
    for (j, w) in &b {
        if !a.iter().any(|(k, _)| matches(k, j)) {
            full.push(format!("{},,{w}", cell(j)));
        }
    }
    full.extend(inner.iter().cloned());
    let columns = "k BIGINT, v BIGINT, w BIGINT";
    // `SELECT *` of a join names the second `k` `k0`, as Calcite does: a view reads it.
    let out = common::sql::ran(&format!(
        "{tables}CREATE VIEW v AS SELECT * FROM a JOIN b ON a.k = b.k;\n\
         SELECT COUNT(*) AS n FROM v WHERE k0 = k;"
    ));
    assert!(out.contains(&format!("| {} |", inner.len())), "{out}");
    for (name, query, expected) in [
        ("using", "SELECT * FROM a JOIN b USING (k)", &inner),
        ("natural", "SELECT * FROM a NATURAL JOIN b", &inner),
        ("left-using", "SELECT * FROM a LEFT JOIN b USING (k)", &left),
        ("full-using", "SELECT * FROM a FULL JOIN b USING (k)", &full),
    ] {
        check_csv_query(
            dir.path(),
            &tables,
            name,
            columns,
            &format!("INSERT INTO q_sink {query}"),
            expected.clone(),
        );
    }
}

/// `INTERSECT ALL` and `EXCEPT ALL` keep duplicates as bags do (`min(l, r)` and
/// `max(l - r, 0)` of each row), NULL equal to NULL; and in batch mode a window table
/// function takes a `TIMESTAMP` column without a watermark as its time. Checked against brute
/// force at parallelism 1 and 3.
#[test]
fn bag_operations_and_batch_windows_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let a: Vec<Option<i64>> = (0..40)
        .map(|i| (i % 9 != 0).then_some((i * 7) % 5))
        .collect();
    let b: Vec<Option<i64>> = (0..25)
        .map(|i| (i % 6 != 0).then_some((i * 3) % 4))
        .collect();
    let cell = |k: &Option<i64>| k.map_or(String::new(), |k| k.to_string());
    // A second column, so that a NULL's line is not empty.
    write_parts(&a_dir, a.iter().map(|x| format!("{},1", cell(x))), 2);
    write_parts(&b_dir, b.iter().map(|x| format!("{},2", cell(x))), 2);
    let tables = format!(
        "SET 'execution.runtime-mode' = 'batch';\n{}{}",
        common::sql::csv_table("a", "x BIGINT, one INT", &a_dir),
        common::sql::csv_table("b", "x BIGINT, two INT", &b_dir)
    );
    let count = |rows: &[Option<i64>], v: &Option<i64>| rows.iter().filter(|r| *r == v).count();
    let mut distinct: Vec<Option<i64>> = a.iter().chain(&b).copied().collect();
    distinct.sort();
    distinct.dedup();
    let bag = |times: &dyn Fn(usize, usize) -> usize| -> Vec<String> {
        distinct
            .iter()
            .flat_map(|v| std::iter::repeat_n(cell(v), times(count(&a, v), count(&b, v))))
            .collect()
    };
    check_csv_query(
        dir.path(),
        &tables,
        "intersect-all",
        "x BIGINT",
        "INSERT INTO q_sink SELECT x FROM a INTERSECT ALL SELECT x FROM b",
        bag(&|l, r| l.min(r)),
    );
    check_csv_query(
        dir.path(),
        &tables,
        "except-all",
        "x BIGINT",
        "INSERT INTO q_sink SELECT x FROM a EXCEPT ALL SELECT x FROM b",
        bag(&|l, r| l.saturating_sub(r)),
    );
    // Batch windows over a plain TIMESTAMP column: events every 700 ms, 2 s windows.
    let e_dir = dir.path().join("e");
    std::fs::create_dir(&e_dir).expect("mkdir");
    let events: Vec<i64> = (0..30).map(|i| i * 700).collect();
    write_parts(
        &e_dir,
        events
            .iter()
            .map(|ms| format!("{}", 1_704_067_200_000 + ms)),
        3,
    );
    let tables = format!(
        "SET 'execution.runtime-mode' = 'batch';\n\
         CREATE TABLE e (ms BIGINT, ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3))) WITH \
         ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        e_dir.display()
    );
    let mut per_window: std::collections::BTreeMap<i64, usize> = Default::default();
    for ms in &events {
        *per_window.entry(ms / 2000).or_default() += 1;
    }
    check_csv_query(
        dir.path(),
        &tables,
        "batch-window",
        "w BIGINT, n BIGINT",
        "INSERT INTO q_sink SELECT (UNIX_TIMESTAMP(CAST(window_start AS STRING)) - 1704067200) \
         / 2, COUNT(*) FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '2' SECOND)) \
         GROUP BY window_start, window_end",
        per_window.iter().map(|(w, n)| format!("{w},{n}")).collect(),
    );
}
