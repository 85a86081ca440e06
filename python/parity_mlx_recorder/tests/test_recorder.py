"""Records a tiny MLP + conv model into a store and checks every tensor against
the module's output recomputed by hand. Usage: python test_recorder.py STORE_DIR

Exits non-zero (AssertionError) on any mismatch. Also writes
STORE_DIR/expected.json.txt (name -> values as f64, recomputed) for the Rust side.
Run by tests/mlx_recorder.rs with PYTHONPATH pointing at ../src.
"""

import json
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from parity_mlx_recorder import Recorder, RecorderError


class Cache(nn.Module):
    """Keeps its state in one array updated in place (as KV caches do) and returns it."""

    def __init__(self, n):
        super().__init__()
        self.buf = mx.zeros((n,))

    def __call__(self, x):
        self.buf[:] = x.reshape(-1)[: self.buf.shape[0]]
        return self.buf


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 3, kernel_size=3)
        self.layers = [nn.Linear(3, 5), nn.Linear(5, 2)]
        self.cache = Cache(4)

    def __call__(self, x):
        h = self.conv(x)  # (1, 4, 3)
        h = nn.relu(self.layers[0](h))
        self.cache(h)
        out = self.layers[1](h)
        self.cache(out)  # second call overwrites the cache in place
        return out, h.astype(mx.bfloat16)


def main(store):
    mx.random.seed(3)
    model = Tiny()
    x = mx.random.normal((1, 6, 2))
    rec = Recorder(model, depth=2, include_root=True, root_name="tiny")
    with rec.case("case_a"):
        out, h_bf16 = model(x)
    rec.record_input("case_a", "x", x)
    with rec.case("case_b"):
        model(x * 2)
    try:
        with rec.case("bad/name"):
            pass
        raise AssertionError("a case name with / was accepted")
    except RecorderError:
        pass
    rec.detach()
    assert type(model.conv) is nn.Conv1d, "detach restores the classes"

    # Recomputed with the recorder detached.
    def expected_for(inp):
        c = model.conv(inp)
        l0 = model.layers[0](c)
        h = nn.relu(l0)
        l1 = model.layers[1](h)
        return {
            "conv": c,
            "layers.0": l0,
            "layers.1": l1,
            "cache": h.reshape(-1)[:4],
            "cache~1": l1.reshape(-1)[:4],
            "tiny.0": l1,
            "tiny.1": h.astype(mx.bfloat16),
        }

    expected = {}
    for case, inp in (("case_a", x), ("case_b", x * 2)):
        for name, value in expected_for(inp).items():
            expected[f"{case}/{name}"] = value
    expected["case_a/x"] = x
    assert sorted(rec.tensors) == sorted(expected), (sorted(rec.tensors), sorted(expected))
    as_f64 = {}
    for name, value in expected.items():
        dtype, got = rec.tensors[name]
        if dtype == "bf16":
            want = np.array(value.view(mx.uint16))
        else:
            want = np.array(value)
        assert got.shape == want.shape and np.array_equal(got, want), (name, got, want)
        as_f64[name] = np.array(value.astype(mx.float32)).astype(np.float64).ravel().tolist()
    # The in-place cache: the first call's value survived the second call.
    assert not np.array_equal(rec.tensors["case_a/cache"][1], rec.tensors["case_a/cache~1"][1])
    assert rec.tensors["case_a/tiny.1"][0] == "bf16"

    rec.save(store, provenance={"test": "test_recorder.py"})
    with open(f"{store}/expected.json.txt", "w") as f:
        json.dump(as_f64, f)
    print(f"{store}: {len(rec.tensors)} tensors recorded and checked")


if __name__ == "__main__":
    main(sys.argv[1])
