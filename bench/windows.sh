#!/usr/bin/env bash
# bench/windows.sh [EVENTS] [RATE] [SECONDS] : the event-time window benchmark
# (examples/window_bench.rs): a tumbling-window count, 10 s windows, 10,000 keys, 4 s out of
# orderness, parallelism 2. First at full speed (events/s, peak RSS), then at RATE events/s
# (default 100,000) for SECONDS (default 60): p50 / p99 / max from the watermark passing a
# window's end to its result, with the default 200 ms watermark interval and with 10 ms.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build -q --release --manifest-path "$here/Cargo.toml" --example window_bench
bin=${CARGO_TARGET_DIR:-$here/target}/release/examples/window_bench
"$bin" throughput "${1:-20000000}"
"$bin" latency "${2:-100000}" "${3:-60}" 200
"$bin" latency "${2:-100000}" "${3:-60}" 10
