#!/usr/bin/env bash
# bench/kafka.sh [RECORDS] : Kafka -> map -> Kafka throughput on a real broker (tansu, in
# memory, on loopback), 100-byte records, 4 partitions, parallelism 2, in one run:
#   - the baseline: a hand-written consumer -> producer loop with the same client (rskafka),
#     one task per partition (examples/kafka_copy_loop.rs): the practical limit;
#   - `hummer kafka copy` with the at-least-once sink and with the exactly-once sink
#     (checkpoints every second), and without guarantee.
# Each copy reads the same input topic into a fresh output topic. Prints a table with the
# ratios to the baseline.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RECORDS=${1:-2000000}
tansu=$("$here/scripts/install-tansu.sh")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
brokers=127.0.0.1:$port
RUST_LOG=error "$tansu" broker --listener-url "tcp://$brokers" --advertised-listener-url "tcp://$brokers" \
  --storage-engine memory://tansu/ >/dev/null 2>&1 &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
cargo build -q --release --manifest-path "$here/Cargo.toml" --bin hummer --example kafka_copy_loop
target=${CARGO_TARGET_DIR:-$here/target}/release
hummer=$target/hummer
work=$(mktemp -d)
"$hummer" kafka produce --brokers "$brokers" --topic in --events "$RECORDS" --partitions 4 --record-bytes 100 >/dev/null
"$hummer" kafka create-topic --brokers "$brokers" --topic out-loop --partitions 4 >/dev/null
read -r n secs < <("$target/examples/kafka_copy_loop" "$brokers" in out-loop)
base=$(python3 -c "print($n / $secs)")
echo "| pipeline | records | seconds | records/s | vs hand-written loop |"
echo "|---|---|---|---|---|"
printf '| hand-written rskafka loop (4 tasks) | %s | %.3f | %.0f | 1.00x |\n' "$n" "$secs" "$base"
for g in none at-least-once exactly-once; do
  line=$("$hummer" kafka copy --brokers "$brokers" --input in --output "out-$g" --guarantee "$g" \
    -p 2 --checkpoint-interval-ms 1000 --checkpoint-dir "$work/cp-$g")
  # "copied N records in S s = R records/s (...)"
  read -r n secs rate < <(echo "$line" | awk '{print $2, $5, $8}')
  printf '| hummer kafka copy, sink %s | %s | %s | %s | %.2fx |\n' "$g" "$n" "$secs" "$rate" \
    "$(python3 -c "print($rate / $base)")"
done
rm -rf "$work"
