#!/usr/bin/env bash
# bench/failover.sh [TRIALS] [LEASE_MS] : time from `kill -9` of the leader JobManager to the
# job running again under the standby. Per trial: a fresh cluster (two JobManagers sharing an
# HA directory, leases of LEASE_MS, and 3 TaskManagers x 2 slots, mutual TLS), an exactly-once
# EventCount job at parallelism 6 (checkpoints every 100 ms), the leader killed 2 s after the
# job runs. Prints every trial and the median. Defaults: 5 trials, 2000 ms.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
TRIALS=${1:-5}
LEASE_MS=${2:-2000}
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
hummer=${CARGO_TARGET_DIR:-$here/target}/release/hummer
times=()
for ((t = 1; t <= TRIALS; t++)); do
  work=$(mktemp -d)
  pids=()
  "$hummer" cluster certs --dir "$work/tls" > /dev/null
  export HUMMER_TLS_DIR=$work/tls HUMMER_JOBMANAGER=ha:$work/ha
  for j in 1 2; do
    "$hummer" jobmanager --rpc 127.0.0.1:0 --rest 127.0.0.1:0 --ha-dir "$work/ha" \
      --lease-ms "$LEASE_MS" --tls-dir "$work/tls" --data-dir "$work/jm-$j" > "$work/jm-$j.log" 2>&1 &
    pids+=($!)
    disown
    sleep 0.3
  done
  for i in 2 3 4; do
    "$hummer" taskmanager --jobmanager "ha:$work/ha" --tls-dir "$work/tls" --slots 2 \
      --data-addr "127.0.0.$i" --cache-dir "$work/cache-$i" > "$work/tm-$i.log" 2>&1 &
    pids+=($!)
    disown
  done
  sleep 1
  "$hummer" run event-count --parallelism 6 --wait --verify --events 400000 --rate 25000 \
    --checkpoint-interval-ms 100 --restart fixed-delay:10:200ms \
    --checkpoint-dir "$work/checkpoints" --out "$work/out" > "$work/client.log" 2>&1 &
  client=$!
  until id=$(grep -o 'submitted job [0-9a-f]*' "$work/client.log" | cut -d' ' -f3) && [ -n "$id" ]; do sleep 0.05; done
  until "$hummer" status "$id" 2>/dev/null | grep -q Running; do sleep 0.05; done
  sleep 2
  leader=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["holder"].split("-")[1])' "$work/ha/leader.json")
  token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$work/ha/leader.json")
  t0=$EPOCHREALTIME
  kill -9 "$leader"
  while :; do
    now=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$work/ha/leader.json")
    if [ "$now" != "$token" ] && "$hummer" status "$id" 2>/dev/null | grep -q Running; then break; fi
    sleep 0.02
  done
  t1=$EPOCHREALTIME
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  times+=("$secs")
  if wait "$client" && grep -q "every event exactly once" "$work/client.log"; then ok="exactly once"; else ok="FAILED"; fi
  echo "trial $t: running again $secs s after the kill ($ok)"
  kill "${pids[@]}" 2>/dev/null || true
  sleep 0.5
  rm -rf "$work"
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
echo "median over $TRIALS trials, ${LEASE_MS} ms lease: $median s from kill -9 of the leader to the job running again"
