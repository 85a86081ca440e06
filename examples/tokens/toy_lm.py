"""The toy language model of examples/tokens, written once over an array
namespace: `jnp` for the production (lowered to StableHLO with named scopes,
weights as arguments) and `np` for the oracle (f32) and the truth (f64).
Config, seeded weights, the layers, and the lowering to one module.
Used by make_fixture.py (see its docstring).
"""


import jax
import jax.numpy as jnp
import numpy as np
from jax._src.interpreters import mlir as jmlir
from jax._src.lib.mlir import ir

jax.config.update("jax_traceback_in_locations_limit", 0)  # no Python file:line locations (paths differ per checkout)

V, D, F, LAYERS, CTX, WINDOW, P, N = 32, 16, 32, 2, 24, (None, 8), 4, 16
SEED = 20261201
SCALE, PREFILL_SCALE = 1.25, 1.5  # the scale faults' factors (make_fixture.py chose them; see there)

# The injected faults, each a production module of its own: the layer, the
# kind (("window", _): the layer ignores its sliding window; ("scale", f): its
# attention scores scaled by f / sqrt(D)), and which functions carry it
# (prefill_p4, decode and the decode step functions).
FAULTS = {
    "window": {"layer": 1, "kind": ("window", None), "prefill": True, "decode": True,
               "text": "layer 1 ignores its sliding window"},
    "scale": {"layer": 1, "kind": ("scale", SCALE), "prefill": False, "decode": True,
              "text": f"layer 1's decode attention scale is {SCALE} / sqrt(D)"},
    "prefill": {"layer": 0, "kind": ("scale", PREFILL_SCALE), "prefill": True, "decode": False,
                "text": f"layer 0's prefill attention scale is {PREFILL_SCALE} / sqrt(D)"},
}
LAYER_W = ["ln1", "wq", "wk", "wv", "wo", "ln2", "w_up", "w_down"]


def make_weights():
    rng = np.random.default_rng(SEED)
    w = {"emb": rng.standard_normal((V, D)).astype(np.float32),
         "pos_emb": (0.5 * rng.standard_normal((CTX, D))).astype(np.float32),
         "final_norm": (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)}
    # Token 31 is token 30 moved one f32 ULP per element: their logits nearly tie.
    w["emb"][31] = np.nextafter(w["emb"][30], np.float32(np.inf))
    for i in range(LAYERS):
        s = 1.0 / np.sqrt(D)
        w[f"layers.{i}.ln1"] = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
        for m in ("wq", "wk", "wv", "wo"):
            w[f"layers.{i}.{m}"] = (s * rng.standard_normal((D, D))).astype(np.float32)
        w[f"layers.{i}.ln2"] = (1.0 + 0.1 * rng.standard_normal(D)).astype(np.float32)
        w[f"layers.{i}.w_up"] = (s * rng.standard_normal((D, F))).astype(np.float32)
        w[f"layers.{i}.w_down"] = (rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32)
    return w


def weight_names(i=None):
    if i is None:
        return ["emb", "pos_emb"] + [n for j in range(LAYERS) for n in weight_names(j)] + ["final_norm"]
    return [f"layers.{i}.{m}" for m in LAYER_W]


# ---- the model, written once over an array namespace (jnp for production, np for the oracle)

def rms(xp, x, w):
    return x / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def allowed(xp, pos, length, window):
    """[L, CTX] key mask: causal, and inside the window when there is one."""
    q = pos + xp.arange(length)[:, None]
    j = xp.arange(CTX)[None, :]
    ok = j <= q
    return ok & (j > q - window) if window else ok


def layer(xp, h, pos, kc, vc, w, i, fault=None, scope=lambda n: _null(), tap=None):
    """h [1, L, D]; caches [LAYERS, CTX, D]; returns (h, kc, vc). `fault`: None,
    ("window", _) (the layer ignores its sliding window) or ("scale", f) (its
    attention scores are scaled by f / sqrt(D) instead of 1 / sqrt(D))."""
    tap = tap or (lambda n, x: x)
    L = h.shape[1]
    with scope(f"layer_{i}/attention"):
        x = rms(xp, h, w["ln1"])
        q, k, v = x @ w["wq"], x @ w["wk"], x @ w["wv"]
        if xp is jnp:
            kc = jax.lax.dynamic_update_slice(kc, k, (i, pos, 0))
            vc = jax.lax.dynamic_update_slice(vc, v, (i, pos, 0))
        else:
            kc, vc = kc.copy(), vc.copy()
            kc[i, pos:pos + L], vc[i, pos:pos + L] = k[0], v[0]
        with scope("scores"):
            # No oracle tensor here: rows past the position differ between the
            # oracle's cache at this step and the whole-run cache isolated mode feeds.
            scale = (fault[1] if fault and fault[0] == "scale" else 1.0) / np.sqrt(D)
            s = (q[0] @ kc[i].T) * xp.asarray(scale, dtype=h.dtype)
        window = None if fault and fault[0] == "window" else WINDOW[i]
        with scope("masked"):
            s = tap(f"layer_{i}_attention_masked",
                    xp.where(allowed(xp, pos, L, window), s, xp.asarray(-1e30, dtype=h.dtype)))
        with scope("probs"):
            e = xp.exp(s - s.max(axis=-1, keepdims=True))
            pr = tap(f"layer_{i}_attention_probs", e / e.sum(axis=-1, keepdims=True))
        attn = tap(f"layer_{i}_attention", (pr @ vc[i])[None] @ w["wo"])
    h = h + attn
    with scope(f"layer_{i}/mlp"):
        m = tap(f"layer_{i}_mlp", gelu(xp, rms(xp, h, w["ln2"]) @ w["w_up"]) @ w["w_down"])
    return h + m, kc, vc


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def embed(xp, tokens, pos, w):
    L = tokens.shape[1]
    if xp is jnp:
        pe = jax.lax.dynamic_slice(w["pos_emb"], (pos, 0), (L, D))
    else:
        pe = w["pos_emb"][pos:pos + L]
    return (xp.take(w["emb"], tokens, axis=0) + pe[None]).astype(w["emb"].dtype)


def head(xp, h, w):
    return rms(xp, h[:, -1], w["final_norm"]) @ w["emb"].T


# ---- production: JAX functions with weights as arguments, lowered to one module

def as_dict(names, arrays):
    w = {}
    for n, a in zip(names, arrays):
        w[n.split(".")[-1] if n.startswith("layers.") else n] = a
    return w


def production_functions(fault):
    """The exported functions, with fault `fault` (a FAULTS key) or none."""
    scope = jax.named_scope
    full = weight_names()
    f = FAULTS.get(fault)

    def at(i, phase):
        return f["kind"] if f and f[phase] and i == f["layer"] else None

    def split(ws):
        d = dict(zip(full, ws))
        glob = {k: d[k] for k in ("emb", "pos_emb", "final_norm")}
        return glob, [as_dict(weight_names(i), [d[n] for n in weight_names(i)]) for i in range(LAYERS)]

    def run(tokens, pos, kc, vc, ws, phase):
        glob, lw = split(ws)
        h = embed(jnp, tokens, pos, glob)
        for i in range(LAYERS):
            h, kc, vc = layer(jnp, h, pos, kc, vc, lw[i], i, at(i, phase), scope)
        return head(jnp, h, glob), kc, vc

    def prefill(prompt, *ws):
        z = jnp.zeros((LAYERS, CTX, D), jnp.float32)
        return run(prompt, 0, z, z, ws, "prefill")

    def decode(token, pos, kc, vc, *ws):
        return run(token, pos, kc, vc, ws, "decode")

    def decode_embed(token, pos, emb, pos_emb):
        return embed(jnp, token, pos, {"emb": emb, "pos_emb": pos_emb})

    def decode_layer(i):
        def f(h, pos, kc, vc, *ws):
            return layer(jnp, h, pos, kc, vc, as_dict(weight_names(i), ws), i, at(i, "decode"), scope)
        return f

    def head_fn(h, final_norm, emb):
        return head(jnp, h, {"final_norm": final_norm, "emb": emb})

    f32 = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)
    i32 = lambda *s: jax.ShapeDtypeStruct(s, jnp.int32)
    wspec = {n: f32(*a.shape) for n, a in WEIGHTS.items()}
    cache = f32(LAYERS, CTX, D)
    fns = [("prefill_p4", prefill, [i32(1, P)] + [wspec[n] for n in full]),
           ("decode", decode, [i32(1, 1), i32(), cache, cache] + [wspec[n] for n in full]),
           ("decode_embed", decode_embed, [i32(1, 1), i32(), wspec["emb"], wspec["pos_emb"]]),
           ("head", head_fn, [f32(1, 1, D), wspec["final_norm"], wspec["emb"]])]
    for i in range(LAYERS):
        fns.append((f"decode_layer_{i}", decode_layer(i),
                    [f32(1, 1, D), i32(), cache, cache] + [wspec[n] for n in weight_names(i)]))
    return fns


def lower(fault):
    texts = []
    for name, fn, specs in production_functions(fault):
        fn.__name__ = name
        texts.append((name, jax.jit(fn, keep_unused=True).lower(*specs).as_text(debug_info=True)))
    with jmlir.make_ir_context() as ctx, ir.Location.unknown(ctx):
        merged = ir.Module.create()
        merged.operation.attributes["sym_name"] = ir.StringAttr.get("toy_lm")
        for fname, txt in texts:
            m = ir.Module.parse(txt)
            for op in m.body.operations:
                old = op.attributes["sym_name"].value
                new = fname if old == "main" else f"{fname}__{old}"
                ir.SymbolTable.set_symbol_name(op, new)
                ir.SymbolTable.replace_all_symbol_uses(old, new, m.operation)
            for op in list(m.body.operations):
                merged.body.append(op)
        text = merged.operation.get_asm(enable_debug_info=True)
    return (f"// Generated by examples/tokens/make_fixture.py (jax {jax.__version__}, "
            f"fault: {FAULTS[fault]['text'] if fault else 'none'}). Do not edit.\n" + text)


WEIGHTS = make_weights()
