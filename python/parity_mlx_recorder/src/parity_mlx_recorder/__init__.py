"""Record every module output of an ``mlx.nn`` model into a parity oracle store.

``Recorder(model, depth)`` wraps the model's modules (by swapping each
instance's class for a subclass whose ``__call__`` records); ``case(name)``
is a context manager that records wrapped calls for one case; ``save(dir)``
writes ``<dir>/<case>/<name>.npy`` and ``<dir>/manifest.json`` (schema
``parity.oracle-manifest/1``). Outputs are ``mx.eval``-ed and copied into
numpy at capture time: MLX updates some arrays in place.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from importlib import metadata

import mlx.core as mx
import mlx.nn as nn
import numpy as np

__all__ = ["Recorder", "RecorderError", "MANIFEST_SCHEMA", "record_generation"]

MANIFEST_SCHEMA = "parity.oracle-manifest/1"

# mlx dtype -> (parity dtype name, numpy dtype of the copy).
_DTYPES = {
    mx.float32: ("f32", np.float32),
    mx.float16: ("f16", np.float16),
    mx.bfloat16: ("bf16", np.uint16),  # raw bits; written as <V2 like mx.save
    mx.int64: ("i64", np.int64),
    mx.int32: ("i32", np.int32),
    mx.int16: ("i16", np.int16),
    mx.int8: ("i8", np.int8),
    mx.uint8: ("u8", np.uint8),
    mx.bool_: ("bool", np.bool_),
}


class RecorderError(Exception):
    """A module output cannot be recorded (unsupported dtype or output type, bad name)."""


def _depth(path: str) -> int:
    return sum(1 for part in path.split(".") if part and not part.isdigit())


def _copy(name: str, x) -> tuple[str, np.ndarray]:
    if x.dtype not in _DTYPES:
        raise RecorderError(f"{name}: unsupported dtype {x.dtype} (parity reads {', '.join(d for d, _ in _DTYPES.values())})")
    dtype, np_dtype = _DTYPES[x.dtype]
    mx.eval(x)
    raw = x.view(mx.uint16) if x.dtype == mx.bfloat16 else x
    return dtype, np.array(raw, copy=True).astype(np_dtype, copy=False)


def _flatten(name: str, out):
    """(name, array) pairs of a module output: arrays, tuples/lists and dicts of them."""
    if isinstance(out, mx.array):
        yield name, out
    elif isinstance(out, (tuple, list)):
        for i, item in enumerate(out):
            yield from _flatten(f"{name}.{i}", item)
    elif isinstance(out, dict):
        for key in sorted(out):
            yield from _flatten(f"{name}.{key}", out[key])
    elif out is None:
        return
    else:
        raise RecorderError(f"{name}: cannot record an output of type {type(out).__name__}")


class Recorder:
    """Wraps the modules of ``model`` with path depth <= ``depth`` and records their outputs per case."""

    def __init__(self, model: nn.Module, depth: int = 1, include_root: bool = False, root_name: str = "model"):
        if depth < 0:
            raise RecorderError(f"depth must be >= 0, got {depth}")
        self.model = model
        self.depth = depth
        self.tensors: dict[str, tuple[str, np.ndarray]] = {}
        self._case: str | None = None
        self._calls: dict[str, int] = {}
        self._wrapped: list[tuple[nn.Module, type]] = []
        for path, module in model.named_modules():
            if path == "" and not include_root:
                continue
            if path != "" and _depth(path) > depth:
                continue
            self._wrap(module, path or root_name)

    def _wrap(self, module: nn.Module, path: str) -> None:
        original = type(module)
        recorder = self

        def __call__(self, *args, **kwargs):
            out = original.__call__(self, *args, **kwargs)
            recorder._capture(path, out)
            return out

        module.__class__ = type(original.__name__, (original,), {"__call__": __call__, "__module__": original.__module__})
        self._wrapped.append((module, original))

    def _capture(self, path: str, out) -> None:
        if self._case is None:
            return
        n = self._calls.get(path, 0)
        self._calls[path] = n + 1
        base = path if n == 0 else f"{path}~{n}"
        for name, x in _flatten(base, out):
            self._put(f"{self._case}/{name}", x)

    def _put(self, name: str, x) -> None:
        if name in self.tensors:
            raise RecorderError(f"{name}: recorded twice")
        self.tensors[name] = _copy(name, x)

    @contextmanager
    def case(self, name: str):
        """Records every wrapped call made inside the ``with`` block as tensors of case ``name``."""
        if not name or "/" in name or name.startswith("."):
            raise RecorderError(f"case name `{name}` must be non-empty, without `/`, not starting with `.`")
        if self._case is not None:
            raise RecorderError(f"case `{name}` started inside case `{self._case}`")
        self._case, self._calls = name, {}
        try:
            yield self
        finally:
            self._case = None

    def record_input(self, case: str, name: str, x) -> None:
        """Records an extra tensor (a model input, a mask) as ``<case>/<name>``."""
        self._put(f"{case}/{name}", x)

    def detach(self) -> None:
        """Restores every wrapped module's own class (recording stops)."""
        for module, original in self._wrapped:
            module.__class__ = original
        self._wrapped = []

    def save(self, store_dir: str, provenance: dict | None = None) -> str:
        """Writes ``<store_dir>/<case>/<name>.npy`` per tensor and ``manifest.json``; returns its path."""
        entries = {}
        for name in sorted(self.tensors):
            dtype, arr = self.tensors[name]
            rel = f"{name}.npy"
            path = os.path.join(store_dir, *rel.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _write_npy(path, arr, dtype)
            entries[name] = {"file": rel, "dtype": dtype, "shape": list(arr.shape)}
        prov = {
            "producer": "parity_mlx_recorder",
            "model": type(self.model).__name__,
            "depth": self.depth,
            "versions": {p: _version(p) for p in ("mlx", "numpy")} | {"python": sys.version.split()[0]},
        }
        prov.update(provenance or {})
        manifest = {"schema": MANIFEST_SCHEMA, "provenance": prov, "tensors": entries}
        out = os.path.join(store_dir, "manifest.json")
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, out)
        return out


def _version(pkg: str):
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _write_npy(path: str, arr: np.ndarray, dtype: str) -> None:
    # ascontiguousarray makes a 0-d array 1-d: keep the scalar's shape ().
    arr = np.ascontiguousarray(arr).reshape(arr.shape)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        if dtype == "bf16":
            header = {"descr": "<V2", "fortran_order": False, "shape": arr.shape}
            np.lib.format.write_array_header_1_0(f, header)
            f.write(arr.astype("<u2").tobytes())
        else:
            np.lib.format.write_array(f, arr, allow_pickle=False)
    os.replace(tmp, path)


from .generation import record_generation  # noqa: E402  (needs RecorderError above)
