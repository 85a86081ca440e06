"""The Gemma3n audio tower at the released widths, for make_scale.py.

The functions are the bundled subject's own (tools/fixtures/production:
model.py `sscp_conv`, `input_projection`, `feed_forward`; conformer.py
`attention` with `blocks_with_context` / `local_causal_mask`, `light_conv`,
`final_norm`), lowered by JAX under the production bf16 policy (bf16 storage
after every op, f32 accumulation), with their weights turned into
`#flow.parameter.named<"model"::...>` globals by public wrappers:

  sscp.mlir   `sscp(mel [1, 4T, mel bins]) -> [1, T, hidden]`: the two SSCP
              convolution blocks (conv, cumulative group norm, ReLU; 4x
              subsampling in time and frequency) and the input projection
  model.mlir  `layer_L(x [1, T, hidden]) -> [1, T, hidden]`: Conformer block
              L (feed-forward start, chunked local attention with relative
              position, light conv with its GLU and causal depthwise conv,
              feed-forward end, final norm); one JAX function, called by
              every layer's wrapper with that layer's globals

No frame is padding (the mask is all valid). The oracle is mlx-vlm 0.7.10's
own `AudioModel` modules (`subsample_conv_projection`, `conformer[L]`: the
MLX implementation the bundled subject's oracle runs) on the same weights
widened to f32.

The widths are HF transformers 5.24.0 `Gemma3nAudioConfig`'s defaults
(models/gemma3n/configuration_gemma3n.py, checkpoint google/gemma-3n-E4B;
E2B and E4B share the audio tower): 128 mel bins, SSCP channels (128, 32),
kernels 3x3, strides 2x2 (so 4x in time, 128 -> 32 in frequency, input
projection 32*32 = 1024 -> 1536), hidden 1536 (feed-forward 4x: 6144), 12
layers, 8 heads (192 wide), attention chunk 12 with context left 13 (12
past frames) and right 0, logit cap 50, depthwise conv kernel 5, residual
weight 0.5, group-norm eps 1e-3, gradient clipping 1e10 (never triggers).
"""

import sys
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures/production"))


def _cfg(mel, channels, hidden, layers, heads, chunk, left):
    return {
        "model_type": "gemma3n_audio", "input_feat_size": mel, "hidden_size": hidden,
        "rms_norm_eps": 1e-6, "gradient_clipping": 1e10,
        "conf_attention_chunk_size": chunk, "conf_attention_context_left": left,
        "conf_attention_context_right": 0, "conf_attention_logit_cap": 50.0,
        # mlx-vlm only (HF uses the dtype minimum); both give zero weight after the softcap.
        "conf_attention_invalid_logits_value": -1e9,
        "conf_num_attention_heads": heads, "conf_num_hidden_layers": layers,
        "conf_conv_kernel_size": 5, "conf_positional_bias_size": 256,
        "conf_reduction_factor": 4, "conf_residual_weight": 0.5,
        "sscp_conv_channel_size": list(channels),
        # HF reads sscp_conv_group_norm_eps, mlx-vlm sscp_conv_eps: both set.
        "sscp_conv_group_norm_eps": 1e-3, "sscp_conv_eps": 1e-3,
        "sscp_conv_kernel_size": [[3, 3], [3, 3]], "sscp_conv_stride_size": [[2, 2], [2, 2]],
        "vocab_size": 128, "vocab_offset": 262272,
    }


# name: audio config. `small` is the bundled subject's tower shape (CI-sized);
# e2b and e4b share the released tower.
AUDIO = {
    "small": _cfg(32, (16, 8), 64, 2, 4, 4, 5),
    "e2b": _cfg(128, (128, 32), 1536, 12, 8, 12, 13),
    "e4b": _cfg(128, (128, 32), 1536, 12, 8, 12, 13),
}
SSCP = "subsample_conv_projection."


def _rng(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _freq(cfg):
    """Frequency bins after each SSCP convolution (pad 1 each side)."""
    out, f = [], cfg["input_feat_size"]
    for (_, kw), (_, sw) in zip(cfg["sscp_conv_kernel_size"], cfg["sscp_conv_stride_size"]):
        f = (f + 2 - kw) // sw + 1
        out.append(f)
    return out


def names(cfg):
    """Every weight's name (HF's, relative to `audio_tower.`): SSCP, then per layer."""
    import weights

    return weights.audio_names(cfg)


def _shape(cfg, name):
    """HF checkpoint layout: linear [out, in], conv [out, in, kh, kw], depthwise [D, 1, k]."""
    h, c = cfg["hidden_size"], cfg["sscp_conv_channel_size"]
    rel = name.split(".", 2)[2] if name.startswith("conformer.") else name
    if name.startswith(SSCP):
        part = name[len(SSCP):]
        if part == "input_proj_linear.weight":
            return (h, _freq(cfg)[-1] * c[-1])
        i = int(part[len("conv_")])
        kh, kw = cfg["sscp_conv_kernel_size"][i]
        return (c[i], 1 if i == 0 else c[i - 1], kh, kw) if part.endswith("conv.weight") else (c[i],)
    return {
        "attention.attn.per_dim_scale": (h // cfg["conf_num_attention_heads"],),
        "attention.attn.relative_position_embedding.pos_proj.weight": (h, h),
        "attention.attn.q_proj.weight": (h, h), "attention.attn.k_proj.weight": (h, h),
        "attention.attn.v_proj.weight": (h, h), "attention.post.weight": (h, h),
        "ffw_layer_start.ffw_layer_1.weight": (4 * h, h), "ffw_layer_start.ffw_layer_2.weight": (h, 4 * h),
        "ffw_layer_end.ffw_layer_1.weight": (4 * h, h), "ffw_layer_end.ffw_layer_2.weight": (h, 4 * h),
        "lconv1d.linear_start.weight": (2 * h, h), "lconv1d.linear_end.weight": (h, h),
        "lconv1d.depthwise_conv1d.weight": (h, 1, cfg["conf_conv_kernel_size"]),
    }.get(rel, (h,))  # every other weight is a norm gain


def weights(seed, cfg):
    """Seeded bf16 weights (the checkpoint's dtype) in HF's layout: gains
    1 + 0.1 N, the per-dim scale 0.1 N, kernels and projections N / sqrt(fan in)."""
    out = {}
    for name in names(cfg):
        shape = _shape(cfg, name)
        z = _rng(seed, "audio." + name).standard_normal(shape)
        if name.endswith("per_dim_scale"):
            v = 0.1 * z
        elif len(shape) == 1:
            v = 1.0 + 0.1 * z
        else:
            v = z / np.sqrt(np.prod(shape[1:]))
        out[name] = v.astype(ml_dtypes.bfloat16)
    return out


def _ty(shape, dtype):
    return "tensor<" + "x".join(str(s) for s in shape) + f"x{dtype}>"


def _wrap(text, impl, publics, arg_types, out_ty):
    """JAX's module with @main renamed `impl`, plus one public function per
    (name, activation type, [(global, key, type)...]) loading its globals."""
    if text.count("func.func public @main(") != 1:
        raise RuntimeError(f"{impl}: JAX's module has no single public @main")
    text = text.replace("func.func public @main(", f"func.func private @{impl}(")
    lines = []
    for name, x_ty, globs in publics:
        for g, key, ty in globs:
            lines.append(f'  util.global private @{g} = #flow.parameter.named<"model"::"{key}"> : {ty}')
        lines.append(f"  func.func @{name}(%x: {x_ty}) -> {out_ty} {{")
        for j, (g, _, ty) in enumerate(globs):
            lines.append(f"    %w{j} = util.global.load @{g} : {ty}")
        ws = "".join(f", %w{j}" for j in range(len(globs)))
        lines.append(f"    %r = func.call @{impl}(%x{ws}) : ({', '.join(arg_types)}) -> {out_ty}")
        lines += [f"    return %r : {out_ty}", "  }"]
    end = text.rstrip().rfind("}")
    return text[:end] + "\n".join(lines) + "\n}\n"


def mlir(cfg, w, frames, faults=frozenset()):
    """{"sscp": text, "model": text}: the SSCP + input projection module and
    the Conformer blocks module (see the module doc). `faults` are the
    bundled subject's (tools/fixtures/production/faults.py) injected into
    the lowered functions (the shared block function is lowered as layer 0,
    so a layer-0 fault is in every layer); the oracle never has them."""
    import jax
    import jax.numpy as jnp
    import conformer
    import model
    import precision

    p, h = precision.BF16, cfg["hidden_size"]
    mel_t, x_t = (1, 4 * frames, cfg["input_feat_size"]), (1, frames, h)
    all_names = names(cfg)
    sscp_keys = [k for k in all_names if k.startswith(SSCP)]
    blk_keys = [k[len("conformer.0."):] for k in all_names if k.startswith("conformer.0.")]

    def sscp(mel, *ws):
        wd = dict(zip(sscp_keys, ws))
        x = model.sscp_conv(p, cfg, wd, 0, mel, faults)["sscp_conv_0"]
        x = model.sscp_conv(p, cfg, wd, 1, x, faults)["sscp_conv_1"]
        return model.input_projection(p, cfg, wd, x)["input_projection"].astype(jnp.float32)

    def block(x, *ws):
        wd = {"conformer.0." + k: v for k, v in zip(blk_keys, ws)}
        mask = jnp.zeros((1, frames), bool)  # every frame valid
        with model.scope("conformer_0"):
            with model.scope("feed_forward_start"):
                x = model.feed_forward(p, cfg, wd, 0, "start", x)
            x = conformer.attention(p, cfg, wd, 0, x, mask, faults)["conformer_0_attention"]
            x = conformer.light_conv(p, cfg, wd, 0, x, mask, faults)["conformer_0_light_conv"]
            with model.scope("feed_forward_end"):
                x = model.feed_forward(p, cfg, wd, 0, "end", x)
            x = conformer.final_norm(p, cfg, wd, 0, x)["conformer_0_final_norm"]
        return x.astype(jnp.float32)

    def lower(fn, x_shape, keys):
        specs = [jax.ShapeDtypeStruct(x_shape, np.float32)]
        specs += [jax.ShapeDtypeStruct(w[k].shape, jnp.bfloat16) for k in keys]
        return jax.jit(fn, keep_unused=True).lower(*specs).as_text()

    out_ty = _ty(x_t, "f32")
    sscp_types = [_ty(mel_t, "f32")] + [_ty(w[k].shape, "bf16") for k in sscp_keys]
    sscp_globs = [(f"s{j}", f"audio.{k}", sscp_types[j + 1]) for j, k in enumerate(sscp_keys)]
    out = {"sscp": _wrap(lower(sscp, mel_t, sscp_keys), "sscp_impl",
                         [("sscp", sscp_types[0], sscp_globs)], sscp_types, out_ty)}
    layer0 = ["conformer.0." + k for k in blk_keys]
    blk_types = [out_ty] + [_ty(w[k].shape, "bf16") for k in layer0]
    publics = []
    for layer in range(cfg["conf_num_hidden_layers"]):
        globs = [(f"l{layer}_{j}", f"audio.conformer.{layer}.{k}", blk_types[j + 1])
                 for j, k in enumerate(blk_keys)]
        publics.append((f"layer_{layer}", out_ty, globs))
    out["model"] = _wrap(lower(block, x_t, layer0), "block_impl", publics, blk_types, out_ty)
    return out


def mlx_tower(cfg, w):
    """mlx-vlm's AudioModel on the weights (bf16 values widened to f32, convs
    transposed from HF's layout to MLX's channels-last one)."""
    import mlx.core as mx
    from mlx_vlm.models.gemma3n.audio import AudioModel
    from mlx_vlm.models.gemma3n.config import AudioConfig

    tower = AudioModel(AudioConfig.from_dict(cfg))
    loaded = []
    for k, v in w.items():
        a = np.asarray(v, dtype=np.float32)
        if k.endswith("conv.weight"):
            a = a.transpose(0, 2, 3, 1)  # [O, I, kh, kw] -> [O, kh, kw, I]
        elif k.endswith("depthwise_conv1d.weight"):
            a = a.transpose(0, 2, 1)  # [D, 1, k] -> [D, k, 1]
        loaded.append((k, mx.array(a)))
    tower.load_weights(loaded, strict=True)
    return tower


def mel(seed, cfg, frames):
    """The log-mel input [1, 4 * frames, mel bins] (standard normal)."""
    return _rng(seed, "audio.mel").standard_normal((1, 4 * frames, cfg["input_feat_size"])).astype(np.float32)


def live_bytes(cfg, frames):
    """The largest audio stage's live tensors (f32): its input and output
    plus the widest intermediate (the first SSCP convolution's output, or a
    block's feed-forward)."""
    t, h, c0 = frames, cfg["hidden_size"], cfg["sscp_conv_channel_size"][0]
    sscp = 4 * t * cfg["input_feat_size"] + 2 * t * _freq(cfg)[0] * c0 + t * h
    block = 2 * t * h + t * 4 * h
    return 4 * max(sscp, block)
