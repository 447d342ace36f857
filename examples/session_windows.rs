//! Session windows: each user's bursts of activity, closed by 30 s (event time) without a
//! click; for each session its bounds, length and number of clicks, computed by a window
//! process function that sees all of the session's records.
//!
//! ```sh
//! cargo run --release --example session_windows
//! ```

use std::time::Duration;

use hummer::prelude::*;

fn main() -> Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2);
    // Users 0..5 click in bursts: 20 clicks 1 s apart, then a pause of 45 s, and so on.
    let clicks = env.from_source(
        GeneratorSource::new(|i| {
            let user = (i % 5) as u32;
            let n = i / 5;
            let (burst, within) = (n / 20, n % 20);
            (
                user,
                (burst * 65 + within) as i64 * 1_000 + user as i64 * 300,
            )
        })
        .with_count(1_000),
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|c: &(u32, i64), _| c.1),
    );
    let sessions = clicks
        .key_by(|c: &(u32, i64)| c.0)
        .window(EventTimeSessionWindows::with_gap(Duration::from_secs(30)))
        .process(
            |user: &u32,
             session: &TimeWindow,
             clicks: &[(u32, i64)],
             out: &mut Collector<String>| {
                out.collect(format!(
                    "user {user}: session {session}, {} s long, {} clicks",
                    (session.end - session.start) / 1_000,
                    clicks.len()
                ))
            },
        )
        .collect();
    let mut result = env.execute("sessions")?;
    let mut lines = result.collected(&sessions)?;
    lines.sort();
    for line in lines.iter().take(10) {
        println!("{line}");
    }
    println!("... {} sessions in all", lines.len());
    Ok(())
}
