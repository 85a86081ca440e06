#!/usr/bin/env python3
"""Regenerates the parity-tensor format fixtures and expected.json.

Every file here is written by the real library that produces it in the field:
numpy (np.save, np.lib.format.write_array v1/v2/v3, np.savez,
np.savez_compressed), numpy + ml_dtypes (bfloat16), MLX (mx.save, mx.savez,
mx.savez_compressed, mx.save_safetensors) and the safetensors library (numpy API).
Values are small deterministic sequences, chosen to be exact in every dtype
they are stored in (bf16 included), plus -0.0 / inf / nan in the float cases.

Pinned versions (also in requirements.txt beside this file):
    numpy==2.4.6  ml_dtypes==0.6.0  mlx[cpu]==0.32.4 (mlx-cpu==0.32.4)  safetensors==0.8.0
Run from anywhere:
    python3 -m venv /tmp/tensor-venv
    /tmp/tensor-venv/bin/pip install -r crates/parity-tensor/tests/data/requirements.txt
    /tmp/tensor-venv/bin/python crates/parity-tensor/tests/data/make_fixtures.py
Output is byte-for-byte reproducible with these versions (numpy and MLX both
stamp zip members 1980-01-01; the safetensors library orders `__metadata__`
keys by hash, so its fixture carries a single metadata key).
"""

import json
import math
import os

import ml_dtypes
import mlx.core as mx
import numpy as np
import safetensors
import safetensors.numpy as stnp

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
EXPECTED = {}  # file -> key ("" for .npy) -> {dtype, shape, values}

NP_DTYPES = {
    "bool": np.bool_,
    "u8": np.uint8,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "f32": np.float32,
    "f64": np.float64,
}
MX_DTYPES = {
    "bool": mx.bool_,
    "u8": mx.uint8,
    "i8": mx.int8,
    "i16": mx.int16,
    "i32": mx.int32,
    "i64": mx.int64,
    "f16": mx.float16,
    "bf16": mx.bfloat16,
    "f32": mx.float32,
    "f64": mx.float64,
}


def values(dtype, n):
    """n deterministic values exact in `dtype`, with negatives where representable."""
    if dtype == "bool":
        return [float(i % 3 == 0) for i in range(n)]
    if dtype == "u8":
        return [float((i * 37) % 256) for i in range(n)]
    if dtype == "i64":
        # Beyond i32 but exact in f64, to catch 32-bit truncation.
        return [float((i - n // 2) * 3_000_000_001) for i in range(n)]
    return [float(i - n // 2) * (0.5 if dtype in ("f16", "bf16", "f32", "f64") else 3.0)
            for i in range(n)]


def np_array(dtype, shape, special=False):
    n = int(np.prod(shape))
    vals = values(dtype, n)
    if special and n >= 4:
        vals[:4] = [-0.0, math.inf, -math.inf, math.nan]
    return np.array(vals, dtype=np.float64).astype(NP_DTYPES[dtype]).reshape(shape)


def json_value(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def record(name, key, dtype, arr):
    """Expected values: the C-order elements widened to float64."""
    flat = np.asarray(arr).astype(np.float64).ravel(order="C")
    EXPECTED.setdefault(name, {})[key] = {
        "dtype": dtype,
        "shape": list(np.asarray(arr).shape),
        "values": [json_value(float(v)) for v in flat],
    }


def path(name):
    return os.path.join(OUT, name)


def numpy_fixtures():
    a = np_array("f32", (2, 3), special=True)
    np.save(path("np_v1_f32.npy"), a)
    record("np_v1_f32.npy", "", "f32", a)

    for version, dtype in (((2, 0), "f64"), ((3, 0), "i16")):
        arr = np_array(dtype, (3, 2))
        name = f"np_v{version[0]}_{dtype}.npy"
        with open(path(name), "wb") as f:
            np.lib.format.write_array(f, arr, version=version)
        record(name, "", dtype, arr)

    scalar = np.array(2.5, dtype=np.float64)
    np.save(path("np_scalar_f64.npy"), scalar)
    record("np_scalar_f64.npy", "", "f64", scalar)

    bf = np_array("bf16", (2, 2), special=True)
    np.save(path("np_bf16.npy"), bf)  # ml_dtypes bf16 is written as descr '<V2'
    record("np_bf16.npy", "", "bf16", bf)

    fortran = np.asfortranarray(np_array("f32", (2, 3, 4)))
    np.save(path("np_fortran_f32.npy"), fortran)
    record("np_fortran_f32.npy", "", "f32", fortran)

    for dtype, be in (("i32", ">i4"), ("f64", ">f8"), ("f16", ">f2")):
        arr = np_array(dtype, (2, 3)).astype(be)
        name = f"np_bigendian_{dtype}.npy"
        np.save(path(name), arr)
        record(name, "", dtype, arr)

    be_fortran = np.asfortranarray(np_array("i64", (3, 2)).astype(">i8"))
    np.save(path("np_bigendian_fortran_i64.npy"), be_fortran)
    record("np_bigendian_fortran_i64.npy", "", "i64", be_fortran)

    members = {d: np_array(d, (2, 3), special=d.startswith("f") or d == "bf16")
               for d in NP_DTYPES}
    members["scalar"] = np.array(7, dtype=np.int32)
    np.savez(path("np_savez.npz"), **members)
    np.savez_compressed(path("np_savez_compressed.npz"), **members)
    for name in ("np_savez.npz", "np_savez_compressed.npz"):
        for key, arr in members.items():
            record(name, key, "i32" if key == "scalar" else key, arr)


def mlx_fixtures():
    def mx_array(dtype, shape, special=False):
        arr = np_array(dtype, shape, special)
        # mx.array cannot take ml_dtypes bf16 (go through float32, exact for
        # these values) and turns float64 into float32 unless told the dtype.
        if dtype == "bf16":
            return mx.array(arr.astype(np.float32)).astype(mx.bfloat16), arr
        return mx.array(arr, dtype=MX_DTYPES[dtype]), arr

    x, ref = mx_array("f32", (2, 3), special=True)
    mx.save(path("mlx_f32.npy"), x)
    record("mlx_f32.npy", "", "f32", ref)

    x, ref = mx_array("bf16", (5,), special=True)
    mx.save(path("mlx_bf16.npy"), x)  # MLX marks 1-d arrays fortran_order: True
    record("mlx_bf16.npy", "", "bf16", ref)

    x, ref = mx_array("f32", (3, 4))
    mx.save(path("mlx_transposed_f32.npy"), x.T)  # a transposed view is saved in Fortran order
    record("mlx_transposed_f32.npy", "", "f32", ref.T)

    arrays = {d: mx_array(d, (2, 3), special=d.startswith("f") or d == "bf16") for d in MX_DTYPES}
    mx.savez(path("mlx_savez.npz"), **{k: v[0] for k, v in arrays.items()})
    mx.savez_compressed(path("mlx_savez_compressed.npz"), **{k: v[0] for k, v in arrays.items()})
    for name in ("mlx_savez.npz", "mlx_savez_compressed.npz"):
        for key, (_, ref) in arrays.items():
            record(name, key, key, ref)

    # mx.save_safetensors (0.32.4) rejects float64 ("received invalid dtype").
    st = {k: v for k, v in arrays.items() if k != "f64"}
    mx.save_safetensors(path("mlx.safetensors"), {k: v[0] for k, v in st.items()},
                        metadata={"producer": "mlx", "note": "fixture"})
    for key, (_, ref) in st.items():
        record("mlx.safetensors", key, key, ref)


def safetensors_fixtures():
    # The numpy API of safetensors has no bfloat16, so bf16 comes from MLX above.
    arrays = {d: np_array(d, (3, 2), special=d.startswith("f")) for d in NP_DTYPES if d != "bf16"}
    arrays["empty"] = np.zeros((0, 4), dtype=np.float32)
    stnp.save_file(arrays, path("st_numpy.safetensors"), metadata={"format": "np"})
    for key, arr in arrays.items():
        record("st_numpy.safetensors", key, "f32" if key == "empty" else key, arr)


def main():
    os.makedirs(OUT, exist_ok=True)
    numpy_fixtures()
    mlx_fixtures()
    safetensors_fixtures()
    meta = {
        "versions": {
            "numpy": np.__version__,
            "ml_dtypes": ml_dtypes.__version__,
            "mlx": mx.__version__,
            "safetensors": safetensors.__version__,
        },
        "metadata": {
            "mlx.safetensors": {"producer": "mlx", "note": "fixture"},
            "st_numpy.safetensors": {"format": "np"},
        },
        "files": EXPECTED,
    }
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
