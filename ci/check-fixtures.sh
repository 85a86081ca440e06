#!/usr/bin/env bash
# Regenerates every committed fixture from its scripts (pinned venv in
# tools/fixtures/.venv) and compares the result with the committed files:
# tensors with `parity compare` at tight tolerances, MLIR and weights byte for
# byte.
#
# The regeneration runs in a scratch copy of the checkout's tracked files, never
# in the checkout itself: the tests can read the committed fixtures while this
# runs (ci/test.sh runs both at once), and a killed run leaves nothing changed.
# PARITY_FIXTURES_KEEP=1 keeps the scratch copy and prints where it is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
parity="${PARITY_BIN:-target/debug/parity}"
[ -x "$parity" ] || cargo build --locked --bin parity
parity="$(cd "$(dirname "$parity")" && pwd)/$(basename "$parity")"
make -C tools/fixtures venv
py="$repo/tools/fixtures/.venv/bin/python"
# CPU dispatch pinned (numpy, OpenBLAS, XLA) so the fixtures come out byte for
# byte on AVX-512 machines too: tools/fixtures/pin_cpu.env says why.
while IFS= read -r line; do
  case "$line" in ''|'#'*) ;; *) export "${line?}" ;; esac
done <tools/fixtures/pin_cpu.env

scratch="$(mktemp -d)"
if [ "${PARITY_FIXTURES_KEEP:-0}" = 1 ]; then
  echo "check-fixtures: regenerated tree kept in $scratch/tree" >&2
else
  trap 'rm -rf "$scratch"' EXIT
fi
tree="$scratch/tree"
mkdir -p "$tree"
# The tracked files as they are in the working tree (uncommitted edits included);
# tar keeps their modification times.
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$tree"

status=0
( cd "$tree" &&
  make -C tools/fixtures all PY="$py" &&
  ( cd examples/basic && "$py" make_oracle.py ) &&
  ( cd examples/tokens && "$py" make_fixture.py >/dev/null ) &&
  "$py" examples/masked/make_fixture.py >/dev/null &&
  ( cd tools/fixtures/production && "$py" make_specs.py ) ) || status=$?
if [ "$status" -eq 0 ]; then
  python3 ci/compare_fixtures.py "$parity" . "$tree" || status=$?
  # examples/tokens is byte-reproducible (its search runs the IREE module it writes).
  diff -r -x __pycache__ examples/tokens "$tree/examples/tokens" || { echo "check-fixtures: examples/tokens differs" >&2; status=1; }
  # examples/llama is byte-reproducible (made by `make -C tools/fixtures all`, target llama).
  diff -r -x __pycache__ examples/llama "$tree/examples/llama" || { echo "check-fixtures: examples/llama differs" >&2; status=1; }
  # examples/masked is byte-reproducible too (MLIR, mel.npy and manifest).
  diff -r -x __pycache__ examples/masked "$tree/examples/masked" || { echo "check-fixtures: examples/masked differs" >&2; status=1; }
  # The generated specs (make_specs.py, from the committed measurements) are byte-reproducible:
  # a hand edit of one (say the root stages.yaml) must go into make_specs.py / lm_specs.py too.
  for f in stages.yaml $(git ls-files 'subject/gemma3n/*.yaml'); do
    cmp -s "$f" "$tree/$f" || { echo "check-fixtures: $f differs from what make_specs.py writes" >&2; diff "$f" "$tree/$f" | head -20 >&2; status=1; }
  done
else
  echo "check-fixtures: regeneration failed (exit $status)" >&2
fi
exit "$status"
