#!/usr/bin/env bash
# The bundled subject on a CUDA GPU: `parity check --target cpu,gpu` (every
# stage, isolated and chained, on the GPU and on the CPU of the same machine,
# each against the MLX oracle and the GPU against the CPU, failing outputs
# labelled backend-specific / port / oracle), `parity tokens --target
# cpu,gpu` (every token case on each, labelled the same way) and `parity
# serve --target cpu,gpu` (the mixed serving scenario on each), of the
# embedded default (stages.yaml). Reports go to $OUT (default
# reports/gpu-check/).
#
#   bash ci/gpu-check.sh            # a machine with the set-up (ci/setup.sh) and a CUDA GPU: both steps
#   bash ci/gpu-check.sh prepare    # build parity (release) and compile the subject for CUDA and CPU
#                                   # into .gpu-check/ (needs the set-up; no GPU needed)
#   bash ci/gpu-check.sh run        # run from .gpu-check/ only (no compiler, no venv): the GPU machine
#
# SM (default sm_89) is the CUDA architecture to compile for: sm_121 for a GB10, sm_89 PTX for
# Hopper (the driver compiles the PTX for the device when it loads it; IREE 3.13's compiler
# rejects sm_90 and sm_90a). The modules are compiled whole with iree-compile from the pinned
# iree-base-compiler, with the spec's flags, and one spec names them as prebuilt vmfbs, the
# CUDA ones as the GPU target's own (`targets.gpu.modules`), so the run needs neither the
# compiler nor Python.
#
# Exit code: the worst of the cpu,gpu check's, tokens run's and serve run's codes by parity's
# precedence (2 > 3 > 1 > 0).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
step="${1:-all}"
SM="${SM:-sm_89}"
dir=.gpu-check
OUT="${OUT:-reports/gpu-check}"

build() {
    . ci/setup.sh
    cargo build --release --locked --bin parity
    mkdir -p "$dir"
    cp "${CARGO_TARGET_DIR:-target}/release/parity" "$dir/parity"
    strip "$dir/parity"
}

modules() {
    . ci/setup.sh
    mkdir -p "$dir"
    local flags=(--iree-input-type=stablehlo)
    for m in audio text; do
        local mlir="$dir/$m.mlir"
        gzip -dc "subject/gemma3n/gemma3n_${m}_f32.mlir.gz" >"$mlir"
        echo "ci/gpu-check.sh: compiling $m for cuda ($SM) and llvm-cpu" >&2
        iree-compile "$mlir" "${flags[@]}" --iree-hal-target-backends=cuda \
            "--iree-cuda-target=$SM" -o "$dir/$m.cuda.vmfb"
        iree-compile "$mlir" "${flags[@]}" --iree-hal-target-backends=llvm-cpu \
            --iree-llvmcpu-target-cpu=generic -o "$dir/$m.cpu.vmfb"
        rm -f "$mlir"
    done
    # The serving module (slot entry points), both ways, with its calling convention beside it.
    gzip -dc subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz >"$dir/serving.mlir"
    echo "ci/gpu-check.sh: compiling serving for cuda ($SM) and llvm-cpu" >&2
    iree-compile "$dir/serving.mlir" "${flags[@]}" --iree-hal-target-backends=cuda \
        "--iree-cuda-target=$SM" -o "$dir/serving.cuda.vmfb"
    iree-compile "$dir/serving.mlir" "${flags[@]}" --iree-hal-target-backends=llvm-cpu \
        --iree-llvmcpu-target-cpu=generic -o "$dir/serving.cpu.vmfb"
    rm -f "$dir/serving.mlir"
    cp subject/gemma3n/serving/serving-functions.json "$dir/"
    # A module for another GPU than the one the run finds (sm_121, a GB10): what loading it says.
    gzip -dc subject/gemma3n/gemma3n_audio_f32.mlir.gz >"$dir/audio.mlir"
    iree-compile "$dir/audio.mlir" "${flags[@]}" --iree-hal-target-backends=cuda \
        --iree-cuda-target=sm_121 -o "$dir/audio.sm_121.vmfb"
    rm -f "$dir/audio.mlir"
}

specs() {
    mkdir -p "$dir"
    # One spec: stages.yaml with its modules replaced by the prebuilt CPU vmfbs, and three
    # targets: the CPU, the GPU with its own prebuilt CUDA vmfbs (`targets.NAME.modules`),
    # and `sm_121`, the GPU device given an audio module built for a GB10 (what the
    # preflight says about a module for another SM). Paths are relative to .gpu-check/.
    python3 - "$SM" >"$dir/stages-gpu.yaml" <<'PY'
import sys
sm = sys.argv[1]
spec = open("stages.yaml").read()
head, rest = spec.split("\nweights:", 1)
head = head[: head.index("\nsubject:")]
subject = (
    "\nsubject:\n  modules:\n    audio: {vmfb: audio.cpu.vmfb}\n    text: {vmfb: text.cpu.vmfb}\n"
    "  targets:\n    cpu: {backend: llvm-cpu, device: local-task}\n"
    f"    gpu:  # {sm}\n      backend: cuda\n      device: cuda\n"
    "      modules: {audio: audio.cuda.vmfb, text: text.cuda.vmfb}\n"
    "    sm_121:\n      backend: cuda\n      device: cuda\n"
    "      modules: {audio: audio.sm_121.vmfb, text: text.cuda.vmfb}"
)
rest = rest.replace("\noracle: subject/", "\noracle: ../subject/", 1)
print(head + subject + "\nweights:" + rest.replace("[subject/", "[../subject/", 1), end="")
PY
    # The mixed serving scenario (five requests, two slots) with the serving module prebuilt
    # per target (`vmfb:`), so serving needs no compiler either.
    sed -e 's|^spec: .*|spec: stages-gpu.yaml|' \
        -e 's|^module: .*|vmfb: {cpu: serving.cpu.vmfb, gpu: serving.cuda.vmfb}|' \
        subject/gemma3n/serving/mixed-scenario.yaml >"$dir/serve-gpu-scenario.yaml"
    ls -la "$dir" >&2
}

rank() { case "$1" in 0) echo 0 ;; 1) echo 1 ;; 3) echo 2 ;; *) echo 3 ;; esac; }
worst=0
keep() { if [ "$(rank "$1")" -gt "$(rank "$worst")" ]; then worst="$1"; fi; }

run() {
    local parity="$dir/parity"
    if [ ! -x "$parity" ]; then
        echo "ci/gpu-check.sh: $parity missing: run \`bash ci/gpu-check.sh prepare\` first" >&2
        exit 2
    fi
    mkdir -p "$OUT"
    if command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.csv"
    else
        echo "ci/gpu-check.sh: no nvidia-smi on this machine" >&2
    fi
    "$parity" --version || true
    "$parity" doctor "$dir/stages-gpu.yaml" | tee "$OUT/doctor.txt" || true
    local rc=0 t0=$SECONDS
    # Both targets in one run: every output against the oracle on each, and the GPU's
    # against the CPU's; each failing output labelled backend-specific, port or oracle.
    echo "== parity check --target cpu,gpu" >&2
    "$parity" check "$dir/stages-gpu.yaml" --target cpu,gpu -q --out-dir "$OUT/check" \
        >"$OUT/check.txt" 2>&1 || rc=$?
    tail -n 60 "$OUT/check.txt"
    echo "ci/gpu-check.sh: check on cpu,gpu took $((SECONDS - t0)) s, exit $rc" >&2
    keep "$rc"
    # Every token case on both targets; a case that fails on one is labelled as the
    # stages are (backend-specific, port, oracle).
    echo "== parity tokens --target cpu,gpu" >&2
    rc=0
    "$parity" tokens "$dir/stages-gpu.yaml" --target cpu,gpu --out-dir "$OUT/tokens" \
        --no-localise >"$OUT/tokens.txt" 2>&1 || rc=$?
    tail -n 40 "$OUT/tokens.txt"
    echo "ci/gpu-check.sh: tokens on cpu,gpu: exit $rc" >&2
    keep "$rc"
    # The mixed serving scenario on both targets: each request's tokens, logits, slot
    # isolation and batch invariance against the oracle on each; a request failing on one
    # target labelled backend-specific, port, undetermined or incomplete.
    echo "== parity serve --target cpu,gpu" >&2
    rc=0
    "$parity" serve "$dir/serve-gpu-scenario.yaml" --target cpu,gpu --out-dir "$OUT/serve" \
        >"$OUT/serve.txt" 2>&1 || rc=$?
    tail -n 40 "$OUT/serve.txt"
    echo "ci/gpu-check.sh: serve on cpu,gpu: exit $rc" >&2
    keep "$rc"
    # The preflight compares the module's PTX (.target sm_121, .version) with the device's
    # compute capability and driver from libcuda: on any GPU but a GB10 it refuses (exit 2)
    # before anything runs, naming the SM and the device.
    echo "== a module built for sm_121 (GB10) on this GPU" >&2
    "$parity" check "$dir/stages-gpu.yaml" --target sm_121 -q --stage sscp_conv_0 --mode isolated \
        --out-dir "$OUT/sm_121" >"$OUT/sm_121.txt" 2>&1 || true
    head -c 4000 "$OUT/sm_121.txt"
    echo "ci/gpu-check.sh: done; reports in $OUT (worst GPU exit $worst)" >&2
    exit "$worst"
}

case "$step" in
    prepare) build; modules; specs ;;
    build | modules | specs | run) "$step" ;;
    all) build; modules; specs; run ;;
    *) echo "usage: bash ci/gpu-check.sh [prepare|run] (prepare = build, modules, specs)" >&2; exit 2 ;;
esac
