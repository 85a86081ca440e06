"""A small model for the "test your own model" guide, made from scratch by two
frameworks: the production side exported from JAX to StableHLO, the oracle
recorded from the same model written in MLX (mlx.nn) with parity_mlx_recorder.

    python tools/guide_model/make.py OUT_DIR

writes into OUT_DIR:
  model.mlir          JAX export of `encode` (args named loc("params['...']"), loc("x"))
  model_faulty.mlir   the same with an injected bug (the second layer's bias added twice)
  weights.safetensors the MLX model's weights, MLX/HF layout: Linear weight [out, in]
  oracle/             the MLX recorder's store: <case>/x and every module's output

The JAX function takes Linear weights as [in, out] (x @ w), so the spec must
transpose them at load; the first layer is square (8x8), so feeding it
untransposed would pass every shape check with wrong numbers. JAX scopes are
named `dense_1`, `act`, `dense_2`; the MLX modules `l1`, `act`, `l2`: the
oracle tensor -> point map in the spec links `l1`/`l2` to them.
"""

import os
import sys

import jax
import jax.numpy as jnp
import mlx.core as mx
import mlx.nn as nn
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../python/parity_mlx_recorder/src"))
from parity_mlx_recorder import Recorder  # noqa: E402

D, H, B, T = 8, 6, 2, 4


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(D, D)
        self.act = nn.GELU()
        self.l2 = nn.Linear(D, H)

    def __call__(self, x):
        return self.l2(self.act(self.l1(x)))


def encode(params, x, faulty=False):
    with jax.named_scope("dense_1"):
        h = x @ params["l1.weight"] + params["l1.bias"]
    with jax.named_scope("act"):
        h = jax.nn.gelu(h, approximate=False)
    with jax.named_scope("dense_2"):
        y = h @ params["l2.weight"] + params["l2.bias"]
        if faulty:
            y = y + params["l2.bias"]
    return y


def main(out):
    os.makedirs(out, exist_ok=True)
    mx.random.seed(0)
    model = Tiny()
    mx.eval(model.parameters())
    weights = {k: np.array(v) for k, v in dict(_flat(model.parameters())).items()}
    mx.save_safetensors(os.path.join(out, "weights.safetensors"), {k: mx.array(v) for k, v in weights.items()})
    x = np.random.default_rng(0).standard_normal((B, T, D)).astype(np.float32)

    rec = Recorder(model, depth=1)
    with rec.case("full"):
        model(mx.array(x))
    rec.record_input("full", "x", mx.array(x))
    rec.save(os.path.join(out, "oracle"), provenance={"producer": "tools/guide_model/make.py (mlx)"})

    # JAX takes Linear weights as [in, out].
    params = {k: (v.T if k.endswith(".weight") else v) for k, v in weights.items()}
    for name, faulty in [("model.mlir", False), ("model_faulty.mlir", True)]:
        lowered = jax.jit(lambda params, x: encode(params, x, faulty)).lower(params, x)
        text = lowered.as_text(debug_info=True)
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


def _flat(tree, prefix=""):
    for k, v in tree.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _flat(v, name + ".")
        else:
            yield name, v


if __name__ == "__main__":
    main(sys.argv[1])
