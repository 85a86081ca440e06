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
  weights.gguf          the same three tensors (GGUF v3, written here: the
                        `gguf` package is not in the environment)
  long_w.gguf           w as f32[16], b and s as in weights.gguf
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


GGUF_ALIGNMENT = 32
GGML_TYPE_F32 = 0
GGUF_TYPE_UINT32 = 4
GGUF_TYPE_STRING = 8


def gguf_string(text):
    """A GGUF string: u64 byte length, then the UTF-8 bytes."""
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def gguf_bytes(tensors):
    """A GGUF v3 file (llama.cpp's format, as IREE's gguf_parser.c reads it):
    header (magic, version, tensor and metadata counts), metadata
    key/values, tensor infos (name, dims innermost first, ggml type, data
    offset), then the tensor data, every tensor aligned to 32 bytes."""
    meta = [("general.alignment", GGUF_TYPE_UINT32, struct.pack("<I", GGUF_ALIGNMENT)),
            ("general.name", GGUF_TYPE_STRING, gguf_string("parity parameters fixture"))]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta))
    for key, kind, value in meta:
        head += gguf_string(key) + struct.pack("<I", kind) + value
    data, infos = b"", b""
    for name, array in tensors.items():
        assert array.dtype == np.float32, name
        data += b"\0" * (-len(data) % GGUF_ALIGNMENT)
        infos += gguf_string(name) + struct.pack("<I", array.ndim)
        infos += b"".join(struct.pack("<Q", d) for d in reversed(array.shape))
        infos += struct.pack("<IQ", GGML_TYPE_F32, len(data))
        data += np.ascontiguousarray(array).astype("<f4").tobytes()
    head += infos
    head += b"\0" * (-len(head) % GGUF_ALIGNMENT)
    return head + data


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
    (out / "weights.gguf").write_bytes(gguf_bytes(weights))
    (out / "long_w.gguf").write_bytes(
        gguf_bytes({"w": np.arange(16, dtype=np.float32), "b": f32(b), "s": f32(s)})
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
