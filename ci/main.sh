#!/usr/bin/env bash
# The main job: set up on a fresh machine (idempotent), build parity, and run
# `parity check` on the embedded default spec (stages.yaml at the repo root).
# Extra arguments go to `parity check`, e.g. `bash ci/main.sh subject/gemma3n/stages-bf16.yaml`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. ci/setup.sh
cargo build --release --locked --bin parity
if [ "$#" -eq 0 ]; then set -- stages.yaml; fi
exec target/release/parity check "$@"
