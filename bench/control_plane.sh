#!/usr/bin/env bash
# bench/control_plane.sh [N] [SECONDS] : a JobManager (heartbeat timeout 5 s) against N
# simulated TaskManagers heartbeating every second over real TCP connections
# (examples/control_plane_load.rs). Reports: TaskManagers registered at the end, how many the
# JobManager declared lost, its CPU share and memory over the run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-10000}
SECONDS_RUN=${2:-30}
ulimit -n "$(ulimit -Hn)"  # each process holds N sockets
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer --example control_plane_load
bin=${CARGO_TARGET_DIR:-$here/target}/release
work=$(mktemp -d)
"$bin/hummer" jobmanager --insecure --rpc 127.0.0.1:0 --rest 127.0.0.1:0 --heartbeat-timeout-ms 5000 \
  > "$work/jm.log" 2>&1 &
jm_pid=$!
trap 'kill $jm_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$work/jm.log" && break; sleep 0.1; done
rpc=$(awk '/listening on/ {print $4}' "$work/jm.log")
rest=$(awk '/rest on/ {print $4}' "$work/jm.log")
cpu() { awk '{print $14 + $15}' "/proc/$jm_pid/stat"; }
"$bin/examples/control_plane_load" "$rpc" "$N" "$SECONDS_RUN" 1000 &
load_pid=$!
sleep $((SECONDS_RUN / 3))
c0=$(cpu); t0=$EPOCHREALTIME
sleep $((SECONDS_RUN / 3))
c1=$(cpu); t1=$EPOCHREALTIME
tms=$(curl -s "http://$rest/overview" | python3 -c 'import json,sys; print(json.load(sys.stdin)["taskmanagers"])')
wait $load_pid
lost=$(grep -c "TaskManager lost: no heartbeat" "$work/jm.log" || true)
hz=$(getconf CLK_TCK)
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v n="$N" -v tms="$tms" -v lost="$lost" \
  -v rss="$(awk '/VmRSS/ {print $2}' /proc/$jm_pid/status)" -v hwm="$(awk '/VmHWM/ {print $2}' /proc/$jm_pid/status)" 'BEGIN {
  printf "JobManager with %d simulated TaskManagers (heartbeat each 1 s, timeout 5 s):\n", n
  printf "  registered mid-run: %d; declared lost for a missed heartbeat: %d\n", tms, lost
  printf "  CPU: %.1f%% of one core; RSS %.1f MB (peak %.1f MB)\n", 100 * (c1 - c0) / hz / (t1 - t0), rss / 1024, hwm / 1024 }'
