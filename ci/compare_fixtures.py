"""Compares regenerated fixtures with committed ones, tensor by tensor, with `parity compare`.

usage: python ci/compare_fixtures.py PARITY_BIN COMMITTED_ROOT REGENERATED_ROOT

For every oracle store (a directory with manifest.json) listed below, every
tensor in the committed manifest is compared with the regenerated file at
tight tolerances (floats: atol 0, rtol 1e-6; integers and bools: exact).
Non-tensor files (MLIR, weights) must be byte-identical; if they are not,
weights are compared tensor by tensor too. Exit 0 when everything matches.
Standard library only, so it runs with any Python 3.
"""

import filecmp
import json
import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

STORES = [
    "oracle-dumps/gemma3n",
    "oracle-dumps/gemma3n-as-shipped",
    "examples/basic/oracle",
    "examples/mlx-lm/oracle",
]
WEIGHTS = [
    "subject/gemma3n/weights.safetensors",
    "examples/basic/weights.safetensors",
    "examples/mlx-lm/model/model.safetensors",
]
TEXT_FILES = [
    # gzip with mtime 0 and no name: byte-reproducible.
    "subject/gemma3n/gemma3n_audio_f32.mlir.gz",
    "subject/gemma3n/gemma3n_audio_bf16.mlir.gz",
    "subject/gemma3n/faults/group_norm_eps.mlir.gz",
    "subject/gemma3n/faults/lconv_not_causal.mlir.gz",
    "subject/gemma3n/faults/reduce_bf16_roundtrip.mlir.gz",
    "subject/gemma3n/faults/rel_shift_off_by_one.mlir.gz",
    "subject/gemma3n/faults/softcap_30.mlir.gz",
    "subject/gemma3n/gemma3n_text_f32.mlir.gz",
    "subject/gemma3n/gemma3n_text_bf16.mlir.gz",
    # The mask fuzzer's zero-padding variant (export_zeropad.py).
    "subject/gemma3n/gemma3n_audio_f32_zeropad.mlir.gz",
    "subject/gemma3n/faults/full_attention_window_32.mlir.gz",
    "subject/gemma3n/serving/gemma3n_serving_f32.mlir.gz",
    "subject/gemma3n/serving/gemma3n_serving_leak_kv_f32.mlir.gz",
    "subject/gemma3n/serving/gemma3n_serving_leak_ple_f32.mlir.gz",
    "subject/gemma3n/serving/gemma3n_serving_leak_mask_f32.mlir.gz",
    "subject/gemma3n/serving/serving-functions.json",
    # The tiny Llama model in mlx-lm's format (tools/fixtures/mlx_lm_model.py).
    "examples/mlx-lm/model/config.json",
    "examples/mlx-lm/model/tokenizer.json",
    "examples/mlx-lm/model/tokenizer_config.json",
]


def compare(parity, a, b, key):
    args = [parity, "compare", str(a), str(b), "--json", "-", "--atol", "0", "--rtol", "1e-6"]
    if key is not None:
        args += ["--key", key]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return f"{b} [{key}]: exit {p.returncode}: {p.stdout.strip()[-300:]} {p.stderr.strip()[-300:]}"
    return None


def main():
    parity, committed, regenerated = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    failures, compared = [], 0
    jobs = []
    for store in STORES:
        manifest = json.loads((committed / store / "manifest.json").read_text())
        for name, entry in sorted(manifest["tensors"].items()):
            a = committed / store / entry["file"]
            b = regenerated / store / entry["file"]
            jobs.append((f"{store}: tensor {name}", a, b, entry.get("key")))
    # One `parity compare` process per tensor, as many at a time as there are
    # cores; results are reported in manifest order whatever finishes first.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        errs = list(pool.map(lambda j: compare(parity, j[1], j[2], j[3]), jobs))
    for (label, _, _, _), err in zip(jobs, errs):
        compared += 1
        if err:
            failures.append(f"{label}: {err}")
    for rel in WEIGHTS:
        a, b = committed / rel, regenerated / rel
        if not filecmp.cmp(a, b, shallow=False):
            failures.append(f"{rel}: regenerated weights differ byte-wise")
    for rel in TEXT_FILES:
        a, b = committed / rel, regenerated / rel
        if not filecmp.cmp(a, b, shallow=False):
            failures.append(f"{rel}: regenerated MLIR differs")
    for f in failures:
        print("MISMATCH", f)
    print(f"fixtures: {compared} tensors compared with parity compare, "
          f"{len(WEIGHTS) + len(TEXT_FILES)} files byte-compared, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
