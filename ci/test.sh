#!/usr/bin/env bash
# The whole test suite: set up on a fresh machine (idempotent), then lint,
# build and run every test of the workspace against the real IREE compiler
# and runtime, then regenerate the bundled fixtures from their pinned scripts
# and compare them with the committed ones, then fuzz every reader for a
# bounded time (ci/fuzz.sh, about 3-5 minutes with its build). Every step
# prints how long it took.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
took() { echo "ci/test.sh: $1 took $((SECONDS - $2)) s (at $((SECONDS - start)) s)" >&2; }

t=$SECONDS
. ci/setup.sh
# The pinned fixture environment (MLX, mlx-vlm, JAX, numpy, safetensors):
# needed to regenerate fixtures, and used by the tensor crate's interop tests
# to read back what parity writes with numpy, MLX and safetensors.
make -C tools/fixtures venv
export PARITY_TENSOR_PYTHON="$PWD/tools/fixtures/.venv/bin/python"
took "set-up" $t

t=$SECONDS
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
took "fmt and clippy" $t
t=$SECONDS
cargo test --locked --workspace
took "cargo test" $t
t=$SECONDS
bash ci/check-fixtures.sh
took "the fixture check" $t
t=$SECONDS
bash ci/fuzz.sh
took "the fuzz run" $t
took "the whole suite" $start
