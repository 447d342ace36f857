//! Streaming WordCount over lines from a TCP socket: prints each word's running count.
//!
//! ```sh
//! nc -lk 9999 &                      # a server to type lines into
//! cargo run --release --example socket_wordcount -- 127.0.0.1 9999
//! ```
//!
//! The job runs until the server closes the connection (or Ctrl-C). In streaming mode the keyed
//! count emits an update for every word as it arrives.

use anyhow::Context;
use hummer::jobs::wordcount::word_counts;
use hummer::prelude::*;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let host = args.next().unwrap_or_else(|| "127.0.0.1".to_string());
    let port: u16 = args
        .next()
        .unwrap_or_else(|| "9999".to_string())
        .parse()
        .context("PORT must be a number between 0 and 65535")?;

    let env = StreamExecutionEnvironment::local();
    env.set_parallelism(2);
    let lines = env.socket_text_stream(host, port);
    word_counts(&lines).print();
    env.execute("Socket WordCount")
        .context("Socket WordCount failed")?;
    Ok(())
}
