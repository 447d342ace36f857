//! Wake-ups of task threads: a task with nothing to do parks, and whoever gives it work
//! unparks it.

use std::sync::OnceLock;
use std::thread::Thread;
use std::time::Duration;

/// Wakes one task thread. Set once, before any data flows, by the executor.
#[derive(Default, Debug)]
pub struct TaskWaker {
    thread: OnceLock<Thread>,
}

impl TaskWaker {
    /// Binds the waker to the thread that runs the task.
    pub fn bind(&self, thread: Thread) {
        // A second bind would be an executor bug; the first binding stays.
        let _ = self.thread.set(thread);
    }

    /// Unparks the task thread (cheap when it is not parked).
    pub fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// How long a parked thread sleeps at most before it re-checks cancellation.
pub const PARK_SAFETY_TIMEOUT: Duration = Duration::from_millis(50);
