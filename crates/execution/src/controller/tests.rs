//! The controller's transitions and rules, against a brute-force reading of the restart
//! strategy and real checkpoint directories.

use std::time::{Duration, Instant};

use super::*;
use crate::checkpoint::coordinator::GraphInfo;
use crate::checkpoint::store::CheckpointStore;
use crate::error::HummerError;

fn policy(restart: &str, checkpoints: Option<&std::path::Path>) -> RecoveryPolicy {
    RecoveryPolicy {
        checkpoints: checkpoints.map(|d| CheckpointConfig::new(Duration::from_millis(10), d)),
        restart: restart.parse().expect("a restart strategy"),
        restore_from: None,
    }
}

fn boom() -> HummerError {
    HummerError::Panic("boom".into())
}

#[test]
fn a_job_runs_to_its_end() {
    let mut c = JobController::new(policy("none", None));
    assert_eq!(c.status(), JobStatus::Created);
    let start = c.start().unwrap();
    assert_eq!((start.attempt, start.restore.is_none()), (0, true));
    assert_eq!(c.status(), JobStatus::Deploying);
    c.running(GraphInfo::default(), 2, 1, Instant::now())
        .unwrap();
    assert_eq!(c.status(), JobStatus::Running);
    assert!(
        c.tick(Instant::now()).is_none(),
        "no checkpoints without a config"
    );
    c.finish();
    assert_eq!(c.status(), JobStatus::Finished);
    assert!(!c.cancel(), "an ended job cannot be cancelled");
    assert!(c.start().is_err(), "an ended job cannot start again");
}

#[test]
fn strategy_none_fails_with_the_error_as_it_is() {
    let mut c = JobController::new(policy("none", None));
    c.start().unwrap();
    match c.failed(boom(), Instant::now()) {
        FailureOutcome::Failed(HummerError::Panic(m)) => assert_eq!(m, "boom"),
        other => panic!("expected the panic itself, got {other:?}"),
    }
    assert_eq!(c.status(), JobStatus::Failed);
    assert!(matches!(
        c.failed(boom(), Instant::now()),
        FailureOutcome::Ignored
    ));
}

#[test]
fn fixed_delay_restarts_then_gives_up_naming_the_limit() {
    let mut c = JobController::new(policy("fixed-delay:2:100ms", None));
    let t0 = Instant::now();
    c.start().unwrap();
    for round in 1..=2u32 {
        c.running(GraphInfo::default(), 1, 1, t0).unwrap();
        match c.failed(boom(), t0) {
            FailureOutcome::Restart { after } => assert_eq!(after, Duration::from_millis(100)),
            other => panic!("round {round}: {other:?}"),
        }
        assert_eq!(c.status(), JobStatus::Restarting);
        assert_eq!(c.last_failure(), Some("panic: boom"));
        assert!(!c.restart_due(t0 + Duration::from_millis(99)));
        assert!(c.restart_due(t0 + Duration::from_millis(100)));
        let start = c.restart().unwrap();
        assert_eq!(start.attempt, round);
        assert_eq!(c.restarts(), round);
    }
    match c.failed(boom(), t0) {
        FailureOutcome::Failed(HummerError::JobFailed { reason, cause }) => {
            assert!(reason.contains("2 restart attempts"), "{reason}");
            assert!(matches!(*cause, HummerError::Panic(_)));
        }
        other => panic!("expected JobFailed, got {other:?}"),
    }
}

#[test]
fn a_deployment_that_cannot_start_waits_at_least_the_minimum() {
    let mut c = JobController::new(policy("fixed-delay:5:0ms", None));
    let now = Instant::now();
    match c.deploy_failed(HummerError::Cluster("no slots".into()), now) {
        FailureOutcome::Restart { after } => assert_eq!(after, DEPLOY_RETRY_MIN),
        other => panic!("{other:?}"),
    }
    assert!(c.restart_due(now + DEPLOY_RETRY_MIN));
    assert_eq!(c.restart().unwrap().attempt, 1);
}

#[test]
fn cancel_ends_a_restarting_job() {
    let mut c = JobController::new(policy("fixed-delay:5:1s", None));
    c.start().unwrap();
    c.failed(boom(), Instant::now());
    assert!(c.cancel());
    assert_eq!(c.status(), JobStatus::Cancelled);
    assert!(!c.restart_due(Instant::now() + Duration::from_secs(5)));
}

/// Writes a whole checkpoint `id` into `dir`.
fn write_checkpoint(dir: &std::path::Path, id: u64) {
    let store = CheckpointStore::open(dir, 10).unwrap();
    let mut pending = store.begin(id).unwrap();
    pending.write("state", b"x").unwrap();
    store.complete(pending).unwrap();
}

#[test]
fn restore_point_is_the_newest_own_checkpoint_else_the_savepoint() {
    let tmp = tempfile::tempdir().unwrap();
    let own = tmp.path().join("own");
    let savepoint = tmp.path().join("savepoint");
    write_checkpoint(&savepoint, 7);
    let mut p = policy("fixed-delay:3:0ms", Some(&own));
    p.restore_from = Some(savepoint.clone());
    let mut c = JobController::new(p);
    let start = c.start().unwrap();
    assert_eq!(start.restore.map(|r| r.metadata.id), Some(7));
    assert_eq!(c.restored(), 7);
    write_checkpoint(&own, 8);
    write_checkpoint(&own, 9);
    c.running(GraphInfo::default(), 1, 1, Instant::now())
        .unwrap();
    c.failed(boom(), Instant::now());
    let start = c.restart().unwrap();
    assert_eq!(start.restore.map(|r| r.metadata.id), Some(9));
    assert_eq!(c.restored(), 9);
}

#[test]
fn a_missing_savepoint_is_an_error_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = policy("none", None);
    p.restore_from = Some(tmp.path().join("nothing-here"));
    let mut c = JobController::new(p);
    assert!(c.start().is_err());
    assert_eq!(c.status(), JobStatus::Created);
}

mod model {
    //! The controller against a brute-force reading of its rules, over random event
    //! sequences: statuses, attempts and restarts agree after every step.

    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Event {
        Start,
        Running,
        Fail,
        DeployFail,
        WaitMs(u64),
        Restart,
        Finish,
        Cancel,
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            2 => Just(Event::Start),
            2 => Just(Event::Running),
            3 => Just(Event::Fail),
            1 => Just(Event::DeployFail),
            3 => (0u64..1_500).prop_map(Event::WaitMs),
            3 => Just(Event::Restart),
            1 => Just(Event::Finish),
            1 => Just(Event::Cancel),
        ]
    }

    /// What the rules say, written plainly: a fixed-delay strategy with `attempts` restarts.
    struct Reference {
        status: JobStatus,
        attempts_left: u32,
        attempt: u32,
        restart_at_ms: Option<u64>,
    }

    proptest! {
        #[test]
        fn controller_follows_the_rules(
            attempts in 0u32..4,
            delay_ms in 0u64..1_000,
            events in proptest::collection::vec(event(), 1..40),
        ) {
            let spec = format!("fixed-delay:{attempts}:{delay_ms}ms");
            let mut c = JobController::new(policy(&spec, None));
            let mut r = Reference {
                status: JobStatus::Created,
                attempts_left: attempts,
                attempt: 0,
                restart_at_ms: None,
            };
            let t0 = Instant::now();
            let mut now_ms = 0u64;
            for e in events {
                let now = t0 + Duration::from_millis(now_ms);
                let on_failure = |r: &mut Reference, min: u64| {
                    if r.attempts_left == 0 {
                        r.status = JobStatus::Failed;
                        r.restart_at_ms = None;
                    } else {
                        r.attempts_left -= 1;
                        r.status = JobStatus::Restarting;
                        r.restart_at_ms = Some(now_ms + delay_ms.max(min));
                    }
                };
                match e {
                    Event::Start => {
                        let ok = c.start().is_ok();
                        prop_assert_eq!(ok, r.status == JobStatus::Created);
                        if ok {
                            r.status = JobStatus::Deploying;
                        }
                    }
                    Event::Running => {
                        let ok = c.running(GraphInfo::default(), 1, 1, now).is_ok();
                        prop_assert_eq!(ok, r.status == JobStatus::Deploying);
                        if ok {
                            r.status = JobStatus::Running;
                        }
                    }
                    Event::Fail => {
                        let outcome = c.failed(boom(), now);
                        if matches!(r.status, JobStatus::Deploying | JobStatus::Running) {
                            on_failure(&mut r, 0);
                        } else {
                            prop_assert!(matches!(outcome, FailureOutcome::Ignored));
                        }
                    }
                    Event::DeployFail => {
                        let outcome = c.deploy_failed(boom(), now);
                        if matches!(
                            r.status,
                            JobStatus::Created | JobStatus::Deploying | JobStatus::Restarting
                        ) {
                            on_failure(&mut r, DEPLOY_RETRY_MIN.as_millis() as u64);
                        } else {
                            prop_assert!(matches!(outcome, FailureOutcome::Ignored));
                        }
                    }
                    Event::WaitMs(ms) => now_ms += ms,
                    Event::Restart => {
                        let due = r.status == JobStatus::Restarting
                            && r.restart_at_ms.is_some_and(|t| t <= now_ms);
                        prop_assert_eq!(c.restart_due(now), due);
                        if due {
                            prop_assert!(c.restart().is_ok());
                            r.status = JobStatus::Deploying;
                            r.attempt += 1;
                            r.restart_at_ms = None;
                        }
                    }
                    Event::Finish => {
                        c.finish();
                        if !r.status.is_terminal() {
                            r.status = JobStatus::Finished;
                        }
                    }
                    Event::Cancel => {
                        prop_assert_eq!(c.cancel(), !r.status.is_terminal());
                        if !r.status.is_terminal() {
                            r.status = JobStatus::Cancelled;
                        }
                    }
                }
                prop_assert_eq!(c.status(), r.status);
                prop_assert_eq!(c.attempt(), r.attempt);
                prop_assert_eq!(c.restarts(), attempts - r.attempts_left);
            }
        }
    }
}
