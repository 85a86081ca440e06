"""Gemma3n text decoder layers at the released E2B / E4B widths, for make_scale.py.

The layer is the bundled subject's own (tools/fixtures/production/language.py
`decoder_layer`: AltUp predict/correct, laurel, attention with q/k/v norms and
RoPE, the gated MLP with the gaussian top-k, the per-layer input), lowered by
JAX under the production bf16 policy (bf16 storage, f32 accumulation), with
its weights turned into `#flow.parameter.named<"model"::...>` globals by a
public wrapper around JAX's function. The oracle is mlx-vlm's own
`Gemma3nDecoderLayer` (the MLX implementation the bundled subject's oracle
runs) on the same weights, widened to f32.

The widths are the released configs' (see docs/performance.md, "Real size",
for where each was read): hidden 2048, 8 heads of 256, 2 KV heads, AltUp 4
inputs, laurel rank 64, per-layer input 256, sliding window 512 on both; E2B
has 30 layers and feed-forward 8192, E4B 35 layers and feed-forward 16384;
the first 10 layers of both use the 0.95 gaussian top-k. Only the first
`layers` decoder layers are generated (layers 0..3 are sliding, own-KV,
sparse layers in both models).
"""

import sys
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures/production"))

SLIDING, FULL = "sliding_attention", "full_attention"


def _cfg(hidden, ff, total, shared, heads, kv, head_dim, laurel, per_layer, window, sparse):
    return {
        "model_type": "gemma3n_text", "hidden_size": hidden, "num_hidden_layers": total,
        "intermediate_size": [ff] * total, "num_attention_heads": heads,
        "num_key_value_heads": kv, "head_dim": head_dim, "laurel_rank": laurel,
        "hidden_size_per_layer_input": per_layer, "altup_num_inputs": 4, "altup_active_idx": 0,
        "altup_correct_scale": True, "altup_coef_clip": 120.0, "rms_norm_eps": 1e-6,
        "num_kv_shared_layers": shared, "sliding_window": window,
        "layer_types": [FULL if (i + 1) % 5 == 0 else SLIDING for i in range(total)],
        "activation_sparsity_pattern": [0.95] * sparse + [0.0] * (total - sparse),
        "rope_theta": 1e6, "rope_local_base_freq": 1e4, "rope_scaling": None,
        "max_position_embeddings": 32768, "vocab_size": 262400,
        "vocab_size_per_layer_input": 262144, "final_logit_softcapping": 30.0,
    }


# name: (config, decoder layers generated, tokens)
TEXT = {
    "small": (_cfg(64, 128, 6, 2, 2, 1, 32, 8, 16, 512, 2), 2, 8),
    "e2b": (_cfg(2048, 8192, 30, 10, 8, 2, 256, 64, 256, 512, 10), 4, 128),
    "e4b": (_cfg(2048, 16384, 35, 15, 8, 2, 256, 64, 256, 512, 10), 4, 128),
}


def _rng(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _shape(cfg, rel):
    d, hd = cfg["hidden_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    n, ff = cfg["altup_num_inputs"], cfg["intermediate_size"][0]
    r, pd = cfg["laurel_rank"], cfg["hidden_size_per_layer_input"]
    return {
        "altup.router_norm.weight": (d,), "altup.modality_router.weight": (n, d),
        "altup.prediction_coefs.weight": (n * n, n), "altup.correction_coefs.weight": (n, n),
        "altup.correct_output_scale": (d,), "input_layernorm.weight": (d,),
        "laurel.linear_left.weight": (r, d), "laurel.linear_right.weight": (d, r),
        "laurel.post_laurel_norm.weight": (d,), "self_attn.q_proj.weight": (q, d),
        "self_attn.q_norm.weight": (hd,), "self_attn.k_proj.weight": (kv, d),
        "self_attn.k_norm.weight": (hd,), "self_attn.v_proj.weight": (kv, d),
        "self_attn.o_proj.weight": (d, q), "post_attention_layernorm.weight": (d,),
        "pre_feedforward_layernorm.weight": (d,), "mlp.gate_proj.weight": (ff, d),
        "mlp.up_proj.weight": (ff, d), "mlp.down_proj.weight": (d, ff),
        "post_feedforward_layernorm.weight": (d,), "per_layer_input_gate.weight": (pd, d),
        "per_layer_projection.weight": (d, pd), "post_per_layer_input_norm.weight": (d,),
    }[rel]


def names(cfg, i):
    """Relative weight names of decoder layer i, in the wrapper's argument order."""
    import language

    return language.layer_weight_names(cfg, i)


def weights(seed, cfg, layers):
    """Seeded bf16 weights (the checkpoint's dtype) keyed `layers.I.<rel>`:
    gains 1 + 0.1 N, projections N / sqrt(fan in), AltUp coefficients 0.1 N."""
    out = {}
    for i in range(layers):
        for name in names(cfg, i):
            rel = name.split(".", 2)[2]
            shape = _shape(cfg, rel)
            z = _rng(seed, name).standard_normal(shape)
            if len(shape) == 1:
                v = 1.0 + 0.1 * z
            elif "coefs" in rel:
                v = 0.1 * z
            else:
                v = z / np.sqrt(shape[1])
            out[name] = v.astype(ml_dtypes.bfloat16)
    return out


def _ty(shape, dtype):
    return "tensor<" + "x".join(str(s) for s in shape) + f"x{dtype}>"


def mlir(cfg, w, layers, tokens):
    """One module per decoder layer `text_I(hidden, per_layer_inputs) -> hidden`
    (JAX's lowering of language.decoder_layer, bf16 policy, wrapped so its
    weights are parameters); returns {module name: text}."""
    import jax
    import jax.numpy as jnp
    import language
    import precision

    n, d = cfg["altup_num_inputs"], cfg["hidden_size"]
    nl, pd = cfg["num_hidden_layers"], cfg["hidden_size_per_layer_input"]
    hidden_t, pli_t = (n, 1, tokens, d), (1, tokens, nl, pd)
    out = {}
    for i in range(layers):
        keys = names(cfg, i)

        def fn(hidden, pli, *ws, _i=i, _keys=keys):
            cache = jnp.zeros((_i + 1, cfg["num_key_value_heads"], tokens, cfg["head_dim"]), jnp.bfloat16)
            positions = jnp.arange(tokens, dtype=jnp.int32)
            _, h, _, _ = language.decoder_layer(precision.BF16, cfg, dict(zip(_keys, ws)), _i,
                                                hidden, pli, positions, cache, cache)
            return h.astype(jnp.float32)

        specs = ([jax.ShapeDtypeStruct(hidden_t, np.float32), jax.ShapeDtypeStruct(pli_t, np.float32)]
                 + [jax.ShapeDtypeStruct(w[k].shape, jnp.bfloat16) for k in keys])
        text = jax.jit(fn, keep_unused=True).lower(*specs).as_text()
        impl = f"text_{i}_impl"
        if text.count("func.func public @main(") != 1:
            raise RuntimeError(f"text layer {i}: JAX's module has no single public @main")
        text = text.replace("func.func public @main(", f"func.func private @{impl}(")
        arg_types = [_ty(hidden_t, "f32"), _ty(pli_t, "f32")] + [_ty(w[k].shape, "bf16") for k in keys]
        lines = []
        for j, k in enumerate(keys):
            lines.append(f'  util.global private @w{j} = #flow.parameter.named<"model"::"text.{k}"> : {arg_types[j + 2]}')
        ht = arg_types[0]
        lines.append(f"  func.func @text_{i}(%h: {ht}, %p: {arg_types[1]}) -> {ht} {{")
        for j in range(len(keys)):
            lines.append(f"    %w{j} = util.global.load @w{j} : {arg_types[j + 2]}")
        ws = ", ".join(f"%w{j}" for j in range(len(keys)))
        lines.append(f"    %r = func.call @{impl}(%h, %p, {ws}) : ({', '.join(arg_types)}) -> {ht}")
        lines += [f"    return %r : {ht}", "  }"]
        end = text.rstrip().rfind("}")
        out[f"text_{i}"] = text[:end] + "\n".join(lines) + "\n}\n"
    return out


def mlx_layers(cfg, w, layers):
    """mlx-vlm's decoder layers 0..layers-1 on the weights (bf16 values widened to f32)."""
    import mlx.core as mx
    from mlx_vlm.models.gemma3n.config import TextConfig
    from mlx_vlm.models.gemma3n.language import Gemma3nDecoderLayer

    tc = TextConfig.from_dict(cfg)
    out = []
    for i in range(layers):
        layer = Gemma3nDecoderLayer(tc, i, is_kv_shared_layer=False)
        prefix = f"layers.{i}."
        layer.load_weights([(k[len(prefix):], mx.array(np.asarray(v, dtype=np.float32)))
                            for k, v in w.items() if k.startswith(prefix)])
        out.append(layer)
    return out


def inputs(seed, cfg, tokens):
    """The first layer's AltUp stack [n, 1, T, D] and the per-layer inputs [1, T, layers, P]."""
    n, d = cfg["altup_num_inputs"], cfg["hidden_size"]
    nl, pd = cfg["num_hidden_layers"], cfg["hidden_size_per_layer_input"]
    hidden = _rng(seed, "text.hidden").standard_normal((n, 1, tokens, d)).astype(np.float32)
    pli = _rng(seed, "text.pli").standard_normal((1, tokens, nl, pd)).astype(np.float32)
    return hidden, pli


def live_bytes(cfg, tokens):
    """A text layer's largest live tensors (f32): its input and output stacks
    plus the widest intermediate (the gate projection or the attention logits)."""
    n, d = cfg["altup_num_inputs"], cfg["hidden_size"]
    wide = max(tokens * cfg["intermediate_size"][0], cfg["num_attention_heads"] * tokens * tokens)
    return 4 * (2 * n * tokens * d + wide + tokens * cfg["num_hidden_layers"] * cfg["hidden_size_per_layer_input"])
