"""Record one mlx-lm generation as a parity oracle store: the prompt, the
greedy tokens, every step's logits, every step's layer inputs and outputs,
and the KV cache in the layout the token spec names.

``record_generation(recorder, case, model, prompt, max_new_tokens)`` runs
mlx-lm's own model and KV cache (``mlx_lm.models.cache.make_prompt_cache``)
greedily: step 0 is the prompt (prefill), step s >= 1 feeds token s - 1 at
position P + s - 1. It writes, into ``recorder`` (saved with ``recorder.save``):

* ``<case>/prompt`` [1, P] i32, ``<case>/tokens`` [N] i32, ``<case>/logits`` [N, V] f32
* per step, under the step case ``<case>.sNN`` that ``parity tokens``
  localises with: ``token`` (the step's input ids: the prompt at step 0,
  [1, 1] after), ``pos`` (i32 scalar: 0, then P + s - 1), ``embed`` (the
  embedding output), ``layers.<i>.in`` and ``layers.<i>`` (each decoder
  layer's input and output hidden states, [1, T, D]), ``logits`` ([1, V], the
  last position's), and for decode steps ``k_cache`` / ``v_cache``.

The cache a step stage takes is the oracle's **whole-run** cache (after all
N steps; for a causal model a step at position p reads rows < p and writes
row p with the value the whole run holds, and every later row is masked), in
the axes ``cache_axes`` names over ``l`` (layer), ``b`` (batch), ``h`` (KV
head), ``t`` (position), ``d`` (head dim), with the position axis padded
with zeros to ``context`` rows. Default ``"lhtd"``: [layers, kv_heads,
context, head_dim], batch 1 dropped.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np

__all__ = ["record_generation"]

_AXES = "lbhtd"


def _layers(model):
    """The decoder layers of an mlx-lm model (``model.model.layers`` or ``model.layers``)."""
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if layers is None:
        from . import RecorderError
        raise RecorderError(f"{type(model).__name__} has no `layers` (nor `model.layers`) to record")
    return inner, layers


def record_generation(recorder, case: str, model, prompt, max_new_tokens: int, *,
                      context: int | None = None, cache_axes: str = "lhtd") -> list[int]:
    """Greedy generation of ``max_new_tokens`` tokens from ``prompt`` (a list of
    ids) with mlx-lm's model and cache, recorded as case ``case``; returns the tokens."""
    from mlx_lm.models.cache import make_prompt_cache

    from . import RecorderError

    if sorted(cache_axes.replace("b", "")) != sorted("lhtd") or len(set(cache_axes)) != len(cache_axes):
        raise RecorderError(f"cache_axes `{cache_axes}` must order l, h, t, d (and optionally b) once each")
    if max_new_tokens < 1 or not prompt:
        raise RecorderError("a generation needs a prompt and at least one new token")
    p = len(prompt)
    context = context or p + max_new_tokens - 1
    if p + max_new_tokens - 1 > context:
        raise RecorderError(f"{p} prompt tokens and {max_new_tokens} new ones need {p + max_new_tokens - 1} positions, past context {context}")
    inner, layers = _layers(model)
    step_name = {"case": None}
    originals = []

    def put(name, x):
        if step_name["case"] is not None:
            recorder.record_input(step_name["case"], name, x)

    # Each layer's input and output, per step: wrap the layer instances' classes.
    for i, layer in enumerate(layers):
        original = type(layer)

        def __call__(self, x, *args, _i=i, _original=original, **kwargs):
            put(f"layers.{_i}.in", x)
            out = _original.__call__(self, x, *args, **kwargs)
            put(f"layers.{_i}", out)
            return out

        layer.__class__ = type(original.__name__, (original,), {"__call__": __call__})
        originals.append((layer, original))
    embed = inner.embed_tokens
    embed_original = type(embed)

    def embed_call(self, x):
        out = embed_original.__call__(self, x)
        put("embed", out)
        return out

    embed.__class__ = type(embed_original.__name__, (embed_original,), {"__call__": embed_call})
    cache = make_prompt_cache(model)
    tokens, rows = [], []
    try:
        for s in range(max_new_tokens):
            step_name["case"] = f"{case}.s{s:02d}"
            ids = mx.array([prompt], dtype=mx.int32) if s == 0 else mx.array([[tokens[-1]]], dtype=mx.int32)
            pos = 0 if s == 0 else p + s - 1
            put("token", ids)
            put("pos", mx.array(pos, dtype=mx.int32))
            logits = model(ids, cache=cache)[:, -1, :].astype(mx.float32)
            put("logits", logits)
            # numpy's and parity's argmax: the lowest index among exact ties.
            row = np.array(logits[0])
            tokens.append(int(np.argmax(row)))
            rows.append(row)
    finally:
        step_name["case"] = None
        for layer, original in originals:
            layer.__class__ = original
        embed.__class__ = embed_original
    recorder.record_input(case, "prompt", mx.array([prompt], dtype=mx.int32))
    recorder.record_input(case, "tokens", mx.array(tokens, dtype=mx.int32))
    recorder.record_input(case, "logits", mx.array(np.stack(rows)))
    k, v = (_whole_run(cache, which, context, cache_axes) for which in ("keys", "values"))
    for s in range(1, max_new_tokens):
        recorder.record_input(f"{case}.s{s:02d}", "k_cache", k)
        recorder.record_input(f"{case}.s{s:02d}", "v_cache", v)
    return tokens


def _whole_run(cache, which: str, context: int, axes: str):
    """The layers' ``keys``/``values`` [b, h, t, d] stacked to [l, b, h, t, d],
    cut to the filled rows, zero-padded to ``context``, in ``axes`` order."""
    per_layer = []
    for c in cache:
        x = np.array(getattr(c, which)[:, :, : c.offset, :].astype(mx.float32))
        pad = np.zeros(x.shape[:2] + (context - x.shape[2],) + x.shape[3:], np.float32)
        per_layer.append(np.concatenate([x, pad], axis=2))
    full = np.stack(per_layer)
    if "b" not in axes:
        full = full[:, 0]
        order = [("lhtd").index(a) for a in axes]
    else:
        order = [_AXES.index(a) for a in axes]
    return mx.array(np.ascontiguousarray(full.transpose(order)))
