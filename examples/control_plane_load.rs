//! Control-plane load generator: N simulated TaskManagers, each a real TCP connection that
//! registers and heartbeats, against a running JobManager.
//!
//! ```sh
//! cargo run --release --example control_plane_load -- JOBMANAGER [N] [SECONDS] [INTERVAL_MS]
//! ```
//!
//! Defaults: 10,000 TaskManagers, 30 s, a heartbeat each second. Prints how many registered
//! and the largest gap seen between two heartbeats sent by one connection (the generator's
//! own lag). `bench/control_plane.sh` runs it against a JobManager and reads the JobManager's
//! side: every TaskManager still registered, none declared lost, its CPU and memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hummer::cluster::protocol::{
    Message, PROTOCOL_VERSION, Resources, Role, TaskManagerInfo, async_io,
};
use tokio::net::TcpStream;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let jobmanager = args.next().ok_or_else(|| {
        anyhow::anyhow!("usage: control_plane_load JOBMANAGER [N] [SECONDS] [INTERVAL_MS]")
    })?;
    let n: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let seconds: u64 = args.next().map_or(Ok(30), |a| a.parse())?;
    let interval = Duration::from_millis(args.next().map_or(Ok(1000), |a| a.parse())?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(run(jobmanager, n, seconds, interval))
}

async fn run(jobmanager: String, n: usize, seconds: u64, interval: Duration) -> anyhow::Result<()> {
    let registered = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let worst_gap_us = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    let connect_limit = Arc::new(tokio::sync::Semaphore::new(256));
    for i in 0..n {
        let (jm, registered, failed, gap) = (
            jobmanager.clone(),
            registered.clone(),
            failed.clone(),
            worst_gap_us.clone(),
        );
        let permit = connect_limit.clone().acquire_owned().await?;
        tasks.push(tokio::spawn(async move {
            let result = simulate(i, &jm, interval, deadline, &registered, &gap, permit).await;
            if let Err(e) = result
                && failed.fetch_add(1, Ordering::Relaxed) < 5
            {
                eprintln!("simulated TaskManager {i}: {e}");
            }
        }));
    }
    println!(
        "{} of {n} simulated TaskManagers registered in {:.1} s",
        registered.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    for t in tasks {
        let _ = t.await;
    }
    println!(
        "registered {}, failed {}, largest gap between two heartbeats of one connection \
         {:.1} ms (interval {} ms)",
        registered.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        worst_gap_us.load(Ordering::Relaxed) as f64 / 1000.0,
        interval.as_millis()
    );
    Ok(())
}

async fn simulate(
    i: usize,
    jobmanager: &str,
    interval: Duration,
    deadline: Instant,
    registered: &AtomicUsize,
    worst_gap_us: &AtomicU64,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> anyhow::Result<()> {
    let stream = TcpStream::connect(jobmanager).await?;
    let (mut reader, mut writer) = stream.into_split();
    let hello = Message::Hello {
        version: PROTOCOL_VERSION,
        role: Role::TaskManager(TaskManagerInfo {
            id: format!("simulated-{i}"),
            slots: 1,
            cores: 1,
            memory_bytes: 1 << 30,
            data_host: "127.0.0.1".into(),
            data_networks: Vec::new(),
            running: Vec::new(),
        }),
    };
    async_io::write(&mut writer, &hello).await?;
    match async_io::read(&mut reader).await? {
        Message::Registered(_) => {}
        other => anyhow::bail!("registration answered with {other:?}"),
    }
    registered.fetch_add(1, Ordering::Relaxed);
    drop(permit);
    // Drain whatever the JobManager sends (nothing, normally).
    tokio::spawn(async move { while async_io::read(&mut reader).await.is_ok() {} });
    // Spread the heartbeats of all connections over the interval.
    tokio::time::sleep(interval.mul_f64((i % 1000) as f64 / 1000.0)).await;
    let mut last = Instant::now();
    while Instant::now() < deadline {
        async_io::write(&mut writer, &Message::Heartbeat(Resources::default())).await?;
        let gap = last.elapsed();
        last = Instant::now();
        worst_gap_us.fetch_max(gap.as_micros() as u64, Ordering::Relaxed);
        tokio::time::sleep(interval).await;
    }
    Ok(())
}
