"""Seeded Gemma3n-width Conformer feed-forward stack and text decoder layers
for `parity` at scale.

Writes, into OUT_DIR, a subject whose weights are IREE parameters at the
real widths of the Gemma3n audio tower and of the first text decoder layers
of E2B or E4B (text_layers.py; nothing is downloaded):

  model.mlir          one public function per Conformer layer, `layer_L(x)`:
                      the layer's two macaron feed-forward blocks (HF
                      Gemma3nAudioConformerFeedForward: clip, pre RMS norm,
                      up projection, swish, down projection, post RMS norm,
                      residual x 0.5), weights read from
                      `#flow.parameter.named<"model"::...>` globals stored
                      bf16, matmuls accumulated in f32 (bf16 x bf16 -> f32)
  text_L.mlir         decoder layer L of the text model (text_layers.py):
                      `text_L(hidden, per_layer_inputs) -> hidden`
  weights.safetensors the parameters (audio: bf16 projections, f32 norm
                      gains; text, under `text.`: bf16)
  oracle/             the MLX oracle, recorded by the repo's recorder
                      (python/parity_mlx_recorder): the same stack as
                      mlx.nn modules on the same weights (the bf16 values
                      widened to f32, f32 matmuls), every layer's output
                      `default/layers.L` and the input `default/x`;
                      mlx-vlm's decoder layers, `default/text_layers.L`,
                      inputs `default/text_hidden` and `default/text_pli`
  stages.yaml         one stage per layer, chained (layer L reads L-1's
                      output), audio `layer_L` then text `text_L`

Usage (the repo's MLX Python: tools/fixtures/.venv, PARITY_TENSOR_PYTHON):

    python make_scale.py CONFIG OUT_DIR [--frames N]

CONFIG: small (hidden 64, 2 layers, 2 tiny text layers: a CI-sized check
of the same code), e2b or e4b (audio hidden 1536, feed-forward 6144, 12
layers: the audio tower both Gemma3n E2B and E4B share; text hidden 2048,
4 layers, feed-forward 8192 for E2B and 16384 for E4B). `--frames` is the number of
frames after the 4x subsampling (default: 128 for e2b/e4b, i.e. 512 mel
frames; 8 for small). Deterministic: the same bytes for the same arguments.
"""

import argparse
import json
import zlib
from pathlib import Path

import sys

import ml_dtypes
import mlx.core as mx
import mlx.nn as nn
import numpy as np
from safetensors.numpy import save_file

# The repo's MLX recorder, used from the checkout (not pip-installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python/parity_mlx_recorder/src"))
from parity_mlx_recorder import Recorder  # noqa: E402

import text_layers  # noqa: E402  (tools/scale, next to this file)

SEED = 20261205
CONFIGS = {
    # hidden, feed-forward width, layers, default frames after subsampling
    "small": (64, 256, 2, 8),
    "e2b": (1536, 6144, 12, 128),
    "e4b": (1536, 6144, 12, 128),
}
EPS = 1e-6
CLIP = 1e10  # gradient_clipping of the released checkpoint: never triggers
# A text layer's output against mlx-vlm's f32 layer: bf16 storage after every op
# (the bundled subject's bf16 policy) leaves about 1.5% relative L2 in isolated
# mode and compounds in chained mode (8.3% after 4 E2B layers); a dropped
# branch (attention, MLP, per-layer input) moves the AltUp stack by 43-56%
# relative L2 at E2B width (docs/performance.md, "Real size").
TEXT_TOLERANCE = "[{rel_l2: 0.15}, {cosine_min: 0.99}]"


def rng(name):
    return np.random.default_rng([SEED, zlib.crc32(name.encode())])


def weights(hidden, ff, layers):
    """Per layer and block: up [H, F] and down [F, H] (bf16, stored as the
    matmul reads them), pre/post norm gains (f32)."""
    out = {}
    for layer in range(layers):
        for block in ("start", "end"):
            p = f"l{layer}.{block}."
            up = rng(p + "up").standard_normal((hidden, ff)) / np.sqrt(hidden)
            down = rng(p + "down").standard_normal((ff, hidden)) / np.sqrt(ff)
            out[p + "up"] = up.astype(ml_dtypes.bfloat16)
            out[p + "down"] = down.astype(ml_dtypes.bfloat16)
            out[p + "pre_norm"] = (1.0 + 0.1 * rng(p + "pre").standard_normal(hidden)).astype(np.float32)
            out[p + "post_norm"] = (1.0 + 0.1 * rng(p + "post").standard_normal(hidden)).astype(np.float32)
    return out


def mlir(hidden, ff, layers, frames):
    """The module text: globals, then one function per layer."""
    t, h, f = frames, hidden, ff
    th, tf = f"tensor<{t}x{h}xf32>", f"tensor<{t}x{f}xf32>"
    lines = ["module @scale {"]
    for layer in range(layers):
        for block in ("start", "end"):
            p = f"l{layer}_{block}"
            k = f"l{layer}.{block}."
            lines += [
                f'  util.global private @{p}_up = #flow.parameter.named<"model"::"{k}up"> : tensor<{h}x{f}xbf16>',
                f'  util.global private @{p}_down = #flow.parameter.named<"model"::"{k}down"> : tensor<{f}x{h}xbf16>',
                f'  util.global private @{p}_pre = #flow.parameter.named<"model"::"{k}pre_norm"> : tensor<{h}xf32>',
                f'  util.global private @{p}_post = #flow.parameter.named<"model"::"{k}post_norm"> : tensor<{h}xf32>',
            ]
    for layer in range(layers):
        body, n = [], [0]

        def v(expr, ty):
            n[0] += 1
            body.append(f"    %v{n[0]} = {expr} : {ty}")
            return f"%v{n[0]}"

        def norm(x, gain):
            sq = v(f"stablehlo.multiply {x}, {x}", th)
            zero = v("stablehlo.constant dense<0.0>", "tensor<f32>")
            s = v(f'stablehlo.reduce({sq} init: {zero}) applies stablehlo.add across dimensions = [1]',
                  f"({th}, tensor<f32>) -> tensor<{t}xf32>")
            inv_h = v(f"stablehlo.constant dense<{1.0 / h:.9e}>", f"tensor<{t}xf32>")
            mean = v(f"stablehlo.multiply {s}, {inv_h}", f"tensor<{t}xf32>")
            eps = v(f"stablehlo.constant dense<{EPS:.9e}>", f"tensor<{t}xf32>")
            r = v(f"stablehlo.rsqrt {v(f'stablehlo.add {mean}, {eps}', f'tensor<{t}xf32>')}", f"tensor<{t}xf32>")
            rb = v(f"stablehlo.broadcast_in_dim {r}, dims = [0]", f"(tensor<{t}xf32>) -> {th}")
            g = v(f"util.global.load @{gain}", f"tensor<{h}xf32>")
            gb = v(f"stablehlo.broadcast_in_dim {g}, dims = [1]", f"(tensor<{h}xf32>) -> {th}")
            return v(f"stablehlo.multiply {v(f'stablehlo.multiply {x}, {rb}', th)}, {gb}", th)

        def matmul(x, weight, rows, cols, out_ty):
            xb = v(f"stablehlo.convert {x}", f"(tensor<{t}x{rows}xf32>) -> tensor<{t}x{rows}xbf16>")
            w = v(f"util.global.load @{weight}", f"tensor<{rows}x{cols}xbf16>")
            return v(f"stablehlo.dot_general {xb}, {w}, contracting_dims = [1] x [0]",
                     f"(tensor<{t}x{rows}xbf16>, tensor<{rows}x{cols}xbf16>) -> {out_ty}")

        x = "%x"
        for block in ("start", "end"):
            p = f"l{layer}_{block}"
            lo = v(f"stablehlo.constant dense<{-CLIP:.1e}>", th)
            hi = v(f"stablehlo.constant dense<{CLIP:.1e}>", th)
            c = v(f"stablehlo.clamp {lo}, {x}, {hi}", th)
            u = matmul(norm(c, f"{p}_pre"), f"{p}_up", h, f, tf)
            sw = v(f"stablehlo.multiply {u}, {v(f'stablehlo.logistic {u}', tf)}", tf)
            d = matmul(sw, f"{p}_down", f, h, th)
            d = norm(v(f"stablehlo.clamp {lo}, {d}, {hi}", th), f"{p}_post")
            half = v("stablehlo.constant dense<5.0e-01>", th)
            x = v(f"stablehlo.add {x}, {v(f'stablehlo.multiply {d}, {half}', th)}", th)
        lines.append(f"  func.func @layer_{layer}(%x: {th}) -> {th} {{")
        lines += body
        lines += [f"    return {x} : {th}", "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def rms_norm(v, gain):
    return v * mx.rsqrt(mx.mean(v * v, axis=-1, keepdims=True) + EPS) * gain


def bf16(v):
    """v rounded to bf16 and widened back, as the module feeds its matmuls."""
    return v.astype(mx.bfloat16).astype(mx.float32)


class FeedForward(nn.Module):
    """One macaron feed-forward block on the stored (bf16-valued) weights."""

    def __init__(self, w, prefix):
        super().__init__()
        get = lambda k: mx.array(np.asarray(w[prefix + k], dtype=np.float32))
        self.pre_norm, self.up = get("pre_norm"), get("up")
        self.down, self.post_norm = get("down"), get("post_norm")

    def __call__(self, h):
        u = bf16(rms_norm(mx.clip(h, -CLIP, CLIP), self.pre_norm)) @ self.up
        d = bf16(u * mx.sigmoid(u)) @ self.down
        return h + 0.5 * rms_norm(mx.clip(d, -CLIP, CLIP), self.post_norm)


class Layer(nn.Module):
    """A Conformer layer's two feed-forward blocks (`layer_L` in model.mlir)."""

    def __init__(self, w, layer):
        super().__init__()
        self.start = FeedForward(w, f"l{layer}.start.")
        self.end = FeedForward(w, f"l{layer}.end.")

    def __call__(self, h):
        return self.end(self.start(h))


class Stack(nn.Module):
    """The audio layers (`layers.L`) and mlx-vlm's text decoder layers (`text_layers.L`)."""

    def __init__(self, w, layers, text_cfg, text_w, text_count):
        super().__init__()
        self.layers = [Layer(w, i) for i in range(layers)]
        self.text_layers = text_layers.mlx_layers(text_cfg, text_w, text_count)

    def __call__(self, h, hidden, pli):
        for layer in self.layers:
            h = layer(h)
        for i, layer in enumerate(self.text_layers):
            hidden = layer(hidden, "causal", None, pli[:, :, i, :])
        return h, hidden


def record_oracle(w, layers, x, text, out):
    """Records every layer's output (`default/layers.L`, `default/text_layers.L`) and the inputs."""
    text_cfg, text_w, text_count, hidden, pli = text
    model = Stack(w, layers, text_cfg, text_w, text_count)
    rec = Recorder(model, depth=1)
    with rec.case("default"):
        mx.eval(model(mx.array(x), mx.array(hidden), mx.array(pli)))
    rec.record_input("default", "x", mx.array(x))
    rec.record_input("default", "text_hidden", mx.array(hidden))
    rec.record_input("default", "text_pli", mx.array(pli))
    rec.save(str(out), provenance={"producer": "tools/scale/make_scale.py (MLX)", "seed": SEED})


def stages_yaml(layers, text_count):
    modules = "".join(f"\n    text_{i}: {{mlir: text_{i}.mlir}}" for i in range(text_count))
    lines = [
        "version: 1",
        "subject:",
        "  modules:",
        "    scale: {mlir: model.mlir}" + modules,
        "  target_backend: llvm-cpu",
        "  driver: local-task",
        '  flags: ["--iree-input-type=stablehlo"]',
        "  parameters:",
        "    model: [weights.safetensors]",
        "oracle: oracle",
        "cases: [{name: default}]",
        "tolerances:",
        "  f32: [{allclose: {atol: 0.05, rtol: 0.02}}]",
        "stages:",
    ]
    for layer in range(layers):
        arg = '{oracle: "{case}/x"}' if layer == 0 else f"{{stage: layer_{layer - 1}.y}}"
        lines += [
            f"  - name: layer_{layer}",
            "    module: scale",
            f"    function: layer_{layer}",
            f"    args: [{arg}]",
            f'    outputs: [{{name: y, oracle: "{{case}}/layers.{layer}"}}]',
        ]
    for i in range(text_count):
        arg = '{oracle: "{case}/text_hidden"}' if i == 0 else f"{{stage: text_{i - 1}.y}}"
        lines += [
            f"  - name: text_{i}",
            f"    module: text_{i}",
            f"    function: text_{i}",
            f'    args: [{arg}, {{oracle: "{{case}}/text_pli"}}]',
            f'    outputs: [{{name: y, oracle: "{{case}}/text_layers.{i}", tolerance: {TEXT_TOLERANCE}}}]',
        ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config", choices=sorted(CONFIGS))
    ap.add_argument("out", type=Path)
    ap.add_argument("--frames", type=int)
    a = ap.parse_args()
    hidden, ff, layers, frames = CONFIGS[a.config]
    frames = a.frames or frames
    a.out.mkdir(parents=True, exist_ok=True)
    w = weights(hidden, ff, layers)
    text_cfg, text_count, tokens = text_layers.TEXT[a.config]
    text_w = text_layers.weights(SEED, text_cfg, text_count)
    save_file(w | {f"text.{k}": v for k, v in text_w.items()}, str(a.out / "weights.safetensors"))
    (a.out / "model.mlir").write_text(mlir(hidden, ff, layers, frames))
    for name, text in text_layers.mlir(text_cfg, text_w, text_count, tokens).items():
        (a.out / f"{name}.mlir").write_text(text)
    (a.out / "stages.yaml").write_text(stages_yaml(layers, text_count))
    x = rng("x").standard_normal((frames, hidden)).astype(np.float32)
    text_hidden, pli = text_layers.inputs(SEED, text_cfg, tokens)
    record_oracle(w, layers, x, (text_cfg, text_w, text_count, text_hidden, pli), a.out / "oracle")
    weight_bytes = sum(v.nbytes for v in w.values()) + sum(v.nbytes for v in text_w.values())
    audio_live = 4 * (2 * frames * hidden + frames * ff)
    # Every stage's argument shapes (f32), for the floor's resident inputs.
    stage_args = {f"layer_{i}": [[frames, hidden]] for i in range(layers)}
    stage_args |= {f"text_{i}": [list(text_hidden.shape), list(pli.shape)] for i in range(text_count)}
    summary = {"config": a.config, "hidden": hidden, "ff": ff, "layers": layers,
               "frames": frames, "text_hidden": text_cfg["hidden_size"],
               "text_ff": text_cfg["intermediate_size"][0], "text_layers": text_count,
               "tokens": tokens, "weight_bytes": weight_bytes,
               "live_bytes": max(audio_live, text_layers.live_bytes(text_cfg, tokens)),
               "stage_args": stage_args, "seed": SEED}
    (a.out / "scale.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
