#!/usr/bin/env bash
# bench/tls.sh [MB] [ROUNDS] : what mutual TLS costs, in one run. Two local clusters (a
# JobManager and 3 TaskManagers x 2 slots as processes on this machine), one with TLS (the
# default of `hummer cluster start`) and one with --insecure, alternating in every round:
# - distributed WordCount on the same corpus at parallelism 6 (outputs checked): median walls
#   and the TLS throughput as a ratio of plaintext;
# - cross-worker streaming latency (examples/streaming_latency: every record crosses to the
#   other worker, 50,000 records/s for 10 s, p50 / p99 / p99.9) on each cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-64}
ROUNDS=${2:-5}
source "$here/bench/corpus.sh"
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer --example streaming_latency
bin=${CARGO_TARGET_DIR:-$here/target}/release
hummer=$bin/hummer
work=$(mktemp -d)
stop() {
  for c in tls plain tls-lat plain-lat; do "$hummer" cluster stop --dir "$work/$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap stop EXIT
"$hummer" cluster start --taskmanagers 3 --slots 2 --dir "$work/tls" >/dev/null
"$hummer" cluster start --insecure --taskmanagers 3 --slots 2 --dir "$work/plain" >/dev/null
cat "$corpus" > /dev/null

run() { # name dir tls-dir : appends the wall time of a cluster WordCount to $work/name.times
  local name=$1 dir=$2 tls=$3
  rm -rf "$work/out-$name"
  local t0=$EPOCHREALTIME
  HUMMER_TLS_DIR=$tls "$hummer" wordcount "$corpus" --top 0 --output "$work/out-$name" \
    --parallelism 6 --jobmanager "$(cat "$dir/jobmanager")" > /dev/null
  local t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}' >> "$work/$name.times"
}
for ((r = 0; r <= ROUNDS; r++)); do
  run plaintext "$work/plain" ""
  run tls "$work/tls" "$work/tls/tls"
  if [ "$r" -eq 0 ]; then : > "$work/plaintext.times"; : > "$work/tls.times"; fi
done
for s in plaintext tls; do
  printf '%s: output %s\n' "$s" "$("$shared/check.sh" "$s" "$work/out-$s" "$ref")" >&2
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
plain=$(median < "$work/plaintext.times")
tls=$(median < "$work/tls.times")
bytes=$(stat -c %s "$corpus")
echo "| cluster WordCount p=6 | median wall s | MB/s | throughput vs plaintext |"
echo "|---|---|---|---|"
awk -v p="$plain" -v t="$tls" -v b="$bytes" 'BEGIN {
  printf "| plaintext | %.3f | %.0f | 1.00x |\n", p, b / p / 1e6
  printf "| mutual TLS | %.3f | %.0f | %.2fx |\n", t, b / t / 1e6, p / t }'
echo "($MB MiB corpus, $ROUNDS rounds after a warm-up, alternating)"

# Latency: two TaskManagers with one slot each, so that every record crosses workers.
"$hummer" cluster stop --dir "$work/tls" >/dev/null
"$hummer" cluster stop --dir "$work/plain" >/dev/null
"$hummer" cluster start --taskmanagers 2 --slots 1 --dir "$work/tls-lat" >/dev/null
"$hummer" cluster start --insecure --taskmanagers 2 --slots 1 --dir "$work/plain-lat" >/dev/null
for c in plain-lat tls-lat; do
  tls_dir=""; [ "$c" = tls-lat ] && tls_dir=$work/tls-lat/tls
  printf '%s: ' "$c"
  HUMMER_TLS_DIR=$tls_dir HUMMER_JOBMANAGER=$(cat "$work/$c/jobmanager") \
    "$bin/examples/streaming_latency" 50000 10 2 | tail -1
done
