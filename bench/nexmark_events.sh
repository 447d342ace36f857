# Sourced by the Nexmark benchmarks: `data=$(nexmark_events EVENTS PARTS)` is the directory of
# the harness's CSV events (../shared/bench/nexmark), generated once into PEERS_TMP (default
# /tmp/peers) with the harness's generator, built once into /var/tmp.
nexmark_events() {
  local events=$1 parts=$2
  local root harness gen_target data
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  harness=$(cd "$root/../shared/bench/nexmark" && pwd)
  gen_target=/var/tmp/nexmark-gen-target
  [ -x "$gen_target/release/nexmark-gen" ] ||
    cargo build -q --release --manifest-path "$harness/gen/Cargo.toml" --target-dir "$gen_target"
  data=${PEERS_TMP:-/tmp/peers}/nexmark/data/$events
  [ "$parts" = 2 ] || data=$data-p$parts
  [ -f "$data/MANIFEST" ] || "$gen_target/release/nexmark-gen" "$events" "$data" --parts "$parts" >/dev/null
  echo "$data"
}
