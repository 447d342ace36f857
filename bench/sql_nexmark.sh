#!/usr/bin/env bash
# bench/sql_nexmark.sh EVENTS [PARALLELISM] : Flink SQL scripts run unchanged on `hummer sql`.
#   1. The harness's scripts (../shared/bench/nexmark: run_flink.py --script-only) for every
#      query it runs, over its CSV events, checked against DuckDB with compare.py after
#      --canonicalize-only, with the wall time of each run.
#   2. Upstream's files (nexmark/nexmark: ddl_gen.sql with its ${..} parameters substituted,
#      ddl_views.sql and each qN.sql with its blackhole sink) over EVENTS generated events;
#      q13's side input is written where side_input_gen.sh puts it (10,000 rows).
# Needs the harness set up (../shared/bench/nexmark/setup.sh). Upstream's files are read from
# NEXMARK_UPSTREAM_DIR, or taken from a nexmark/nexmark git directory NEXMARK_REPO (a bare
# one will do). ONLY=harness or ONLY=upstream runs one part, QUERIES="q3 q8" those harness
# queries only. Prints Markdown tables.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
EVENTS=${1:?usage: bench/sql_nexmark.sh EVENTS [PARALLELISM]}
P=${2:-2}
harness=$here/../shared/bench/nexmark
T=${PEERS_TMP:-/tmp/peers}
PY=$T/venv/bin/python
upstream=${NEXMARK_UPSTREAM_DIR:-}
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
hummer=${CARGO_TARGET_DIR:-$here/target}/release/hummer
data=$T/nexmark/data/$EVENTS
[ "$P" = 2 ] || data=$data-p$P
if [ ! -d "$data" ]; then
  "$T/nexmark/gen-target/release/nexmark-gen" "$EVENTS" "$data" --parts "$P" >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }
if want harness; then
echo "## Harness scripts, $EVENTS events, parallelism $P"
echo "| query | hummer sql wall s | check |"
echo "|---|---|---|"
for q in ${QUERIES:-q0 q1 q2 q3 q4 q5 q7 q8 q9 q10 q11 q14 q15 q16 q17 q18 q19 q20 q21 q22}; do
  (cd "$harness" && $PY flink/run_flink.py "$q" "$data" "$out/$q" --parallelism "$P" \
    --script-only "$out/$q.sql" >/dev/null 2>&1)
  [ -f "$out/$q.ref.csv" ] || (cd "$harness" && $PY duckdb/ref.py "$q" "$data" "$out/$q.ref.csv" \
    >/dev/null 2>&1)
  t0=$EPOCHREALTIME
  if "$hummer" sql -f "$out/$q.sql" >"$out/$q.log" 2>&1; then
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
    cols=$(head -1 "$out/$q.sql" | sed 's/.*result columns: //')
    (cd "$harness" && $PY flink/run_flink.py "$q" "$data" "$out/$q" \
      --canonicalize-only "$cols" >/dev/null 2>&1)
    # compare.py exits non-zero on anything but `match` (match-modulo-ties too): its
    # first line is the verdict either way.
    check=$(cd "$harness" && { $PY compare.py "$q" "$out/$q.ref.csv" "$out/$q/result.csv" 2>&1 \
      || true; } | head -1)
  else
    t=-; check="failed: $(tail -1 "$out/$q.log")"
  fi
  echo "| $q | $t | $check |"
done
echo
fi
want upstream || exit 0
if [ -z "$upstream" ]; then
  upstream=$out/upstream
  mkdir -p "$upstream"
  for f in ddl_gen ddl_views $(seq -f 'q%g' 0 23); do
    git --git-dir="${NEXMARK_REPO:?NEXMARK_UPSTREAM_DIR or NEXMARK_REPO is needed}" show \
      "HEAD:nexmark-flink/src/main/resources/queries/$f.sql" > "$upstream/$f.sql"
  done
fi
echo "## Upstream files, $EVENTS events, parallelism $P"
echo "| query | hummer sql wall s | outcome |"
echo "|---|---|---|"
sed -e "s/\${TPS}/10000000/g; s/\${EVENTS_NUM}/$EVENTS/g" \
  -e 's/${PERSON_PROPORTION}/1/g; s/${AUCTION_PROPORTION}/3/g; s/${BID_PROPORTION}/46/g' \
  "$upstream/ddl_gen.sql" > "$out/ddl.sql"
sed -e 's/${NEXMARK_TABLE}/datagen/g' "$upstream/ddl_views.sql" >> "$out/ddl.sql"
# q13's side input, where Nexmark's side_input_gen.sh writes it: ${FLINK_HOME}/data.
mkdir -p "$out/flink-home/data"
seq 0 9999 | awk '{print $1 "," $1}' > "$out/flink-home/data/side_input.txt"
for n in $(seq 0 23); do
  q=q$n
  [ -f "$upstream/$q.sql" ] || continue
  # q10's filesystem sink writes under ${NEXMARK_DIR}: a folder of this run's.
  { echo "SET 'parallelism.default' = '$P';"; cat "$out/ddl.sql"; echo ";"
    sed -e "s|\${NEXMARK_DIR}|$out/nexmark-dir|g; s|\${SUBMIT_TIME}|run|g" \
      -e "s|\${FLINK_HOME}|$out/flink-home|g" "$upstream/$q.sql"
  } > "$out/up-$q.sql"
  t0=$EPOCHREALTIME
  if "$hummer" sql -f "$out/up-$q.sql" >"$out/up-$q.log" 2>&1; then
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
    outcome=ran
  else
    t=-; outcome="refused: $(tail -1 "$out/up-$q.log" | cut -c1-160)"
  fi
  echo "| $q | $t | $outcome |"
done
