#!/usr/bin/env bash
# Regenerates every committed fixture from its scripts (pinned venv in
# tools/fixtures/.venv) and compares the result with the committed files:
# tensors with `parity compare` at tight tolerances, MLIR and weights byte for
# byte. The working tree is restored afterwards.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
parity="${PARITY_BIN:-target/debug/parity}"
[ -x "$parity" ] || cargo build --locked --bin parity
make -C tools/fixtures venv
snap="$(mktemp -d)"
trap 'rm -rf "$snap"' EXIT
for d in oracle-dumps/gemma3n oracle-dumps/gemma3n-as-shipped subject/gemma3n examples/basic examples/tokens examples/masked; do
  mkdir -p "$snap/$(dirname "$d")" && cp -a "$d" "$snap/$d"
done
restore() {
  for d in oracle-dumps/gemma3n oracle-dumps/gemma3n-as-shipped subject/gemma3n examples/basic examples/tokens examples/masked; do
    rm -rf "$d" && cp -a "$snap/$d" "$d"
  done
}
status=0
( make -C tools/fixtures all &&
  ( cd examples/basic && ../../tools/fixtures/.venv/bin/python make_oracle.py ) &&
  ( cd examples/tokens && ../../tools/fixtures/.venv/bin/python make_fixture.py >/dev/null ) &&
  tools/fixtures/.venv/bin/python examples/masked/make_fixture.py >/dev/null ) || status=$?
if [ "$status" -eq 0 ]; then
  python3 ci/compare_fixtures.py "$parity" "$snap" . || status=$?
  # examples/tokens is byte-reproducible (its search runs the IREE module it writes).
  diff -r "$snap/examples/tokens" examples/tokens || { echo "check-fixtures: examples/tokens differs" >&2; status=1; }
  # examples/masked is byte-reproducible too (MLIR, mel.npy and manifest).
  diff -r "$snap/examples/masked" examples/masked || { echo "check-fixtures: examples/masked differs" >&2; status=1; }
else
  echo "check-fixtures: regeneration failed (exit $status)" >&2
fi
restore
exit "$status"
