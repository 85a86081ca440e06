#!/usr/bin/env bash
# Fetches what building IREE's CUDA HAL driver needs, from the package registries only:
# the CUDA headers (`include/` of the wheels nvidia-cuda-runtime-cu12, nvidia-cuda-nvcc-cu12
# and nvidia-cuda-cccl-cu12) and `nvvm/libdevice/libdevice.10.bc` (nvidia-cuda-nvcc-cu12),
# unpacked (not installed) into <repo>/.cuda-deps/, the
# IREE_CUDA_DEPS_DIR that .cargo/config.toml gives eerie-sys's CMake build. Without it
# CMake would try to download a CUDA toolkit, which fails offline.
#
#   bash ci/cuda-deps.sh [PYTHON]     # idempotent; called by ci/setup.sh
#
# The runtime built this way loads libcuda.so at run time (IREE's dynamic symbols), so the
# binary runs on machines without a GPU; only creating a CUDA device fails there.
#
# eerie-sys's build script does not rerun when these files change, so a change of the
# pinned versions below also runs `cargo clean -p eerie-sys` (the build then reruns).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${1:-$repo/.venv/bin/python}"
RUNTIME_VERSION=12.9.79
NVCC_VERSION=12.9.86
CCCL_VERSION=12.9.27
deps="$repo/.cuda-deps"
want="nvidia-cuda-runtime-cu12==$RUNTIME_VERSION nvidia-cuda-nvcc-cu12==$NVCC_VERSION nvidia-cuda-cccl-cu12==$CCCL_VERSION $(uname -m)"
stamp="$deps/.stamp"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
    && [ -f "$deps/include/cuda.h" ] && [ -f "$deps/include/cuda_runtime.h" ] \
    && [ -f "$deps/nvvm/libdevice/libdevice.10.bc" ]; then
    echo "ci/cuda-deps.sh: $deps is up to date ($want)" >&2
    exit 0
fi
case "$(uname -m)" in
    x86_64) platform=manylinux2014_x86_64 ;;
    aarch64) platform=manylinux2014_aarch64 ;;
    *) echo "ci/cuda-deps.sh: no CUDA wheels for $(uname -m)" >&2; exit 1 ;;
esac
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "ci/cuda-deps.sh: fetching $want" >&2
"$python" -m pip download --disable-pip-version-check -q --no-deps --only-binary=:all: \
    --platform "$platform" -d "$tmp" \
    "nvidia-cuda-runtime-cu12==$RUNTIME_VERSION" "nvidia-cuda-nvcc-cu12==$NVCC_VERSION" \
    "nvidia-cuda-cccl-cu12==$CCCL_VERSION" >&2
rm -rf "$deps.new"
mkdir -p "$deps.new/include" "$deps.new/nvvm/libdevice"
"$python" - "$tmp" "$deps.new" <<'PY'
import pathlib, sys, zipfile
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
# IREE's own recipe (build_tools/scripts/fetch_cuda_deps.sh): the include/ trees of
# cuda_cudart, cuda_nvcc and cuda_cccl (IREE's nccl.h includes cuda_runtime.h, cuda_fp16.h
# and cuda_bf16.h, which need crt/ and nv/target), and libdevice.
prefixes = {
    "nvidia/cuda_runtime/include/": dst / "include",
    "nvidia/cuda_nvcc/include/": dst / "include",
    "nvidia/cuda_cccl/include/": dst / "include",
    "nvidia/cuda_nvcc/nvvm/libdevice/": dst / "nvvm/libdevice",
}
for wheel in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            for prefix, out in prefixes.items():
                if name.startswith(prefix) and not name.endswith("/"):
                    path = out / name[len(prefix):]
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(z.read(name))
for need in ("include/cuda.h", "include/cuda_runtime.h", "include/crt/host_config.h",
             "include/nv/target",
             "nvvm/libdevice/libdevice.10.bc"):
    if not (dst / need).is_file():
        sys.exit(f"ci/cuda-deps.sh: {need} not found in the wheels")
PY
old=""
[ -f "$stamp" ] && old="$(cat "$stamp")"
rm -rf "$deps"
mv "$deps.new" "$deps"
printf '%s\n' "$want" >"$stamp"
if [ -n "$old" ] && [ "$old" != "$want" ] && command -v cargo >/dev/null 2>&1; then
    echo "ci/cuda-deps.sh: versions changed ($old -> $want): cargo clean -p eerie-sys" >&2
    (cd "$repo" && cargo clean -p eerie-sys >&2) || true
fi
echo "ci/cuda-deps.sh: $deps ready" >&2
