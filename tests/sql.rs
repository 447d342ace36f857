//! `hummer sql` as a user runs it: a script file, `-e`, and statements piped to standard
//! input, with the results and errors the Flink SQL client would print.

use std::io::Write;
use std::process::{Command, Stdio};

fn hummer_sql(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hummer"))
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

const DDL: &str = "-- the Nexmark bids, as the harness declares them\n\
    CREATE TABLE bid (\n\
      auction BIGINT,\n\
      bidder BIGINT,\n\
      price BIGINT NOT NULL,\n\
      `dateTime` TIMESTAMP(3),\n\
      WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND\n\
    ) WITH ('connector' = 'filesystem', 'path' = '/tmp/bid', 'format' = 'csv');\n\
    SET 'table.exec.mini-batch.enabled' = 'true';\n";

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
