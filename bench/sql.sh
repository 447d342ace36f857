#!/usr/bin/env bash
# bench/sql.sh [EVENTS] [QUERIES..] : the streaming-SQL measure (issue 31), in one run per query.
#   For each Nexmark query the harness runs (../shared/bench/nexmark), on the same CSV events
#   at parallelism 2:
#     - Flink SQL: run_flink.py's own run of the query, its net job time (FLINK=0 skips it);
#     - Hummer SQL: `hummer sql -f` on the script run_flink.py --script-only writes, the whole
#       process's wall time and peak RSS, its result checked against DuckDB (compare.py);
#     - the hand-written DataStream job: `hummer nexmark --query qN --input DATA`, wall and RSS.
#   Prints a Markdown table with the ratios: Flink net / Hummer SQL (the issue asks >= 5) and
#   Hummer SQL / hand-written (asks <= 1.25, RSS too). EVENTS defaults to 10000000.
# Needs the harness set up (../shared/bench/nexmark/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
EVENTS=${1:-10000000}
shift || true
QUERIES=${*:-q0 q1 q2 q3 q4 q5 q7 q8 q9 q10 q11 q14 q15 q16 q17 q18 q19 q20 q21 q22}
P=2
harness=$here/../shared/bench/nexmark
T=${PEERS_TMP:-/tmp/peers}
PY=$T/venv/bin/python
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
hummer=${CARGO_TARGET_DIR:-$here/target}/release/hummer
data=$T/nexmark/data/$EVENTS
if [ ! -d "$data" ]; then
  "$T/nexmark/gen-target/release/nexmark-gen" "$EVENTS" "$data" --parts "$P" >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# wall seconds and peak RSS (MiB) of a command: "WALL RSS", or "- -" if it failed.
measure() {
  if /usr/bin/time -f '%e %M' -o "$out/time" "$@" >"$out/cmd.log" 2>&1; then
    awk '{printf "%.2f %.0f\n", $1, $2 / 1024}' "$out/time"
  else
    echo "- -"
  fi
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
echo "## SQL on Hummer vs Flink SQL and the hand-written job, $EVENTS events, parallelism $P"
echo
echo "| query | Flink net s | Hummer SQL s | Flink / SQL | hand-written s | SQL / hand | SQL RSS MiB | hand RSS MiB | RSS ratio | check |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for q in $QUERIES; do
  (cd "$harness" && $PY flink/run_flink.py "$q" "$data" "$out/$q" --parallelism "$P" \
    --script-only "$out/$q.sql" >/dev/null 2>&1)
  (cd "$harness" && $PY duckdb/ref.py "$q" "$data" "$out/$q.ref.csv" >/dev/null 2>&1)
  flink=-
  if [ "${FLINK:-1}" != 0 ]; then
    (cd "$harness" && $PY flink/run_flink.py "$q" "$data" "$out/flink-$q" --parallelism "$P" \
      >"$out/flink-$q.json" 2>/dev/null) || true
    flink=$(tail -1 "$out/flink-$q.json" | $PY -c \
      'import json,sys; s=json.loads(sys.stdin.read() or "{}"); print(s.get("net_runtime_s") or "-")' \
      2>/dev/null || echo -)
    rm -rf "$out/flink-$q"
  fi
  read -r sql sql_rss < <(measure "$hummer" sql -f "$out/$q.sql")
  check=failed
  if [ "$sql" != - ]; then
    cols=$(head -1 "$out/$q.sql" | sed 's/.*result columns: //')
    (cd "$harness" && $PY flink/run_flink.py "$q" "$data" "$out/$q" \
      --canonicalize-only "$cols" >/dev/null 2>&1)
    check=$(cd "$harness" && $PY compare.py "$q" "$out/$q.ref.csv" "$out/$q/result.csv" 2>&1 \
      | head -1)
  fi
  rm -rf "$out/$q"
  read -r hand hand_rss < <(measure "$hummer" nexmark --query "$q" --input "$data" -p "$P")
  echo "| $q | $flink | $sql | $(ratio "$flink" "$sql") | $hand | $(ratio "$sql" "$hand") |" \
    "$sql_rss | $hand_rss | $(ratio "$sql_rss" "$hand_rss") | $check |"
done
