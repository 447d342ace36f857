#!/usr/bin/env bash
# bench/state_budget.sh [BUDGETS] [ROUNDS] : state larger than memory (issue 32). Nexmark
# queries (NEXMARK_QUERIES, default q18 q19 q20) on the harness's CSV events (NEXMARK_EVENTS,
# default 10,000,000), parallelism 2, without a budget and with each of BUDGETS (default
# "256m 64m"), alternating in every round (the machine is shared: compare ratios): median wall
# seconds, peak RSS, the wall ratio against the run without a budget, and whether the output
# is the same (md5 of the sorted lines).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
read -r -a budgets <<< "${1:-256m 64m}"
ROUNDS=${2:-3}
EVENTS=${NEXMARK_EVENTS:-10000000}
read -r -a queries <<< "${NEXMARK_QUERIES:-q18 q19 q20}"
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
bin=${CARGO_TARGET_DIR:-$here/target}/release/hummer
source "$here/bench/nexmark_events.sh"
data=$(nexmark_events "$EVENTS" 2)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "## Nexmark, $EVENTS events, parallelism 2, $ROUNDS rounds: median wall s, peak RSS MB"
echo "| query | budget | wall | peak RSS | wall / no budget | same output |"
echo "|---|---|---|---|---|---|"
for q in "${queries[@]}"; do
  for ((r = 0; r < ROUNDS; r++)); do
    for b in none "${budgets[@]}"; do
      args=()
      [ "$b" = none ] || args=(--state-memory "$b")
      rm -rf "$out/run"
      /usr/bin/time -o "$out/time" -f "%e %M" "$bin" nexmark --query "$q" --input "$data" \
        --parallelism 2 --output "$out/run" "${args[@]}" >/dev/null 2>&1
      cat "$out/time" >> "$out/$q-$b.times"
      cat "$out/run"/* 2>/dev/null | sort | md5sum | cut -d' ' -f1 > "$out/$q-$b.md5"
    done
  done
  base=$(cut -d' ' -f1 < "$out/$q-none.times" | median)
  for b in none "${budgets[@]}"; do
    wall=$(cut -d' ' -f1 < "$out/$q-$b.times" | median)
    rss=$(cut -d' ' -f2 < "$out/$q-$b.times" | median)
    same=$(cmp -s "$out/$q-none.md5" "$out/$q-$b.md5" && echo yes || echo NO)
    awk -v q="$q" -v b="$b" -v w="$wall" -v r="$rss" -v base="$base" -v s="$same" \
      'BEGIN {printf "| %s | %s | %.2f | %d | %.2f | %s |\n", q, b, w, r / 1024, w / base, s}'
  done
done
