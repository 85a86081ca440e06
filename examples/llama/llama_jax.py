"""A Llama-style decoder in JAX: mlx-lm's `llama` model (GQA, RoPE, SwiGLU,
RMS norm, untied head) on examples/mlx-lm/model's weights, written again so
that mlx-lm's own implementation is its oracle.

Weights are taken as they are in model.safetensors (HF layout, `[out, in]`
projections, so `x @ w.T`), passed as one dict argument: JAX names each
argument `params['<checkpoint name>']`, which `bind:` matches. The KV caches
are `[layers, kv_heads, CTX, head_dim]`, keys after RoPE, as mlx-lm's cache
holds them per layer. Every layer runs under `jax.named_scope("layer_<i>")`
(and `attention`, `mlp` inside), the scopes `parity points` lists and
`slice:` stages cut at.
"""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_traceback_in_locations_limit", 0)  # no file:line locations (paths differ per checkout)

MODEL = Path(__file__).resolve().parents[1] / "mlx-lm" / "model"
CONFIG = json.loads((MODEL / "config.json").read_text())
V = CONFIG["vocab_size"]
D = CONFIG["hidden_size"]
LAYERS = CONFIG["num_hidden_layers"]
HEADS = CONFIG["num_attention_heads"]
KV = CONFIG["num_key_value_heads"]
HD = CONFIG["head_dim"]
EPS = CONFIG["rms_norm_eps"]
THETA = CONFIG["rope_theta"]
CTX = 24  # positions the exported caches hold


def rms(x, w):
    """mlx.core.fast.rms_norm: x * rsqrt(mean(x^2) + eps) * w."""
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope(x, pos):
    """nn.RoPE(HD, traditional=False, base=THETA) on x [H, T, HD] at positions pos [T]."""
    half = HD // 2
    inv = jnp.asarray(THETA ** (-np.arange(0, half, dtype=np.float32) / half), jnp.float32)
    ang = pos.astype(jnp.float32)[:, None] * inv[None, :]
    cos, sin = jnp.cos(ang), jnp.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def attention(p, i, x, pos, kc, vc, visible):
    """Layer i's attention on x [T, D] at positions pos [T] (consecutive): its
    caches kc, vc [KV, CTX, HD] with rows pos written, attended over every row
    `visible` allows. Each layer reads only its own cache, so a cut at a
    layer's scope needs the input caches, not an earlier layer's update."""
    w = lambda n: p[f"model.layers.{i}.self_attn.{n}_proj.weight"]  # noqa: E731
    t = x.shape[0]
    q = (x @ w("q").T).reshape(t, HEADS, HD).transpose(1, 0, 2)
    k = (x @ w("k").T).reshape(t, KV, HD).transpose(1, 0, 2)
    v = (x @ w("v").T).reshape(t, KV, HD).transpose(1, 0, 2)
    q, k = rope(q, pos), rope(k, pos)
    kc = jax.lax.dynamic_update_slice(kc, k, (0, pos[0], 0))
    vc = jax.lax.dynamic_update_slice(vc, v, (0, pos[0], 0))
    keys = jnp.repeat(kc, HEADS // KV, axis=0)
    values = jnp.repeat(vc, HEADS // KV, axis=0)
    with jax.named_scope("scale"):
        q = q * jnp.float32(HD ** -0.5)
    scores = jnp.einsum("htd,hsd->hts", q, keys)
    scores = jnp.where(visible[None], scores, jnp.float32(-1e30))
    probs = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("hts,hsd->htd", probs, values).transpose(1, 0, 2).reshape(t, HEADS * HD)
    return out @ w("o").T, kc, vc


def mlp(p, i, x):
    w = lambda n: p[f"model.layers.{i}.mlp.{n}_proj.weight"]  # noqa: E731
    return (jax.nn.silu(x @ w("gate").T) * (x @ w("up").T)) @ w("down").T


def forward(p, tokens, pos, kc, vc):
    """Tokens [T] at positions pos [T] (consecutive) with caches [L, KV, CTX, HD]:
    logits [1, V] of the last token and the caches with rows pos written.
    Hidden states are [1, T, D], as mlx-lm's layers return them."""
    rows = jnp.arange(CTX)
    visible = rows[None, :] <= pos[:, None]
    with jax.named_scope("embed"):
        h = p["model.embed_tokens.weight"][tokens][None]
    ks, vs = [], []
    for i in range(LAYERS):
        with jax.named_scope(f"layer_{i}"):
            pre = f"model.layers.{i}"
            with jax.named_scope("attention"):
                x = rms(h, p[f"{pre}.input_layernorm.weight"])[0]
                r, k, v = attention(p, i, x, pos, kc[i], vc[i], visible)
            ks.append(k)
            vs.append(v)
            h = h + r[None]
            with jax.named_scope("mlp"):
                h = h + mlp(p, i, rms(h, p[f"{pre}.post_attention_layernorm.weight"]))
    with jax.named_scope("head"):
        logits = rms(h[:, -1], p["model.norm.weight"]) @ p["lm_head.weight"].T
    with jax.named_scope("cache"):
        return logits, jnp.stack(ks), jnp.stack(vs)


def prefill(prompt, params):
    """prompt [1, P] i32 -> logits [1, V] of its last token, the caches of its P positions."""
    zeros = jnp.zeros((LAYERS, KV, CTX, HD), jnp.float32)
    p = prompt.shape[1]
    return forward(params, prompt[0], jnp.arange(p, dtype=jnp.int32), zeros, zeros)


def decode(token, pos, k_cache, v_cache, params):
    """token [1, 1] i32 at position pos (i32 scalar) -> logits [1, V] and the caches with row pos written."""
    return forward(params, token[0], pos[None], k_cache, v_cache)


def lower(fn, *specs):
    """StableHLO text of `fn` with debug locations (argument names, named scopes)."""
    fn_jit = jax.jit(fn, keep_unused=True)
    return fn_jit.lower(*specs).as_text(debug_info=True)


def specs(weights, prompt_length):
    """Abstract arguments of prefill (a prompt of prompt_length) and decode."""
    params = {k: jax.ShapeDtypeStruct(v.shape, jnp.float32) for k, v in sorted(weights.items())}
    cache = jax.ShapeDtypeStruct((LAYERS, KV, CTX, HD), jnp.float32)
    i32 = jnp.int32
    return ((jax.ShapeDtypeStruct((1, prompt_length), i32), params),
            (jax.ShapeDtypeStruct((1, 1), i32), jax.ShapeDtypeStruct((), i32), cache, cache, params))
