//! Tumbling-window count: page views per page per 10 s of event time, from a generated click
//! stream that arrives up to 2 s out of order; clicks later than that go to a side output
//! instead of vanishing.
//!
//! ```sh
//! cargo run --release --example tumbling_window_count
//! ```

use std::time::Duration;

use hummer::prelude::*;

/// A click: (page, user, event time in ms).
type Click = (String, u32, i64);

fn main() -> Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_runtime_mode(RuntimeMode::Streaming);
    let pages = ["home", "search", "cart", "checkout"];
    // 200,000 clicks at 100,000 a second, 1 ms apart in event time, each up to 2 s late;
    // every 1,000th is 30 s late (too late for its window once the watermark has passed it).
    let clicks = env.add_source(
        GeneratorSource::new(move |i| {
            let late = if i % 1_000 == 999 {
                30_000
            } else {
                (i * 7_919 % 2_000) as i64
            };
            let page = pages[(i % 4) as usize].to_string();
            (page, (i % 97) as u32, i as i64 - late)
        })
        .with_count(200_000)
        .with_rate(100_000.0),
    );
    let late_clicks = OutputTag::<Click>::new("late clicks");
    let counts = clicks
        .assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_secs(2))
                .with_timestamp_assigner(|c: &Click, _| c.2),
        )
        .key_by(|c: &Click| c.0.clone())
        .window(TumblingEventTimeWindows::of(Duration::from_secs(10)))
        .side_output_late_data(&late_clicks)
        .aggregate(CountAggregate);
    let late = counts.get_side_output(&late_clicks)?.collect();
    let counts = counts.collect();
    let mut result = env.execute("page views per 10 s")?;
    let mut rows = result.collected(&counts)?;
    rows.sort_by_key(|r| (r.window.start, r.key.clone()));
    for r in rows.iter().take(12) {
        println!("{} {:>8}: {} views", r.window, r.key, r.value);
    }
    println!("... {} window results in all", rows.len());
    println!(
        "{} clicks came too late and went to the side output",
        result.collected(&late)?.len()
    );
    Ok(())
}
