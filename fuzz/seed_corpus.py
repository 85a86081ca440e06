"""Writes the seed corpora under fuzz/corpus/ from the repo's real fixtures.

Run once with the fixture venv (numpy, safetensors):
    tools/fixtures/.venv/bin/python fuzz/seed_corpus.py
Seeds are small slices of real files, named `seed-*`; entries the fuzzer found
(crashes turned regression cases, and `cargo fuzz cmin` survivors) sit beside them.
Deterministic: the same fixtures give the same bytes.
"""

import io
import pathlib
import shutil
import zipfile

import numpy as np
from safetensors.numpy import save as st_save

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
ORACLE = ROOT / "examples" / "basic" / "oracle"


def out(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data)


def npy_bytes(a, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a)
    else:
        np.lib.format.write_array(buf, a, version=version)
    return buf.getvalue()


def npz_bytes(arrays, compressed):
    # np.savez stamps zip times from the clock; write members ourselves for fixed bytes.
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for k, a in arrays.items():
            info = zipfile.ZipInfo(f"{k}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, npy_bytes(a))
    return buf.getvalue()


def main():
    # npy: the example oracle's real dumps, plus variants of one of them in the
    # layouts the reader converts (big-endian, Fortran order, v2/v3 headers).
    for f in sorted(ORACLE.glob("*.npy")):
        out("npy", f.stem + ".npy", f.read_bytes())
    x = np.load(ORACLE / "x.npy")
    flat = x.reshape(-1)[:12].reshape(3, 4)
    out("npy", "x-be.npy", npy_bytes(flat.astype(">f4")))
    out("npy", "x-fortran.npy", npy_bytes(np.asfortranarray(flat)))
    out("npy", "x-v2.npy", npy_bytes(flat, version=(2, 0)))
    out("npy", "x-v3.npy", npy_bytes(flat, version=(3, 0)))
    out("npy", "x-f16-0d.npy", npy_bytes(flat[0, 0].astype(np.float16)))

    # npz: the example's truth file, and slices of a real gemma3n oracle dump,
    # stored and deflated.
    out("npz", "truth_f64.npz", (ORACLE / "truth_f64.npz").read_bytes())
    dump = np.load(ROOT / "oracle-dumps" / "gemma3n" / "shortest.npz")
    keys = sorted(dump.keys())[:3]
    small = {k: dump[k].reshape(-1)[:16] for k in keys}
    out("npz", "shortest-stored.npz", npz_bytes(small, compressed=False))
    out("npz", "shortest-deflated.npz", npz_bytes(small, compressed=True))

    # safetensors: the example's real files, and a slice with metadata.
    out("safetensors", "bf16.safetensors", (ORACLE / "bf16.safetensors").read_bytes())
    out("safetensors", "weights.safetensors",
        (ROOT / "examples" / "basic" / "weights.safetensors").read_bytes())
    out("safetensors", "slice-meta.safetensors",
        st_save({"x": flat, "m": np.arange(4, dtype=np.int64)}, metadata={"format": "np"}))

    # spec: the example's real stages files.
    for f in sorted((ROOT / "examples" / "basic").glob("stages*.yaml")):
        out("spec", f.name, f.read_bytes())

    # mlir: the real generic-form excerpts the parity-mlir tests use; the gemma3n
    # one cut to its module line, its two smaller functions and its closing line.
    data = ROOT / "crates" / "parity-mlir" / "tests" / "data"
    out("mlir", "multi_result.mlir", (data / "multi_result.mlir").read_bytes())
    lines = (data / "gemma3n_excerpt.mlir").read_bytes().splitlines(keepends=True)
    module = next(i for i, l in enumerate(lines) if l.startswith(b'"builtin.module"'))
    third = next(i for i, l in enumerate(lines) if b"conformer_1_attention_c1_b128" in l
                 and b'"func.func"' in l)
    out("mlir", "gemma3n-two-functions.mlir", b"".join(lines[module:third] + lines[-1:]))

    # vmfb: the smallest module in the test artifact cache (a compiled slice),
    # when present; committed, so the corpus does not need a compiler.
    cache = ROOT / "target" / "tmp" / "parity-test-cache"
    vmfbs = sorted(cache.glob("*.vmfb"), key=lambda p: (p.stat().st_size, p.name))
    if vmfbs:
        (CORPUS / "vmfb").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vmfbs[0], CORPUS / "vmfb" / "seed-slice.vmfb")


if __name__ == "__main__":
    main()
