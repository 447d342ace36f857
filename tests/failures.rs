//! Failure behaviour: user panics and errors fail the job quickly with the operator and subtask
//! named; bad inputs and bad graphs give clear errors; cancellation stops every thread.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use hummer::prelude::*;

#[test]
fn panic_in_user_code_names_operator_and_subtask_and_fails_fast() {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    // An unbounded source: without failure handling the job would never end.
    env.add_source(GeneratorSource::new(|i| i))
        .rebalance()
        .map(|x: u64| {
            if x == 5_000 {
                panic!("bad record {x}");
            }
            x
        })
        .name("Explode")
        .key_by(|x: &u64| x % 3)
        .count()
        .collect();
    let started = Instant::now();
    let err = match env.execute("panics") {
        Err(e) => e,
        Ok(_) => panic!("the job must fail"),
    };
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    match &err {
        HummerError::Operator {
            operator,
            subtask,
            cause,
        } => {
            assert_eq!(operator, "Explode");
            assert!(*subtask < 2);
            assert!(
                matches!(&**cause, HummerError::Panic(m) if m == "bad record 5000"),
                "{cause}"
            );
        }
        other => panic!("unexpected error {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("'Explode' (subtask ") && text.contains("bad record 5000"),
        "{text}"
    );
}

#[test]
fn panic_in_a_sink_and_in_a_key_selector_are_attributed() {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(1);
    env.from_collection(vec![1, 2, 3])
        .map(|x: i32| x)
        .add_sink(FailingSink);
    let err = env.execute("sink fails").err().expect("must fail");
    assert!(
        err.to_string().contains("'Failing Sink' (subtask 0)"),
        "{err}"
    );
    assert!(err.to_string().contains("disk full"), "{err}");

    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2);
    env.from_collection(vec![1u32, 2, 3])
        .key_by(|x: &u32| if *x == 3 { panic!("no key for 3") } else { *x })
        .count()
        .collect();
    let err = env.execute("key fails").err().expect("must fail");
    assert!(err.to_string().contains("no key for 3"), "{err}");
}

struct FailingSink;
struct FailingWriter;

impl Sink<i32> for FailingSink {
    fn name(&self) -> String {
        "Failing Sink".into()
    }
    fn create_writer(
        &self,
        _: &hummer::operators::OperatorContext,
    ) -> Result<Box<dyn SinkWriter<i32>>> {
        Ok(Box::new(FailingWriter))
    }
}

impl SinkWriter<i32> for FailingWriter {
    fn write_batch(&mut self, batch: &mut Vec<i32>) -> Result<()> {
        batch.clear();
        Err(HummerError::Io {
            action: "cannot write",
            path: "/dev/full".into(),
            source: std::io::Error::other("disk full"),
        })
    }
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

#[test]
fn missing_input_fails_execute_with_the_path() {
    let env = StreamExecutionEnvironment::local();
    env.read_text_file("/nonexistent/dir/input.txt").print();
    let err = env.execute("missing").err().expect("must fail");
    assert!(
        err.to_string()
            .contains("cannot read input '/nonexistent/dir/input.txt'"),
        "{err}"
    );
}

#[test]
fn invalid_utf8_input_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.txt");
    std::fs::write(&path, b"fine\ncaf\xe9\n").unwrap();
    let env = StreamExecutionEnvironment::local();
    env.read_text_file(&path).print();
    let err = env.execute("utf8").err().expect("must fail");
    let text = err.to_string();
    assert!(
        text.contains("latin1.txt") && text.contains("invalid UTF-8 at byte 8"),
        "{text}"
    );
}

#[test]
fn refused_socket_is_a_clear_error() {
    // Bind then drop a listener to get a port that refuses connections.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = StreamExecutionEnvironment::local();
    env.socket_text_stream("127.0.0.1", port).print();
    let err = env.execute("socket").err().expect("must fail");
    assert!(
        matches!(&err, HummerError::Operator { cause, .. } if matches!(**cause, HummerError::Network { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn socket_source_reads_lines_until_the_server_closes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::Write;
        let (mut conn, _) = listener.accept().unwrap();
        conn.write_all(b"hello world\r\nhello").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        conn.write_all(b" again\n").unwrap();
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
    });
    let env = StreamExecutionEnvironment::local();
    let out = env.socket_text_stream("127.0.0.1", port).collect();
    let client = env.execute_async("socket lines").unwrap();
    assert_eq!(client.mode(), RuntimeMode::Streaming);
    // The server keeps the connection open until the job stops reading: cancel after the data.
    std::thread::sleep(Duration::from_millis(300));
    client.cancel();
    assert!(matches!(client.wait(), Err(HummerError::Cancelled)));
    server.join().unwrap();
    let _ = out;
}

#[test]
fn bad_graphs_and_settings_are_rejected_at_execute() {
    let env = StreamExecutionEnvironment::local();
    let err = env.execute("empty").err().expect("empty job");
    assert!(err.to_string().contains("no operators"), "{err}");

    let env = StreamExecutionEnvironment::local();
    env.set_runtime_mode(RuntimeMode::Batch);
    env.add_source(GeneratorSource::new(|i| i)).print();
    let err = env.execute("unbounded batch").err().expect("must fail");
    assert!(
        err.to_string().contains("batch mode needs bounded sources"),
        "{err}"
    );

    let env = StreamExecutionEnvironment::local();
    env.from_collection(vec![1]).print().set_parallelism(500);
    let err = env.execute("too parallel").err().expect("must fail");
    assert!(err.to_string().contains("parallelism 500"), "{err}");

    let env = StreamExecutionEnvironment::local();
    env.socket_text_stream("127.0.0.1", 9)
        .set_parallelism(2)
        .print();
    let err = env.execute("parallel socket").err().expect("must fail");
    assert!(err.to_string().contains("at most 1"), "{err}");

    let env = StreamExecutionEnvironment::local();
    env.set_batch_size(0);
    env.from_collection(vec![1]).print();
    let err = env.execute("zero batch").err().expect("must fail");
    assert!(err.to_string().contains("batch size"), "{err}");
}

#[test]
fn cancel_stops_a_streaming_job_promptly() {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2);
    let sink = env
        .add_source(GeneratorSource::new(|i| i).with_rate(50_000.0))
        .key_by(|x: &u64| x % 100)
        .count()
        .collect();
    let client = env.execute_async("endless").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    client.cancel();
    let result = client.wait();
    assert!(
        matches!(result, Err(HummerError::Cancelled)),
        "{:?}",
        result.err()
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    let _ = sink;
}
