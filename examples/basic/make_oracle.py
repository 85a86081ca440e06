#!/usr/bin/env python3
"""Generate the basic example's weights, MLX oracle dumps and f64 ground truth.

Run from anywhere with the pinned environment (requirements.txt):

    python3 -m venv /tmp/examples-venv
    /tmp/examples-venv/bin/pip install -r examples/basic/requirements.txt
    /tmp/examples-venv/bin/python examples/basic/make_oracle.py

Writes, next to this script:
  weights.safetensors      ln.gamma, ln.beta, conv.weight, attn.wq, attn.wk (f32),
                           proj.weight, proj.bias (bf16)
  oracle/manifest.json     parity.oracle-manifest/1
  oracle/<name>.npy        inputs, mask and every f32/i32/bool stage output (MLX, CPU)
  oracle/bf16.safetensors  bf16 stage outputs (numpy's .npy has no bf16 dtype)
  oracle/truth_f64.npz     f64 ground truth of every float stage output (numpy f64)

The oracle is the MLX chain: each stage consumes the previous MLX stage output,
so the oracle tensor of a stage output is also the isolated-mode input of the
next stage. The f64 truth is a separate end-to-end numpy float64 chain from the
same inputs and weights (upcast), never MLX float64, which is not a true f64
reference on CPU (see shared/context/field-notes.md).

Every file is byte-for-byte reproducible: fixed seed, .npy for plain arrays,
npz written with a fixed zip timestamp, safetensors with sorted keys.
"""

import hashlib
import io
import json
import platform
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import ml_dtypes
import mlx.core as mx
import numpy as np
from safetensors.numpy import save as st_save

SEED = 20261130
BATCH, TIME, CH, KERNEL, STRIDE, PROJ_OUT = 2, 8, 16, 3, 2, 8
SUB = TIME // STRIDE
EPS = 1e-5
MASK_FILL = -1e9
# Batch item 1 has 5 real time steps; steps 5..7 are padding.
VALID_LEN = [TIME, 5]

HERE = Path(__file__).resolve().parent
ORACLE = HERE / "oracle"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def make_inputs(rng):
    """Deterministic input, mask and weights (f32, proj.weight bf16)."""
    mask = np.zeros((BATCH, TIME), dtype=np.bool_)
    for b, n in enumerate(VALID_LEN):
        mask[b, n:] = True
    offset = rng.standard_normal(CH).astype(np.float32)
    x = (rng.standard_normal((BATCH, TIME, CH)) * 2.0 + offset).astype(np.float32)
    # Canonical padding: padded frames are zero, as a production front end emits.
    x[mask] = 0.0
    weights = {
        "ln.gamma": (1.0 + 0.1 * rng.standard_normal(CH)).astype(np.float32),
        "ln.beta": (0.1 * rng.standard_normal(CH)).astype(np.float32),
        "conv.weight": (rng.standard_normal((CH, KERNEL, CH)) / np.sqrt(KERNEL * CH)).astype(
            np.float32
        ),
        "attn.wq": (rng.standard_normal((CH, CH)) / 2.0).astype(np.float32),
        "attn.wk": (rng.standard_normal((CH, CH)) / 2.0).astype(np.float32),
        "proj.weight": (rng.standard_normal((CH, PROJ_OUT)) / 4.0).astype(ml_dtypes.bfloat16),
        "proj.bias": (0.5 * rng.standard_normal(PROJ_OUT)).astype(ml_dtypes.bfloat16),
    }
    return x, mask, weights


def mlx_oracle(x, mask, w):
    """The oracle chain in MLX on CPU: f32 stages, bf16 for the last two."""
    mx.set_default_device(mx.cpu)
    to_mx = mx.array
    xm = to_mx(x)
    normed = mx.fast.layer_norm(xm, to_mx(w["ln.gamma"]), to_mx(w["ln.beta"]), EPS)
    conv = mx.conv1d(normed, to_mx(w["conv.weight"]), stride=STRIDE, padding=1)
    q = conv @ to_mx(w["attn.wq"])
    k = conv @ to_mx(w["attn.wk"])
    scores = (q @ k.transpose(0, 2, 1)) * 0.25
    mask_sub = to_mx(mask[:, ::STRIDE])
    masked = mx.where(mask_sub[:, None, :], mx.array(MASK_FILL, dtype=mx.float32), scores)
    probs = mx.softmax(masked, axis=-1)
    probs = mx.where(mask_sub[:, :, None], mx.array(0.0, dtype=mx.float32), probs)
    argmax = mx.argmax(masked, axis=-1).astype(mx.int32)
    argmax = mx.where(mask_sub, mx.array(-1, dtype=mx.int32), argmax)
    context = (probs @ conv).astype(mx.bfloat16)
    def to_bf16(a):
        return mx.array(np.asarray(a).view(np.uint16)).view(mx.bfloat16)

    # bf16 throughout, as an MLX bf16 model runs: the matmul result is rounded
    # to bf16 before the bias add, which rounds again.
    proj = context @ to_bf16(w["proj.weight"]) + to_bf16(w["proj.bias"])
    mx.eval(normed, conv, scores, probs, argmax, context, proj)

    def f32(a):
        return np.array(a, dtype=np.float32)

    def bf16(a):
        return np.array(a.view(mx.uint16)).view(ml_dtypes.bfloat16)

    return {
        "normed": f32(normed),
        "conv": f32(conv),
        "scores": f32(scores),
        "probs": f32(probs),
        "argmax": np.array(argmax, dtype=np.int32),
        "context": bf16(context),
        "proj": bf16(proj),
    }


def f64_truth(x, mask, w):
    """The same chain in numpy float64 end to end: the ground truth."""
    w64 = {k: np.asarray(v).astype(np.float64) for k, v in w.items()}
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    normed = (x64 - mean) / np.sqrt(var + EPS) * w64["ln.gamma"] + w64["ln.beta"]
    padded = np.pad(normed, ((0, 0), (1, 1), (0, 0)))
    conv = np.zeros((BATCH, SUB, CH))
    for t in range(SUB):
        window = padded[:, t * STRIDE : t * STRIDE + KERNEL, :]  # [B, K, Cin]
        conv[:, t, :] = np.einsum("bki,oki->bo", window, w64["conv.weight"])
    scores = (conv @ w64["attn.wq"]) @ (conv @ w64["attn.wk"]).transpose(0, 2, 1) * 0.25
    mask_sub = mask[:, ::STRIDE]
    masked = np.where(mask_sub[:, None, :], MASK_FILL, scores)
    e = np.exp(masked - masked.max(axis=-1, keepdims=True))
    probs = np.where(mask_sub[:, :, None], 0.0, e / e.sum(axis=-1, keepdims=True))
    context = probs @ conv
    proj = context @ w64["proj.weight"] + w64["proj.bias"]
    return {
        "normed": normed,
        "conv": conv,
        "scores": scores,
        "probs": probs,
        "context": context,
        "proj": proj,
    }


def npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def write_npz(path, arrays):
    """np.savez stamps the current time into the zip; use a fixed one instead."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(key + ".npy", date_time=ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, npy_bytes(arrays[key]))
    path.write_bytes(buf.getvalue())


def dtype_name(a):
    if a.dtype == ml_dtypes.bfloat16:
        return "bf16"
    return {"float32": "f32", "float64": "f64", "int32": "i32", "bool": "bool"}[a.dtype.name]


def sha256_file(path):
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def main():
    rng = np.random.default_rng(SEED)
    x, mask, weights = make_inputs(rng)
    oracle = mlx_oracle(x, mask, weights)
    truth = f64_truth(x, mask, weights)

    (HERE / "weights.safetensors").write_bytes(st_save(dict(sorted(weights.items()))))
    ORACLE.mkdir(exist_ok=True)
    tensors = {}

    plain = {"x": x, "mask": mask, "mask_sub": mask[:, ::STRIDE].copy()}
    plain.update({k: v for k, v in oracle.items() if v.dtype != ml_dtypes.bfloat16})
    for name, arr in plain.items():
        (ORACLE / f"{name}.npy").write_bytes(npy_bytes(arr))
        tensors[name] = {"file": f"{name}.npy", "dtype": dtype_name(arr), "shape": list(arr.shape)}

    bf16 = {k: v for k, v in oracle.items() if v.dtype == ml_dtypes.bfloat16}
    (ORACLE / "bf16.safetensors").write_bytes(st_save(dict(sorted(bf16.items()))))
    for name, arr in bf16.items():
        tensors[name] = {
            "file": "bf16.safetensors",
            "key": name,
            "dtype": "bf16",
            "shape": list(arr.shape),
        }

    write_npz(ORACLE / "truth_f64.npz", truth)
    for name, arr in truth.items():
        tensors[f"{name}@f64"] = {
            "file": "truth_f64.npz",
            "key": name,
            "dtype": "f64",
            "shape": list(arr.shape),
        }

    config = {
        "script": "examples/basic/make_oracle.py",
        "script_sha256": sha256_file(Path(__file__).resolve()),
        "shape": {"batch": BATCH, "time": TIME, "channels": CH, "proj_out": PROJ_OUT},
        "conv": {"kernel": KERNEL, "stride": STRIDE, "padding": [1, 1]},
        "layer_norm_eps": EPS,
        "mask_fill": MASK_FILL,
        "valid_len": VALID_LEN,
        "mlx_device": "cpu",
        "truth": "numpy float64, end-to-end chain from the same inputs",
    }
    config_json = json.dumps(config, sort_keys=True, separators=(",", ":"))
    versions = {pkg: metadata.version(pkg) for pkg in ["mlx", "numpy", "safetensors", "ml_dtypes"]}
    versions["python"] = platform.python_version()
    manifest = {
        "schema": "parity.oracle-manifest/1",
        "provenance": {
            "producer": "examples/basic/make_oracle.py",
            "versions": versions,
            "config": config,
            "config_hash": "sha256:" + hashlib.sha256(config_json.encode()).hexdigest(),
            "seeds": {"numpy.default_rng": SEED},
            "cases": {},
        },
        "tensors": dict(sorted(tensors.items())),
    }
    (ORACLE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {len(tensors)} tensors to {ORACLE}", file=sys.stderr)


if __name__ == "__main__":
    main()
