#!/usr/bin/env bash
# bench/before_after.sh REV [MB] [ROUNDS] : the figures a change must not make worse, for the
# revision REV ("before") and the working tree ("after"), measured in one run, alternating
# in every round (the machine is shared: compare ratios, not absolute figures):
#   1. batch WordCount on the KJV corpus, with rust-2t of ../shared/bench as the yardstick;
#   2. streaming per-record latency (examples/streaming_latency: 100k records/s, 10 s, p=2);
#   3. distributed WordCount on a local cluster (JobManager + 3 TaskManagers x 2 slots);
#   4. streaming WordCount (`--mode streaming`, a running count per word, parallelism 2);
#   5. Nexmark q5, q7, q16 and q19 (NEXMARK_QUERIES overrides) on the harness's CSV events
#      (NEXMARK_EVENTS, default 10,000,000), parallelism 2: wall and CPU seconds.
# REV is built once into $PEERS_TMP/before-<rev> (BEFORE_BIN_DIR overrides: a directory
# holding `hummer` and `streaming_latency`). Outputs are checked against the reference.
# ONLY="nexmark streaming" runs just those sections (batch latency cluster streaming nexmark).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
REV=${1:?usage: bench/before_after.sh REV [MB] [ROUNDS]}
MB=${2:-256}
ROUNDS=${3:-5}
source "$here/bench/corpus.sh"

before=${BEFORE_BIN_DIR:-}
if [ -z "$before" ]; then
  sha=$(git -C "$here" rev-parse --short "$REV")
  before=$T/before-$sha
  if [ ! -x "$before/hummer" ] || [ ! -x "$before/streaming_latency" ]; then
    src=$(mktemp -d)
    git -C "$here" archive "$sha" | tar -x -C "$src"
    cargo build -q --release --manifest-path "$src/Cargo.toml" --bin hummer \
      --example streaming_latency --target-dir "$T/build/before"
    mkdir -p "$before"
    cp "$T/build/before/release/hummer" "$T/build/before/release/examples/streaming_latency" \
      "$before/"
    rm -rf "$src"
  fi
fi
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer --example streaming_latency
after=${CARGO_TARGET_DIR:-$here/target}/release

out=$(mktemp -d)
cleanup() {
  for v in before after; do
    [ -d "$out/cluster-$v" ] && "$out/$v-hummer" cluster stop --dir "$out/cluster-$v" \
      >/dev/null 2>&1 || true
  done
  rm -rf "$out"
}
trap cleanup EXIT
cp "$before/hummer" "$out/before-hummer"; cp "$before/streaming_latency" "$out/before-latency"
cp "$after/hummer" "$out/after-hummer"; cp "$after/examples/streaming_latency" "$out/after-latency"
cat "$corpus" > /dev/null

timed() { # name cmd... : appends "wall_s" to $out/name.times
  local name=$1; shift
  local t0=$EPOCHREALTIME
  "$@" > /dev/null
  local t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f\n", b - a}' >> "$out/$name.times"
}
after_before_table() { # name : the medians of $out/name-{before,after}.times and their ratio
  echo "| build | median wall s | after/before |"
  echo "|---|---|---|"
  local b w v
  b=$(median < "$out/$1-before.times")
  for v in before after; do
    w=$(median < "$out/$1-$v.times")
    awk -v v="$v" -v w="$w" -v b="$b" 'BEGIN {printf "| %s | %.3f | %.2f |\n", v, w, w / b}'
  done
}
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# 1. Batch WordCount.
if want batch; then
for ((r = 0; r <= ROUNDS; r++)); do
  rm -rf "$out/wc-"*
  mkdir -p "$out/wc-rust"
  timed rust-2t "$base" -t 2 "$corpus" "$out/wc-rust/part-0"
  for v in before after; do
    timed "wc-$v" "$out/$v-hummer" wordcount "$corpus" --parallelism 2 --top 0 \
      --output "$out/wc-out-$v" --jobmanager ""
  done
  if [ "$r" -eq 0 ]; then : > "$out/rust-2t.times"; : > "$out/wc-before.times"; : > "$out/wc-after.times"; fi
done
for v in before after; do
  printf 'batch %s: output %s\n' "$v" "$("$shared/check.sh" "$v" "$out/wc-out-$v" "$ref")" >&2
done
rust=$(median < "$out/rust-2t.times")
echo "## Batch WordCount, $MB MiB, parallelism 2 ($ROUNDS rounds)"
echo "| build | median wall s | vs rust-2t |"
echo "|---|---|---|"
for v in before after; do
  w=$(median < "$out/wc-$v.times")
  awk -v v="$v" -v w="$w" -v b="$rust" 'BEGIN {printf "| %s | %.3f | %.2fx |\n", v, w, b / w}'
done
fi

# 2. Streaming latency.
if want latency; then
echo "## Streaming latency, 100k records/s, 10 s, parallelism 2"
for ((r = 0; r < 4; r++)); do
  for v in before after; do
    line=$("$out/$v-latency" 100000 10 2 2>&1 | grep -i "p99" | tail -1)
    echo "- $v (round $((r + 1))): $line"
  done
done
fi

# 3. Cluster WordCount.
if want cluster; then
for v in before after; do
  "$out/$v-hummer" cluster start --taskmanagers 3 --slots 2 --dir "$out/cluster-$v" >/dev/null
done
for ((r = 0; r <= ROUNDS; r++)); do
  for v in before after; do
    rm -rf "$out/cl-out-$v"
    # A cluster started with mutual TLS (the default since it exists) has its certificates in tls/.
    tls=""; [ -d "$out/cluster-$v/tls" ] && tls=$out/cluster-$v/tls
    HUMMER_TLS_DIR=$tls timed "cl-$v" "$out/$v-hummer" wordcount "$corpus" --parallelism 6 --top 0 \
      --output "$out/cl-out-$v" --jobmanager "$(cat "$out/cluster-$v/jobmanager")"
  done
  if [ "$r" -eq 0 ]; then : > "$out/cl-before.times"; : > "$out/cl-after.times"; fi
done
for v in before after; do
  printf 'cluster %s: output %s\n' "$v" "$("$shared/check.sh" "$v" "$out/cl-out-$v" "$ref")" >&2
done
echo "## Cluster WordCount, $MB MiB, 3 TaskManagers x 2 slots, parallelism 6 ($ROUNDS rounds)"
after_before_table cl
fi

# 4. Streaming WordCount.
if want streaming; then
for ((r = 0; r <= ROUNDS; r++)); do
  for v in before after; do
    rm -rf "$out/sw-out-$v"
    timed "sw-$v" "$out/$v-hummer" wordcount "$corpus" --parallelism 2 --mode streaming \
      --output "$out/sw-out-$v" --jobmanager ""
  done
  if [ "$r" -eq 0 ]; then : > "$out/sw-before.times"; : > "$out/sw-after.times"; fi
done
rm -rf "$out/sw-out-"*
echo "## Streaming WordCount, $MB MiB, parallelism 2 ($ROUNDS rounds)"
after_before_table sw
fi

# 5. Nexmark, on the events bench/nexmark.sh generates (and caches).
if want nexmark; then
EVENTS=${NEXMARK_EVENTS:-10000000}
read -r -a queries <<< "${NEXMARK_QUERIES:-q5 q7 q16 q19}"
source "$here/bench/nexmark_events.sh"
data=$(nexmark_events "$EVENTS" 2)
cat "$data"/*/* > /dev/null
echo "## Nexmark, $EVENTS events, parallelism 2 ($ROUNDS rounds): median wall (CPU) s"
echo "| query | before | after | after/before wall | after/before CPU |"
echo "|---|---|---|---|---|"
for q in "${queries[@]}"; do
  for ((r = 0; r <= ROUNDS; r++)); do
    for v in before after; do
      rm -rf "$out/nx-$v"
      stats=$( { /usr/bin/time -f "%e %U %S" "$out/$v-hummer" nexmark --query "$q" --input "$data" \
        --parallelism 2 --output "$out/nx-$v" >/dev/null; } 2>&1 | tail -1)
      [ "$r" -eq 0 ] || echo "$stats" >> "$out/nx-$q-$v.times"
    done
  done
  rm -rf "$out/nx-"*/
  wb=$(cut -d' ' -f1 < "$out/nx-$q-before.times" | median)
  wa=$(cut -d' ' -f1 < "$out/nx-$q-after.times" | median)
  cb=$(awk '{print $2 + $3}' < "$out/nx-$q-before.times" | median)
  ca=$(awk '{print $2 + $3}' < "$out/nx-$q-after.times" | median)
  awk -v q="$q" -v wb="$wb" -v wa="$wa" -v cb="$cb" -v ca="$ca" \
    'BEGIN {printf "| %s | %.2f (%.2f) | %.2f (%.2f) | %.3f | %.3f |\n", q, wb, cb, wa, ca, wa / wb, ca / cb}'
done
fi
