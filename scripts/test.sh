#!/usr/bin/env bash
# scripts/test.sh : every check a change must pass, as CI runs it: formatting, clippy with
# warnings as errors, then the whole test suite (unit, integration, end-to-end and doc tests).
# Needs a Rust toolchain; the network-namespace test needs root and iproute2 (installed here
# when missing), the cluster tests pgrep (procps), the dashboard's browser tests Chromium and
# ChromeDriver (Debian's chromium and chromium-driver, installed here when missing), the
# Kafka tests tansu (installed here).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v pgrep >/dev/null || missing+=(procps)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The Kafka tests' broker (tansu), built once per machine under /var/tmp (16 minutes the first
# time), before the tests so that no test waits on it.
"$(dirname "$0")/install-tansu.sh" >/dev/null
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
