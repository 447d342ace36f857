#!/usr/bin/env bash
# bench/nexmark_generator.sh [EVENTS] [QUERY...] : Nexmark on the in-process generator
# (`hummer nexmark --events`, parallelism 2, result rows counted, not written: Flink's
# blackhole sink), each query run twice in a row: without checkpoints, then with exactly-once
# checkpoints every 10 s (CHECKPOINT_MS). Prints per query: seconds, events/s, events/s per
# core, Flink 1.13's published per-core figure (3 x 8-core workers, the issue's list) and our
# ratio to it, peak RSS, and the slowdown that checkpoints cost. TRIALS=N repeats each pair
# N times, alternating, and reports the medians (this machine's run-to-run noise is some
# ±10 %), with every trial's cost listed.
# Defaults: 100,000,000 events, every query, one trial.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
EVENTS=${1:-100000000}; shift || true
P=${PARALLELISM:-2}
CHECKPOINT_MS=${CHECKPOINT_MS:-10000}
TRIALS=${TRIALS:-1}
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
bin=${CARGO_TARGET_DIR:-$here/target}/release/hummer
queries=("$@")
[ ${#queries[@]} -gt 0 ] || queries=($("$bin" nexmark --query list))
declare -A published=([q0]=155000 [q1]=158000 [q2]=175000 [q5]=22000 [q7]=12000 [q8]=146000
  [q11]=40000 [q12]=76000 [q19]=44000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # query [args...] : prints "seconds rss_kb" of one run
  local q=$1; shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" nexmark --query "$q" --events "$EVENTS" \
    --parallelism "$P" "$@" > "$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
  cat "$tmp/time"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| query | Hummer s | events/s | per core | Flink 1.13 per core (published) | ratio | peak RSS MB | with checkpoints s | checkpoint cost | per trial |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for q in "${queries[@]}"; do
  plain=() checked=() rsss=() counts=() costs=()
  for _ in $(seq "$TRIALS"); do
    read -r secs rss < <(run "$q")
    rm -rf "$tmp/ck"
    read -r ck_secs _ < <(run "$q" --checkpoint-interval-ms "$CHECKPOINT_MS" --checkpoint-dir "$tmp/ck")
    plain+=("$secs") checked+=("$ck_secs") rsss+=("$rss")
    counts+=("$(grep -o 'checkpoints completed: [0-9]*' "$tmp/log" | grep -o '[0-9]*$' || echo 0)")
    costs+=("$(awk -v s="$secs" -v c="$ck_secs" 'BEGIN { printf "%+.1f", (c / s - 1) * 100 }')")
  done
  secs=$(printf '%s\n' "${plain[@]}" | median)
  ck_secs=$(printf '%s\n' "${checked[@]}" | median)
  rss=$(printf '%s\n' "${rsss[@]}" | median)
  completed=$(printf '%s\n' "${counts[@]}" | median)
  trials=$(IFS=' '; echo "${costs[*]}")
  awk -v q="$q" -v s="$secs" -v e="$EVENTS" -v p="$P" -v r="$rss" -v pub="${published[$q]:-}" \
      -v c="$ck_secs" -v n="$completed" -v t="$trials" 'BEGIN {
    per = e / s / p
    printf "| %s | %.2f | %.0f | %.0f | %s | %s | %.0f | %.2f (%d) | %+.1f %% | %s |\n", q, s, e / s, per,
      (pub == "" ? "-" : pub), (pub == "" ? "-" : sprintf("%.1fx", per / pub)), r / 1024, c, n,
      (c / s - 1) * 100, t }'
done
echo "($EVENTS events, parallelism $P; checkpoints every $CHECKPOINT_MS ms, their number in brackets; medians of $TRIALS trials)"
