//! Every placement strategy on the same simulated clusters: makespan, throughput, scheduler
//! time share, migrations.
//!
//! ```sh
//! cargo run --release --example scheduler_sim -- [NODES] [TASKS] [SEEDS]
//! ```
//!
//! Defaults: 200 nodes, 10,000 tasks, 3 seeds.

use hummer::scheduler::rfts::RftsConfig;
use hummer::scheduler::simulator::{
    FairStrategy, GeneticStrategy, PullStrategy, RftsStrategy, RoundRobinStrategy, Scenario,
    Strategy, simulate,
};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let tasks: usize = args.next().map_or(Ok(10_000), |a| a.parse())?;
    let seeds: u64 = args.next().map_or(Ok(3), |a| a.parse())?;
    println!(
        "| seed | strategy | makespan s | throughput tasks/s | vs round-robin | scheduler ms | \
         share of makespan | migrations |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for seed in 0..seeds {
        let scenario = Scenario::generate(nodes, tasks, seed);
        let strategies: Vec<Box<dyn Strategy>> = vec![
            Box::new(RoundRobinStrategy),
            Box::new(FairStrategy),
            Box::new(GeneticStrategy {
                seed,
                population: 30,
                generations: 40,
            }),
            Box::new(PullStrategy),
            Box::new(RftsStrategy {
                config: RftsConfig::default(),
                seed,
            }),
        ];
        let mut baseline = None;
        for mut s in strategies {
            let r = simulate(&scenario, s.as_mut());
            let rr = *baseline.get_or_insert(r.makespan);
            // Simulated seconds stand for real ones: the scheduler's own (real) time as a share
            // of the job's time.
            println!(
                "| {seed} | {} | {:.1} | {:.2} | {:+.1} % | {:.1} | {:.4} % | {} |",
                r.strategy,
                r.makespan,
                r.throughput,
                100.0 * (r.makespan - rr) / rr,
                r.scheduler_seconds * 1e3,
                100.0 * r.scheduler_seconds / r.makespan,
                r.migrations
            );
        }
    }
    Ok(())
}
