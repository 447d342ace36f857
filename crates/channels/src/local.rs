//! Bounded, lock-free, batched channels between subtasks of one process.
//!
//! A channel connects one producer subtask to one consumer subtask and carries
//! [`StreamEvent`]s: batches of records and control events. It is a fixed-capacity
//! lock-free ring ([`crossbeam_queue::ArrayQueue`]) of *batches*, so the synchronisation cost
//! is paid once per batch, never per record.
//!
//! Waiting never spins. Every task thread owns a [`TaskWaker`]; a consumer with no input parks
//! its thread and producers unpark it after each push. A producer that finds the ring full
//! (backpressure) raises the channel's `producer_waiting` flag and parks; the consumer unparks
//! it after its next pop. Both sides put a `SeqCst` fence between raising a flag and
//! re-checking the ring, so a wake-up cannot be lost; parking also has a short timeout so that
//! cancellation is noticed even if a peer died.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering, fence};

use crossbeam_queue::ArrayQueue;

use crate::error::{HummerError, Result};
use crate::types::{CancelToken, PARK_SAFETY_TIMEOUT, StreamEvent, TaskWaker};

struct Shared<T> {
    ring: ArrayQueue<StreamEvent<T>>,
    producer_waiting: AtomicBool,
    producer: Arc<TaskWaker>,
    consumer: Arc<TaskWaker>,
}

/// The producing end of a channel.
pub struct ChannelSender<T> {
    shared: Arc<Shared<T>>,
}

/// The consuming end of a channel.
pub struct ChannelReceiver<T> {
    shared: Arc<Shared<T>>,
}

/// Creates a channel holding at most `capacity` events (batches) in flight.
pub fn channel<T>(
    capacity: usize,
    producer: Arc<TaskWaker>,
    consumer: Arc<TaskWaker>,
) -> (ChannelSender<T>, ChannelReceiver<T>) {
    let shared = Arc::new(Shared {
        ring: ArrayQueue::new(capacity.max(1)),
        producer_waiting: AtomicBool::new(false),
        producer,
        consumer,
    });
    (
        ChannelSender {
            shared: shared.clone(),
        },
        ChannelReceiver { shared },
    )
}

impl<T> ChannelSender<T> {
    /// Sends an event, parking while the channel is full (backpressure).
    ///
    /// Returns [`HummerError::Cancelled`] if the job is cancelled while waiting.
    pub fn send(&self, event: StreamEvent<T>, cancel: &CancelToken) -> Result<()> {
        let shared = &*self.shared;
        let mut event = event;
        loop {
            match shared.ring.push(event) {
                Ok(()) => {
                    shared.consumer.wake();
                    return Ok(());
                }
                Err(back) => event = back,
            }
            shared.producer_waiting.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            match shared.ring.push(event) {
                Ok(()) => {
                    shared.producer_waiting.store(false, Ordering::Relaxed);
                    shared.consumer.wake();
                    return Ok(());
                }
                Err(back) => event = back,
            }
            if cancel.is_cancelled() {
                return Err(HummerError::Cancelled);
            }
            std::thread::park_timeout(PARK_SAFETY_TIMEOUT);
        }
    }

    /// True when the ring is full: the consumer is slower than this producer.
    pub fn is_full(&self) -> bool {
        self.shared.ring.is_full()
    }
}

impl<T> ChannelReceiver<T> {
    /// Takes the next event without blocking.
    pub fn try_recv(&self) -> Option<StreamEvent<T>> {
        let shared = &*self.shared;
        let event = shared.ring.pop()?;
        fence(Ordering::SeqCst);
        if shared.producer_waiting.swap(false, Ordering::SeqCst) {
            shared.producer.wake();
        }
        Some(event)
    }

    /// Events waiting in the ring.
    pub fn len(&self) -> usize {
        self.shared.ring.len()
    }

    /// True when nothing waits in the ring.
    pub fn is_empty(&self) -> bool {
        self.shared.ring.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;
    use std::time::Duration;

    fn bound_pair(cap: usize) -> (ChannelSender<u64>, ChannelReceiver<u64>, Arc<TaskWaker>) {
        let p = Arc::new(TaskWaker::default());
        let c = Arc::new(TaskWaker::default());
        let (s, r) = channel(cap, p.clone(), c.clone());
        (s, r, c)
    }

    #[test]
    fn delivers_batches_in_order_across_threads_with_backpressure() {
        let p = Arc::new(TaskWaker::default());
        let cw = Arc::new(TaskWaker::default());
        let (s, r) = channel(2, p.clone(), cw.clone());
        let cancel = CancelToken::default();
        cw.bind(thread::current());
        let producer = {
            let cancel = cancel.clone();
            thread::spawn(move || {
                p.bind(thread::current());
                for i in 0..1000u64 {
                    s.send(StreamEvent::Batch(vec![i, i + 1]), &cancel).unwrap();
                }
                s.send(StreamEvent::EndOfInput, &cancel).unwrap();
            })
        };
        let mut expected = 0u64;
        loop {
            match r.try_recv() {
                Some(StreamEvent::Batch(b)) => {
                    assert_eq!(b, vec![expected, expected + 1]);
                    expected += 1;
                }
                Some(StreamEvent::EndOfInput) => break,
                Some(other) => panic!("only batches were sent, got {other:?}"),
                None => thread::park_timeout(Duration::from_millis(1)),
            }
        }
        assert_eq!(expected, 1000);
        producer.join().unwrap();
    }

    #[test]
    fn full_channel_send_returns_cancelled_after_cancel() {
        let (s, _r, _cw) = bound_pair(1);
        let cancel = CancelToken::default();
        s.send(StreamEvent::Batch(vec![1]), &cancel).unwrap();
        assert!(s.is_full());
        cancel.cancel();
        let err = s.send(StreamEvent::Batch(vec![2]), &cancel).unwrap_err();
        assert!(matches!(err, HummerError::Cancelled));
    }
}
