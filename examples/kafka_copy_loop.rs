//! The baseline of `bench/kafka.sh`: a hand-written consumer → producer loop with the same
//! Kafka client (rskafka) Hummer uses, copying every partition of one topic into the same
//! partition of another, one task per partition, each fetch produced as one batch. It is the
//! practical limit of a Kafka → map → Kafka job on that client and broker.
//!
//! `cargo run --release --example kafka_copy_loop -- BROKERS INPUT OUTPUT`: copies INPUT to
//! its end as it is at the start, prints `records seconds`.

use std::time::Instant;

use rskafka::client::ClientBuilder;
use rskafka::client::partition::{Compression, UnknownTopicHandling};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, brokers, input, output] = &args[..] else {
        return Err("usage: kafka_copy_loop BROKERS INPUT OUTPUT".into());
    };
    let client = ClientBuilder::new(vec![brokers.clone()]).build().await?;
    let partitions: Vec<i32> = client
        .list_topics()
        .await?
        .into_iter()
        .find(|t| t.name == *input)
        .ok_or("no such input topic")?
        .partitions
        .into_iter()
        .collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for p in partitions {
        let from = client
            .partition_client(input.clone(), p, UnknownTopicHandling::Error)
            .await?;
        let to = client
            .partition_client(output.clone(), p, UnknownTopicHandling::Error)
            .await?;
        tasks.push(tokio::spawn(async move {
            // The end now: a fetch's high watermark.
            let (_, end) = from.fetch_records(0, 1..2, 0).await?;
            let (mut offset, mut copied) = (0i64, 0u64);
            while offset < end {
                let (records, _) = from.fetch_records(offset, 1..(1 << 20), 100).await?;
                let Some(last) = records.last() else { break };
                offset = last.offset + 1;
                let batch: Vec<_> = records
                    .into_iter()
                    .filter(|r| r.offset < end)
                    .map(|r| r.record)
                    .collect();
                copied += batch.len() as u64;
                to.produce(batch, Compression::NoCompression).await?;
            }
            Ok::<u64, rskafka::client::error::Error>(copied)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    println!("{total} {:.3}", started.elapsed().as_secs_f64());
    Ok(())
}
