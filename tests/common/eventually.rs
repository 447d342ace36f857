//! Polling until something holds: `eventually(timeout, what, f)`.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How often [`eventually`] looks again.
pub const POLL: Duration = Duration::from_millis(25);

/// What a poll of [`eventually`] may return: `bool`, `Option<T>`, or `Result<T, E>` whose
/// `Err` is the observation shown when the wait times out.
pub trait Poll {
    /// What `eventually` returns once the poll succeeds.
    type Value;
    /// The value, or the observation of a poll that did not succeed.
    fn check(self) -> Result<Self::Value, String>;
}

impl Poll for bool {
    type Value = ();
    fn check(self) -> Result<(), String> {
        if self { Ok(()) } else { Err("false".into()) }
    }
}

impl<T> Poll for Option<T> {
    type Value = T;
    fn check(self) -> Result<T, String> {
        self.ok_or_else(|| "None".into())
    }
}

impl<T, E: Display> Poll for Result<T, E> {
    type Value = T;
    fn check(self) -> Result<T, String> {
        self.map_err(|e| e.to_string())
    }
}

/// Calls `f` every [`POLL`] until it succeeds (`true`, `Some(v)`, `Ok(v)`) and returns its
/// value; panics with `what` (what was awaited) and the last observation (`Err(e)` shows `e`)
/// once `timeout` has passed. `f` runs at least once.
pub fn eventually<P: Poll>(timeout: Duration, what: &str, mut f: impl FnMut() -> P) -> P::Value {
    let started = Instant::now();
    loop {
        match f().check() {
            Ok(value) => return value,
            Err(seen) if started.elapsed() >= timeout => {
                panic!("timed out after {timeout:?} waiting for {what}; last seen: {seen}")
            }
            Err(_) => std::thread::sleep(POLL),
        }
    }
}
