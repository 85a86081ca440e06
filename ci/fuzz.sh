#!/usr/bin/env bash
# Bounded coverage-guided fuzz run of parity's readers (npy, npz, safetensors,
# stages.yaml, MLIR, vmfb) on the stable toolchain: cargo-fuzz with `-s none`
# (libFuzzer, no sanitizer) and debug assertions (overflow checks) on.
#
#   bash ci/fuzz.sh                        # every target, PARITY_FUZZ_SECONDS each (default 20)
#   PARITY_FUZZ_SECONDS=600 bash ci/fuzz.sh mlir   # one target, longer
#
# Each target starts from its committed corpus (fuzz/corpus/<target>/, read only
# here) and writes what it discovers to a scratch directory, so a run leaves the
# repo unchanged. Any crash, panic, timeout (-timeout, seconds per input) or
# out-of-memory (-rss_limit_mb) fails the run; libFuzzer leaves the input in
# fuzz/artifacts/<target>/. docs/fuzzing.md says how it becomes a regression case.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CARGO_FUZZ_VERSION=0.13.2
seconds="${PARITY_FUZZ_SECONDS:-20}"

if ! cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    echo "ci/fuzz.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
    cargo install --locked "cargo-fuzz@$CARGO_FUZZ_VERSION"
fi

cd fuzz
flags=(-s none -a)
cargo fuzz build "${flags[@]}"

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=()
for target in "${targets[@]}"; do
    echo "ci/fuzz.sh: fuzzing $target for ${seconds}s" >&2
    mkdir -p "$scratch/$target"
    # -print_final_stats: executions and coverage reached, for the log.
    if ! cargo fuzz run "${flags[@]}" "$target" "$scratch/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 2>"$scratch/$target.log"; then
        tail -n 60 "$scratch/$target.log" >&2
        failed+=("$target")
    else
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' \
            "$scratch/$target.log" | sed "s/^/ci\/fuzz.sh: $target: /" >&2 || true
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "ci/fuzz.sh: FAILED: ${failed[*]}; the inputs are in fuzz/artifacts/<target>/ (see docs/fuzzing.md)" >&2
    exit 1
fi
echo "ci/fuzz.sh: ${#targets[@]} targets fuzzed for ${seconds}s each, no crash" >&2
