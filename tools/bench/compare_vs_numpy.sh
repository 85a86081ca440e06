#!/usr/bin/env bash
# Whole-process timings of `parity compare` against numpy on the same f32
# pair (issue 15; tables in docs/performance.md):
#   parity compare ACTUAL EXPECTED
#   numpy's max over the two memory maps (the simplest one-pass read)
#   numpy computing the same metric set (numpy_compare.py metrics)
# interleaved, ROUNDS rounds, each row with its 1-minute load average.
#
#   tools/bench/compare_vs_numpy.sh [DIR] [ROUNDS] [ELEMS]
#
# DIR (default /tmp/parity-bench) gets the pair (made once with
# numpy_compare.py make; 64M elements, 256 MiB a side, by default) and must
# have room for it. PARITY (default target/debug/parity) and PYTHON (default
# python3 with numpy) pick the programs; NUMPY_METRICS=0 skips the slow
# metric-set run after the first round.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-/tmp/parity-bench}"
rounds="${2:-5}"
elems="${3:-$((64 << 20))}"
parity="${PARITY:-$here/../../target/debug/parity}"
python="${PYTHON:-python3}"
mkdir -p "$dir"
if [ ! -f "$dir/actual.npy" ] || [ ! -f "$dir/expected.npy" ]; then
    "$python" "$here/numpy_compare.py" make "$dir" "$elems"
fi
a="$dir/actual.npy"
e="$dir/expected.npy"
# Warm the page cache, so every program reads from memory.
cat "$a" "$e" >/dev/null
run() { # label, command...: one row
    local label="$1"
    shift
    # Wall time to the microsecond (time's own %e has 10 ms steps).
    local t0 t1
    t0="$(date +%s%N)"
    /usr/bin/time -o "$dir/time.txt" -f 'TIME %U %S %M' "$@" >"$dir/out.txt" 2>"$dir/err.txt" || true
    t1="$(date +%s%N)"
    local out inproc
    out="$(grep '^TIME' "$dir/time.txt" || echo 'TIME - - 0')"
    inproc="$(grep -o 'in-process s [0-9.]*' "$dir/out.txt" | awk '{print $3}' || true)"
    read -r _ user sys rss <<<"$out"
    printf '%-14s %8.3f %8s %8s %9s %12s %6s\n' "$label" "$(((t1 - t0) / 1000))e-6" "$user" "$sys" \
        "$((rss / 1024))" "${inproc:--}" "$(cut -d' ' -f1 /proc/loadavg)"
}
printf '%-14s %8s %8s %8s %9s %12s %6s\n' run "wall s" "user s" "sys s" "RSS MiB" "in-proc s" load
for round in $(seq 1 "$rounds"); do
    echo "# round $round"
    run "parity" "$parity" compare "$a" "$e"
    run "numpy max" "$python" "$here/numpy_compare.py" max "$a" "$e"
    if [ "$round" = 1 ] || [ "${NUMPY_METRICS:-1}" != 0 ]; then
        run "numpy metrics" "$python" "$here/numpy_compare.py" metrics "$a" "$e"
    fi
done
