//! The data plane: channels between subtasks in different worker processes.
//!
//! A channel whose producer and consumer run in different workers becomes a TCP connection,
//! opened by the producer's side to the consumer worker's data listener and announced with a
//! header naming the job and the channel. Its two ends are tasks of the data flow like any
//! other ("network is a task"):
//!
//! * the **sender** is fused into the producing subtask: its record writer encodes each batch
//!   (postcard) straight into the socket ([`RemoteSender`]); or, per job or per edge
//!   ([`NetworkTaskMode::Dedicated`]), it is a [`SenderTask`] of its own fed by a memory
//!   channel;
//! * the **receiver** is a task of its own on the consuming side ([`ReceiverTask`]): it decodes
//!   batches and pushes them into an ordinary memory channel to the consuming subtask.
//!
//! Flow control is credit based (see [`RemoteSender`]): a batch is sent only against a credit
//! granted by the receiver, and each remote channel has its own connection, so a slow consumer
//! stalls only its own producer.

mod frames;
mod listener;
mod receiver;
mod sender;
mod sender_task;

pub use listener::DataListener;
pub use sender_task::SenderTask;

/// Where the sending end of a remote channel runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NetworkTaskMode {
    /// In the producing subtask's thread: its record writer encodes into the socket.
    #[default]
    Fused,
    /// In a sender task of its own, fed by a memory channel: the producer never waits on the
    /// network, at the cost of a thread and a hand-over per batch.
    Dedicated,
}

impl std::str::FromStr for NetworkTaskMode {
    type Err = crate::error::HummerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fused" => Ok(NetworkTaskMode::Fused),
            "dedicated" => Ok(NetworkTaskMode::Dedicated),
            other => Err(crate::error::HummerError::Config(format!(
                "unknown network task mode '{other}': expected fused or dedicated"
            ))),
        }
    }
}
pub use receiver::ReceiverTask;
pub use sender::RemoteSender;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::NetworkTask;
    use crate::local::channel;
    use crate::types::CancelToken;
    use crate::types::metrics::SubtaskMetrics;
    use crate::types::{StreamEvent, TaskWaker};

    /// A data listener of `job` on a free local port, and the endpoint to connect to it.
    fn local_listener(job: &str, cancel: &CancelToken) -> (DataListener, String) {
        let listener = DataListener::bind("127.0.0.1", job, cancel.clone()).unwrap();
        let endpoint = format!("127.0.0.1:{}", listener.port());
        (listener, endpoint)
    }

    /// Garbage, a wrong job and a truncated header on the data port are refused (and logged);
    /// the listener goes on routing a good connection.
    #[test]
    fn bad_data_connections_are_refused_and_good_ones_still_routed() {
        use std::io::Write;
        let cancel = CancelToken::default();
        let (listener, endpoint) = local_listener("job-2", &cancel);
        let good = listener.register_channel(3);
        for garbage in [
            &b"\xff\xff\xff\xff\x00"[..],
            b"\x00\x00\x00\x05\x00abcd",
            b"\x00\x00",
        ] {
            let mut s = std::net::TcpStream::connect(&endpoint).unwrap();
            s.write_all(garbage).unwrap();
        }
        // Another job's connection for the same channel is refused too.
        drop(RemoteSender::<u64>::connect(&endpoint, "other-job", 3, None).unwrap());
        let _sender = RemoteSender::<u64>::connect(&endpoint, "job-2", 3, None).unwrap();
        let stream = good
            .recv_timeout(Duration::from_secs(5))
            .expect("the good connection");
        assert!(stream.tcp().peer_addr().is_ok());
        cancel.cancel();
    }

    /// A stalled consumer stops its producer after a bounded number of batches (credits), and
    /// everything sent arrives in order once it reads again.
    #[test]
    fn credits_bound_what_a_stalled_consumer_lets_through() {
        let cancel = CancelToken::default();
        let (listener, endpoint) = local_listener("job-1", &cancel);
        let capacity = 2;
        let producer = Arc::new(TaskWaker::default());
        let (tx, rx) = channel::<u64>(capacity, producer.clone(), Arc::new(TaskWaker::default()));
        let receiver = Box::new(ReceiverTask::new(
            7,
            listener.register_channel(7),
            tx,
            capacity,
        ));
        let cancel_r = cancel.clone();
        let receiving = std::thread::spawn(move || {
            producer.bind(std::thread::current());
            receiver.run(&cancel_r, &SubtaskMetrics::default())
        });
        let sent = Arc::new(AtomicUsize::new(0));
        let sent_t = sent.clone();
        let cancel_t = cancel.clone();
        let sending = std::thread::spawn(move || {
            let mut sender = RemoteSender::<u64>::connect(&endpoint, "job-1", 7, None).unwrap();
            for i in 0..200u64 {
                sender.send(StreamEvent::Batch(vec![i]), &cancel_t).unwrap();
                sent_t.fetch_add(1, Ordering::SeqCst);
                if i % 50 == 49 {
                    sender
                        .send(StreamEvent::Barrier(i / 50 + 1), &cancel_t)
                        .unwrap();
                }
            }
            sender.send(StreamEvent::EndOfInput, &cancel_t).unwrap();
        });
        std::thread::sleep(Duration::from_millis(300));
        let stalled_at = sent.load(Ordering::SeqCst);
        // Channel capacity, plus one batch held by the receiver, plus the credits granted for
        // what the channel took: never the hundreds a socket buffer would absorb.
        assert!(
            stalled_at <= 3 * capacity + 1,
            "{stalled_at} batches passed a stalled consumer"
        );
        let mut got = Vec::new();
        let mut barriers = Vec::new();
        loop {
            match rx.try_recv() {
                Some(StreamEvent::Batch(b)) => got.extend(b),
                // A barrier keeps its place among the batches.
                Some(StreamEvent::Barrier(id)) => barriers.push((id, got.len())),
                Some(StreamEvent::EndOfInput) => break,
                Some(other) => panic!("unexpected {other:?}"),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        assert_eq!(got, (0..200).collect::<Vec<_>>());
        assert_eq!(barriers, vec![(1, 50), (2, 100), (3, 150), (4, 200)]);
        sending.join().unwrap();
        receiving.join().unwrap().unwrap();
        cancel.cancel();
    }

    /// Watermarks cross the network in band: each arrives after the batches sent before it,
    /// with its value intact, extremes included.
    #[test]
    fn watermarks_keep_their_place_among_batches_across_the_network() {
        let cancel = CancelToken::default();
        let (listener, endpoint) = local_listener("job-3", &cancel);
        let (tx, rx) = channel::<u64>(4, Arc::new(TaskWaker::default()), Arc::default());
        let receiver = Box::new(ReceiverTask::new(1, listener.register_channel(1), tx, 4));
        let cancel_r = cancel.clone();
        let receiving =
            std::thread::spawn(move || receiver.run(&cancel_r, &SubtaskMetrics::default()));
        let marks = [
            crate::types::MIN_WATERMARK,
            -5,
            0,
            1_700_000_000_000,
            crate::types::MAX_WATERMARK,
        ];
        let mut sender = RemoteSender::<u64>::connect(&endpoint, "job-3", 1, None).unwrap();
        for (i, w) in marks.iter().enumerate() {
            sender
                .send(StreamEvent::Batch(vec![i as u64]), &cancel)
                .unwrap();
            sender.send(StreamEvent::Watermark(*w), &cancel).unwrap();
        }
        let mut seen = Vec::new();
        let mut records = 0;
        while seen.len() < marks.len() {
            match rx.try_recv() {
                Some(StreamEvent::Batch(b)) => records += b.len(),
                Some(StreamEvent::Watermark(w)) => seen.push((records, w)),
                Some(other) => panic!("unexpected {other:?}"),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        let expected: Vec<(usize, i64)> =
            marks.iter().enumerate().map(|(i, w)| (i + 1, *w)).collect();
        assert_eq!(seen, expected);
        sender.send(StreamEvent::EndOfInput, &cancel).unwrap();
        receiving.join().unwrap().unwrap();
        cancel.cancel();
    }
}
