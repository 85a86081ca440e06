#!/usr/bin/env bash
# The whole test suite: set up on a fresh machine (idempotent), then lint,
# build and run every test of the workspace against the real IREE compiler
# and runtime, then regenerate the bundled fixtures and compare them with the
# committed ones.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. ci/setup.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
if [ -x ci/check-fixtures.sh ]; then
  bash ci/check-fixtures.sh
fi
