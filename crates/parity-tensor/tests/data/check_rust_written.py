#!/usr/bin/env python3
"""Checks that files written by parity-tensor's writers load in numpy
(+ ml_dtypes), MLX and the safetensors library with the intended values.

Driven by tests/python_interop.rs, which writes the files plus `expected.json`
({file: {key: {dtype, shape, values}}}) into a directory and runs:
    python check_rust_written.py DIR
Same pinned versions as make_fixtures.py (requirements.txt). Exits non-zero
with a message naming file and key on the first disagreement.
"""

import json
import math
import os
import sys

import ml_dtypes
import mlx.core as mx
import numpy as np
import safetensors

NP = {"bool": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32",
      "i64": "int64", "f16": "float16", "f32": "float32", "f64": "float64"}
MX = {"bool": mx.bool_, "u8": mx.uint8, "i8": mx.int8, "i16": mx.int16, "i32": mx.int32,
      "i64": mx.int64, "f16": mx.float16, "bf16": mx.bfloat16, "f32": mx.float32,
      "f64": mx.float64}


def check(what, arr_f64, shape, dtype_ok, spec):
    if not dtype_ok:
        sys.exit(f"{what}: wrong dtype for {spec['dtype']}")
    if list(shape) != spec["shape"]:
        sys.exit(f"{what}: shape {list(shape)} != {spec['shape']}")
    got = [float(v) for v in np.asarray(arr_f64).ravel()]
    if len(got) != len(spec["values"]):
        sys.exit(f"{what}: {len(got)} elements, expected {len(spec['values'])}")
    for i, (g, w) in enumerate(zip(got, spec["values"])):
        w = float(w)  # "nan" / "inf" / "-inf" arrive as strings
        same = g == w and math.copysign(1, g) == math.copysign(1, w)
        if not (same or (math.isnan(g) and math.isnan(w))):
            sys.exit(f"{what}: element {i} is {g}, expected {w}")


def from_numpy(arr, dtype):
    """numpy loads bf16 as void '<V2'; view it through ml_dtypes as its users do."""
    if dtype == "bf16":
        ok = arr.dtype == np.dtype("V2")
        arr = arr.view(ml_dtypes.bfloat16)
    else:
        ok = arr.dtype == np.dtype(NP[dtype])
    return arr.astype(np.float64), arr.shape, ok


def from_mlx(arr, dtype):
    return np.array(arr.astype(mx.float64)), arr.shape, arr.dtype == MX[dtype]


def main(root):
    with open(os.path.join(root, "expected.json")) as f:
        files = json.load(f)
    checked = 0
    for name, keys in sorted(files.items()):
        path = os.path.join(root, name)
        if name.endswith(".npy"):
            spec = keys[""]
            check(f"np.load {name}", *from_numpy(np.load(path), spec["dtype"]), spec)
            check(f"mx.load {name}", *from_mlx(mx.load(path), spec["dtype"]), spec)
            checked += 2
        elif name.endswith(".npz"):
            with np.load(path) as npz:
                for key, spec in keys.items():
                    check(f"np.load {name}[{key}]", *from_numpy(npz[key], spec["dtype"]), spec)
            loaded = mx.load(path)
            for key, spec in keys.items():
                check(f"mx.load {name}[{key}]", *from_mlx(loaded[key], spec["dtype"]), spec)
            checked += 2 * len(keys)
        else:
            # MLX 0.32.4 neither saves nor loads F64 safetensors; such files go to
            # the safetensors library only.
            if all(v["dtype"] != "f64" for v in keys.values()):
                tensors, meta = mx.load(path, return_metadata=True)
                if meta != {"writer": "parity-tensor"}:
                    sys.exit(f"mx.load {name}: metadata {meta}")
                for key, spec in keys.items():
                    check(f"mx.load {name}[{key}]", *from_mlx(tensors[key], spec["dtype"]), spec)
                    checked += 1
            # The safetensors numpy API has no bfloat16; files without it go through it too.
            if all(v["dtype"] != "bf16" for v in keys.values()):
                with safetensors.safe_open(path, framework="numpy") as st:
                    if st.metadata() != {"writer": "parity-tensor"}:
                        sys.exit(f"safetensors {name}: metadata {st.metadata()}")
                    for key, spec in keys.items():
                        arr = st.get_tensor(key)
                        check(f"safetensors {name}[{key}]", *from_numpy(arr, spec["dtype"]), spec)
                        checked += 1
    print(f"ok: {checked} checks")


if __name__ == "__main__":
    main(sys.argv[1])
    # Every check has run and its verdict is printed. MLX's CPU backend can abort
    # at interpreter teardown ("terminate called without an active exception",
    # a worker thread still joinable: seen under heavy load, after "ok: 78
    # checks"), which turned a passing check into a failed test. Leave without
    # running teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
