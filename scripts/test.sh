#!/usr/bin/env bash
# scripts/test.sh : every check a change must pass, as CI runs it: formatting, clippy with
# warnings as errors, then the whole test suite (unit, integration, end-to-end and doc tests).
# Needs only a Rust toolchain; installs nothing else yet.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
