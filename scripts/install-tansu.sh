#!/usr/bin/env bash
# scripts/install-tansu.sh : installs tansu (a Kafka-protocol broker in Rust, from crates.io)
# for the Kafka tests, once per machine: into /var/tmp/tansu (outside the clone, so a fresh
# clone reuses it). The first install compiles for about 16 minutes. Prints the binary's path.
set -euo pipefail
root=${TANSU_ROOT:-/var/tmp/tansu}
bin=$root/bin/tansu
if [ ! -x "$bin" ]; then
  mkdir -p "$root"
  exec 9>"$root.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    echo "installing tansu into $root (first time: about 16 minutes)" >&2
    CARGO_TARGET_DIR=$root/target cargo install -q tansu --version 0.6.0 --locked \
      --features dynostore --root "$root" >&2
    rm -rf "$root/target"
  fi
fi
echo "$bin"
