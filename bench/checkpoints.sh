#!/usr/bin/env bash
# bench/checkpoints.sh [EVENTS] [ROUNDS] : checkpoint benchmarks (examples/checkpoint_bench.rs)
# - throughput of EventCount with a checkpoint every second against none (same input, runs
#   alternating; default 20 million events, 3 rounds);
# - time from an injected failure to processing resumed (restart delay 0 and Flink's 1 s);
# - size and duration of checkpoints of a keyed count over 1 million keys.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build -q --release --manifest-path "$here/Cargo.toml" --example checkpoint_bench
bin=${CARGO_TARGET_DIR:-$here/target}/release/examples/checkpoint_bench
echo "== throughput overhead"
"$bin" overhead "${1:-20000000}" "${2:-3}"
echo "== recovery time"
"$bin" recovery 0
"$bin" recovery 1000
echo "== 1 million keys"
/usr/bin/time -f "process: peak RSS %M KB" "$bin" state 1000000
