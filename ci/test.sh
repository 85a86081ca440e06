#!/usr/bin/env bash
# The whole test suite: set up on a fresh machine (idempotent), then lint,
# build and run every test of the workspace against the real IREE compiler
# and runtime, then regenerate the bundled fixtures from their pinned scripts
# and compare them with the committed ones, then fuzz every reader for a
# bounded time (ci/fuzz.sh, about 3-5 minutes with its build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. ci/setup.sh
# The pinned fixture environment (MLX, mlx-vlm, JAX, numpy, safetensors):
# needed to regenerate fixtures, and used by the tensor crate's interop tests
# to read back what parity writes with numpy, MLX and safetensors.
make -C tools/fixtures venv
export PARITY_TENSOR_PYTHON="$PWD/tools/fixtures/.venv/bin/python"
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
bash ci/check-fixtures.sh
bash ci/fuzz.sh
