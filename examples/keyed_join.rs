//! A two-input keyed join: orders joined with their customers as both streams arrive.
//!
//! ```sh
//! cargo run --release --example keyed_join
//! ```
//!
//! Both inputs are partitioned by customer id, so matching records meet in the same subtask;
//! each side's records are kept and every matching pair is emitted once, when the second of the
//! pair arrives. The result is then totalled per customer name.

use hummer::prelude::*;

fn main() -> anyhow::Result<()> {
    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2);

    let customers = env.from_collection(
        ["ada", "grace", "edsger", "barbara"]
            .iter()
            .enumerate()
            .map(|(id, name)| (id as u32, name.to_string()))
            .collect(),
    );
    let orders = env.add_source(
        GeneratorSource::new(|i| ((i % 5) as u32, 10 + (i * 7) % 90)).with_count(1_000),
    );

    let totals = orders
        .key_by(|order: &(u32, u64)| order.0)
        .join(
            &customers.key_by(|c: &(u32, String)| c.0),
            |_, order: &(u32, u64), customer: &(u32, String)| (customer.1.clone(), order.1),
        )
        .name("JoinOrdersWithCustomers")
        .key_by(|line: &(String, u64)| line.0.clone())
        .sum(|line: &(String, u64)| line.1)
        .collect();

    let mut result = env.execute("Keyed join")?;
    let mut totals = result.collected(&totals)?;
    totals.sort();
    for (customer, total) in totals {
        println!("{customer}\t{total}");
    }
    println!("(orders of customer 4 have no customer record and are not in the join)");
    Ok(())
}
