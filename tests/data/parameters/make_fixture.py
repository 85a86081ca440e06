"""Writes the parameter fixture of tests/parameters.rs into OUT_DIR.

Deterministic (no randomness, no clock): the same bytes on every run.
Needs numpy and IREE's Python packages (iree-base-runtime==3.13.0 for
iree.runtime.save_archive_file, iree-base-compiler==3.13.0 for the
prebuilt module); the test runs it with EERIE_PYTHON.

    python make_fixture.py OUT_DIR

Writes, for model.mlir (next to this script):
  weights.irpa          w f32[4,3], b f32[3], s f32[3]   (IREE parameter archive)
  weights.safetensors   the same three tensors
  no_b.irpa             w and s only (the key `b` missing)
  long_w.irpa           w as f32[16] (more bytes than the global's 48)
  wrong_shape.safetensors  w as f32[3,4] (the same 48 bytes, another shape)
  model.vmfb            model.mlir compiled for llvm-cpu (generic CPU): a
                        prebuilt module whose parameters parity cannot read
  oracle/x.npy, oracle/xw.npy, oracle/y.npy, oracle/z.npy
      x, xw = x @ w, y = xw + b and z = y * s, computed in float64 and stored as f32;
      every value is a small dyadic rational, so f32 holds them exactly.
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np
import iree.compiler as ireec
import iree.runtime as ireert


def safetensors_bytes(tensors):
    """A .safetensors file: u64 header length, JSON header, data in order."""
    header, data, offset = {}, b"", 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": {"float32": "F32"}[array.dtype.name],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        data += raw
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    w = (np.arange(12, dtype=np.float64).reshape(4, 3) - 5.0) / 8.0
    b = np.array([0.5, -1.0, 2.25])
    s = np.array([2.0, -0.5, 0.25])
    x = np.array([[1.0, 2.0, 3.0, 4.0], [-4.0, 0.5, 0.0, 1.5]])
    xw = x @ w
    y = xw + b
    z = y * s
    f32 = lambda a: a.astype(np.float32)
    weights = {"w": f32(w), "b": f32(b), "s": f32(s)}
    ireert.save_archive_file(weights, out / "weights.irpa")
    (out / "weights.safetensors").write_bytes(safetensors_bytes(weights))
    ireert.save_archive_file({"w": f32(w), "s": f32(s)}, out / "no_b.irpa")
    ireert.save_archive_file(
        {"w": np.arange(16, dtype=np.float32), "b": f32(b), "s": f32(s)},
        out / "long_w.irpa",
    )
    (out / "wrong_shape.safetensors").write_bytes(
        safetensors_bytes({"w": f32(w).reshape(3, 4), "b": f32(b), "s": f32(s)})
    )
    ireec.compile_file(
        str(Path(__file__).with_name("model.mlir")),
        target_backends=["llvm-cpu"],
        extra_args=["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"],
        output_file=str(out / "model.vmfb"),
    )
    oracle = out / "oracle"
    oracle.mkdir(exist_ok=True)
    for name, value in {"x": x, "xw": xw, "y": y, "z": z}.items():
        assert np.array_equal(f32(value).astype(np.float64), value), name
        np.save(oracle / f"{name}.npy", f32(value))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
