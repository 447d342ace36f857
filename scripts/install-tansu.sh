#!/usr/bin/env bash
# scripts/install-tansu.sh : installs tansu (a Kafka-protocol broker in Rust, from crates.io)
# for the Kafka tests, once per machine: into /var/tmp/tansu (outside the clone, so a fresh
# clone reuses it). The first install compiles for about 10 minutes on 2 cores (28 with its release profile). Prints the binary's path.
set -euo pipefail
root=${TANSU_ROOT:-/var/tmp/tansu}
bin=$root/bin/tansu
if [ ! -x "$bin" ]; then
  mkdir -p "$root"
  exec 9>"$root.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    echo "installing tansu into $root (first time: about 10 minutes)" >&2
    # A test broker needs no release-grade optimisation: without LTO, over many codegen
    # units and at opt-level 1 it builds in a fraction of the time.
    CARGO_TARGET_DIR=$root/target CARGO_PROFILE_RELEASE_LTO=false \
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
      CARGO_PROFILE_RELEASE_DEBUG=false cargo install -q tansu --version 0.6.0 --locked \
      --features dynostore --root "$root" >&2
    rm -rf "$root/target"
  fi
fi
echo "$bin"
