//! `hummer sql` as a user runs it, and the files its sinks write.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `hummer sql ARGS...` with `stdin` piped in: whether it succeeded, its stdout and its
/// stderr.
pub fn hummer_sql(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(super::cli::BIN)
        .arg("sql")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hummer sql");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("hummer sql ends");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `hummer sql -e script`, which must succeed; its stdout.
pub fn ran(script: &str) -> String {
    let (ok, out, err) = hummer_sql(&["-e", script], "");
    assert!(ok, "{script} failed: {err}");
    out
}

/// Runs `hummer sql -e script`, which must fail with an error holding each of `expected`;
/// its stderr.
pub fn refused(script: &str, expected: &[&str]) -> String {
    let (ok, out, err) = hummer_sql(&["-e", script], "");
    assert!(!ok, "{script} ran: {out}");
    for e in expected {
        assert!(err.contains(e), "'{e}' in {err}");
    }
    err
}

/// Every line of the part files a sink wrote under `dir`, sorted.
pub fn sorted_lines(dir: &std::path::Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_dir(dir)
        .expect("the sink's directory")
        .flat_map(|f| {
            let text = std::fs::read_to_string(f.expect("entry").path()).expect("part file");
            text.lines().map(str::to_string).collect::<Vec<_>>()
        })
        .collect();
    lines.sort();
    lines
}

/// Applies a `debezium-json` changelog (as the harness's canonicaliser does): each `after`
/// adds its row, each `before` takes one away; the rows left, as `a,b,..` lines, sorted.
pub fn apply_debezium(dir: &std::path::Path, columns: &[&str]) -> Vec<String> {
    let mut table: std::collections::HashMap<String, i64> = Default::default();
    for line in sorted_lines(dir) {
        let event: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        for (side, sign) in [("before", -1), ("after", 1)] {
            let row = &event[side];
            if row.is_null() {
                continue;
            }
            let cells: Vec<String> = columns
                .iter()
                .map(|c| match &row[c] {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                })
                .collect();
            *table.entry(cells.join(",")).or_default() += sign;
        }
    }
    assert!(
        table.values().all(|&n| n >= 0),
        "a row retracted more than added"
    );
    let mut rows: Vec<String> = table
        .into_iter()
        .flat_map(|(row, n)| std::iter::repeat_n(row, n as usize))
        .collect();
    rows.sort();
    rows
}

/// Runs `query` into a csv sink of `columns` at parallelism 1 and 3, and checks its lines
/// against `expected` (sorted here).
pub fn check_csv_query(
    dir: &std::path::Path,
    tables: &str,
    name: &str,
    columns: &str,
    query: &str,
    mut expected: Vec<String>,
) {
    expected.sort();
    for parallelism in [1, 3] {
        let output = dir.join(format!("{name}-{parallelism}"));
        let script = format!(
            "SET 'parallelism.default' = '{parallelism}';\n{tables}\
             CREATE TABLE q_sink ({columns})\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             {query};",
            output.display()
        );
        let (ok, out, err) = hummer_sql(&["-e", &script], "");
        assert!(ok, "{name} at parallelism {parallelism}: {out}\n{err}");
        assert_eq!(
            sorted_lines(&output),
            expected,
            "{name} at parallelism {parallelism}"
        );
    }
}

/// Writes `lines` into `parts` csv part files in `dir` (`part-0.csv`, ..), line `i` into part
/// `i % parts`: one table read as several splits.
pub fn write_parts(dir: &std::path::Path, lines: impl IntoIterator<Item = String>, parts: usize) {
    let mut texts = vec![String::new(); parts];
    for (i, line) in lines.into_iter().enumerate() {
        texts[i % parts].push_str(&line);
        texts[i % parts].push('\n');
    }
    for (part, text) in texts.into_iter().enumerate() {
        std::fs::write(dir.join(format!("part-{part}.csv")), text).expect("write a part file");
    }
}

/// `CREATE TABLE name (columns)` over the csv files at `path`.
pub fn csv_table(name: &str, columns: &str, path: &std::path::Path) -> String {
    format!(
        "CREATE TABLE {name} ({columns})\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        path.display()
    )
}

/// `CREATE TABLE name (columns, ms BIGINT, ts ..)` over the csv files at `path`: `ts` the
/// rowtime made of the milliseconds `ms`, with watermarks 1 s behind.
pub fn timed_csv_table(name: &str, columns: &str, path: &std::path::Path) -> String {
    format!(
        "CREATE TABLE {name} ({columns}, ms BIGINT,\n\
           ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)),\n\
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n",
        path.display()
    )
}

/// The physical columns of upstream's `ddl_gen.sql` table of the `nexmark` connector, for a
/// `CREATE TABLE name (..) WITH ('connector' = 'nexmark', ..)`.
pub const NEXMARK_COLUMNS: &str = "event_type INT,\n\
    person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR,\n\
      city VARCHAR, state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,\n\
    auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT,\n\
      reserve BIGINT, `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT,\n\
      category BIGINT, extra VARCHAR>,\n\
    bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,\n\
      `dateTime` TIMESTAMP(3), extra VARCHAR>";
