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
# The Kafka tests' broker (tansu), built once per machine under /var/tmp (10 minutes the first
# time), before the tests so that no test waits on it.
"$(dirname "$0")/install-tansu.sh" >/dev/null
# The S3 tests' server (moto, from PyPI), in a virtualenv of its own outside the clone.
moto=/var/tmp/hummer-moto
if [ ! -x $moto/bin/moto_server ]; then
  rm -rf $moto && python3 -m venv $moto && $moto/bin/pip install -q 'moto[server]==5.1.*'
fi
# The heavy tier (broker, browser, qemu, root, S3 server) runs here; plain `cargo test` skips
# it (tests/common/heavy.rs).
export HUMMER_HEAVY_TESTS=1
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
cargo test --doc
