#!/usr/bin/env bash
# bench/wordcount.sh [MB] [ROUNDS] : batch WordCount of `hummer` against the hand-written
# Rust limit `rust-2t` of ../shared/bench, on the same KJV corpus, alternating the two in
# every round (the machine is shared: compare ratios measured in one run, not absolute
# figures). Checks both outputs against the coreutils reference and prints a Markdown table:
# median wall, MB/s, ratio to rust-2t, peak RSS.
#
# Needs root for `apt-get install bible-kjv-text time` the first time. Corpus, reference and
# baseline build go to PEERS_TMP (default /tmp/peers), shared with ../shared/bench.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-256}
ROUNDS=${2:-5}
P=${PARALLELISM:-2}
source "$here/bench/corpus.sh"
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer
hummer=${CARGO_TARGET_DIR:-$here/target}/release/hummer

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat "$corpus" > /dev/null   # warm the page cache

run() { # name cmd... : appends "wall_s rss_kb" to $out/name.times
  local name=$1; shift
  rm -rf "$out/$name"; mkdir -p "$out/$name"
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%M" -o "$out/$name.one" "$@" > /dev/null
  local t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') $(cat "$out/$name.one")" \
    >> "$out/$name.times"
}
for ((r = 0; r <= ROUNDS; r++)); do
  run rust-2t "$base" -t 2 "$corpus" "$out/rust-2t/part-0"
  run hummer "$hummer" wordcount "$corpus" --parallelism "$P" --top 0 --output "$out/hummer"
  if [ "$r" -eq 0 ]; then : > "$out/rust-2t.times"; : > "$out/hummer.times"; fi  # warm-up round
done
for sys in rust-2t hummer; do
  printf '%s: output %s\n' "$sys" "$("$shared/check.sh" "$sys" "$out/$sys" "$ref")" >&2
done

bytes=$(stat -c %s "$corpus")
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
b_wall=$(cut -d' ' -f1 "$out/rust-2t.times" | median)
echo "| system | median wall s | MB/s | vs rust-2t (MB/s ratio) | peak RSS MB |"
echo "|---|---|---|---|---|"
for sys in rust-2t hummer; do
  wall=$(cut -d' ' -f1 "$out/$sys.times" | median)
  rss=$(cut -d' ' -f2 "$out/$sys.times" | sort -n | tail -1)
  awk -v s="$sys" -v w="$wall" -v b="$bytes" -v bw="$b_wall" -v r="$rss" 'BEGIN {
    printf "| %s | %.3f | %.0f | %.2fx | %.0f |\n", s, w, b / w / 1e6, bw / w, r / 1024 }'
done
echo "($MB MiB KJV corpus, $ROUNDS rounds after a warm-up, hummer parallelism $P)"
