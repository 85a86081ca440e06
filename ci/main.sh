#!/usr/bin/env bash
# The main job: set up on a fresh machine (idempotent), build parity, and run
# `parity check` on the embedded default spec (stages.yaml at the repo root),
# then, when the spec has a top-level `tokens:` section, `parity tokens` on it
# (docs/tokens.md). Extra arguments go to `parity check`, e.g.
# `bash ci/main.sh subject/gemma3n/stages-bf16.yaml`; the first one not starting
# with `-` is the spec `parity tokens` runs too.
# Exit code: the worse of the two by parity's precedence (2 > 3 > 1 > 0).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. ci/setup.sh
cargo build --release --locked --bin parity
if [ "$#" -eq 0 ]; then set -- stages.yaml; fi
spec=stages.yaml
for a in "$@"; do case "$a" in -*) ;; *) spec="$a"; break ;; esac; done
check=0
target/release/parity check "$@" || check=$?
if ! grep -q '^tokens:' "$spec" 2>/dev/null; then exit "$check"; fi
tokens=0
target/release/parity tokens "$spec" || tokens=$?
rank() { case "$1" in 0) echo 0 ;; 1) echo 1 ;; 3) echo 2 ;; *) echo 3 ;; esac; }
if [ "$(rank "$tokens")" -gt "$(rank "$check")" ]; then exit "$tokens"; fi
exit "$check"
