//! The web dashboard in a real headless Chromium (WebDriver), against a live cluster: a
//! JobManager with the RFTS scheduler and two TaskManagers, running a streaming windowed job
//! with checkpoints that fails once and restarts. The page must show the job's graph as REST
//! describes it, counts that grow, a completed checkpoint, the failure with its operator,
//! TaskManager charts with points and the scheduler's regions; its buttons must take a
//! savepoint and cancel the job; a stopped JobManager must show an error banner; and the page
//! must log no console errors. Screenshots of every view are saved under
//! `target/tmp/dashboard/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::browser::Browser;
use common::cluster::TestCluster;
use common::eventually;
use serde_json::Value;

/// A cluster of `taskmanagers` TaskManagers with `slots` slots each and the RFTS scheduler,
/// in `dir` (its savepoints in `dir/savepoints`); with `secure`, mutual TLS between the
/// processes and HTTPS with a token for REST mutations (`hummer cluster certs`).
fn start_cluster(dir: &Path, taskmanagers: usize, slots: usize, secure: bool) -> TestCluster {
    let builder = TestCluster::builder()
        .dir(dir)
        .taskmanagers(taskmanagers)
        .slots(slots)
        .jobmanager_args(["--scheduler", "rfts", "--rebalance-interval-ms", "300"])
        .jobmanager_args([
            "--savepoint-dir".into(),
            dir.join("savepoints").into_os_string(),
        ])
        .taskmanager_args([
            "--heartbeat-interval-ms",
            "200",
            "--monitor-interval-ms",
            "200",
        ]);
    if secure { builder.tls() } else { builder }.start()
}

/// Submits the windowed count: endless at 2,000 events a second, checkpoints every 300 ms,
/// restarts, and with `fail_at` a panic at that event. Returns the job id.
fn submit_window_count(cluster: &TestCluster, fail_at: Option<u64>) -> String {
    let mut client = cluster
        .client()
        .command(&["run", "window-count", "--parallelism", "2"]);
    if let Some(event) = fail_at {
        client
            .args(["--fail-at", &event.to_string(), "--fail-marker"])
            .arg(cluster.dir().join("failed"));
    }
    let mut client = client
        .args(["--events", "1000000000", "--keys", "50", "--rate", "2000"])
        .args([
            "--checkpoint-interval-ms",
            "300",
            "--restart",
            "fixed-delay:5:200ms",
        ])
        .arg("--checkpoint-dir")
        .arg(cluster.dir().join("checkpoints"))
        .arg("--out")
        .arg(cluster.dir().join("out"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = common::cli::submitted_job_id(&mut client);
    // The client waits for the job; it is not needed any more.
    let _ = client.kill();
    let _ = client.wait();
    id
}

/// `GET path` on the cluster's REST API, as JSON (`null` if it is not).
fn rest(cluster: &TestCluster, path: &str) -> Value {
    cluster.http().get(path).json()
}

fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard")
}

/// Console entries that are errors or warnings.
async fn console_problems(browser: &Browser) -> Vec<(String, String)> {
    browser
        .console()
        .await
        .into_iter()
        .filter(|(level, _)| level == "SEVERE" || level == "WARNING")
        .collect()
}

/// A script that returns whether the element `css` is shown (laid out, not hidden).
fn visible(css: &str) -> String {
    format!(
        "const e = document.querySelector({css:?}); \
         return e !== null && e.getClientRects().length > 0 \
         && getComputedStyle(e).visibility !== 'hidden';"
    )
}

/// Clicks the action button `css` and confirms it in the dialog it opens.
async fn click_and_confirm(browser: &Browser, css: &str) {
    browser.click(css).await;
    browser
        .until("the confirmation", WAIT, &visible("#confirm-dialog"))
        .await;
    browser.click("#confirm-ok").await;
}

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_a_live_cluster_and_acts_on_it() {
    crate::require_heavy!("Chromium and ChromeDriver");
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = start_cluster(dir.path(), 2, 2, false);
    let job = submit_window_count(&cluster, Some(2_000));
    let browser = Browser::start(&screenshots(), &[]).await;
    let base = format!("http://{}/", cluster.rest());

    // Overview: both TaskManagers, the running job.
    browser.goto(&format!("{base}#/overview")).await;
    browser
        .until(
            "two TaskManagers in the overview",
            WAIT,
            r#"const e = document.querySelector('#overview [data-field="taskmanagers"]');
               return e && e.dataset.value === '2';"#,
        )
        .await;
    browser
        .until(
            "a running job in the overview",
            WAIT,
            r#"const e = document.querySelector('#overview [data-field="jobs-running"]');
               return e && Number(e.dataset.value) >= 1;"#,
        )
        .await;
    browser.screenshot("overview").await;

    // Jobs: the job listed, and the filter hides it under another state.
    browser.goto(&format!("{base}#/jobs")).await;
    let row = format!(r#"#jobs-table tr[data-job-id="{job}"]"#);
    browser
        .until(
            "the job in the job list",
            WAIT,
            &format!("return document.querySelector('{row}') !== null;"),
        )
        .await;
    browser.screenshot("jobs").await;
    browser
        .js(r#"const f = document.querySelector('#job-state-filter');
               f.value = 'Finished'; f.dispatchEvent(new Event('change')); return true;"#)
        .await;
    browser
        .until(
            "the job list filtered by state",
            WAIT,
            &format!("return document.querySelector('{row}') === null;"),
        )
        .await;

    // The job: its graph is REST's vertices and edges.
    browser.goto(&format!("{base}#/jobs/{job}")).await;
    let described = rest(&cluster, &format!("/jobs/{job}"));
    let vertices = described["vertices"].as_array().unwrap().len();
    let mut expected_edges: Vec<(String, String, String)> = described["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["source"].to_string(),
                e["target"].to_string(),
                e["partitioning"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    expected_edges.sort();
    assert!(vertices >= 2, "a windowed count has a shuffle: {described}");
    assert!(
        expected_edges.iter().any(|e| e.2 == "HASH"),
        "keyed windows are fed by a hash edge: {expected_edges:?}"
    );
    browser
        .until(
            "every vertex in the graph",
            WAIT,
            &format!(
                "return document.querySelectorAll('#job-graph g.vertex').length === {vertices};"
            ),
        )
        .await;
    let drawn = browser
        .js(
            r#"return [...document.querySelectorAll('#job-graph g.edge')]
                 .map(e => [e.dataset.source, e.dataset.target, e.dataset.partitioning]);"#,
        )
        .await;
    let mut drawn_edges: Vec<(String, String, String)> = drawn
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |i: usize| e[i].as_str().unwrap_or_default().to_string();
            (s(0), s(1), s(2))
        })
        .collect();
    drawn_edges.sort();
    assert_eq!(drawn_edges, expected_edges, "the graph's edges are REST's");
    for (i, v) in described["vertices"].as_array().unwrap().iter().enumerate() {
        let text = browser
            .js(&format!(
                r#"return document.querySelector('#job-graph g.vertex[data-vertex="{i}"]').textContent;"#
            ))
            .await;
        let text = text.as_str().unwrap();
        let first_operator = v["operators"][0].as_str().unwrap();
        // Long names are cut with an ellipsis: the start is shown.
        let shown: String = first_operator.chars().take(12).collect();
        assert!(
            text.contains(&shown),
            "vertex {i} shows its operators: {text:?} lacks {shown:?}"
        );
        assert!(
            text.contains(&v["parallelism"].to_string()),
            "vertex {i} shows its parallelism: {text:?}"
        );
    }
    // Record counts grow between two reads.
    let count_of_source = r#"const e = document.querySelector(
            '#job-graph g.vertex[data-vertex="0"] [data-field="write-records"]');
        return e ? Number(e.dataset.value) : null;"#;
    let first = browser
        .until("a record count", WAIT, count_of_source)
        .await
        .as_f64()
        .unwrap();
    let grown = browser
        .until(
            "the record count growing",
            WAIT,
            &format!(
                "const e = document.querySelector('#job-graph g.vertex[data-vertex=\"0\"] \
                 [data-field=\"write-records\"]'); return e && Number(e.dataset.value) > {first} \
                 ? Number(e.dataset.value) : null;"
            ),
        )
        .await;
    assert!(grown.as_f64().unwrap() > first);
    // A vertex's subtasks, with the TaskManagers they run on.
    browser.click(r#"#vertex-table tr[data-vertex="1"]"#).await;
    browser
        .until(
            "the subtask table of vertex 1",
            WAIT,
            "return document.querySelectorAll('#subtask-table tbody tr').length === 2;",
        )
        .await;
    browser.screenshot("job").await;

    // Checkpoints and the failure, root cause first with its operator.
    browser
        .goto(&format!("{base}#/jobs/{job}/checkpoints"))
        .await;
    browser
        .until(
            "a completed checkpoint",
            WAIT,
            r#"return document.querySelector('#checkpoint-history tr[data-status="COMPLETED"]') !== null;"#,
        )
        .await;
    // The failure as REST has it: the page shows its root cause and operator.
    let latest = tokio::task::block_in_place(|| {
        eventually(WAIT, "a failure recorded", || {
            let exceptions = rest(&cluster, &format!("/jobs/{job}/exceptions"));
            exceptions["history"].get(0).cloned().ok_or(exceptions)
        })
    });
    let root_cause = latest["root-cause"].as_str().unwrap().to_string();
    let shown = browser
        .until(
            "the failure's root cause in the exceptions",
            WAIT,
            &format!(
                "const e = document.querySelector('#exceptions .root-cause'); \
                 return e && e.textContent.includes({root_cause:?}) \
                 ? document.querySelector('#exceptions').textContent : null;"
            ),
        )
        .await;
    if let Some(operator) = latest["operator"].as_str() {
        assert!(
            shown.as_str().unwrap().contains(operator),
            "the exception shows the operator {operator}: {shown}"
        );
    }
    browser.screenshot("checkpoints").await;

    // TaskManagers: the monitor's charts have points.
    browser.goto(&format!("{base}#/taskmanagers")).await;
    let tm = browser
        .until(
            "the TaskManagers table",
            WAIT,
            r#"const r = document.querySelectorAll('#taskmanagers-table tr[data-taskmanager]');
               return r.length === 2 ? r[0].dataset.taskmanager : null;"#,
        )
        .await;
    browser.screenshot("taskmanagers").await;
    browser
        .goto(&format!("{base}#/taskmanagers/{}", tm.as_str().unwrap()))
        .await;
    for series in ["cpu", "memory"] {
        browser
            .until(
                &format!("points in the {series} chart"),
                WAIT,
                &format!(
                    r#"const c = document.querySelector('svg.chart[data-series="{series}"]');
                       return c && Number(c.dataset.points) >= 3;"#
                ),
            )
            .await;
    }
    browser.screenshot("taskmanager").await;

    // Scheduling: RFTS gives every TaskManager a region.
    browser.goto(&format!("{base}#/scheduling")).await;
    browser
        .until(
            "a region for every TaskManager",
            WAIT,
            r#"const r = [...document.querySelectorAll('#scheduling-table tr[data-taskmanager]')];
               return r.length === 2 && r.every(x => ['UP','LP','NS','DS'].includes(x.dataset.region));"#,
        )
        .await;
    browser.screenshot("scheduling").await;

    // A savepoint through the button.
    browser.goto(&format!("{base}#/jobs/{job}")).await;
    browser
        .until(
            "the job page",
            WAIT,
            "return document.querySelector('#savepoint-job') !== null;",
        )
        .await;
    click_and_confirm(&browser, "#savepoint-job").await;
    let savepoints = cluster.dir().join("savepoints");
    let location = browser
        .until(
            "the savepoint's location",
            Duration::from_secs(60),
            &format!(
                "const r = document.querySelector('#action-result'); \
                 return r && r.textContent.includes({:?}) ? r.textContent : null;",
                savepoints.display().to_string()
            ),
        )
        .await;
    assert!(
        std::fs::read_dir(&savepoints).unwrap().count() == 1,
        "one savepoint written: {location}"
    );

    // Cancel through the button, checked through REST.
    click_and_confirm(&browser, "#cancel-job").await;
    tokio::task::block_in_place(|| {
        eventually(WAIT, "the job cancelled", || {
            let state = rest(&cluster, &format!("/jobs/{job}"))["state"].clone();
            if state == "Cancelled" {
                Ok(())
            } else {
                Err(state)
            }
        })
    });
    browser
        .until(
            "the job shown cancelled",
            WAIT,
            "return document.querySelector('#cancel-job').disabled && \
             document.body.textContent.includes('Cancelled');",
        )
        .await;

    let problems = console_problems(&browser).await;
    assert!(problems.is_empty(), "the page logged errors: {problems:#?}");

    // A JobManager that stops answering shows as such.
    cluster.kill_jobmanager(0);
    browser
        .until("the error banner", WAIT, &visible("#error-banner"))
        .await;
    browser.screenshot("jobmanager-down").await;
    // The last data stays on screen.
    let graph = browser
        .js("return document.querySelectorAll('#job-graph g.vertex').length;")
        .await;
    assert_eq!(graph.as_u64(), Some(vertices as u64));
}

/// A secured cluster's REST API is HTTPS and needs its token to act: the dashboard reads
/// without it, asks for it when a cancel is refused, and the cancel goes through once it is
/// given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_secured_cluster_the_dashboard_asks_for_the_token_before_acting() {
    crate::require_heavy!("Chromium and ChromeDriver");
    let dir = tempfile::tempdir().unwrap();
    let cluster = start_cluster(dir.path(), 1, 2, true);
    let job = submit_window_count(&cluster, None);
    let client = cluster.client();
    client.wait_for_job_status(&job, "Running", WAIT);
    // The cluster's CA is not in the browser's store.
    let browser = Browser::start(&screenshots(), &["--ignore-certificate-errors"]).await;
    browser
        .goto(&format!("https://{}/#/jobs/{job}", cluster.rest()))
        .await;
    browser
        .until(
            "the job's graph over HTTPS without a token",
            WAIT,
            "return document.querySelectorAll('#job-graph g.vertex').length >= 2;",
        )
        .await;
    click_and_confirm(&browser, "#cancel-job").await;
    browser
        .until("the token dialog", WAIT, &visible("#token-dialog"))
        .await;
    browser.screenshot("token").await;
    assert!(
        !client.job_status(&job).contains("Cancelled"),
        "a cancel without the token is refused: {}",
        client.job_status(&job)
    );
    let token = cluster.token();
    browser.type_into("#token-input", &token).await;
    browser.click("#token-save").await;
    client.wait_for_job_status(&job, "Cancelled", WAIT);
    browser
        .until(
            "the job shown cancelled",
            WAIT,
            "return document.querySelector('#cancel-job').disabled;",
        )
        .await;
}
