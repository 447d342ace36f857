//! The two test tiers. Plain `cargo test` is the light tier: it needs nothing but the Rust
//! toolchain, and a test that needs a Kafka broker, a browser, qemu, root or an S3 server
//! skips, saying so in one line. `./scripts/test.sh` installs all of those and sets
//! `HUMMER_HEAVY_TESTS=1`, which runs every test (a missing dependency then fails the test).

use std::io::Write;

/// Whether the calling test, which needs `needs`, runs; prints the one line of a skip.
pub fn enabled(needs: &str) -> bool {
    if std::env::var_os("HUMMER_HEAVY_TESTS").is_some_and(|v| v == "1") {
        return true;
    }
    // libtest names each test's thread after the test.
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    // Written past the test harness's capture, so that `cargo test` shows it.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: needs {needs}; run it with HUMMER_HEAVY_TESTS=1 (./scripts/test.sh \
         installs what the heavy tier needs and sets it)"
    );
    false
}

/// Returns from the calling test unless the heavy tier runs: `require_heavy!("a browser")`.
#[macro_export]
macro_rules! require_heavy {
    ($needs:expr) => {
        if !$crate::common::heavy::enabled($needs) {
            return;
        }
    };
}
