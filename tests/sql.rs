//! `hummer sql` as a user runs it: a script file, `-e`, and statements piped to standard
//! input, with the results and errors the Flink SQL client would print.

mod common;

use common::sql::{
    apply_debezium, check_csv_query, csv_table, hummer_sql, ran, refused, sorted_lines,
    timed_csv_table, write_parts,
};

const DDL: &str = "-- the Nexmark bids, as the harness declares them\n\
    CREATE TABLE bid (\n\
      auction BIGINT,\n\
      bidder BIGINT,\n\
      price BIGINT NOT NULL,\n\
      `dateTime` TIMESTAMP(3),\n\
      WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND\n\
    ) WITH ('connector' = 'filesystem', 'path' = '/tmp/bid', 'format' = 'csv');\n\
    SET 'table.optimizer.distinct-agg.split.enabled' = 'true';\n";

#[test]
fn a_script_file_builds_the_catalog_and_describes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("q.sql");
    std::fs::write(&script, format!("{DDL}SHOW TABLES;\nDESCRIBE bid;\n")).expect("write script");
    let (ok, out, err) = hummer_sql(&["-f", script.to_str().expect("path")], "");
    assert!(ok, "{err}");
    assert!(out.contains("|        bid |"), "{out}");
    assert!(out.contains("|    price |       BIGINT | FALSE |"), "{out}");
    assert!(out.contains("has no effect in Hummer"), "{out}");
}

#[test]
fn an_error_names_the_script_line_and_column_and_fails_the_command() {
    let (ok, out, err) = hummer_sql(&["-e", &format!("{DDL}DESCRIBE bdi;\nSHOW TABLES")], "");
    assert!(!ok);
    assert!(
        err.contains(
            "error: -e: line 10, column 10: table or view 'bdi' not found; did you mean 'bid'?"
        ),
        "{err}"
    );
    assert!(
        !out.contains("table name"),
        "nothing after the error runs: {out}"
    );
}

#[test]
fn a_hop_whose_size_is_not_a_multiple_of_its_slide_is_refused_as_flink_does() {
    refused(
        &format!(
            "{DDL}SELECT window_start, COUNT(*) FROM TABLE(HOP(TABLE bid, \
             DESCRIPTOR(`dateTime`), INTERVAL '20' SECOND, INTERVAL '30' SECOND))\n\
             GROUP BY window_start, window_end"
        ),
        &["an integral multiple of slide, but got size 30000 ms and slide 20000 ms"],
    );
}

#[test]
fn piped_statements_run_one_by_one_and_an_error_does_not_end_the_session() {
    let input = format!("{DDL}DESCRIBE nothing;\nSHOW\n  TABLES;\nQUIT;\nSHOW TABLES;\n");
    let (ok, out, err) = hummer_sql(&[], &input);
    assert!(ok, "{err}");
    assert!(
        out.contains("[ERROR] line 1, column 10: table or view 'nothing' not found"),
        "{out}"
    );
    assert_eq!(
        out.matches("table name").count(),
        1,
        "QUIT ends the session: {out}"
    );
}

#[test]
fn insert_into_a_csv_table_writes_the_filtered_projection_at_any_parallelism() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids");
    std::fs::create_dir(&input).expect("input dir");
    let mut expected = Vec::new();
    for part in 0..2 {
        let mut text = String::new();
        for i in 0..500u64 {
            let (auction, price) = (i % 7 + part * 100, (i * 37) % 1000);
            // Some prices are missing: an empty field of a BIGINT column is NULL.
            let shown = if i % 50 == 0 {
                String::new()
            } else {
                price.to_string()
            };
            text.push_str(&format!("{auction},{shown},channel-{i}\n"));
            if i % 50 != 0 && price > 600 {
                expected.push(format!("{auction},{},\"c,{i}\"", price * 2));
            }
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write input");
    }
    for parallelism in [1, 3] {
        let output = dir.path().join(format!("out-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n\
             CREATE TABLE bid (auction BIGINT, price BIGINT, channel STRING,\n\
               doubled AS price * 2)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE TABLE out (auction BIGINT, doubled BIGINT, label STRING)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO out SELECT auction, doubled, REPLACE(channel, 'channel-', 'c,')\n\
               FROM bid WHERE price > 600;",
            input.display(),
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "{err}");
        assert!(
            out.contains("Complete execution of the SQL update statement"),
            "{out}"
        );
        let got = sorted_lines(&output);
        expected.sort();
        assert_eq!(got, expected, "parallelism {parallelism}");
    }
}

#[test]
fn an_insert_casts_into_the_sink_columns_as_flink_and_refuses_narrowing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "1.25,3,70000\n2.50,7,700\n").expect("write");
    let output = dir.path().join("out");
    let tables = format!(
        "CREATE TABLE src (p DECIMAL(10, 2), i INT, n INT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE out (v DECIMAL(10, 2), w DECIMAL(10, 1), d DOUBLE, b BIGINT, s SMALLINT,\n\
           t TINYINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display(),
        output.display()
    );
    // DECIMAL(21, 4) into DECIMAL(10, 2) and (10, 1), rounded half up; INT into DOUBLE and
    // BIGINT; a narrowing CAST in the query keeps the low bits, as Java's.
    let insert = "INSERT INTO out SELECT p * p, p, i, i, CAST(n AS SMALLINT),\n\
                  CAST(n AS TINYINT) * CAST(2 AS TINYINT) FROM src;";
    let (ok, _, err) = hummer_sql(&["-e", &format!("{tables}{insert}")], "");
    assert!(ok, "{err}");
    assert_eq!(
        sorted_lines(&output),
        vec!["1.56,1.3,3.0,3,4464,-32", "6.25,2.5,7.0,7,700,120"]
    );
    // BIGINT into INT narrows: refused before anything runs, naming the column.
    let narrowing = format!(
        "{tables}CREATE TABLE ints (x INT) WITH ('connector' = 'blackhole');\n\
         INSERT INTO ints SELECT CAST(i AS BIGINT) FROM src;"
    );
    refused(
        &narrowing,
        &["incompatible types for sink column 'x' at position 0 (BIGINT into INT"],
    );
}

#[test]
fn insert_into_a_filesystem_table_adds_to_what_it_holds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let table = format!(
        "SET 'parallelism.default' = '2';\n{}",
        csv_table("o", "id INT, s STRING", &dir.path().join("o"))
    );
    let script = format!(
        "{table}INSERT INTO o VALUES (1, 'a'), (2, 'b');\n\
         INSERT INTO o VALUES (3, 'c');\n\
         INSERT INTO o SELECT id + 10, s FROM o;"
    );
    let (ok, _, err) = hummer_sql(&["-e", &script], "");
    assert!(ok, "{err}");
    assert_eq!(
        sorted_lines(&dir.path().join("o")),
        vec!["1,a", "11,a", "12,b", "13,c", "2,b", "3,c"]
    );
}

#[test]
fn table_options_are_checked_and_applied_as_flinks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "# a comment\n1;a\n2;b\n").expect("write");
    let table = |options: &str| {
        format!(
            "CREATE TABLE t (id INT, s STRING) WITH ('connector' = 'filesystem', 'path' = '{}', \
             'format' = 'csv', 'csv.field-delimiter' = ';'{options});\n",
            input.display()
        )
    };
    // A typo is refused with the option meant; a value Hummer does not implement too.
    refused(
        &format!("{}SELECT * FROM t", table(", 'csv.allow-coments' = 'true'")),
        &[
            "Unsupported options found for 'filesystem' in table 't': 'csv.allow-coments' \
             (did you mean 'csv.allow-comments'?)",
        ],
    );
    refused(
        &format!("{}SELECT * FROM t", table(", 'csv.quote-character' = '*'")),
        &["'csv.quote-character' = '*' in table 't' is not supported"],
    );
    // Comments are skipped where allowed; the print sink prefixes its identifier.
    let out = ran(&format!(
        "SET 'parallelism.default' = '1';\n{}CREATE TABLE p (id INT, s STRING) \
         WITH ('connector' = 'print', 'print-identifier' = 'out');\n\
         INSERT INTO p SELECT * FROM t;",
        table(", 'csv.allow-comments' = 'true'")
    ));
    assert!(
        out.contains("out> +I[1, a]") && out.contains("out> +I[2, b]"),
        "{out}"
    );
    refused(
        &format!("{}SELECT * FROM t", table("")),
        &["cannot hold '# a comment'"],
    );
    // A blank line of a JSON file holds no row; files in subdirectories are read, hidden
    // ones are not.
    let json = dir.path().join("json");
    std::fs::create_dir_all(json.join("sub")).expect("mkdir");
    std::fs::write(json.join("a"), "{\"id\": 1}\n   \n").expect("write");
    std::fs::write(json.join("sub").join("b"), "{\"id\": 2}\n").expect("write");
    std::fs::write(json.join(".hidden"), "{\"id\": 100}\n").expect("write");
    let out = ran(&format!(
        "CREATE TABLE j (id INT) WITH ('connector' = 'filesystem', 'path' = '{}', \
         'format' = 'json');\nSELECT SUM(id) AS s FROM j;",
        json.display()
    ));
    assert!(out.contains("| +U | 3 |"), "{out}");
}

#[test]
fn types_hummer_holds_no_value_of_are_refused_before_running() {
    refused(
        "CREATE TABLE t (id INT, tags ARRAY<STRING>) WITH ('connector' = 'blackhole');",
        &[
            "the column 'tags' of type ARRAY<STRING>",
            "is not supported; the types are BOOLEAN",
        ],
    );
    refused(
        "CREATE TABLE t (id INT, r ROW<at TIME>) WITH ('connector' = 'blackhole');",
        &["the column 'r' of type ROW<`at` TIME(0)> (TIME(0))"],
    );
    refused(
        "SELECT CAST('abc' AS BYTES);",
        &["a cast to the type BYTES"],
    );
    refused("SELECT TIME '13:45:07';", &["a literal of the type TIME"]);
    refused(
        "CREATE TABLE t (id INT) WITH ('connector' = 'blackhole');\n\
         CREATE TABLE u (x INT) WITH ('connector' = 'blackhole') LIKE t;",
        &["CREATE TABLE .. LIKE is not supported"],
    );
}

#[test]
fn a_failed_insert_leaves_no_part_of_its_output() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in");
    std::fs::create_dir(&input).expect("mkdir");
    // One file ends at once; the other fails the job at its last line.
    std::fs::write(input.join("a.csv"), "1,1\n").expect("write");
    let mut long: String = (0..200_000).map(|i| format!("{i},1\n")).collect();
    long.push_str("1,0\n");
    std::fs::write(input.join("b.csv"), long).expect("write");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("part-earlier"), "7\n").expect("write");
    refused(
        &format!(
            "SET 'parallelism.default' = '2';\n\
             CREATE TABLE t (a INT, b INT) WITH ('connector' = 'filesystem', 'path' = '{}', \
             'format' = 'csv');\n\
             CREATE TABLE o (q INT) WITH ('connector' = 'filesystem', 'path' = '{}', \
             'format' = 'csv');\n\
             INSERT INTO o SELECT a / b FROM t;",
            input.display(),
            out.display()
        ),
        &["division by zero"],
    );
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .expect("the output directory")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, vec!["part-earlier"], "only what was there before");
}

#[test]
fn a_csv_field_with_line_breaks_is_written_and_read_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let table = format!(
        "SET 'parallelism.default' = '1';\n{}",
        csv_table("o", "id INT, s STRING", &dir.path().join("o"))
    );
    let out = ran(&format!(
        "{table}INSERT INTO o VALUES (1, CONCAT('a', CHR(10), 'b,\"c\"')), (2, 'd');\n\
         SELECT id, CHAR_LENGTH(s) AS n, POSITION(CHR(10) IN s) AS at FROM o;"
    ));
    assert!(out.contains("| +I |  1 | 7 |  2 |"), "{out}");
    assert!(out.contains("| +I |  2 | 1 |  0 |"), "{out}");
}

#[test]
fn show_functions_lists_the_sessions_and_the_built_in_ones() {
    let out = ran(
        "CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';\n\
                   SHOW FUNCTIONS;",
    );
    for f in ["count_char", "UPPER", "DATE_FORMAT", "REGEXP_EXTRACT"] {
        assert!(out.contains(&format!(" {f} |")), "{f} in {out}");
    }
}

/// As Flink resolves a function name: a temporary system function before the built-in of
/// its name, a (temporary) catalog function after it.
#[test]
fn a_built_in_function_goes_before_a_catalog_function_of_its_name() {
    let out = ran(
        "CREATE TEMPORARY FUNCTION upper AS 'com.github.nexmark.flink.udf.CountChar';\n\
                   CREATE TEMPORARY SYSTEM FUNCTION lower AS \
                   'com.github.nexmark.flink.udf.CountChar';\n\
                   SELECT UPPER('ab') AS u, LOWER('aab', 'a') AS n;",
    );
    assert!(out.contains("| +I | AB | 2 |"), "{out}");
}

/// A random expression is computed once per row: a row whose `RAND()` makes a division by
/// zero fails the job, even inside `AND` (a compiled condition that met it handed the row to
/// the interpreter, which drew another number).
#[test]
fn a_failing_random_expression_fails_the_job() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("d.csv");
    let rows: String = (0..2000).map(|i| format!("{i},{}\n", i % 7)).collect();
    std::fs::write(&input, rows).expect("write");
    refused(
        &format!(
            "SET 'parallelism.default' = '1';\n{}\
             SELECT COUNT(*) AS n FROM src WHERE k >= 0 AND v >= 0 AND \
             1 / CAST(FLOOR(RAND() * 100) AS INT) >= 0;",
            csv_table("src", "k BIGINT, v BIGINT", &input)
        ),
        &["division by zero"],
    );
}

#[test]
fn a_date_moves_by_the_whole_days_of_an_interval() {
    let out = ran("SELECT DATE '2024-02-28' + INTERVAL '2' DAY AS a, \
     DATE '2024-03-01' - INTERVAL '25' HOUR AS b");
    assert!(out.contains("| +I | 2024-03-01 | 2024-02-29 |"), "{out}");
}

/// A script's query on a source that never ends prints its changes as they come (Flink's
/// tableau), instead of nothing until an end that never comes.
#[test]
fn a_scripts_query_that_never_ends_prints_rows_as_they_come() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::cli::BIN)
        .args([
            "sql",
            "-e",
            "CREATE TABLE g (n BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '20', \
             'fields.n.min' = '1', 'fields.n.max' = '9');\n\
             SELECT n FROM g;",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start hummer sql");
    let stdout = child.stdout.take().expect("stdout");
    let (lines_tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut rows = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while rows < 3 && std::time::Instant::now() < deadline {
        if let Ok(line) = lines.recv_timeout(std::time::Duration::from_secs(1)) {
            rows += usize::from(line.starts_with("| +I |"));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(rows >= 3, "{rows} rows printed while the query ran");
}

#[test]
fn week_floors_start_on_sunday_and_a_top_n_takes_a_between_range() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("t.csv");
    std::fs::write(
        &input,
        "1,k,2024-03-05 07:08:09.123\n2,k,2024-03-03 00:00:00.000\n3,k,2024-03-09 23:59:59.999\n\
         4,j,2024-03-10 00:00:00.000\n",
    )
    .expect("write");
    let table = format!(
        "CREATE TABLE t (id INT, k STRING, ts TIMESTAMP(3))\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    let out = ran(&format!(
        "{table}SELECT id, FLOOR(ts TO WEEK) AS f, CEIL(ts TO WEEK) AS c FROM t"
    ));
    for row in [
        "|  1 | 2024-03-03 00:00:00.000 | 2024-03-10 00:00:00.000 |",
        "|  2 | 2024-03-03 00:00:00.000 | 2024-03-03 00:00:00.000 |",
        "|  3 | 2024-03-03 00:00:00.000 | 2024-03-10 00:00:00.000 |",
        "|  4 | 2024-03-10 00:00:00.000 | 2024-03-10 00:00:00.000 |",
    ] {
        assert!(out.contains(row), "{row} in {out}");
    }
    let out = ran(&format!(
        "{table}SELECT id FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY id) \
         AS rn FROM t) WHERE rn BETWEEN 2 AND 3"
    ));
    let ids: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| +I"))
        .map(|l| {
            l.trim_matches(|c| c == '|' || c == ' ')
                .rsplit(' ')
                .next()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(ids, vec!["2", "3"], "{out}");
}

#[test]
fn a_select_prints_its_rows_and_a_bad_line_fails_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("t.csv");
    std::fs::write(&input, "1,a\n2,b\n").expect("write");
    let table = format!(
        "CREATE TABLE t (id INT, name STRING) WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    let out = ran(&format!(
        "{table}SELECT id * 10 AS x, UPPER(name) FROM t WHERE id > 1"
    ));
    assert!(out.contains("| op |  x | EXPR$1 |"), "{out}");
    assert!(out.contains("| +I | 20 |      B |"), "{out}");
    std::fs::write(&input, "1,a\nx,b\n").expect("write");
    let (ok, _, err) = hummer_sql(&["-e", &format!("{table}SELECT * FROM t")], "");
    assert!(!ok);
    assert!(err.contains("the line 'x,b' of table 't'"), "{err}");
    assert!(err.contains("column 'id' (INT) cannot hold 'x'"), "{err}");
    // A failing expression names the row as it reads it: a column it does not read is `_`.
    std::fs::write(&input, "1,a\n2,b\n").expect("write");
    refused(
        &format!("{table}SELECT id / (id - 1) FROM t"),
        &["the row (1, _) in 'id / (id - 1)'", "division by zero"],
    );
    refused(
        &format!("{table}SELECT id FROM t ORDER BY id"),
        &["Sort on a non-time-attribute field is not supported"],
    );
}

#[test]
fn a_nexmark_shaped_script_runs_through_a_view_with_event_time_columns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bid.csv");
    // auction, bidder, price, dateTime in epoch milliseconds, extra.
    std::fs::write(
        &input,
        "1000,1001,73134520,1672531200000,x\n1004,1001,3992,1672531200001,y\n1123,7,50,1672531260500,\n",
    )
    .expect("write");
    let output = dir.path().join("raw");
    let script = format!(
        "SET 'table.local-time-zone' = 'UTC';\n\
         CREATE TABLE bid_csv (auction BIGINT, bidder BIGINT, price BIGINT, dateTime_ms BIGINT, extra STRING,\n\
           `dateTime` AS TO_TIMESTAMP_LTZ(dateTime_ms, 3),\n\
           WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE VIEW bid AS SELECT auction, bidder, price, `dateTime`, extra FROM bid_csv;\n\
         CREATE VIEW q_result AS SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra\n\
           FROM bid WHERE MOD(auction, 1000) <> 123;\n\
         DESCRIBE q_result;\n\
         CREATE TABLE q_sink (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), `dateTime` TIMESTAMP_LTZ(3), extra STRING)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         INSERT INTO q_sink SELECT * FROM q_result;",
        input.display(),
        output.display()
    );
    let out = ran(&script);
    assert!(
        out.contains("|    price |   DECIMAL(23, 3) | TRUE |"),
        "{out}"
    );
    assert!(
        out.contains("| dateTime | TIMESTAMP_LTZ(3) | TRUE |"),
        "{out}"
    );
    let got = sorted_lines(&output);
    assert_eq!(
        got,
        [
            "1000,1001,66406144.160,2023-01-01 00:00:00.000Z,x",
            "1004,1001,3624.736,2023-01-01 00:00:00.001Z,y",
        ]
    );
}

/// Nexmark q14, q21 and q22's functions (DATE_FORMAT, HOUR, CASE, REGEXP_EXTRACT,
/// SPLIT_INDEX, count_char) over bids in several part files, each file in event-time order
/// but the files overlapping in time, at parallelism 1 and 3: every row comes out once, as a
/// brute-force evaluation in Rust computes it, and none is dropped as late.
#[test]
fn nexmark_functions_over_part_files_match_a_brute_force_evaluation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids");
    std::fs::create_dir(&input).expect("mkdir");
    let channels = ["apple", "Google", "baidu", "other"];
    let mut expected = Vec::new();
    for part in 0..4i64 {
        let mut text = String::new();
        for i in 0..300i64 {
            let (auction, price) = (part * 1_000 + i, i * 37 % 1_000);
            // Each file spans the same 20 hours of event time, in order.
            let ms = 1_672_531_200_000 + i * 240_000 + part;
            let channel = channels[(i % 4) as usize];
            let url = if i % 3 == 0 {
                format!("https://h/{part}/d{i}/x?channel_id={}&k=1", i % 7)
            } else {
                format!("https://h/{part}/d{i}")
            };
            let extra = "c".repeat((i % 5) as usize);
            text.push_str(&format!("{auction},{price},{channel},{url},{ms},{extra}\n"));
            let hour = (ms / 3_600_000) % 24;
            let time_type = if (8..=18).contains(&hour) {
                "dayTime"
            } else if hour <= 6 || hour >= 20 {
                "nightTime"
            } else {
                "otherTime"
            };
            let id = match channel.to_lowercase().as_str() {
                "apple" => Some("0".to_string()),
                "google" => Some("1".to_string()),
                "baidu" => Some("3".to_string()),
                _ => (i % 3 == 0).then(|| (i % 7).to_string()),
            };
            let dirs: Vec<&str> = url.split('/').collect();
            let at = |k: usize| dirs.get(k).copied().unwrap_or("");
            let minute = ms / 60_000 % 60;
            expected.push(format!(
                "{auction},{time_type},{},{},{},{}",
                id.unwrap_or_default(),
                at(3),
                extra.len(),
                format_args!("{:02}:{minute:02}", hour)
            ));
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write");
    }
    expected.sort();
    for parallelism in [1, 3] {
        let output = dir.path().join(format!("raw-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n\
             CREATE TEMPORARY TABLE bid (auction BIGINT, price BIGINT, channel STRING, url STRING,\n\
               dateTime_ms BIGINT, extra STRING,\n\
               `dateTime` AS CAST(TO_TIMESTAMP_LTZ(dateTime_ms, 3) AS TIMESTAMP(3)),\n\
               WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '0' SECOND)\n\
             WITH ('connector' = 'filesystem', 'path' = 'file://{}', 'format' = 'csv');\n\
             CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';\n\
             CREATE TEMPORARY TABLE q_sink (auction BIGINT, t STRING, id STRING, dir1 STRING,\n\
               c BIGINT, hm STRING)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO q_sink SELECT auction,\n\
               CASE WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'\n\
                    WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'\n\
                    ELSE 'otherTime' END,\n\
               CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1'\n\
                    WHEN lower(channel) = 'baidu' THEN '3'\n\
                    ELSE REGEXP_EXTRACT(url, '(&|^|\\?)channel_id=([^&]*)', 2) END,\n\
               SPLIT_INDEX(url, '/', 3), count_char(extra, 'c'), DATE_FORMAT(`dateTime`, 'HH:mm')\n\
             FROM bid;",
            input.display(),
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        assert_eq!(sorted_lines(&output), expected, "parallelism {parallelism}");
    }
}

/// A GROUP BY with COUNT(*), COUNT(DISTINCT), FILTER, SUM, MIN, MAX, AVG and HAVING over
/// rows in several files, at parallelism 1 and 3: the changelog it writes, applied, is the
/// brute-force aggregation of the rows; a csv sink refuses the same query before it runs.
#[test]
fn a_group_by_writes_a_changelog_that_applies_to_the_brute_force_result() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids");
    std::fs::create_dir(&input).expect("mkdir");
    let mut rows = Vec::new();
    let mut seed = 7u64;
    for part in 0..3 {
        let mut text = String::new();
        for _ in 0..400 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (channel, bidder, price) = (seed >> 60, (seed >> 40) % 13, (seed >> 20) % 1000);
            text.push_str(&format!("ch{channel},{bidder},{price}\n"));
            rows.push((format!("ch{channel}"), bidder as i64, price as i64));
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write");
    }
    let mut groups: std::collections::BTreeMap<String, Vec<(i64, i64)>> = Default::default();
    for (c, b, p) in &rows {
        groups.entry(c.clone()).or_default().push((*b, *p));
    }
    let mut expected: Vec<String> = groups
        .iter()
        .filter(|(_, v)| v.len() > 20)
        .map(|(c, v)| {
            let mut bidders: Vec<i64> = v.iter().map(|r| r.0).collect();
            bidders.sort_unstable();
            bidders.dedup();
            let cheap = v.iter().filter(|r| r.1 < 100).count();
            let sum: i64 = v.iter().map(|r| r.1).sum();
            let min = v.iter().map(|r| r.1).min().unwrap_or_default();
            let max = v.iter().map(|r| r.1).max().unwrap_or_default();
            let avg = sum / v.len() as i64;
            format!(
                "{c},{},{},{cheap},{sum},{min},{max},{avg}",
                v.len(),
                bidders.len()
            )
        })
        .collect();
    expected.sort();
    let table = |format: &str, path: &std::path::Path| {
        format!(
            "CREATE TABLE q_sink (channel STRING, n BIGINT, bidders BIGINT, cheap BIGINT,\n\
               total BIGINT, lo BIGINT, hi BIGINT, mean BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = '{format}');\n",
            path.display()
        )
    };
    let query = "INSERT INTO q_sink SELECT channel, COUNT(*), COUNT(DISTINCT bidder),\n\
           COUNT(*) FILTER (WHERE price < 100), SUM(price), MIN(price), MAX(price), AVG(price)\n\
         FROM bid GROUP BY channel HAVING COUNT(*) > 20;";
    let source = format!(
        "CREATE TABLE bid (channel STRING, bidder BIGINT, price BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    // Without a mini-batch, with one of 7 records, and with one that holds every update
    // back to the end (then each group's result goes out once, as one insert).
    let batches = [None, None, Some(7), Some(1_000_000)];
    for (run, (parallelism, batch)) in [1, 3, 1, 3].into_iter().zip(batches).enumerate() {
        let output = dir.path().join(format!("raw-{run}"));
        let mini_batch = batch.map_or(String::new(), |size| {
            format!(
                "SET 'table.exec.mini-batch.enabled' = 'true';\n\
                 SET 'table.exec.mini-batch.allow-latency' = '1 h';\n\
                 SET 'table.exec.mini-batch.size' = '{size}';\n"
            )
        });
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{mini_batch}{source}{}{query}",
            table("debezium-json", &output)
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}, {batch:?}: {out}\n{err}");
        let got = apply_debezium(
            &output,
            &[
                "channel", "n", "bidders", "cheap", "total", "lo", "hi", "mean",
            ],
        );
        assert_eq!(
            got, expected,
            "parallelism {parallelism}, mini-batch {batch:?}"
        );
        if batch == Some(1_000_000) {
            let lines: usize = std::fs::read_dir(&output)
                .expect("output")
                .flatten()
                .map(|f| {
                    std::fs::read_to_string(f.path())
                        .unwrap_or_default()
                        .lines()
                        .count()
                })
                .sum();
            assert_eq!(lines, expected.len(), "one insert per group");
        }
    }
    let csv_out = dir.path().join("csv");
    let (ok, _, err) = hummer_sql(
        &["-e", &format!("{source}{}{query}", table("csv", &csv_out))],
        "",
    );
    assert!(!ok);
    assert!(
        err.contains("doesn't support consuming update changes")
            && err.contains("GroupAggregate(groupBy=[channel]"),
        "{err}"
    );
    assert!(!csv_out.exists(), "nothing ran");
    // A column that is neither grouped nor aggregated is named.
    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            &format!("{source}SELECT channel, price FROM bid GROUP BY channel"),
        ],
        "",
    );
    assert!(!ok);
    assert!(
        err.contains("Expression 'price' is not being grouped"),
        "{err}"
    );
}

/// `HH:mm:ss.SSS` of milliseconds since the epoch (the tests' event times are within a day).
fn clock(ms: i64) -> String {
    let ms = ms.rem_euclid(86_400_000);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1_000 % 60,
        ms % 1_000
    )
}

/// Window aggregations over TUMBLE, HOP and CUMULATE (window table functions) and a legacy
/// SESSION group window, on bids in three part files each in event-time order, at
/// parallelism 1 and 3: each window's COUNT and MAX per auction, once (an append-only result
/// a csv sink takes), as brute force computes them; nothing is dropped as late.
#[test]
fn window_aggregations_match_brute_force_windows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids");
    std::fs::create_dir(&input).expect("mkdir");
    let mut bids = Vec::new();
    let mut seed = 11u64;
    for part in 0..3 {
        let mut text = String::new();
        let mut t = 0i64;
        for _ in 0..300 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += ((seed >> 33) % 300) as i64; // in order within the file
            let (auction, price) = ((seed >> 50) % 4, (seed >> 20) % 1000);
            text.push_str(&format!("{auction},{price},{t}\n"));
            bids.push((auction as i64, price as i64, t));
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write");
    }
    let source = format!(
        "CREATE TABLE bid (auction BIGINT, price BIGINT, ms BIGINT,\n\
           ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)),\n\
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    // Each case: the FROM, the GROUP BY, and the windows of a time.
    type Windows = Box<dyn Fn(i64) -> Vec<(i64, i64)>>;
    let cases: Vec<(&str, &str, Windows)> = vec![
        (
            "TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND))",
            "GROUP BY auction, window_start, window_end",
            Box::new(|t| vec![(t / 5_000 * 5_000, t / 5_000 * 5_000 + 5_000)]),
        ),
        (
            "TABLE(HOP(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))",
            "GROUP BY window_start, auction, window_end",
            Box::new(|t| {
                (0..3)
                    .map(|k| {
                        (
                            t / 2_000 * 2_000 - k * 2_000,
                            t / 2_000 * 2_000 - k * 2_000 + 6_000,
                        )
                    })
                    .collect()
            }),
        ),
        (
            "TABLE(CUMULATE(TABLE bid, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))",
            "GROUP BY auction, window_start, window_end",
            Box::new(|t| {
                let start = t / 6_000 * 6_000;
                (1..=3)
                    .map(|k| (start, start + k * 2_000))
                    .filter(|&(_, e)| t < e)
                    .collect()
            }),
        ),
    ];
    for (from, group_by, windows) in &cases {
        let mut expected: std::collections::BTreeMap<(i64, i64, i64), (i64, i64)> =
            Default::default();
        for &(auction, price, t) in &bids {
            for w in windows(t) {
                let e = expected.entry((auction, w.0, w.1)).or_insert((0, 0));
                e.0 += 1;
                e.1 = e.1.max(price);
            }
        }
        let mut expected: Vec<String> = expected
            .iter()
            .map(|((a, s, e), (n, max))| format!("{a},{},{},{n},{max}", clock(*s), clock(*e)))
            .collect();
        expected.sort();
        for parallelism in [1, 3] {
            let output = dir.path().join(format!("raw-{parallelism}-{}", from.len()));
            let script = format!(
                "SET 'parallelism.default' = '{parallelism}';\n{source}\
                 CREATE TABLE q_sink (auction BIGINT, s STRING, e STRING, n BIGINT, hi BIGINT)\n\
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
                 INSERT INTO q_sink SELECT auction, DATE_FORMAT(window_start, 'HH:mm:ss.SSS'),\n\
                   DATE_FORMAT(window_end, 'HH:mm:ss.SSS'), COUNT(*), MAX(price)\n\
                 FROM {from} {group_by};",
                output.display()
            );
            let (ok, out, err) = hummer_sql(&["-e", &script], "");
            assert!(ok, "{from} at parallelism {parallelism}: {out}\n{err}");
            assert_eq!(
                sorted_lines(&output),
                expected,
                "{from} at parallelism {parallelism}"
            );
        }
    }
    // A legacy session window: sessions per auction closed by more than 400 ms without a
    // bid.
    let mut per_auction: std::collections::BTreeMap<i64, Vec<i64>> = Default::default();
    for &(auction, _, t) in &bids {
        per_auction.entry(auction).or_default().push(t);
    }
    let mut expected = Vec::new();
    for (auction, mut times) in per_auction {
        times.sort_unstable();
        let (mut start, mut last, mut n) = (times[0], times[0], 0);
        for t in times {
            // Windows [t, t + gap) that touch merge, as Flink's do.
            if t > last + 400 {
                expected.push(format!(
                    "{auction},{},{},{n}",
                    clock(start),
                    clock(last + 400)
                ));
                (start, n) = (t, 0);
            }
            last = t;
            n += 1;
        }
        expected.push(format!(
            "{auction},{},{},{n}",
            clock(start),
            clock(last + 400)
        ));
    }
    expected.sort();
    let output = dir.path().join("sessions");
    let script = format!(
        "SET 'parallelism.default' = '3';\n{source}\
         CREATE TABLE q_sink (auction BIGINT, s STRING, e STRING, n BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         INSERT INTO q_sink SELECT B.auction,\n\
           DATE_FORMAT(SESSION_START(B.ts, INTERVAL '0.4' SECOND), 'HH:mm:ss.SSS'),\n\
           DATE_FORMAT(SESSION_END(B.ts, INTERVAL '0.4' SECOND), 'HH:mm:ss.SSS'), COUNT(*)\n\
         FROM bid B GROUP BY B.auction, SESSION(B.ts, INTERVAL '0.4' SECOND);",
        output.display()
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(ok, "sessions: {out}\n{err}");
    assert_eq!(sorted_lines(&output), expected, "sessions");
    // The same sessions by the window table function, partitioned by auction, with its
    // arguments by position and by name.
    for (name, function) in [
        (
            "session-tvf",
            "SESSION(TABLE bid PARTITION BY auction, DESCRIPTOR(ts), INTERVAL '0.4' SECOND)",
        ),
        (
            "session-tvf-named",
            "SESSION(DATA => TABLE bid PARTITION BY (auction), TIMECOL => DESCRIPTOR(ts),\n\
               GAP => INTERVAL '0.4' SECOND)",
        ),
    ] {
        let output = dir.path().join(name);
        let script = format!(
            "SET 'parallelism.default' = '3';\n{source}\
             CREATE TABLE q_sink (auction BIGINT, s STRING, e STRING, n BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO q_sink SELECT auction, DATE_FORMAT(window_start, 'HH:mm:ss.SSS'),\n\
               DATE_FORMAT(window_end, 'HH:mm:ss.SSS'), COUNT(*)\n\
             FROM TABLE({function}) GROUP BY auction, window_start, window_end;",
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "{name}: {out}\n{err}");
        assert_eq!(sorted_lines(&output), expected, "{name}");
    }
    let script = format!(
        "{source}CREATE TABLE q_sink (n BIGINT) WITH ('connector' = 'blackhole');\n\
         INSERT INTO q_sink SELECT COUNT(*) FROM TABLE(SESSION(TABLE bid PARTITION BY price,\n\
           DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY auction, window_start, window_end;"
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(
        !ok && err.contains("partitioned by 'price'"),
        "{out}\n{err}"
    );
}

/// Inner joins at parallelism 1 and 3 against brute force: `JOIN .. ON` with a residual
/// condition (append-only, a csv sink takes it), a comma join with its equality in `WHERE`,
/// and a join with an updating side (a GROUP BY) whose changelog, applied, is the join of the
/// final tables. (Joins without an equality: `cross_and_theta_joins_match_brute_force`.)
#[test]
fn inner_joins_match_brute_force_joins() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (auctions_dir, bids_dir) = (dir.path().join("auctions"), dir.path().join("bids"));
    std::fs::create_dir(&auctions_dir).expect("mkdir");
    std::fs::create_dir(&bids_dir).expect("mkdir");
    let auctions: Vec<(i64, i64, i64)> = (0..60).map(|id| (id, id % 7, id % 3)).collect();
    let mut bids = Vec::new();
    let mut seed = 5u64;
    for part in 0..2 {
        let mut text = String::new();
        for _ in 0..500 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (auction, price) = (((seed >> 40) % 70) as i64, ((seed >> 20) % 1000) as i64);
            text.push_str(&format!("{auction},{price}\n"));
            bids.push((auction, price));
        }
        std::fs::write(bids_dir.join(format!("part-{part}.csv")), text).expect("write");
    }
    let text: String = auctions
        .iter()
        .map(|(i, s, c)| format!("{i},{s},{c}\n"))
        .collect();
    std::fs::write(auctions_dir.join("part-0.csv"), text).expect("write");
    let tables = format!(
        "CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE bid (auction BIGINT, price BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        auctions_dir.display(),
        bids_dir.display()
    );
    let mut on_expected: Vec<String> = Vec::new();
    for &(a, price) in &bids {
        for &(id, seller, category) in &auctions {
            if id == a && category == 1 && price > 500 {
                on_expected.push(format!("{id},{seller},{price}"));
            }
        }
    }
    on_expected.sort();
    let mut best: std::collections::BTreeMap<i64, i64> = Default::default();
    for &(a, price) in &bids {
        let e = best.entry(a).or_insert(price);
        *e = (*e).max(price);
    }
    let mut updating_expected: Vec<String> = auctions
        .iter()
        .filter_map(|(id, seller, _)| best.get(id).map(|p| format!("{id},{seller},{p}")))
        .collect();
    updating_expected.sort();
    for parallelism in [1, 3] {
        let (on_out, comma_out, upd_out) = (
            dir.path().join(format!("on-{parallelism}")),
            dir.path().join(format!("comma-{parallelism}")),
            dir.path().join(format!("updating-{parallelism}")),
        );
        let sink = |name: &str, path: &std::path::Path, format: &str| {
            format!(
                "CREATE TABLE {name} (id BIGINT, seller BIGINT, price BIGINT)\n\
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = '{format}');\n",
                path.display()
            )
        };
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{tables}{}{}{}\
             INSERT INTO on_sink SELECT A.id, A.seller, B.price FROM bid AS B\n\
               JOIN auction AS A ON B.auction = A.id AND B.price > 500 WHERE A.category = 1;\n\
             INSERT INTO comma_sink SELECT A.id, A.seller, B.price FROM auction A, bid B\n\
               WHERE A.id = B.auction AND B.price > 500 AND A.category = 1;\n\
             INSERT INTO updating_sink SELECT A.id, A.seller, M.hi FROM auction A\n\
               JOIN (SELECT auction, MAX(price) AS hi FROM bid GROUP BY auction) AS M\n\
               ON A.id = M.auction;",
            sink("on_sink", &on_out, "csv"),
            sink("comma_sink", &comma_out, "csv"),
            sink("updating_sink", &upd_out, "debezium-json"),
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        assert_eq!(sorted_lines(&on_out), on_expected, "ON at {parallelism}");
        assert_eq!(
            sorted_lines(&comma_out),
            on_expected,
            "comma at {parallelism}"
        );
        assert_eq!(
            apply_debezium(&upd_out, &["id", "seller", "price"]),
            updating_expected,
            "updating at {parallelism}"
        );
    }
}

/// Top-N and deduplication with ROW_NUMBER at parallelism 1 and 3: the top 3 bids by price
/// per auction (ties by arrival do not occur: prices are distinct per auction) and the last
/// bid per bidder, as debezium-json changelogs whose applied result is the brute-force
/// ranking; ROW_NUMBER without a limit outside is refused.
#[test]
fn row_number_top_n_and_dedup_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids");
    std::fs::create_dir(&input).expect("mkdir");
    let mut bids = Vec::new();
    for part in 0..2i64 {
        let mut text = String::new();
        for i in 0..400i64 {
            let n = part * 400 + i;
            let (auction, bidder, price, t) = (n % 9, n % 13, (n * 7919) % 100_003, n * 10 + part);
            text.push_str(&format!("{auction},{bidder},{price},{t}\n"));
            bids.push((auction, bidder, price, t));
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write");
    }
    let mut top: Vec<String> = Vec::new();
    for a in 0..9 {
        let mut of: Vec<_> = bids.iter().filter(|b| b.0 == a).collect();
        of.sort_by_key(|b| std::cmp::Reverse(b.2));
        for (rank, b) in of.iter().take(3).enumerate() {
            top.push(format!("{},{},{}", b.0, b.2, rank + 1));
        }
    }
    top.sort();
    let mut last: Vec<String> = (0..13)
        .filter_map(|bidder| {
            let b = bids.iter().filter(|b| b.1 == bidder).max_by_key(|b| b.3)?;
            Some(format!("{},{}", b.1, b.3))
        })
        .collect();
    last.sort();
    let table = format!(
        "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, t BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    for parallelism in [1, 3] {
        let (top_out, last_out) = (
            dir.path().join(format!("top-{parallelism}")),
            dir.path().join(format!("last-{parallelism}")),
        );
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{table}\
             CREATE TABLE top_sink (auction BIGINT, price BIGINT, rn BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             CREATE TABLE last_sink (bidder BIGINT, t BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             INSERT INTO top_sink SELECT auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER\n\
               (PARTITION BY auction ORDER BY price DESC) AS rn FROM bid) WHERE rn <= 3;\n\
             INSERT INTO last_sink SELECT bidder, t FROM (SELECT bidder, t, ROW_NUMBER() OVER\n\
               (PARTITION BY bidder ORDER BY t DESC) AS rk FROM bid) WHERE rk = 1;",
            top_out.display(),
            last_out.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        assert_eq!(apply_debezium(&top_out, &["auction", "price", "rn"]), top);
        assert_eq!(apply_debezium(&last_out, &["bidder", "t"]), last);
    }
    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            &format!(
                "{table}SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction \
                 ORDER BY price) AS rn FROM bid)"
            ),
        ],
        "",
    );
    assert!(!ok);
    assert!(err.contains("without a limit on it outside"), "{err}");
}

/// The `nexmark` connector with upstream's table shape (event_type, then person, auction and
/// bid ROWs, a computed dateTime and a watermark), read through views by field: 2,000 events
/// are 40 persons, 120 auctions and 1,840 bids (the generator's 1:3:46 per 50 events), at
/// parallelism 1 and 3, and every bid falls in some tumbling window of its event time.
#[test]
fn the_nexmark_connector_generates_upstreams_table_read_by_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ddl = format!(
        "CREATE TABLE datagen ({},\n\
          `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime`\n\
            WHEN event_type = 1 THEN auction.`dateTime` ELSE bid.`dateTime` END,\n\
          WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND)\n\
        WITH ('connector' = 'nexmark', 'events.num' = '2000', 'first-event.rate' = '1000');\n\
        CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, `dateTime`\n\
          FROM datagen WHERE event_type = 2;\n",
        common::sql::NEXMARK_COLUMNS
    );
    for parallelism in [1, 3] {
        let (kinds, windows) = (
            dir.path().join(format!("kinds-{parallelism}")),
            dir.path().join(format!("windows-{parallelism}")),
        );
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{ddl}\
             CREATE TABLE kinds (event_type INT, n BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             CREATE TABLE windows (n BIGINT, positive BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO kinds SELECT event_type, COUNT(*) FROM datagen GROUP BY event_type;\n\
             INSERT INTO windows SELECT COUNT(*), COUNT(*) FILTER (WHERE price > 0)\n\
             FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND))\n\
             GROUP BY window_start, window_end;",
            kinds.display(),
            windows.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        assert_eq!(
            apply_debezium(&kinds, &["event_type", "n"]),
            ["0,40", "1,120", "2,1840"],
            "parallelism {parallelism}"
        );
        let (mut bids, mut positive) = (0, 0);
        for line in sorted_lines(&windows) {
            let (n, p) = line.split_once(',').expect("two columns");
            bids += n.parse::<i64>().expect("a count");
            positive += p.parse::<i64>().expect("a count");
        }
        assert_eq!((bids, positive), (1840, 1840), "parallelism {parallelism}");
    }
}

/// WITH (common table expressions), UNION ALL and EXPLAIN: a CTE is a view for what follows
/// it, UNION ALL gives every row of both sides (columns of other types are refused, naming
/// them), and EXPLAIN shows the result's columns, whether it updates and the operator graph
/// without running the job.
#[test]
fn with_union_all_and_explain() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("t.csv");
    let rows: Vec<(i64, String)> = (0..50).map(|i| (i, format!("n{}", i % 7))).collect();
    let text: String = rows.iter().map(|(i, n)| format!("{i},{n}\n")).collect();
    std::fs::write(&input, text).expect("write");
    let output = dir.path().join("out");
    let table = format!(
        "CREATE TABLE t (id BIGINT, name STRING)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    let script = format!(
        "SET 'parallelism.default' = '3';\n{table}\
         CREATE TABLE out (id BIGINT, name STRING)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         INSERT INTO out WITH low AS (SELECT id, name FROM t WHERE id < 10),\n\
           high AS (SELECT id + 1000 AS id, name FROM t WHERE id >= 40)\n\
         SELECT * FROM low UNION ALL SELECT * FROM high UNION ALL SELECT id, name FROM low;",
        output.display()
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(ok, "{out}\n{err}");
    let mut expected: Vec<String> = rows
        .iter()
        .filter(|(i, _)| *i < 10)
        .flat_map(|(i, n)| [format!("{i},{n}"), format!("{i},{n}")])
        .chain(
            rows.iter()
                .filter(|(i, _)| *i >= 40)
                .map(|(i, n)| format!("{},{n}", i + 1000)),
        )
        .collect();
    expected.sort();
    assert_eq!(sorted_lines(&output), expected);
    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            &format!("{table}SELECT id FROM t UNION ALL SELECT name FROM t"),
        ],
        "",
    );
    assert!(!ok);
    assert!(err.contains("is BIGINT on the left and STRING"), "{err}");
    let out = ran(&format!(
        "{table}EXPLAIN SELECT name, COUNT(*) AS n FROM t GROUP BY name"
    ));
    assert!(out.contains("n BIGINT NOT NULL"), "{out}");
    assert!(
        out.contains("updating (+I/-U/+U/-D), by GroupAggregate(groupBy=[name]"),
        "{out}"
    );
    assert!(out.contains("== JobGraph"), "{out}");
    // Streaming by default, as Flink's SQL client; batch when the script says so.
    assert!(out.contains("Streaming mode"), "{out}");
    let out = ran(&format!(
        "SET 'execution.runtime-mode' = 'batch';\n{table}EXPLAIN SELECT id FROM t"
    ));
    assert!(out.contains("Batch mode"), "{out}");
}

/// PROCTIME(): a view's processing-time column windows a bounded input in processing time
/// (Nexmark q12's shape); the windows still open fire at the end of the input, so every row
/// is counted once, at parallelism 1 and 3.
#[test]
fn processing_time_windows_count_every_row_of_a_bounded_input() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids.csv");
    let text: String = (0..600).map(|i| format!("{},{}\n", i % 11, i)).collect();
    std::fs::write(&input, text).expect("write");
    for parallelism in [1, 3] {
        let output = dir.path().join(format!("out-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n\
             CREATE TABLE bid (bidder BIGINT, price BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid;\n\
             CREATE TABLE out (bidder BIGINT, n BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             INSERT INTO out SELECT bidder, COUNT(*) FROM TABLE(\n\
               TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))\n\
             GROUP BY bidder, window_start, window_end;",
            input.display(),
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        let mut per_bidder = [0i64; 11];
        for line in sorted_lines(&output) {
            let (b, n) = line.split_once(',').expect("two columns");
            per_bidder[b.parse::<usize>().expect("a bidder")] += n.parse::<i64>().expect("n");
        }
        let expected: Vec<i64> = (0..11)
            .map(|b| (0..600).filter(|i| i % 11 == b).count() as i64)
            .collect();
        assert_eq!(per_bidder.to_vec(), expected, "parallelism {parallelism}");
    }
}

/// LEFT, RIGHT and FULL OUTER joins at parallelism 1 and 3: rows without a match are padded
/// with NULLs, and their padded form is retracted when a match arrives, so the applied
/// changelog is the brute-force outer join; one side is itself updating (a GROUP BY).
#[test]
fn outer_joins_match_brute_force_outer_joins() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let auctions: Vec<i64> = (0..30).collect();
    let bids: Vec<(i64, i64)> = (0..200).map(|i| (10 + (i * 7) % 35, i)).collect();
    let text: String = auctions.iter().map(|a| format!("{a},s{a}\n")).collect();
    std::fs::write(a_dir.join("part-0.csv"), text).expect("write");
    write_parts(&b_dir, bids.iter().map(|(a, p)| format!("{a},{p}")), 2);
    // Per auction id: the highest bid (the updating side), as the query computes it.
    let mut best: std::collections::BTreeMap<i64, i64> = Default::default();
    for &(a, p) in &bids {
        let e = best.entry(a).or_insert(p);
        *e = (*e).max(p);
    }
    let cell = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    let mut left = Vec::new();
    let mut right = Vec::new();
    for &a in &auctions {
        left.push(format!("{a},{}", cell(best.get(&a).copied())));
    }
    for (&a, &p) in &best {
        let matched = auctions.contains(&a);
        right.push(format!("{},{p}", cell(matched.then_some(a))));
    }
    let mut full: Vec<String> = left.clone();
    full.extend(
        best.iter()
            .filter(|(a, _)| !auctions.contains(a))
            .map(|(_, p)| format!(",{p}")),
    );
    for v in [&mut left, &mut right, &mut full] {
        v.sort();
    }
    let tables = format!(
        "CREATE TABLE auction (id BIGINT, seller STRING)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE bid (auction BIGINT, price BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE VIEW best AS SELECT auction, MAX(price) AS hi FROM bid GROUP BY auction;\n",
        a_dir.display(),
        b_dir.display()
    );
    for parallelism in [1, 3] {
        for (join, expected) in [("LEFT", &left), ("RIGHT", &right), ("FULL OUTER", &full)] {
            let output = dir
                .path()
                .join(format!("{}-{parallelism}", join.replace(' ', "_")));
            let joined = auctions_joined_with_best(&tables, join, parallelism, &output);
            assert_eq!(&joined, expected, "{join} at {parallelism}");
        }
    }
}

/// `auction A {join} JOIN best M ON A.id = M.auction` at `parallelism` into a debezium-json
/// table at `output`: its (id, hi) rows once the changelog is applied.
fn auctions_joined_with_best(
    tables: &str,
    join: &str,
    parallelism: usize,
    output: &std::path::Path,
) -> Vec<String> {
    let script = format!(
        "SET 'parallelism.default' = '{parallelism}';\n{tables}\
         CREATE TABLE out (id BIGINT, hi BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
         INSERT INTO out SELECT A.id, M.hi FROM auction A {join} JOIN best M\n\
           ON A.id = M.auction;",
        output.display()
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(ok, "{join} at {parallelism}: {out}\n{err}");
    apply_debezium(output, &["id", "hi"])
}

/// A bid: auction, price, event time in milliseconds.
type TimedBid = (i64, i64, i64);

/// Bids (auction, price, ms) in three part files, each in event-time order, every time
/// distinct; and auctions (id, ms) in one file; written under `dir`, with their tables (a
/// rowtime `ts` each, watermarks 1 s behind).
fn timed_bids_and_auctions(dir: &std::path::Path) -> (Vec<TimedBid>, Vec<(i64, i64)>, String) {
    let (bids_dir, auctions_dir) = (dir.join("bids"), dir.join("auctions"));
    std::fs::create_dir(&bids_dir).expect("mkdir");
    std::fs::create_dir(&auctions_dir).expect("mkdir");
    let mut bids = Vec::new();
    let mut seed = 23u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 20
    };
    for part in 0..3 {
        let mut text = String::new();
        let mut t = 0i64;
        for _ in 0..250 {
            t += (next() % 120) as i64;
            let ms = t * 3 + part; // distinct over all files
            let (auction, price) = ((next() % 4) as i64, (next() % 1000) as i64);
            text.push_str(&format!("{auction},{price},{ms}\n"));
            bids.push((auction, price, ms));
        }
        std::fs::write(bids_dir.join(format!("part-{part}.csv")), text).expect("write");
    }
    let mut auctions = Vec::new();
    let mut text = String::new();
    let mut t = 0i64;
    while t < 90_000 {
        t += (next() % 2_500) as i64;
        let id = (next() % 4) as i64;
        text.push_str(&format!("{id},{t}\n"));
        auctions.push((id, t));
    }
    std::fs::write(auctions_dir.join("part-0.csv"), text).expect("write");
    let tables = timed_csv_table("bid", "auction BIGINT, price BIGINT", &bids_dir)
        + &timed_csv_table("auction", "id BIGINT", &auctions_dir);
    (bids, auctions, tables)
}

/// Window Top-N (over a window table function's rows, and over a window aggregation's) is
/// append-only (a csv sink takes it) and per window the brute-force top rows with their
/// numbers, at parallelism 1 and 3.
#[test]
fn window_top_n_is_the_brute_force_top_rows_of_each_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, _, tables) = timed_bids_and_auctions(dir.path());
    let mut by_window: std::collections::BTreeMap<i64, Vec<(i64, i64, i64)>> = Default::default();
    for &(auction, price, ms) in &bids {
        by_window
            .entry(ms / 5_000 * 5_000)
            .or_default()
            .push((auction, price, ms));
    }
    let mut expected = Vec::new();
    for (start, rows) in &by_window {
        let mut rows = rows.clone();
        rows.sort_by_key(|&(_, price, ms)| (std::cmp::Reverse(price), ms));
        for (i, (auction, price, ms)) in rows.iter().take(3).enumerate() {
            expected.push(format!(
                "{},{auction},{price},{ms},{}",
                clock(*start),
                i + 1
            ));
        }
    }
    check_csv_query(
        dir.path(),
        &tables,
        "top3",
        "w STRING, auction BIGINT, price BIGINT, ms BIGINT, rn BIGINT",
        "INSERT INTO q_sink SELECT DATE_FORMAT(window_start, 'HH:mm:ss.SSS'), auction, price,\n\
           ms, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end\n\
             ORDER BY price DESC, ms) AS rn\n\
           FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND)))\n\
         WHERE rn <= 3",
        expected,
    );
    let mut expected = Vec::new();
    for (start, rows) in &by_window {
        let mut counts: std::collections::BTreeMap<i64, i64> = Default::default();
        for &(auction, _, _) in rows {
            *counts.entry(auction).or_default() += 1;
        }
        let mut counts: Vec<(i64, i64)> = counts.into_iter().collect();
        counts.sort_by_key(|&(auction, n)| (std::cmp::Reverse(n), auction));
        for (i, (auction, n)) in counts.iter().take(2).enumerate() {
            expected.push(format!("{},{auction},{n},{}", clock(*start), i + 1));
        }
    }
    check_csv_query(
        dir.path(),
        &tables,
        "top-auctions",
        "w STRING, auction BIGINT, n BIGINT, rn BIGINT",
        "INSERT INTO q_sink SELECT DATE_FORMAT(window_start, 'HH:mm:ss.SSS'), auction, n, rn\n\
         FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end\n\
             ORDER BY n DESC, auction) AS rn\n\
           FROM (SELECT auction, window_start, window_end, COUNT(*) AS n\n\
             FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND))\n\
             GROUP BY auction, window_start, window_end))\n\
         WHERE rn <= 2",
        expected,
    );
}

/// Over aggregations with a RANGE frame of an interval and a ROWS frame, per auction in
/// event time: each bid with the SUM, MAX and COUNT of its brute-force frame, at parallelism
/// 1 and 3, although the files interleave in time.
#[test]
fn over_aggregations_match_brute_force_frames() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, _, tables) = timed_bids_and_auctions(dir.path());
    let frame_rows = |in_frame: &dyn Fn(&TimedBid, &TimedBid) -> bool| {
        bids.iter()
            .map(|b| {
                let prices: Vec<i64> = bids
                    .iter()
                    .filter(|o| o.0 == b.0 && o.2 <= b.2 && in_frame(o, b))
                    .map(|o| o.1)
                    .collect();
                format!(
                    "{},{},{},{},{},{}",
                    b.0,
                    b.2,
                    b.1,
                    prices.iter().sum::<i64>(),
                    prices.iter().max().copied().unwrap_or_default(),
                    prices.len()
                )
            })
            .collect::<Vec<_>>()
    };
    let columns = "auction BIGINT, ms BIGINT, price BIGINT, s BIGINT, hi BIGINT, n BIGINT";
    check_csv_query(
        dir.path(),
        &tables,
        "range",
        columns,
        "INSERT INTO q_sink SELECT auction, ms, price, SUM(price) OVER w, MAX(price) OVER w,\n\
           COUNT(*) OVER w FROM bid\n\
         WINDOW w AS (PARTITION BY auction ORDER BY ts\n\
           RANGE BETWEEN INTERVAL '2' SECOND PRECEDING AND CURRENT ROW)",
        frame_rows(&|o, b| o.2 >= b.2 - 2_000),
    );
    check_csv_query(
        dir.path(),
        &tables,
        "rows",
        columns,
        "INSERT INTO q_sink SELECT auction, ms, price,\n\
           SUM(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND\n\
             CURRENT ROW),\n\
           MAX(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND\n\
             CURRENT ROW),\n\
           COUNT(*) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 2 PRECEDING AND\n\
             CURRENT ROW) FROM bid",
        frame_rows(&|o, b| {
            // The bid and the two before it of its auction.
            bids.iter()
                .filter(|x| x.0 == b.0 && x.2 > o.2 && x.2 <= b.2)
                .count()
                <= 2
        }),
    );
}

/// An interval join (bids within 3 s after an auction of theirs) gives the brute-force
/// pairs, append-only; its result keeps the bid's time as its rowtime, so a tumbling window
/// over it counts every pair in the window of its bid, none dropped as late.
#[test]
fn an_interval_join_gives_the_brute_force_pairs_in_event_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, auctions, tables) = timed_bids_and_auctions(dir.path());
    let mut pairs = Vec::new();
    for &(auction, price, ms) in &bids {
        for &(id, at) in &auctions {
            if id == auction && at <= ms && ms <= at + 3_000 {
                pairs.push((auction, price, ms, at));
            }
        }
    }
    let view = "CREATE VIEW joined AS SELECT B.auction, B.price, B.ms, A.ms AS opened, B.ts\n\
                FROM bid B JOIN auction A ON B.auction = A.id\n\
                  AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '3' SECOND;\n";
    let tables = format!("{tables}{view}");
    check_csv_query(
        dir.path(),
        &tables,
        "pairs",
        "auction BIGINT, price BIGINT, ms BIGINT, opened BIGINT",
        "INSERT INTO q_sink SELECT auction, price, ms, opened FROM joined",
        pairs
            .iter()
            .map(|(a, p, m, o)| format!("{a},{p},{m},{o}"))
            .collect(),
    );
    // A LEFT interval join whose ON has a condition besides the key and the times: the
    // condition decides what matches, the result stays append-only (a csv sink takes it), and
    // a bid without a matching auction goes out once, padded.
    let mut padded = Vec::new();
    for &(auction, price, ms) in &bids {
        let matched: Vec<i64> = pairs
            .iter()
            .filter(|p| (p.0, p.1, p.2) == (auction, price, ms) && price % 2 == 0)
            .map(|p| p.3)
            .collect();
        if matched.is_empty() {
            padded.push(format!("{auction},{price},{ms},"));
        }
        padded.extend(
            matched
                .iter()
                .map(|o| format!("{auction},{price},{ms},{o}")),
        );
    }
    check_csv_query(
        dir.path(),
        &tables,
        "left-pairs",
        "auction BIGINT, price BIGINT, ms BIGINT, opened BIGINT",
        "INSERT INTO q_sink SELECT B.auction, B.price, B.ms, A.ms\n\
         FROM bid B LEFT JOIN auction A ON B.auction = A.id\n\
           AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '3' SECOND AND MOD(B.price, 2) = 0",
        padded,
    );
    let mut windows: std::collections::BTreeMap<(i64, i64), i64> = Default::default();
    for &(auction, _, ms, _) in &pairs {
        *windows.entry((auction, ms / 5_000 * 5_000)).or_default() += 1;
    }
    check_csv_query(
        dir.path(),
        &tables,
        "pair-windows",
        "auction BIGINT, w STRING, n BIGINT",
        "INSERT INTO q_sink SELECT auction, DATE_FORMAT(window_start, 'HH:mm:ss.SSS'), COUNT(*)\n\
         FROM TABLE(TUMBLE(TABLE joined, DESCRIPTOR(ts), INTERVAL '5' SECOND))\n\
         GROUP BY auction, window_start, window_end",
        windows
            .iter()
            .map(|((a, w), n)| format!("{a},{},{n}", clock(*w)))
            .collect(),
    );
}

/// A lookup join (`FOR SYSTEM_TIME AS OF` the left side's `PROCTIME()`) with a bounded csv
/// table declared with Flink 1.10's option names, as upstream Nexmark's q13 declares its side
/// input: every bid joined with each side row of its key that the ON's other condition keeps,
/// and with a LEFT JOIN padded where none does; a bad side line fails the job naming it.
#[test]
fn a_lookup_join_reads_the_side_table_whole_and_joins_by_key() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, _, tables) = timed_bids_and_auctions(dir.path());
    let side_file = dir.path().join("side_input.txt");
    // Key 2 has two rows, key 3 none; 'skip' rows are filtered by the ON.
    let side = [
        (0, "zero"),
        (1, "one"),
        (2, "two"),
        (2, "deux"),
        (1, "skip"),
    ];
    let text: String = side.iter().map(|(k, v)| format!("{k},{v}\n")).collect();
    std::fs::write(&side_file, text).expect("write");
    let tables = format!(
        "{tables}CREATE TABLE side_input (key BIGINT, `value` VARCHAR) WITH (\n\
           'connector.type' = 'filesystem',\n\
           'connector.path' = 'file://{}',\n\
           'format.type' = 'csv');\n",
        side_file.display()
    );
    for (join, keep_unmatched) in [("JOIN", false), ("LEFT JOIN", true)] {
        let mut expected = Vec::new();
        for &(auction, price, _) in &bids {
            let key = auction % 4;
            let matches: Vec<&str> = side
                .iter()
                .filter(|(k, v)| *k == key && *v != "skip")
                .map(|(_, v)| *v)
                .collect();
            for v in &matches {
                expected.push(format!("{auction},{price},{v}"));
            }
            if matches.is_empty() && keep_unmatched {
                expected.push(format!("{auction},{price},"));
            }
        }
        check_csv_query(
            dir.path(),
            &tables,
            &format!("lookup-{}", keep_unmatched),
            "auction BIGINT, price BIGINT, v VARCHAR",
            &format!(
                "INSERT INTO q_sink SELECT B.auction, B.price, S.`value`\n\
                 FROM (SELECT *, PROCTIME() AS p_time FROM bid) B\n\
                 {join} side_input FOR SYSTEM_TIME AS OF B.p_time AS S\n\
                 ON MOD(B.auction, 4) = S.key AND S.`value` <> 'skip'"
            ),
            expected,
        );
    }
    std::fs::write(&side_file, "1,a\nnot-a-key,b\n").expect("write");
    let script = format!(
        "{tables}SELECT B.auction, S.`value` FROM (SELECT *, PROCTIME() AS p FROM bid) B \
         JOIN side_input FOR SYSTEM_TIME AS OF B.p AS S ON B.auction = S.key;"
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(!ok, "a bad side line must fail the job: {out}");
    assert!(
        err.contains("not-a-key") && err.contains("side_input"),
        "the error names the line and the table: {err}"
    );
}

/// An event-time temporal join with a versioned table (the auctions, keyed by a primary key,
/// each row a new version of its id): every bid joined with the version of its auction that
/// held at the bid's time, the latest at or before it, at parallelism 1 and 3; a LEFT JOIN
/// pads the bids that came before any version. A versioned view (Flink's deduplication of the
/// auctions keeping each id's last row by event time) gives the same.
#[test]
fn an_event_time_temporal_join_picks_the_version_at_each_rows_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, auctions, plain) = timed_bids_and_auctions(dir.path());
    let tables = plain.replace(
        "CREATE TABLE auction (id BIGINT, ms BIGINT,",
        "CREATE TABLE auction (id BIGINT, ms BIGINT, PRIMARY KEY (id) NOT ENFORCED,",
    );
    let view = format!(
        "{}CREATE VIEW versions AS SELECT id, ms, ts FROM (SELECT *, ROW_NUMBER() OVER \
         (PARTITION BY id ORDER BY ts DESC) AS rn FROM auction0) WHERE rn = 1;\n",
        plain.replace("CREATE TABLE auction ", "CREATE TABLE auction0 ")
    );
    for (join, keep_unmatched, tables, versioned) in [
        ("JOIN", false, &tables, "auction"),
        ("LEFT JOIN", true, &tables, "auction"),
        ("LEFT JOIN", true, &view, "versions"),
    ] {
        let mut expected = Vec::new();
        for &(auction, price, ms) in &bids {
            // The last row of the file among those of the id with the latest time <= ms.
            let version = auctions
                .iter()
                .filter(|(id, at)| *id == auction && *at <= ms)
                .max_by_key(|(_, at)| *at)
                .map(|(_, at)| *at);
            match version {
                Some(at) => expected.push(format!("{auction},{price},{ms},{at}")),
                None if keep_unmatched => expected.push(format!("{auction},{price},{ms},")),
                None => {}
            }
        }
        check_csv_query(
            dir.path(),
            tables,
            &format!("temporal-{keep_unmatched}-{versioned}"),
            "auction BIGINT, price BIGINT, ms BIGINT, opened BIGINT",
            &format!(
                "INSERT INTO q_sink SELECT B.auction, B.price, B.ms, A.ms\n\
                 FROM bid AS B {join} {versioned} FOR SYSTEM_TIME AS OF B.ts AS A\n\
                 ON B.auction = A.id"
            ),
            expected,
        );
    }
    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            &format!(
                "{}SELECT * FROM bid AS B JOIN auction FOR SYSTEM_TIME AS OF B.ts AS A \
                 ON B.auction = A.id;",
                tables.replace(", PRIMARY KEY (id) NOT ENFORCED", "")
            ),
        ],
        "",
    );
    assert!(!ok && err.contains("primary key"), "{err}");
    refused(
        &format!(
            "{plain}CREATE VIEW v AS SELECT * FROM auction;\n\
             SELECT * FROM bid AS B JOIN v FOR SYSTEM_TIME AS OF B.ts AS A ON B.auction = A.id;"
        ),
        &[
            "the view 'v' as a versioned table",
            "last row by event time",
        ],
    );
}

/// A `datagen` table with a sequence column is bounded: its rows, numbered once each over
/// the subtasks, sum as the sequence does at parallelism 1 and 3, and random columns keep to
/// their options; `rows-per-second` throttles them (1,000 rows at 4,000 a second take at
/// least a quarter of a second).
#[test]
fn a_datagen_sequence_is_generated_once_and_throttled() {
    let dir = tempfile::tempdir().expect("temp dir");
    for parallelism in [1, 3] {
        let output = dir.path().join(format!("out-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n\
             CREATE TABLE g (id BIGINT, n INT, s STRING) WITH ('connector' = 'datagen',\n\
               'rows-per-second' = '4000', 'fields.id.kind' = 'sequence',\n\
               'fields.id.start' = '1', 'fields.id.end' = '1000',\n\
               'fields.n.min' = '0', 'fields.n.max' = '9', 'fields.s.length' = '3');\n\
             CREATE TABLE out (total BIGINT, in_range BIGINT, short BIGINT, rows_ BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             INSERT INTO out SELECT SUM(id), COUNT(*) FILTER (WHERE n BETWEEN 0 AND 9),\n\
               COUNT(*) FILTER (WHERE CHAR_LENGTH(s) = 3), COUNT(*) FROM g;",
            output.display()
        );
        let started = std::time::Instant::now();
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        let took = started.elapsed();
        assert!(ok, "at {parallelism}: {out}\n{err}");
        assert_eq!(
            apply_debezium(&output, &["total", "in_range", "short", "rows_"]),
            vec!["500500,1000,1000,1000".to_string()],
            "at {parallelism}"
        );
        assert!(
            took >= std::time::Duration::from_millis(250),
            "1,000 rows at 4,000 a second came in {took:?}"
        );
    }
}

/// The `json` format on the filesystem: JSON lines read by column name (a missing field is
/// NULL, an extra one ignored), filtered and written as JSON lines, equal to the brute-force
/// filter at parallelism 1 and 3; a line that is not JSON fails the job naming it.
#[test]
fn json_lines_are_read_by_name_and_written_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in");
    std::fs::create_dir(&input).expect("mkdir");
    let mut expected = Vec::new();
    for part in 0..3 {
        let mut text = String::new();
        for i in 0..200i64 {
            let id = part * 1000 + i;
            let name = format!("n\"{id}");
            let price = (id * 37) % 101;
            if i % 10 == 3 {
                // No price: NULL, which the filter drops.
                text.push_str(&format!(
                    "{{\"id\": {id}, \"name\": {name:?}, \"x\": [1]}}\n"
                ));
                continue;
            }
            text.push_str(&format!(
                "{{\"price\": {price}, \"id\": {id}, \"name\": {name:?}, \"ok\": true}}\n"
            ));
            if price > 50 {
                expected.push(format!(
                    "{{\"id\":{id},\"name\":{name:?},\"price\":{price},\"ok\":true}}"
                ));
            }
        }
        std::fs::write(input.join(format!("part-{part}.json")), text).expect("write");
    }
    let tables = format!(
        "CREATE TABLE t (id BIGINT, name STRING, price INT, ok BOOLEAN)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'json');\n",
        input.display()
    );
    for parallelism in [1, 3] {
        let output = dir.path().join(format!("out-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{tables}\
             CREATE TABLE out (id BIGINT, name STRING, price INT, ok BOOLEAN)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'json');\n\
             INSERT INTO out SELECT * FROM t WHERE price > 50;",
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "at {parallelism}: {out}\n{err}");
        expected.sort();
        assert_eq!(sorted_lines(&output), expected, "at {parallelism}");
    }
    std::fs::write(
        input.join("part-9.json"),
        "{\"id\": 1}\n{\"id\": \"one\"}\n",
    )
    .expect("write");
    let (ok, _, err) = hummer_sql(&["-e", &format!("{tables}SELECT id FROM t;")], "");
    assert!(!ok, "a bad line fails the job");
    assert!(
        err.contains("part-9.json") && err.contains("'id'") && err.contains("\"one\""),
        "{err}"
    );
}

/// A `debezium-json` table read as the changelog it is (inserts, snapshot reads, updates
/// with their old rows, deletes; in several files, each key's changes in one of them), at
/// parallelism 1 and 3: a filter and projection of it, and a GROUP BY over it, written as
/// changelogs, apply to the brute-force result over the table's final rows; a csv sink
/// refuses it naming the scan; an update without its old row fails naming the file.
#[test]
fn a_debezium_json_table_is_read_as_a_changelog() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("products");
    std::fs::create_dir(&input).expect("mkdir");
    let names = ["anvil", "bolt", "cog", "drill"];
    let mut rng = common::Rng::new(23);
    let mut current: std::collections::BTreeMap<i64, (String, i64)> = Default::default();
    let mut files = vec![String::new(); 3];
    let object = |id: i64, (name, price): &(String, i64)| {
        format!("{{\"id\":{id},\"name\":\"{name}\",\"price\":{price}}}")
    };
    for step in 0..900 {
        let id = rng.below(40) as i64;
        let row = (
            names[rng.below(4) as usize].to_string(),
            rng.below(50) as i64,
        );
        let line = match current.get(&id).cloned() {
            None => {
                let op = if step % 7 == 0 { "r" } else { "c" };
                current.insert(id, row.clone());
                format!(
                    "{{\"before\":null,\"after\":{},\"op\":\"{op}\"}}",
                    object(id, &row)
                )
            }
            Some(old) if rng.below(4) == 0 => {
                current.remove(&id);
                format!(
                    "{{\"before\":{},\"after\":null,\"op\":\"d\"}}",
                    object(id, &old)
                )
            }
            Some(old) => {
                current.insert(id, row.clone());
                let change = format!(
                    "{{\"before\":{},\"after\":{},\"op\":\"u\",\"ts_ms\":{step}}}",
                    object(id, &old),
                    object(id, &row)
                );
                if step % 5 == 0 {
                    format!("{{\"schema\":{{}},\"payload\":{change}}}")
                } else {
                    change
                }
            }
        };
        files[(id % 3) as usize].push_str(&line);
        files[(id % 3) as usize].push('\n');
    }
    for (i, text) in files.iter().enumerate() {
        std::fs::write(input.join(format!("part-{i}.json")), text).expect("write");
    }
    let mut filtered: Vec<String> = current
        .iter()
        .filter(|(_, (_, price))| *price > 20)
        .map(|(id, (name, price))| format!("{id},{name},{}", price * 2))
        .collect();
    filtered.sort();
    let mut groups: std::collections::BTreeMap<&str, (i64, i64)> = Default::default();
    for (name, price) in current.values() {
        let g = groups.entry(name).or_default();
        g.0 += 1;
        g.1 += price;
    }
    let grouped: Vec<String> = groups
        .iter()
        .map(|(name, (n, total))| format!("{name},{n},{total}"))
        .collect();
    let source = format!(
        "CREATE TABLE products (id BIGINT, name STRING, price BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n",
        input.display()
    );
    for parallelism in [1, 3] {
        let (out1, out2) = (
            dir.path().join(format!("filtered-{parallelism}")),
            dir.path().join(format!("grouped-{parallelism}")),
        );
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{source}\
             CREATE TABLE filtered (id BIGINT, name STRING, doubled BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             CREATE TABLE grouped (name STRING, n BIGINT, total BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             INSERT INTO filtered SELECT id, name, price * 2 FROM products WHERE price > 20;\n\
             INSERT INTO grouped SELECT name, COUNT(*), SUM(price) FROM products GROUP BY name;",
            out1.display(),
            out2.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        assert_eq!(
            apply_debezium(&out1, &["id", "name", "doubled"]),
            filtered,
            "parallelism {parallelism}"
        );
        assert_eq!(
            apply_debezium(&out2, &["name", "n", "total"]),
            grouped,
            "parallelism {parallelism}"
        );
    }
    let csv_out = dir.path().join("csv");
    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            &format!(
                "{source}CREATE TABLE c (id BIGINT, name STRING, price BIGINT)\n\
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
                 INSERT INTO c SELECT * FROM products;",
                csv_out.display()
            ),
        ],
        "",
    );
    assert!(!ok, "a csv sink refuses a changelog");
    assert!(
        err.contains("doesn't support consuming update changes")
            && err
                .contains("TableSourceScan(table=[[default_catalog, default_database, products]]"),
        "{err}"
    );
    std::fs::write(
        input.join("part-9.json"),
        "{\"before\":null,\"after\":{\"id\":99,\"name\":\"x\",\"price\":1},\"op\":\"u\"}\n",
    )
    .expect("write");
    let (ok, _, err) = hummer_sql(&["-e", &format!("{source}SELECT id FROM products;")], "");
    assert!(!ok, "an update without its old row fails the job");
    assert!(
        err.contains("part-9.json") && err.contains("'before'"),
        "{err}"
    );
}

/// `ORDER BY .. LIMIT .. OFFSET` over an append-only and over an updating result, `LIMIT`
/// alone and `ORDER BY rowtime` alone, on random rows in three in-order files, at
/// parallelism 1 and 3: the Top-N changelogs apply to brute force's rows, the limit keeps
/// that many input rows, the temporal sort writes every row in time order; a sort on
/// another column without a limit is refused with Flink's error.
#[test]
fn order_by_and_limit_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("rows");
    std::fs::create_dir(&input).expect("mkdir");
    let mut rng = common::Rng::new(41);
    let mut rows = Vec::new();
    for part in 0..3 {
        let mut text = String::new();
        let mut t = 0i64;
        for i in 0..200i64 {
            t += rng.below(200) as i64;
            let (id, k, v) = (part * 1000 + i, rng.below(6) as i64, rng.below(50) as i64);
            text.push_str(&format!("{id},{k},{v},{t}\n"));
            rows.push((id, k, v, t));
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write");
    }
    let source = format!(
        "CREATE TABLE t (id BIGINT, k BIGINT, v BIGINT, ms BIGINT,\n\
           ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)),\n\
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    let sink = |name: &str, columns: &str, format: &str, path: &std::path::Path| {
        format!(
            "CREATE TABLE {name} ({columns})\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = '{format}');\n",
            path.display()
        )
    };
    // The top 5 after the first 2 by v descending, then id.
    let mut by_v = rows.clone();
    by_v.sort_by_key(|&(id, _, v, _)| (std::cmp::Reverse(v), id));
    let mut top: Vec<String> = by_v[2..7]
        .iter()
        .map(|(id, _, v, _)| format!("{id},{v}"))
        .collect();
    top.sort();
    // The 3 keys with most rows (ties by key), from an updating GROUP BY.
    let mut counts: std::collections::BTreeMap<i64, i64> = Default::default();
    for &(_, k, _, _) in &rows {
        *counts.entry(k).or_default() += 1;
    }
    let mut by_count: Vec<(i64, i64)> = counts.into_iter().collect();
    by_count.sort_by_key(|&(k, n)| (std::cmp::Reverse(n), k));
    let mut top_keys: Vec<String> = by_count[..3]
        .iter()
        .map(|(k, n)| format!("{k},{n}"))
        .collect();
    top_keys.sort();
    // Every row by time, ties by id descending.
    let mut by_time = rows.clone();
    by_time.sort_by_key(|&(id, _, _, t)| (t, std::cmp::Reverse(id)));
    let in_time_order: Vec<String> = by_time.iter().map(|(id, ..)| id.to_string()).collect();
    let all: std::collections::BTreeSet<String> = rows
        .iter()
        .map(|(id, k, v, _)| format!("{id},{k},{v}"))
        .collect();
    for parallelism in [1, 3] {
        let path = |name: &str| dir.path().join(format!("{name}-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{source}{}{}{}{}\
             INSERT INTO top SELECT id, v FROM t ORDER BY v DESC, id LIMIT 5 OFFSET 2;\n\
             INSERT INTO top_keys SELECT k, COUNT(*) AS n FROM t GROUP BY k\n\
               ORDER BY n DESC, k FETCH FIRST 3 ROWS ONLY;\n\
             INSERT INTO some SELECT id, k, v FROM t LIMIT 7;\n\
             INSERT INTO timed SELECT id FROM t ORDER BY ts, id DESC;",
            sink("top", "id BIGINT, v BIGINT", "debezium-json", &path("top")),
            sink(
                "top_keys",
                "k BIGINT, n BIGINT",
                "debezium-json",
                &path("top_keys")
            ),
            sink(
                "some",
                "id BIGINT, k BIGINT, v BIGINT",
                "csv",
                &path("some")
            ),
            sink("timed", "id BIGINT", "csv", &path("timed")),
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "parallelism {parallelism}: {out}\n{err}");
        assert_eq!(
            apply_debezium(&path("top"), &["id", "v"]),
            top,
            "p={parallelism}"
        );
        assert_eq!(
            apply_debezium(&path("top_keys"), &["k", "n"]),
            top_keys,
            "p={parallelism}"
        );
        let some = sorted_lines(&path("some"));
        assert_eq!(some.len(), 7, "p={parallelism}: {some:?}");
        assert!(
            some.iter().all(|r| all.contains(r)),
            "p={parallelism}: {some:?}"
        );
        // One subtask sorts: its part file holds every row, in time order.
        let files: Vec<String> = std::fs::read_dir(path("timed"))
            .expect("the sink's directory")
            .map(|f| std::fs::read_to_string(f.expect("entry").path()).expect("part file"))
            .filter(|text| !text.is_empty())
            .collect();
        assert_eq!(files.len(), 1, "p={parallelism}");
        let timed: Vec<String> = files[0].lines().map(str::to_string).collect();
        assert_eq!(timed, in_time_order, "p={parallelism}");
    }
    refused(
        &format!("{source}SELECT v FROM t ORDER BY v;"),
        &["Sort on a non-time-attribute field", "line 5, column 26"],
    );
}

/// A SQL job restored from a checkpoint of another plan is refused before it runs, naming
/// the operators whose state does not fit; restored from its own plan's checkpoint (at
/// another parallelism) it runs and adds nothing the checkpoint had already counted.
#[test]
fn a_restore_checks_the_plan_that_took_the_checkpoint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids.csv");
    let text: String = (0..3_000)
        .map(|i| format!("{},{}\n", i % 7, i % 101))
        .collect();
    std::fs::write(&input, text).expect("write");
    let checkpoints = dir.path().join("checkpoints");
    let script = |query: &str, restore: bool, parallelism: usize, out: &str| {
        format!(
            "SET 'parallelism.default' = '{parallelism}';\n\
             SET 'execution.checkpointing.interval' = '20 ms';\n\
             SET 'state.checkpoints.dir' = '{}';\n{}\
             CREATE TABLE bid (auction BIGINT, price BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE TABLE out (auction BIGINT, x BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             INSERT INTO out {query};",
            checkpoints.display(),
            if restore {
                format!(
                    "SET 'execution.savepoint.path' = '{}';\n",
                    newest_job_dir(&checkpoints).display()
                )
            } else {
                String::new()
            },
            input.display(),
            dir.path().join(out).display()
        )
    };
    let sum = "SELECT auction, SUM(price) FROM bid GROUP BY auction";
    let (ok, out, err) = hummer_sql(&["-e", &script(sum, false, 2, "first")], "");
    assert!(ok, "{out}\n{err}");
    let max = "SELECT auction, MAX(price) FROM bid GROUP BY auction";
    let (ok, _, err) = hummer_sql(&["-e", &script(max, true, 2, "other")], "");
    assert!(!ok, "another plan's checkpoint is refused");
    assert!(
        err.contains("does not match this job") && err.contains("GroupAggregate"),
        "{err}"
    );
    assert!(!dir.path().join("other").exists(), "nothing ran");
    let first = apply_debezium(&dir.path().join("first"), &["auction", "x"]);
    let (ok, out, err) = hummer_sql(&["-e", &script(sum, true, 3, "first")], "");
    assert!(ok, "its own plan's checkpoint restores: {out}\n{err}");
    // The checkpoint was taken at the end of the input: nothing is added twice.
    assert_eq!(
        apply_debezium(&dir.path().join("first"), &["auction", "x"]),
        first
    );
    let mut sums = [0i64; 7];
    for i in 0..3_000 {
        sums[i % 7] += (i % 101) as i64;
    }
    let expected: Vec<String> = sums
        .iter()
        .enumerate()
        .map(|(a, s)| format!("{a},{s}"))
        .collect();
    assert_eq!(first, expected);
}

/// The directory of the newest job under a checkpoint directory.
fn newest_job_dir(checkpoints: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(checkpoints)
        .expect("the checkpoint directory")
        .flatten()
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .expect("a job's checkpoints")
        .path()
}

/// A statement set runs its INSERTs as one job, in both of Flink's spellings (`EXECUTE
/// STATEMENT SET BEGIN .. END;` and `BEGIN STATEMENT SET; .. END;`), each table getting what
/// its INSERT alone would write; a query inside a set is refused, and an INSERT's error names
/// its line before anything runs.
#[test]
fn a_statement_set_runs_its_inserts_as_one_job() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bids.csv");
    let text: String = (0..500)
        .map(|i| format!("{},{}\n", i % 9, (i * 37) % 100))
        .collect();
    std::fs::write(&input, text).expect("write");
    let mut filtered: Vec<String> = (0..500)
        .filter(|i| (i * 37) % 100 > 50)
        .map(|i| format!("{},{}", i % 9, (i * 37) % 100))
        .collect();
    filtered.sort();
    let counts: Vec<String> = (0..9)
        .map(|a| format!("{a},{}", (0..500).filter(|i| i % 9 == a).count()))
        .collect();
    for (form, end) in [
        ("EXECUTE STATEMENT SET\nBEGIN\n", "END;"),
        ("BEGIN STATEMENT SET;\n", "END;"),
    ] {
        let (a, b) = (
            dir.path().join(format!("a-{}", form.len())),
            dir.path().join(format!("b-{}", form.len())),
        );
        let script = format!(
            "SET 'parallelism.default' = '2';\n\
             CREATE TABLE bid (auction BIGINT, price BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE TABLE a (auction BIGINT, price BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE TABLE b (auction BIGINT, n BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
             {form}\
             INSERT INTO a SELECT auction, price FROM bid WHERE price > 50;\n\
             INSERT INTO b SELECT auction, COUNT(*) FROM bid GROUP BY auction;\n\
             {end}",
            input.display(),
            a.display(),
            b.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "{form}: {out}\n{err}");
        assert_eq!(
            out.matches("Complete execution of the SQL update statement.")
                .count(),
            1,
            "{form}: one job: {out}"
        );
        assert_eq!(sorted_lines(&a), filtered, "{form}");
        assert_eq!(apply_debezium(&b, &["auction", "n"]), counts, "{form}");
    }
    refused("BEGIN STATEMENT SET;", &["the statement set has no END"]);
    refused(
        "BEGIN STATEMENT SET;\nSELECT 1;\nEND;",
        &["a query in a statement set"],
    );
    let (ok, _, err) = hummer_sql(
        &[
            "-e",
            "BEGIN STATEMENT SET;\nINSERT INTO nowhere SELECT 1;\nEND;",
        ],
        "",
    );
    assert!(!ok);
    assert!(err.contains("line 2") && err.contains("nowhere"), "{err}");
}

/// Outer joins whose ON has a condition besides the equality (`AND price > lo`), over an
/// append-only side with many rows per key and over an updating side (a GROUP BY), at
/// parallelism 1 and 3: the changelog applies to brute force's outer join, in which a row is
/// padded exactly when no row of the other side meets the whole condition.
#[test]
fn outer_joins_with_a_non_equi_condition_match_brute_force() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    let mut rng = common::Rng::new(77);
    let auctions: Vec<(i64, i64)> = (0..25).map(|id| (id, rng.below(100) as i64)).collect();
    let bids: Vec<(i64, i64)> = (0..300)
        .map(|_| (rng.below(30) as i64, rng.below(120) as i64))
        .collect();
    let text: String = auctions
        .iter()
        .map(|(a, lo)| format!("{a},{lo}\n"))
        .collect();
    std::fs::write(a_dir.join("part-0.csv"), text).expect("write");
    write_parts(&b_dir, bids.iter().map(|(a, p)| format!("{a},{p}")), 2);
    // Brute force: `rights` are the other side's (key, value) rows.
    let outer = |rights: &[(i64, i64)], full: bool| -> Vec<String> {
        let mut rows = Vec::new();
        for &(id, lo) in &auctions {
            let matched: Vec<i64> = rights
                .iter()
                .filter(|&&(k, v)| k == id && v > lo)
                .map(|&(_, v)| v)
                .collect();
            if matched.is_empty() {
                rows.push(format!("{id},"));
            }
            rows.extend(matched.iter().map(|v| format!("{id},{v}")));
        }
        if full {
            for &(k, v) in rights {
                if !auctions.iter().any(|&(id, lo)| id == k && v > lo) {
                    rows.push(format!(",{v}"));
                }
            }
        }
        rows.sort();
        rows
    };
    let mut best: std::collections::BTreeMap<i64, i64> = Default::default();
    for &(a, p) in &bids {
        let e = best.entry(a).or_insert(p);
        *e = (*e).max(p);
    }
    let best: Vec<(i64, i64)> = best.into_iter().collect();
    let tables = format!(
        "CREATE TABLE auction (id BIGINT, lo BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE bid (auction BIGINT, price BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE VIEW best AS SELECT auction, MAX(price) AS price FROM bid GROUP BY auction;\n",
        a_dir.display(),
        b_dir.display()
    );
    for parallelism in [1, 3] {
        for (join, other, expected) in [
            ("LEFT", "bid", outer(&bids, false)),
            ("FULL OUTER", "bid", outer(&bids, true)),
            ("LEFT", "best", outer(&best, false)),
            ("FULL OUTER", "best", outer(&best, true)),
        ] {
            let label = format!("{join} JOIN {other} at {parallelism}");
            let output = dir
                .path()
                .join(format!("{}-{other}-{parallelism}", join.replace(' ', "_")));
            let script = format!(
                "SET 'parallelism.default' = '{parallelism}';\n{tables}\
                 CREATE TABLE out (id BIGINT, price BIGINT)\n\
                 WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'debezium-json');\n\
                 INSERT INTO out SELECT A.id, B.price FROM auction A {join} JOIN {other} B\n\
                   ON A.id = B.auction AND B.price > A.lo;",
                output.display()
            );
            let (ok, out, err) = hummer_sql(&["-e", &script], "");
            assert!(ok, "{label}: {out}\n{err}");
            assert_eq!(
                apply_debezium(&output, &["id", "price"]),
                expected,
                "{label}"
            );
        }
    }
}

/// Nexmark q5's shape: each window's auctions with the most bids, where the counts per
/// auction and window are both joined and aggregated again. The table is read once and the
/// counts computed once (sub-plan reuse, as Flink's planner does), and the result is the
/// brute-force one at parallelism 1 and 3.
#[test]
fn a_table_and_an_aggregation_named_twice_are_read_and_computed_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, _, tables) = timed_bids_and_auctions(dir.path());
    let mut counts: std::collections::BTreeMap<(i64, i64), i64> = Default::default();
    for &(auction, _, ms) in &bids {
        *counts.entry((ms / 5_000 * 5_000, auction)).or_default() += 1;
    }
    let mut most: std::collections::BTreeMap<i64, i64> = Default::default();
    for (&(start, _), &n) in &counts {
        let m = most.entry(start).or_default();
        *m = (*m).max(n);
    }
    let expected = counts
        .iter()
        .filter(|&(&(start, _), &n)| n >= most[&start])
        .map(|(&(start, auction), n)| format!("{},{auction},{n}", clock(start)))
        .collect();
    let counts = "SELECT auction, COUNT(*) AS n, window_start AS s, window_end AS e\n\
         FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND))\n\
         GROUP BY auction, window_start, window_end";
    let query = format!(
        "INSERT INTO q_sink SELECT DATE_FORMAT(A.s, 'HH:mm:ss.SSS'), A.auction, A.n\n\
         FROM ({counts}) AS A JOIN (SELECT MAX(C.n) AS m, C.s, C.e FROM ({counts}) AS C\n\
           GROUP BY C.s, C.e) AS M\n\
         ON A.s = M.s AND A.e = M.e AND A.n >= M.m"
    );
    let columns = "w STRING, auction BIGINT, n BIGINT";
    check_csv_query(dir.path(), &tables, "most-bids", columns, &query, expected);
    // Flink's options turn reuse off: then each is read and computed twice.
    for (reuse, times) in [("true", 1), ("false", 2)] {
        let script = format!(
            "SET 'table.optimizer.reuse-sub-plan-enabled' = '{reuse}';\n{tables}\
             CREATE TABLE q_sink ({columns}) WITH ('connector' = 'blackhole');\n\
             EXPLAIN {query};"
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "{out}\n{err}");
        let jobs = out
            .split("== JobGraph")
            .nth(1)
            .and_then(|g| g.split("== ExecutionGraph").next())
            .unwrap_or_else(|| panic!("no job graph in {out}"));
        assert_eq!(jobs.matches("CSV files: bid").count(), times, "{jobs}");
        assert_eq!(
            jobs.matches("WindowAggregate(groupBy=[auction").count(),
            times,
            "{jobs}"
        );
    }
}

/// `NULL = NULL` is not true: rows whose join key is `NULL` match nothing, in inner and outer
/// joins (a preserved side's such rows go out padded) and in interval joins.
#[test]
fn null_join_keys_match_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a_dir, b_dir) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a_dir).expect("mkdir");
    std::fs::create_dir(&b_dir).expect("mkdir");
    // Auctions 1, 2 and two without an id; bids on 1, 3 and two on no auction.
    std::fs::write(a_dir.join("part-0.csv"), "1,1000\n2,1001\n,1002\n,1003\n").expect("write");
    std::fs::write(
        b_dir.join("part-0.csv"),
        "1,10,1000\n1,12,1001\n3,5,1002\n,7,1003\n,9,1004\n",
    )
    .expect("write");
    let tables = timed_csv_table("auction", "id BIGINT", &a_dir)
        + &timed_csv_table("bid", "auction BIGINT, price BIGINT", &b_dir)
        + "CREATE VIEW best AS SELECT auction, MAX(price) AS hi FROM bid GROUP BY auction;\n";
    let cases: [(&str, &[&str]); 4] = [
        ("", &["1,12"]),
        ("LEFT", &[",", ",", "1,12", "2,"]),
        ("RIGHT", &[",5", ",9", "1,12"]),
        ("FULL OUTER", &[",", ",", ",5", ",9", "1,12", "2,"]),
    ];
    for parallelism in [1, 3] {
        for (join, expected) in cases {
            let output = dir
                .path()
                .join(format!("null-{}-{parallelism}", join.replace(' ', "_")));
            let joined = auctions_joined_with_best(&tables, join, parallelism, &output);
            assert_eq!(joined, expected.to_vec(), "{join} JOIN at {parallelism}");
        }
        // An interval join: the bids within a second after their auction.
        check_csv_query(
            dir.path(),
            &tables,
            &format!("null-interval-{parallelism}"),
            "id BIGINT, price BIGINT",
            "INSERT INTO q_sink SELECT A.id, B.price FROM auction A, bid B\n\
             WHERE A.id = B.auction AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '1' SECOND",
            vec!["1,10".into(), "1,12".into()],
        );
    }
}

/// A window aggregation over a subquery or a view of a window table function groups each
/// window's rows, as over the function itself.
#[test]
fn a_window_aggregation_through_a_subquery_or_view_counts_per_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (bids, _, tables) = timed_bids_and_auctions(dir.path());
    let mut per_window: std::collections::BTreeMap<(i64, i64), i64> = Default::default();
    for &(auction, _, ms) in &bids {
        *per_window.entry((ms / 5_000 * 5_000, auction)).or_default() += 1;
    }
    let expected: Vec<String> = per_window
        .iter()
        .map(|(&(start, auction), n)| format!("{},{auction},{n}", clock(start)))
        .collect();
    let tables = format!(
        "{tables}CREATE VIEW windowed AS SELECT auction, window_start, window_end\n\
           FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND));\n"
    );
    for (name, from) in [
        (
            "through-subquery",
            "(SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND)))",
        ),
        ("through-view", "windowed"),
    ] {
        check_csv_query(
            dir.path(),
            &tables,
            name,
            "w STRING, auction BIGINT, n BIGINT",
            &format!(
                "INSERT INTO q_sink SELECT DATE_FORMAT(window_start, 'HH:mm:ss.SSS'), auction,\n\
                   COUNT(*) FROM {from} GROUP BY auction, window_start, window_end"
            ),
            expected.clone(),
        );
    }
}

/// Flink's string and math built-ins beyond Nexmark's, bound and run end to end.
#[test]
fn more_built_in_functions_run_as_flinks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("people");
    std::fs::create_dir(&input).expect("mkdir");
    std::fs::write(input.join("part-0.csv"), "hELLO wORLD,7,,1672628645\n").expect("write");
    let tables = format!(
        "CREATE TABLE people (name STRING, n INT, missing BIGINT, seconds BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        input.display()
    );
    check_csv_query(
        dir.path(),
        &tables,
        "functions",
        "a STRING, b STRING, c STRING, d STRING, e INT, f BIGINT, g STRING, h STRING, i STRING",
        "INSERT INTO q_sink SELECT INITCAP(name), LPAD(LEFT(name, 5), 7, '*'),\n\
           RIGHT(RTRIM(name || '  '), 5), REGEXP_REPLACE(name, '[lL]+', '_'),\n\
           GREATEST(n, 3, 11), IFNULL(missing, -1), FROM_UNIXTIME(seconds),\n\
           REVERSE(REPEAT('ab', 2)), SUBSTRING(name, -20, 3)\n\
         FROM people",
        vec!["Hello World,**hELLO,wORLD,hE_O wOR_D,11,-1,2023-01-02 03:04:05,baba,".into()],
    );
}

/// `restart-strategy.type = exponential-delay`: a job that fails on every attempt restarts
/// after backoffs that grow by the multiplier (100, 200, 400 ms), and fails for good once
/// the attempts before a reset are used up, naming the limit and the last failure.
#[test]
fn exponential_delay_restarts_back_off_and_end() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("bad.csv");
    std::fs::write(&input, "a,1\nb,x\n").expect("write");
    let script = format!(
        "SET 'execution.checkpointing.interval' = '1 s';\n\
         SET 'restart-strategy.type' = 'exponential-delay';\n\
         SET 'restart-strategy.exponential-delay.initial-backoff' = '100 ms';\n\
         SET 'restart-strategy.exponential-delay.backoff-multiplier' = '2';\n\
         SET 'restart-strategy.exponential-delay.attempts-before-reset-backoff' = '3';\n\
         {}CREATE TABLE o (k STRING, v INT) WITH ('connector' = 'blackhole');\n\
         INSERT INTO o SELECT k, CAST(v AS INT) FROM s;",
        csv_table("s", "k STRING, v STRING", &input)
    );
    let (ok, out, err) = hummer_sql(&["-e", &script], "");
    assert!(!ok, "{out}");
    let delays: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split("restarting in ").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(delays, ["100ms", "200ms", "400ms"], "{err}");
    assert!(err.contains("3 restart attempts"), "{err}");
    assert!(err.contains("cannot cast 'x' to INT"), "{err}");
}

/// Keep-last deduplication (`ROW_NUMBER() OVER (PARTITION BY k ORDER BY time DESC)` with
/// `rn = 1`) keeps, of a key's rows of one time, the later one, as Flink's deduplication does:
/// by event time, by event time per window, and by processing time (whose rows mostly share
/// a millisecond). Checked against the last row in file order among each key's latest, in
/// batch mode (the final table), at parallelism 1 and 3.
#[test]
fn keep_last_deduplication_keeps_the_later_of_tied_rows() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("ev.csv");
    let rows: Vec<(i64, i64, i64)> = (0..60).map(|i| (i % 5, i, (i * 7) % 4)).collect();
    let text: String = rows
        .iter()
        .map(|(k, v, s)| format!("{k},{v},2024-01-01 00:00:0{s}\n"))
        .collect();
    std::fs::write(&input, text).expect("write");
    let latest = |k: i64| {
        let max = rows.iter().filter(|r| r.0 == k).map(|r| r.2).max();
        rows.iter()
            .filter(|r| r.0 == k && Some(r.2) == max)
            .map(|r| r.1)
            .next_back()
    };
    let last = |k: i64| rows.iter().filter(|r| r.0 == k).map(|r| r.1).next_back();
    let table = |columns: &str| {
        format!(
            "CREATE TABLE ev (k BIGINT, v BIGINT, ts TIMESTAMP(3), {columns}) WITH \
             ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
            input.display()
        )
    };
    let cells = |out: &str| -> Vec<String> {
        let mut lines: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with("| ") && !l.contains(" k "))
            .map(|l| {
                l.split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        lines.sort();
        lines
    };
    let expected = |pick: &dyn Fn(i64) -> Option<i64>| -> Vec<String> {
        let mut e: Vec<String> = (0..5)
            .filter_map(|k| Some(format!("{k},{}", pick(k)?)))
            .collect();
        e.sort();
        e
    };
    for parallelism in [1, 3] {
        let head = format!(
            "SET 'execution.runtime-mode' = 'batch';\nSET 'parallelism.default' = '{parallelism}';\n"
        );
        let rowtime = table("WATERMARK FOR ts AS ts");
        let out = ran(&format!(
            "{head}{rowtime}SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER \
             (PARTITION BY k ORDER BY ts DESC) AS rn FROM ev) WHERE rn = 1;"
        ));
        assert_eq!(cells(&out), expected(&latest), "event time: {out}");
        let out = ran(&format!(
            "{head}{rowtime}SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER \
             (PARTITION BY window_start, window_end, k ORDER BY ts DESC) AS rn \
             FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND))) WHERE rn = 1;"
        ));
        assert_eq!(cells(&out), expected(&latest), "window: {out}");
        let out = ran(&format!(
            "{head}{}SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER \
             (PARTITION BY k ORDER BY pt DESC) AS rn FROM ev) WHERE rn = 1;",
            table("pt AS PROCTIME()")
        ));
        assert_eq!(cells(&out), expected(&last), "processing time: {out}");
    }
}

/// A rowtime must be a time of millisecond precision at most, checked when the table is
/// created (with its line); a row whose rowtime is NULL fails the job naming the table and
/// column, as Flink's watermark assigner does, instead of leaving a window or a join without
/// it.
#[test]
fn rowtimes_are_checked_where_declared_and_never_null() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("ev.csv");
    std::fs::write(&input, "a,1,\na,2,2024-01-01 00:00:02\n").expect("write");
    let with = format!(
        "WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv')",
        input.display()
    );
    for (columns, found) in [
        (
            "k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR v AS ts",
            "'v' is INT",
        ),
        (
            "k STRING, v INT, ts TIMESTAMP(6), WATERMARK FOR ts AS ts",
            "'ts' is TIMESTAMP(6)",
        ),
    ] {
        refused(
            &format!("SET 'parallelism.default' = '1';\nCREATE TABLE ev ({columns}) {with};"),
            &["line 2", "Invalid data type of time field", found],
        );
    }
    let table = format!(
        "CREATE TABLE ev (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) {with};\n"
    );
    for query in [
        "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), \
         INTERVAL '10' SECOND)) GROUP BY window_start, window_end",
        "SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND \
         CURRENT ROW) FROM ev",
    ] {
        refused(
            &format!("{table}{query};"),
            &["table 'ev'", "RowTime field should not be null", "'ts'"],
        );
    }
}

/// `table.local-time-zone`: a `TIMESTAMP_LTZ` is shown, cast and formatted in the session's
/// zone, a wall-clock `TIMESTAMP` cast to it is read there, and a day window over an LTZ
/// rowtime starts at local midnight (two events 15:30 and 16:30 UTC fall on two Shanghai days,
/// one UTC day), while a csv sink keeps the instant in UTC; an unknown zone is refused by name.
#[test]
fn the_local_time_zone_shows_casts_and_windows_instants() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("e.csv");
    // 2024-01-01 15:30 and 16:30 UTC.
    std::fs::write(&input, "a,1704123000000\nb,1704126600000\n").expect("write");
    let table = format!(
        "CREATE TABLE e (k STRING, ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ms, 3), \
         WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '{}', \
         'format' = 'csv');\n",
        input.display()
    );
    let cells = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("| +I"))
            .map(|l| {
                l.split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    };
    let windows = "SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE e, \
                   DESCRIPTOR(ts), INTERVAL '1' DAY)) GROUP BY window_start, window_end;";
    let out = ran(&format!(
        "SET 'table.local-time-zone' = 'Asia/Shanghai';\n{table}\
         SELECT k, ts, CAST(ts AS TIMESTAMP(3)) AS wall, DATE_FORMAT(ts, 'HH:mm') AS hm, \
         CAST(CAST(ts AS TIMESTAMP(3)) AS TIMESTAMP_LTZ(3)) = ts AS back FROM e;\n{windows}"
    ));
    assert_eq!(
        cells(&out),
        [
            "a,2024-01-01 23:30:00.000,2024-01-01 23:30:00.000,23:30,TRUE",
            "b,2024-01-02 00:30:00.000,2024-01-02 00:30:00.000,00:30,TRUE",
            "2024-01-01 00:00:00.000,1",
            "2024-01-02 00:00:00.000,1",
        ],
        "{out}"
    );
    let out = ran(&format!("{table}{windows}"));
    assert_eq!(cells(&out), ["2024-01-01 00:00:00.000,2"], "UTC: {out}");
    let sink = dir.path().join("out");
    ran(&format!(
        "SET 'table.local-time-zone' = '+08:00';\n{table}\
         CREATE TABLE o (k STRING, ts TIMESTAMP_LTZ(3)) WITH ('connector' = 'filesystem', \
         'path' = '{}', 'format' = 'csv');\nINSERT INTO o SELECT k, ts FROM e;",
        sink.display()
    ));
    // Files hold instants in UTC, with Flink's Z, and read back as the same instants.
    assert_eq!(
        sorted_lines(&sink),
        ["a,2024-01-01 15:30:00.000Z", "b,2024-01-01 16:30:00.000Z"]
    );
    let out = ran(&format!(
        "SET 'table.local-time-zone' = 'Asia/Shanghai';\n\
         CREATE TABLE o (k STRING, ts TIMESTAMP_LTZ(3)) WITH ('connector' = 'filesystem', \
         'path' = '{}', 'format' = 'csv');\nSELECT k, ts FROM o;",
        sink.display()
    ));
    let mut read_back = cells(&out);
    read_back.sort();
    assert_eq!(
        read_back,
        ["a,2024-01-01 23:30:00.000", "b,2024-01-02 00:30:00.000"],
        "{out}"
    );
    // Day-time units move an instant by their time across a change of the clocks (New York
    // springs forward on 2021-03-14): 24 hours after 19:00 the day before is 20:00.
    let out = ran("SET 'table.local-time-zone' = 'America/New_York';\n\
         SELECT TIMESTAMPADD(DAY, 1, TO_TIMESTAMP_LTZ(1615680000000, 3)), \
         TIMESTAMPDIFF(HOUR, TO_TIMESTAMP_LTZ(1615680000000, 3), \
         TO_TIMESTAMP_LTZ(1615680000000, 3) + INTERVAL '24' HOUR);");
    assert_eq!(cells(&out), ["2021-03-14 20:00:00.000,24"], "{out}");
    refused(
        "SET 'table.local-time-zone' = 'Mars/Olympus';",
        &["'Mars/Olympus' is not a time zone"],
    );
}

/// Function details as Flink computes them: `CHR` of the code's low byte, `ROUND` of a
/// `DOUBLE` on the decimal it prints as, a `DOUBLE` cast to `INT` saturating, `UNIX_TIMESTAMP`
/// reading the start of its text (`Long.MIN_VALUE` for none), `S` as a fraction of the second,
/// `ORDER BY` an ordinal.
#[test]
fn functions_follow_flinks_edge_cases() {
    let out = ran("SET 'execution.runtime-mode' = 'batch';\n\
         SELECT CHR(353), CHR(-1) = '', ROUND(CAST(1.005 AS DOUBLE), 2), \
         CAST(CAST(3000000000 AS DOUBLE) AS INT), UNIX_TIMESTAMP('garbage'), \
         UNIX_TIMESTAMP('1970-01-01 08:00:01.001 +0800', 'yyyy-MM-dd HH:mm:ss.SSS'), \
         TO_TIMESTAMP('2024-03-05 14:07:09.12', 'yyyy-MM-dd HH:mm:ss.SS'), \
         TO_TIMESTAMP('2024-03-05 14:07:09.123456'), \
         DATE_FORMAT(TIMESTAMP '2024-03-05 14:07:09.123', 'ss.SS'), \
         TO_DATE('2017-12-12 09:30:00'), CAST('2017-12-12 09:30:00' AS DATE);\n\
         SELECT x, y FROM (VALUES (1, 'c'), (3, 'a'), (2, 'b')) AS t(x, y) ORDER BY 2 DESC;");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains("EXPR$") && !l.contains(" x "))
        .map(|l| {
            l.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(
        rows,
        [
            vec![
                "a",
                "TRUE",
                "1.01",
                "2147483647",
                "-9223372036854775808",
                "28801",
                "2024-03-05 14:07:09.120",
                "2024-03-05 14:07:09.123",
                "09.12",
                "2017-12-12",
                "2017-12-12"
            ],
            vec!["1", "c"],
            vec!["2", "b"],
            vec!["3", "a"],
        ],
        "{out}"
    );
}

/// `INSERT OVERWRITE` replaces a filesystem table's files once its job has succeeded, in
/// batch mode; streaming mode refuses it, as Flink's filesystem sink does.
#[test]
fn insert_overwrite_replaces_a_tables_files_in_batch_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let table = format!(
        "CREATE TABLE t (x INT) WITH ('connector' = 'filesystem', 'path' = '{}', \
         'format' = 'csv');\n",
        dir.path().join("t").display()
    );
    ran(&format!(
        "SET 'execution.runtime-mode' = 'batch';\n{table}INSERT INTO t VALUES (1), (2);\n\
         INSERT OVERWRITE t VALUES (3), (4);\nINSERT INTO t VALUES (5);"
    ));
    assert_eq!(sorted_lines(&dir.path().join("t")), ["3", "4", "5"]);
    refused(
        &format!("{table}INSERT OVERWRITE t VALUES (6);"),
        &["INSERT OVERWRITE of 't'", "batch mode"],
    );
    assert_eq!(sorted_lines(&dir.path().join("t")), ["3", "4", "5"]);
}

/// `NULLS FIRST` / `NULLS LAST` put NULLs where they say whatever the direction, in a batch
/// sort, a Top-N and a ROW_NUMBER; by default NULLs are first ascending, last descending.
#[test]
fn nulls_first_and_last_order_as_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("n.csv");
    std::fs::write(&input, "1,5\n2,\n3,7\n4,\n5,6\n").expect("write");
    let table = csv_table("n", "k INT, v INT", &input);
    let out = ran(&format!(
        "SET 'execution.runtime-mode' = 'batch';\n{table}\
         SELECT k FROM n ORDER BY v NULLS LAST, k;\n\
         SELECT k FROM n ORDER BY v DESC NULLS FIRST, k DESC LIMIT 3;\n\
         SELECT k FROM n ORDER BY v, k;\n\
         SELECT k FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY v ASC NULLS LAST) AS rn FROM n) \
         WHERE rn <= 2 ORDER BY k;"
    ));
    let keys: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains(" k "))
        .map(|l| l.trim_matches(|c| c == '|' || c == ' '))
        .collect();
    assert_eq!(
        keys,
        [
            "1", "5", "3", "2", "4", "4", "2", "3", "2", "4", "1", "5", "3", "1", "5"
        ],
        "{out}"
    );
}

/// `ORDER BY` an aggregate of a grouped query, selected or not: the top keys by their sums
/// (batch) and a streaming Top-N by a count that is not selected.
#[test]
fn a_grouped_query_orders_by_its_aggregates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("s.csv");
    let rows: Vec<(i64, i64)> = (0..60).map(|i| (i % 7, (i * 13) % 10)).collect();
    let text: String = rows.iter().map(|(k, v)| format!("{k},{v}\n")).collect();
    std::fs::write(&input, text).expect("write");
    let table = csv_table("s", "k BIGINT, v BIGINT", &input);
    let mut sums: Vec<(i64, i64, usize)> = (0..7)
        .map(|k| {
            let of_k = rows.iter().filter(|r| r.0 == k);
            (k, of_k.clone().map(|r| r.1).sum(), of_k.count())
        })
        .collect();
    sums.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let out = ran(&format!(
        "SET 'execution.runtime-mode' = 'batch';\n{table}\
         SELECT k, SUM(v) FROM s GROUP BY k ORDER BY SUM(v) DESC, k LIMIT 3;"
    ));
    let shown: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.contains("EXPR$"))
        .map(|l| {
            l.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let expected: Vec<String> = sums[..3]
        .iter()
        .map(|(k, s, _)| format!("{k},{s}"))
        .collect();
    assert_eq!(shown, expected, "{out}");
    // Streaming: the two keys with the most rows, by a count not selected (a Top-N).
    let mut counts = sums.clone();
    counts.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let output = dir.path().join("top");
    ran(&format!(
        "{table}CREATE TABLE top (k BIGINT) WITH ('connector' = 'filesystem', \
         'path' = '{}', 'format' = 'debezium-json');\n\
         INSERT INTO top SELECT k FROM s GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT 2;",
        output.display()
    ));
    let mut expected: Vec<String> = counts[..2].iter().map(|c| c.0.to_string()).collect();
    expected.sort();
    assert_eq!(common::sql::apply_debezium(&output, &["k"]), expected);
}
