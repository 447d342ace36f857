#!/usr/bin/env bash
# scripts/test.sh : every check a change must pass, as CI runs it: formatting, clippy with
# warnings as errors, then the whole test suite (unit, integration, end-to-end and doc tests).
# Needs a Rust toolchain; the network-namespace test needs root and iproute2 (installed here
# when missing) and the cluster tests pgrep (procps).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v pgrep >/dev/null || missing+=(procps)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
