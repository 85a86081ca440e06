#!/usr/bin/env python3
"""Measure IREE against the oracle for the basic example, independent of parity.

Uses only the pip IREE wheels (iree-base-compiler / iree-base-runtime 3.13.0),
numpy and ml_dtypes, so it runs in parity's dev venv:

    /work/main/.venv/bin/python examples/basic/measure.py [--module model_faulty.mlir]

Compiles the module with iree-compile (same flags as stages.yaml), runs every
stage in isolated mode (inputs from the oracle) and chained mode (inputs from
the upstream IREE stage), and prints per-output metrics over unmasked
elements: max_abs, rms, rel_l2, cosine, max_ulp, ulp p50/p99 (in the output
dtype), the allclose atol needed at rtol 1.3e-6, and the vs_f64 factor
err(iree, truth) / err(oracle, truth) with err = RMS difference.
The numbers in stages*.yaml and README.md come from this script.
"""

import argparse
import json
import struct
import subprocess
import sys
from pathlib import Path

import iree.runtime as rt
import ml_dtypes
import numpy as np

HERE = Path(__file__).resolve().parent
FLAGS = ["--iree-input-type=stablehlo", "--iree-hal-target-backends=llvm-cpu"]

# (function, args, outputs, output mask). Args: ("oracle", name) | ("weight", name)
# | ("stage", output name). Mirrors stages.yaml.
STAGES = [
    ("layer_norm", [("oracle", "x"), ("weight", "ln.gamma"), ("weight", "ln.beta")],
     ["normed"], "mask"),
    ("strided_conv", [("stage", "normed"), ("weight", "conv.weight")], ["conv"], "mask_sub"),
    ("scores", [("stage", "conv"), ("weight", "attn.wq"), ("weight", "attn.wk")],
     ["scores"], "mask_sub"),
    ("masked_softmax", [("stage", "scores"), ("oracle", "mask")], ["probs", "argmax"],
     "mask_sub"),
    ("attend", [("stage", "probs"), ("stage", "conv")], ["context"], "mask_sub"),
    ("proj_bf16", [("stage", "context"), ("weight", "proj.weight"), ("weight", "proj.bias")],
     ["proj"], "mask_sub"),
]


def read_safetensors(path):
    """Minimal safetensors reader (the dev venv has no safetensors package)."""
    raw = path.read_bytes()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + hlen])
    dtypes = {"F32": np.float32, "BF16": ml_dtypes.bfloat16, "I32": np.int32, "F64": np.float64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        lo, hi = meta["data_offsets"]
        buf = raw[8 + hlen + lo : 8 + hlen + hi]
        out[name] = np.frombuffer(buf, dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
    return out


def load_oracle():
    manifest = json.loads((HERE / "oracle" / "manifest.json").read_text())
    out = {}
    for name, entry in manifest["tensors"].items():
        path = HERE / "oracle" / entry["file"]
        if path.suffix == ".npy":
            out[name] = np.load(path)
        elif path.suffix == ".npz":
            out[name] = np.load(path)[entry["key"]]
        else:
            out[name] = read_safetensors(path)[entry["key"]]
    return out


def ordered(a):
    """Map floats to integers whose order and spacing follow the float's ULPs."""
    if a.dtype == ml_dtypes.bfloat16:
        bits = a.view(np.uint16).astype(np.int64)
        sign = 1 << 15
    else:
        bits = a.astype(np.float32).view(np.uint32).astype(np.int64)
        sign = 1 << 31
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def metrics(actual, expected, truth, valid):
    sel = np.broadcast_to(valid.reshape(valid.shape + (1,) * (actual.ndim - valid.ndim)),
                          actual.shape)
    if actual.dtype.kind in "iub":
        return {"mismatches": int(np.sum((actual != expected) & sel))}
    a = actual.astype(np.float64)[sel]
    e = expected.astype(np.float64)[sel]
    d = np.abs(a - e)
    ulp = np.abs(ordered(actual)[sel] - ordered(expected)[sel])
    m = {
        "max_abs": d.max(),
        "rms": np.sqrt(np.mean(d**2)),
        "rel_l2": np.linalg.norm(a - e) / np.linalg.norm(e),
        "1-cos": 1.0 - float(a @ e / (np.linalg.norm(a) * np.linalg.norm(e))),
        "max_ulp": int(ulp.max()),
        "ulp_p50": float(np.quantile(ulp, 0.5)),
        "ulp_p99": float(np.quantile(ulp, 0.99)),
        "atol@rtol1.3e-6": float(np.max(np.maximum(d - 1.3e-6 * np.abs(e), 0.0))),
    }
    if truth is not None:
        t = truth[sel]
        err_a = np.sqrt(np.mean((a - t) ** 2))
        err_o = np.sqrt(np.mean((e - t) ** 2))
        m["err_iree_f64"] = err_a
        m["err_oracle_f64"] = err_o
        m["vs_f64"] = err_a / err_o if err_o > 0 else float("inf")
    return m


def compile_module(mlir, target_cpu):
    compiler = Path(sys.executable).parent / "iree-compile"
    flags = FLAGS + [f"--iree-llvmcpu-target-cpu={target_cpu}"]
    vmfb = subprocess.run([str(compiler), *flags, str(mlir), "-o", "-"],
                          check=True, capture_output=True).stdout
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    return ctx.modules.basic


def run(module, oracle, weights, mode):
    produced = {}
    results = []
    for fn, args, outs, mask in STAGES:
        inputs = []
        for kind, name in args:
            if kind == "weight":
                inputs.append(weights[name])
            elif kind == "oracle" or mode == "isolated":
                inputs.append(oracle[name])
            else:
                inputs.append(produced[name])
        ret = module[fn](*inputs)
        ret = ret if isinstance(ret, tuple) else (ret,)
        valid = ~oracle[mask]
        for name, arr in zip(outs, ret):
            produced[name] = np.asarray(arr.to_host())
            m = metrics(produced[name], oracle[name], oracle.get(name + "@f64"), valid)
            results.append((fn, name, m))
    return results


def fmt(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--module", default="model.mlir")
    p.add_argument("--target-cpu", default="generic",
                   help="generic (as stages.yaml pins) or host, to see reassociation effects")
    p.add_argument("--json", action="store_true", help="print metrics as JSON")
    ns = p.parse_args()
    module = compile_module(HERE / ns.module, ns.target_cpu)
    oracle = load_oracle()
    weights = read_safetensors(HERE / "weights.safetensors")
    report = {}
    for mode in ["isolated", "chained"]:
        report[mode] = run(module, oracle, weights, mode)
    if ns.json:
        print(json.dumps({k: [[f, o, m] for f, o, m in v] for k, v in report.items()},
                         indent=1, default=float))
        return
    for mode, rows in report.items():
        print(f"== {ns.module} target-cpu={ns.target_cpu} {mode}")
        for fn, out, m in rows:
            print(f"{fn:15s} {out:8s} " + " ".join(f"{k}={fmt(v)}" for k, v in m.items()))


if __name__ == "__main__":
    main()
