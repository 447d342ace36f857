//! Scalar functions written in Rust, registered on a SQL session and called from a script:
//! by their registered name and by the name `CREATE FUNCTION` gives them, in projections,
//! filters and computed columns; a call that does not fit, a function that fails and one
//! that panics each fail with the function and the place named.

use std::sync::Arc;

use hummer::sql::Session;
use hummer::sql::expr::udf::ScalarUdf;
use hummer::sql::types::SqlType;
use hummer::sql::value::Value;

mod common;

use common::sql::sorted_lines;

/// A session with `twice(BIGINT)`, `initials(STRING)` (registered as a Java-style class
/// name) and `check(BIGINT)`, which fails on 13 and panics on 666.
fn session() -> Session {
    let mut session = Session::new();
    session.register_function(
        "twice",
        Arc::new(ScalarUdf::new(
            [SqlType::BigInt],
            SqlType::BigInt,
            |args| match args {
                [Value::BigInt(n)] => Ok(Value::BigInt(2 * n)),
                other => Err(format!("unexpected {other:?}")),
            },
        )),
    );
    session.register_function(
        "com.example.udf.Initials",
        Arc::new(ScalarUdf::new(
            [SqlType::STRING],
            SqlType::STRING,
            |args| match args {
                [Value::String(s)] => Ok(Value::String(
                    s.split(' ').filter_map(|w| w.chars().next()).collect(),
                )),
                other => Err(format!("unexpected {other:?}")),
            },
        )),
    );
    session.register_function(
        "check",
        Arc::new(ScalarUdf::new(
            [SqlType::BigInt],
            SqlType::BigInt,
            |args| match args {
                [Value::BigInt(13)] => Err("13 is unlucky".into()),
                [Value::BigInt(666)] => panic!("the check of 666 panicked"),
                [v] => Ok(v.clone()),
                other => Err(format!("unexpected {other:?}")),
            },
        )),
    );
    session
}

fn run(session: &mut Session, script: &str) -> Result<(), String> {
    session
        .run_script(script, |_| {})
        .map_err(|e| e.to_string())
}

/// At parallelism 2, a computed column, a projection and a filter calling registered
/// functions (by name in any case, and by a created name) give brute force's rows; a call of
/// the wrong type and a class nothing was registered as are refused before anything runs.
#[test]
fn registered_functions_are_called_by_name_and_by_created_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("people");
    std::fs::create_dir(&input).expect("mkdir");
    let names = [
        "ada lovelace",
        "alan turing",
        "grace brewster hopper",
        "edsger dijkstra",
    ];
    let mut expected = Vec::new();
    for part in 0..2 {
        let mut text = String::new();
        for i in 0..150i64 {
            let id = part * 1000 + i;
            let name = names[(id % 4) as usize];
            let price = (id * 7) % 23;
            text.push_str(&format!("{id},{name},{price}\n"));
            let initials: String = name.split(' ').filter_map(|w| w.chars().next()).collect();
            // The computed column is twice the price; the filter is on twice that.
            if 4 * price > 40 {
                expected.push(format!("{id},{initials},{}", 4 * price));
            }
        }
        std::fs::write(input.join(format!("part-{part}.csv")), text).expect("write");
    }
    expected.sort();
    let output = dir.path().join("out");
    let mut session = session();
    let script = format!(
        "SET 'parallelism.default' = '2';\n\
         CREATE FUNCTION initials AS 'com.example.udf.Initials';\n\
         CREATE TABLE people (id BIGINT, name STRING, price BIGINT, doubled AS twice(price))\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE out (id BIGINT, initials STRING, quadrupled BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         INSERT INTO out SELECT id, INITIALS(name), twice(doubled) FROM people\n\
         WHERE TWICE(doubled) > 40;",
        input.display(),
        output.display()
    );
    run(&mut session, &script).expect("the script runs");
    assert_eq!(sorted_lines(&output), expected);

    // A call that does not fit the signature is refused before anything runs.
    let err = run(&mut session, "SELECT twice(name) FROM people;").unwrap_err();
    assert!(
        err.contains("line 1, column 8") && err.contains("'twice'") && err.contains("STRING"),
        "{err}"
    );
    // A class nothing was registered as is refused, naming what was.
    let err = run(&mut session, "CREATE FUNCTION f AS 'com.example.Missing';").unwrap_err();
    assert!(
        err.contains("com.example.Missing") && err.contains("com.example.udf.initials"),
        "{err}"
    );
    // Nexmark's count_char is built in.
    run(
        &mut session,
        "CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar';",
    )
    .expect("count_char is built in");
}

/// A function's error and its panic each fail the job with the function, the row, the
/// operator and the subtask named.
#[test]
fn a_failing_or_panicking_function_fails_the_job_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("numbers.csv");
    for (bad, what) in [
        (13, "the function 'check' failed: 13 is unlucky"),
        (
            666,
            "the function 'check' panicked: the check of 666 panicked",
        ),
    ] {
        let text: String = (0..500)
            .map(|i| format!("{}\n", if i == 250 { bad } else { i % 10 }))
            .collect();
        std::fs::write(&input, text).expect("write");
        let mut session = session();
        let script = format!(
            "SET 'parallelism.default' = '2';\n\
             CREATE TABLE numbers (n BIGINT)\n\
             WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
             CREATE TABLE out (n BIGINT) WITH ('connector' = 'blackhole');\n\
             INSERT INTO out SELECT check(n) FROM numbers;",
            input.display()
        );
        let err = run(&mut session, &script).unwrap_err();
        assert!(err.contains(what), "{err}");
        assert!(err.contains(&format!("({bad})")), "the row is named: {err}");
        assert!(
            err.contains("operator 'Calc") && err.contains("subtask"),
            "the operator and subtask are named: {err}"
        );
    }
}
