//! A timer-based job: alert when a sensor has been silent for 5 s of event time. Each reading
//! moves the sensor's event-time timer; a timer that fires means no reading came in time.
//!
//! ```sh
//! cargo run --release --example silence_alert
//! ```

use hummer::operators::keyed_process_function::{KeyedProcessFunction, ProcessContext};
use hummer::prelude::*;

/// A reading: (sensor, event time in ms, value).
type Reading = (u32, i64, f64);

const SILENCE_MS: i64 = 5_000;

#[derive(Clone)]
struct SilenceAlert;

impl KeyedProcessFunction<u32, Reading> for SilenceAlert {
    /// The time of the sensor's last reading.
    type State = i64;
    type Out = String;

    fn process_element(&mut self, r: Reading, ctx: &mut ProcessContext<'_, '_, u32, i64, String>) {
        if let Some(last) = ctx.state().value().copied() {
            ctx.timer_service()
                .delete_event_time_timer(last + SILENCE_MS);
        }
        ctx.state().update(r.1);
        ctx.timer_service()
            .register_event_time_timer(r.1 + SILENCE_MS);
    }

    fn on_timer(&mut self, at: Timestamp, ctx: &mut ProcessContext<'_, '_, u32, i64, String>) {
        let sensor = *ctx.key();
        ctx.collect(format!(
            "sensor {sensor} silent since {} ms (alert at {at} ms)",
            at - SILENCE_MS
        ));
        ctx.state().clear();
    }
}

fn main() -> Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2)
        .set_auto_watermark_interval(std::time::Duration::from_millis(20));
    // Ten sensors report every 100 ms of event time (replayed 30 times faster than real time,
    // so periodic watermarks advance while it runs); sensor 3 stops at 20 s and sensor 7
    // pauses from 40 s to 48 s.
    let readings = env.from_source(
        GeneratorSource::new(|i| {
            let (sensor, t) = ((i % 10) as u32, (i / 10) as i64 * 100);
            (sensor, t, (i % 13) as f64)
        })
        .with_count(6_000)
        .with_rate(3_000.0),
        WatermarkStrategy::for_monotonous_timestamps()
            .with_timestamp_assigner(|r: &Reading, _| r.1),
    );
    let alerts = readings
        .filter(|r: &Reading| {
            let stopped = r.0 == 3 && r.1 >= 20_000;
            let paused = r.0 == 7 && (40_000..48_000).contains(&r.1);
            !stopped && !paused
        })
        .key_by(|r: &Reading| r.0)
        .process_function(SilenceAlert)
        .collect();
    let mut result = env.execute("silence alerts")?;
    let mut alerts = result.collected(&alerts)?;
    alerts.sort();
    for a in &alerts {
        println!("{a}");
    }
    Ok(())
}
