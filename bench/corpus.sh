# bench/corpus.sh : sourced by the WordCount benchmarks. Given MB, sets `shared`, `T`,
# `corpus`, `ref` and `base` (rust-2t of ../shared/bench), and makes what is missing: the KJV
# corpus of MB MiB, its coreutils reference counts, the rust-2t build. Needs root for
# `apt-get install bible-kjv-text time` the first time. Everything goes to PEERS_TMP (default
# /tmp/peers), shared with ../shared/bench.
shared=$(cd "$here/../shared/bench" && pwd)
T=${PEERS_TMP:-/tmp/peers}
export PEERS_TMP=$T
corpus=$T/corpus_${MB}mb.txt
ref=$T/ref/${MB}mb.tsv
base=$T/build/rust-baseline/release/rust-baseline
if ! command -v bible >/dev/null || [ ! -x /usr/bin/time ]; then
  apt-get update -qq && apt-get install -y -qq bible-kjv-text time >/dev/null
fi
mkdir -p "$T/ref"
[ -s "$corpus" ] || "$shared/make_corpus.sh" "$MB" "$corpus"
[ -s "$ref" ] || "$shared/reference.sh" "$corpus" "$ref"
[ -x "$base" ] || cargo build -q --release --manifest-path "$shared/rust-baseline/Cargo.toml" \
  --target-dir "$T/build/rust-baseline"
