#!/usr/bin/env bash
# bench/cluster_latency.sh [RATE] [SECONDS] : streaming latency across a network edge: a
# JobManager and 2 TaskManagers with one slot each (processes on this machine), generator ->
# map -> key_by -> reduce at parallelism 2 with every record keyed to the other worker
# (examples/streaming_latency.rs in cluster mode). Prints p50 / p99 / p99.9 / max.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer --example streaming_latency
bin=${CARGO_TARGET_DIR:-$here/target}/release
work=$(mktemp -d)
trap '"$bin/hummer" cluster stop --dir "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$bin/hummer" cluster start --taskmanagers 2 --slots 1 --dir "$work" >/dev/null
HUMMER_TLS_DIR=$work/tls HUMMER_JOBMANAGER=$(cat "$work/jobmanager") "$bin/examples/streaming_latency" "${1:-100000}" "${2:-10}" 2
