//! `hummer sql` on a cluster of real processes: the jobs of a script run on the TaskManagers
//! with Hummer itself as their program (no Rust compiler, and no copy of the script on the
//! workers' side), one job per `INSERT`; with `table.dml-sync` the client waits for each,
//! without it it prints the job's id and returns; the job's view in REST (and the dashboard)
//! shows the statement.

mod common;

use std::time::Duration;

use common::cluster::TestCluster;
use common::sql::sorted_lines;

#[test]
fn a_script_runs_its_jobs_on_the_cluster() {
    let cluster = TestCluster::builder().slots(4).start();
    let client = cluster.client();
    let dir = tempfile::tempdir().expect("temp dir");
    let bids = dir.path().join("bids");
    std::fs::create_dir(&bids).expect("mkdir");
    let mut rows = Vec::new();
    for part in 0..2 {
        let mut text = String::new();
        for i in 0..200i64 {
            let (auction, price, ms) = (i % 5, (i * 37 + part * 11) % 500, i * 100 + part);
            text.push_str(&format!("{auction},{price},{ms}\n"));
            rows.push((auction, price, ms));
        }
        std::fs::write(bids.join(format!("part-{part}.csv")), text).expect("write");
    }
    let (filtered, windows) = (dir.path().join("filtered"), dir.path().join("windows"));
    let script = format!(
        "SET 'parallelism.default' = '2';\n\
         SET 'table.dml-sync' = 'true';\n\
         CREATE TABLE bid (auction BIGINT, price BIGINT, ms BIGINT,\n\
           ts AS CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)),\n\
           WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE filtered (auction BIGINT, doubled BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE windows (auction BIGINT, n BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         INSERT INTO filtered SELECT auction, price * 2 FROM bid WHERE price > 250;\n\
         INSERT INTO windows SELECT auction, COUNT(*) FROM\n\
           TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '5' SECOND))\n\
           GROUP BY auction, window_start, window_end;\n",
        bids.display(),
        filtered.display(),
        windows.display()
    );
    // The script is found relative to the client's directory only.
    std::fs::write(dir.path().join("script.sql"), &script).expect("write the script");
    let run = client
        .command(&["sql", "-f", "script.sql"])
        .current_dir(dir.path())
        .output()
        .expect("hummer sql");
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(
        out.matches("Complete execution of the SQL update statement.")
            .count(),
        2,
        "{out}"
    );
    let mut expected: Vec<String> = rows
        .iter()
        .filter(|r| r.1 > 250)
        .map(|r| format!("{},{}", r.0, r.1 * 2))
        .collect();
    expected.sort();
    assert_eq!(sorted_lines(&filtered), expected);
    let mut counts: std::collections::BTreeMap<(i64, i64), i64> = Default::default();
    for (auction, _, ms) in &rows {
        *counts.entry((*auction, ms / 5_000)).or_default() += 1;
    }
    let mut expected: Vec<String> = counts
        .iter()
        .map(|((a, _), n)| format!("{a},{n}"))
        .collect();
    expected.sort();
    assert_eq!(sorted_lines(&windows), expected);

    // Without dml-sync the client submits, prints the job's id and returns.
    let again = dir.path().join("again");
    let script = script
        .replace("SET 'table.dml-sync' = 'true';\n", "")
        .replace(
            &filtered.display().to_string(),
            &again.display().to_string(),
        );
    let script = &script[..script
        .find("INSERT INTO windows")
        .expect("the second INSERT")];
    let run = client.hummer_ok(&["sql", "-e", script]);
    let out = String::from_utf8_lossy(&run.stdout);
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("Job ID: "))
        .unwrap_or_else(|| panic!("no job id in {out}"))
        .trim()
        .to_string();
    client.wait_for_job_status(&id, "Finished", Duration::from_secs(120));
    assert_eq!(sorted_lines(&again), sorted_lines(&filtered));
    // A statement set is one cluster job, whose workers replay the whole set.
    let (x, y) = (dir.path().join("x"), dir.path().join("y"));
    let definitions = &script[..script
        .find("CREATE TABLE filtered")
        .expect("the sink's DDL")];
    let set = format!(
        "{definitions}SET 'table.dml-sync' = 'true';\n\
         CREATE TABLE x (auction BIGINT, doubled BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         CREATE TABLE y (auction BIGINT, doubled BIGINT)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         EXECUTE STATEMENT SET BEGIN\n\
         INSERT INTO x SELECT auction, price * 2 FROM bid WHERE price > 250;\n\
         INSERT INTO y SELECT auction, price * 2 FROM bid WHERE price > 250;\n\
         END;",
        x.display(),
        y.display()
    );
    let run = client.hummer_ok(&["sql", "-e", &set]);
    let out = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        out.matches("Complete execution of the SQL update statement.")
            .count(),
        1,
        "{out}"
    );
    assert_eq!(sorted_lines(&x), sorted_lines(&filtered));
    assert_eq!(sorted_lines(&y), sorted_lines(&filtered));
    // The job's view shows the statement it runs.
    let (status, job) = cluster.http().get_json(&format!("/jobs/{id}"));
    assert_eq!(status, 200, "{job}");
    assert_eq!(
        job["sql"].as_str(),
        Some("INSERT INTO filtered SELECT auction, price * 2 FROM bid WHERE price > 250"),
        "{job}"
    );
}
