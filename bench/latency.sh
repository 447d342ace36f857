#!/usr/bin/env bash
# bench/latency.sh [RATE] [SECONDS] [PARALLELISM] : streaming per-record end-to-end latency of
# generator -> map -> key_by -> reduce -> sink (examples/streaming_latency.rs), default
# 100,000 records/s for 10 s at parallelism 2 with the default buffer timeout. Prints
# p50 / p99 / p99.9 / max, and the CPU the process used.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build -q --release --manifest-path "$here/Cargo.toml" --example streaming_latency
bin=${CARGO_TARGET_DIR:-$here/target}/release/examples/streaming_latency
/usr/bin/time -f "process: %e s wall, %U s user, %S s sys, peak RSS %M KB" \
  "$bin" "${1:-100000}" "${2:-10}" "${3:-2}"
