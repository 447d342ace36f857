//! After a job ends, successfully or not, none of its threads is left. One test in this binary,
//! so that the thread count of the process is the job's doing alone.

use std::time::Duration;

use hummer::prelude::*;

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

#[test]
fn jobs_leave_no_threads_behind() {
    let before = thread_count();
    for round in 0..3 {
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(4);
        let out = env
            .add_source(GeneratorSource::new(|i| i).with_count(100_000))
            .key_by(|x: &u64| x % 17)
            .count()
            .collect();
        let mut result = env.execute("ok").unwrap();
        assert_eq!(result.collected(&out).unwrap().len(), 17);

        // An endless job that fails: its sink keeps only the last record of each subtask (a
        // print sink would write the millions of records generated until the failure stops
        // the job into the test's output).
        let env = StreamExecutionEnvironment::local();
        env.set_parallelism(4);
        let _ = env
            .add_source(GeneratorSource::new(|i| i))
            .map(move |x: u64| if x == 1000 + round { panic!("boom") } else { x })
            .collect_latest();
        assert!(env.execute("fails").is_err());
    }
    // Joined threads disappear from /proc at once; allow the kernel a moment anyway.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(thread_count(), before);
}
