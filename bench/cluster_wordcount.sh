#!/usr/bin/env bash
# bench/cluster_wordcount.sh [MB] [ROUNDS] : distributed WordCount (a JobManager and 3
# TaskManagers with 2 slots each, as processes on this machine, parallelism 6) against local
# WordCount on the same corpus, alternating in every round. Prints median walls and ratios;
# checks every output against the reference.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-256}
ROUNDS=${2:-5}
source "$here/bench/corpus.sh"
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
hummer=${CARGO_TARGET_DIR:-$here/target}/release/hummer

work=$(mktemp -d)
trap '"$hummer" cluster stop --dir "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$hummer" cluster start --taskmanagers 3 --slots 2 --dir "$work/cluster" >/dev/null
jm=$(cat "$work/cluster/jobmanager")
export HUMMER_TLS_DIR=$work/cluster/tls
cat "$corpus" > /dev/null

run() { # name args... : appends the wall time to $work/name.times
  local name=$1; shift
  rm -rf "$work/out-$name"
  local t0=$EPOCHREALTIME
  "$hummer" wordcount "$corpus" --top 0 --output "$work/out-$name" "$@" > /dev/null
  local t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}' >> "$work/$name.times"
}
for ((r = 0; r <= ROUNDS; r++)); do
  run local-p2 --parallelism 2 --jobmanager ""
  run local-p6 --parallelism 6 --jobmanager ""
  run cluster-p6 --parallelism 6 --jobmanager "$jm"
  if [ "$r" -eq 0 ]; then for s in local-p2 local-p6 cluster-p6; do : > "$work/$s.times"; done; fi
done
for s in local-p2 local-p6 cluster-p6; do
  printf '%s: output %s\n' "$s" "$("$shared/check.sh" "$s" "$work/out-$s" "$ref")" >&2
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
base=$(median < "$work/local-p2.times")
bytes=$(stat -c %s "$corpus")
echo "| run | median wall s | MB/s | wall vs local p=2 |"
echo "|---|---|---|---|"
for s in local-p2 local-p6 cluster-p6; do
  w=$(median < "$work/$s.times")
  awk -v s="$s" -v w="$w" -v b="$bytes" -v base="$base" \
    'BEGIN {printf "| %s | %.3f | %.0f | %.2fx |\n", s, w, b / w / 1e6, w / base}'
done
echo "($MB MiB corpus, $ROUNDS rounds after a warm-up; cluster: 1 JobManager + 3 TaskManagers x 2 slots, processes on this machine)"
