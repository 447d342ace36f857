#!/usr/bin/env bash
# bench/streaming_wordcount.sh [MB] [ROUNDS] : streaming WordCount (a running count per word
# occurrence, written as an update stream) of `hummer wordcount --mode streaming` against
# ../shared/bench's `flink-streaming` (Flink 2.3, the same keyBy+sum job in STREAMING mode),
# on the same KJV corpus, parallelism 2 both, alternating the two in every round after a
# warm-up. Both outputs are checked (each word's last count against the coreutils reference).
# Prints a Markdown table: median wall, MB/s, ratio to Flink, peak RSS.
#
# Installs what is missing into PEERS_TMP (default /tmp/peers, shared with ../shared/bench):
# the corpus (bench/corpus.sh), a venv with apache-flink 2.3.0 (its jars) and the compiled
# Flink job. Needs root for apt-get the first time, and a JDK 17 (`javac`).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-256}
ROUNDS=${2:-3}
source "$here/bench/corpus.sh"
command -v javac >/dev/null || { apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; }
[ -x "$T/venv/bin/python" ] || python3 -m venv "$T/venv"
"$T/venv/bin/python" -c 'import pyflink' 2>/dev/null || "$T/venv/bin/pip" install -q apache-flink==2.3.0
site=$("$T/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ ! -s "$T/flink-classes/WordCount.class" ]; then
  mkdir -p "$T/flink-classes"
  javac -d "$T/flink-classes" -cp "$site/pyflink/lib/*" "$shared/flink-wc/src/WordCount.java"
fi
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
export HUMMER_BIN=${CARGO_TARGET_DIR:-$here/target}/release/hummer

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat "$corpus" > /dev/null   # warm the page cache

systems=(hummer-streaming flink-streaming)
for ((r = 0; r <= ROUNDS; r++)); do
  for sys in "${systems[@]}"; do
    rm -rf "${out:?}/$sys"
    t0=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$out/$sys.one" "$shared/wc_run.sh" "$sys" "$corpus" "$out/$sys" \
      > "$out/$sys.log" 2>&1 || { cat "$out/$sys.log" >&2; exit 1; }
    t1=$EPOCHREALTIME
    [ "$r" -eq 0 ] && continue   # warm-up round
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') $(cat "$out/$sys.one")" \
      >> "$out/$sys.times"
  done
done
for sys in "${systems[@]}"; do
  printf '%s: output %s\n' "$sys" "$("$shared/check.sh" "$sys" "$out/$sys" "$ref")" >&2
done

bytes=$(stat -c %s "$corpus")
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
f_wall=$(cut -d' ' -f1 "$out/flink-streaming.times" | median)
echo "| system | median wall s | MB/s | vs Flink streaming | peak RSS MB |"
echo "|---|---|---|---|---|"
for sys in "${systems[@]}"; do
  wall=$(cut -d' ' -f1 "$out/$sys.times" | median)
  rss=$(cut -d' ' -f2 "$out/$sys.times" | sort -n | tail -1)
  awk -v s="$sys" -v w="$wall" -v b="$bytes" -v fw="$f_wall" -v r="$rss" 'BEGIN {
    printf "| %s | %.3f | %.1f | %.2fx | %.0f |\n", s, w, b / w / 1e6, fw / w, r / 1024 }'
done
echo "($MB MiB KJV corpus, $ROUNDS rounds after a warm-up, parallelism 2 both)"
