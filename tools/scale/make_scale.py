"""Seeded Gemma3n-width audio tower and text decoder layers for `parity` at scale.

Writes, into OUT_DIR, a subject whose weights are IREE parameters at the
real widths of the Gemma3n audio tower and of the first text decoder layers
of E2B or E4B (audio_tower.py, text_layers.py; nothing is downloaded):

  sscp.mlir           `sscp(mel) -> x`: the two SSCP convolution blocks and
                      the input projection (audio_tower.py)
  model.mlir          one public function per Conformer layer, `layer_L(x)`:
                      the whole Conformer block (feed-forward, chunked local
                      attention, light conv, feed-forward, final norm)
  text_L.mlir         decoder layer L of the text model (text_layers.py):
                      `text_L(hidden, per_layer_inputs) -> hidden`
                      (all three: the bundled subject's JAX functions under
                      its bf16 policy, weights read from bf16
                      `#flow.parameter.named<"model"::...>` globals)
  weights.safetensors the parameters, bf16 (audio under `audio.`, text
                      under `text.`)
  oracle/             the MLX oracle, recorded by the repo's recorder
                      (python/parity_mlx_recorder) from mlx-vlm's modules
                      on the same weights widened to f32: `default/sscp`,
                      every Conformer layer's output `default/layers.L`,
                      the decoder layers' `default/text_layers.L`; inputs
                      `default/mel`, `default/text_hidden`, `default/text_pli`
  stages.yaml         one stage per function, chained: `sscp`, the audio
                      `layer_L` (layer L reads L-1's output), then `text_L`

Usage (the repo's MLX Python: tools/fixtures/.venv, PARITY_TENSOR_PYTHON):

    python make_scale.py CONFIG OUT_DIR [--frames N] [--fault NAME]

CONFIG: small (the bundled subject's tower shape: 32 mel bins, hidden 64, 2
layers, 2 tiny text layers: a CI-sized check of the same code), e2b or e4b
(the audio tower both Gemma3n E2B and E4B share: 128 mel bins, hidden 1536,
feed-forward 6144, 12 layers; text hidden 2048, 4 layers, feed-forward 8192
for E2B and 16384 for E4B). `--frames` is the number of frames after the 4x
subsampling (the mel input has 4x as many; default: 128 for e2b/e4b, i.e.
512 mel frames; 8 for small). `--fault` injects one of the bundled
subject's audio faults (tools/fixtures/production/faults.py, e.g.
lconv_not_causal) into the generated modules, not into the oracle: a
subject the gate must fail (tests/scale_bench.rs). Deterministic: the same bytes for the same
arguments.
"""

import argparse
import json
from pathlib import Path

import sys

import mlx.core as mx
import mlx.nn as nn
from safetensors.numpy import save_file

# The repo's MLX recorder, used from the checkout (not pip-installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python/parity_mlx_recorder/src"))
from parity_mlx_recorder import Recorder  # noqa: E402

import audio_tower  # noqa: E402  (tools/scale, next to this file)
import text_layers  # noqa: E402

SEED = 20261205
# Default frames after subsampling.
FRAMES = {"small": 8, "e2b": 128, "e4b": 128}
# A text layer's output against mlx-vlm's f32 layer: bf16 storage after every op
# (the bundled subject's bf16 policy) leaves about 1.5% relative L2 in isolated
# mode and compounds in chained mode (8.3% after 4 E2B layers); a dropped
# branch (attention, MLP, per-layer input) moves the AltUp stack by 43-56%
# relative L2 at E2B width (docs/performance.md, "Real size").
TEXT_TOLERANCE = "[{rel_l2: 0.15}, {cosine_min: 0.99}]"
# An audio stage's output against mlx-vlm's f32 modules: bf16 storage leaves
# 0.4% relative L2 per stage in isolated mode at E2B width (0.4-0.5% small)
# and 1.0% after the 12 chained Conformer layers. The limit (3x that) fails
# the bundled subject's audio faults that move a layer by 6-86% (relative
# shift off by one 6.3%, one frame more of left context 6.9%, the light conv
# not causal 30%, no light conv 42%, no attention 86%, at E2B width); the
# group-norm epsilon mix-up (0.1%) and a softcap of 30 (0.03%) are below
# bf16's own noise here (docs/performance.md, "Real size").
AUDIO_TOLERANCE = "[{rel_l2: 0.03}, {cosine_min: 0.999}]"


class Stack(nn.Module):
    """mlx-vlm's audio tower (`sscp`, `layers.L`) and text decoder layers (`text_layers.L`)."""

    def __init__(self, tower, text_cfg, text_w, text_count):
        super().__init__()
        self.sscp = tower.subsample_conv_projection
        self.layers = tower.conformer
        self.text_layers = text_layers.mlx_layers(text_cfg, text_w, text_count)

    def __call__(self, mel, hidden, pli):
        h = self.sscp(mel)
        mask = mx.zeros(h.shape[:2], dtype=mx.bool_)  # every frame valid
        for layer in self.layers:
            h = layer(h, mask)
        for i, layer in enumerate(self.text_layers):
            hidden = layer(hidden, "causal", None, pli[:, :, i, :])
        return h, hidden


def record_oracle(tower, mel, text, out):
    """Records every stage's output (`default/sscp`, `default/layers.L`,
    `default/text_layers.L`) and the inputs."""
    text_cfg, text_w, text_count, hidden, pli = text
    model = Stack(tower, text_cfg, text_w, text_count)
    rec = Recorder(model, depth=1)
    with rec.case("default"):
        mx.eval(model(mx.array(mel), mx.array(hidden), mx.array(pli)))
    rec.record_input("default", "mel", mx.array(mel))
    rec.record_input("default", "text_hidden", mx.array(hidden))
    rec.record_input("default", "text_pli", mx.array(pli))
    rec.save(str(out), provenance={"producer": "tools/scale/make_scale.py (MLX)", "seed": SEED})


def stages_yaml(layers, text_count):
    modules = "".join(f"\n    text_{i}: {{mlir: text_{i}.mlir}}" for i in range(text_count))
    lines = [
        "version: 1",
        "subject:",
        "  modules:",
        "    sscp: {mlir: sscp.mlir}",
        "    scale: {mlir: model.mlir}" + modules,
        "  target_backend: llvm-cpu",
        "  driver: local-task",
        '  flags: ["--iree-input-type=stablehlo"]',
        "  parameters:",
        "    model: [weights.safetensors]",
        "oracle: oracle",
        "cases: [{name: default}]",
        "stages:",
        "  - name: sscp",
        "    module: sscp",
        "    function: sscp",
        '    args: [{oracle: "{case}/mel"}]',
        f'    outputs: [{{name: y, oracle: "{{case}}/sscp", tolerance: {AUDIO_TOLERANCE}}}]',
    ]
    for layer in range(layers):
        arg = "{stage: sscp.y}" if layer == 0 else f"{{stage: layer_{layer - 1}.y}}"
        lines += [
            f"  - name: layer_{layer}",
            "    module: scale",
            f"    function: layer_{layer}",
            f"    args: [{arg}]",
            f'    outputs: [{{name: y, oracle: "{{case}}/layers.{layer}", tolerance: {AUDIO_TOLERANCE}}}]',
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
    ap.add_argument("config", choices=sorted(FRAMES))
    ap.add_argument("out", type=Path)
    ap.add_argument("--frames", type=int)
    ap.add_argument("--fault", action="append", default=[])
    a = ap.parse_args()
    cfg = audio_tower.AUDIO[a.config]
    frames = a.frames or FRAMES[a.config]
    hidden, layers = cfg["hidden_size"], cfg["conf_num_hidden_layers"]
    a.out.mkdir(parents=True, exist_ok=True)
    w = audio_tower.weights(SEED, cfg)
    text_cfg, text_count, tokens = text_layers.TEXT[a.config]
    text_w = text_layers.weights(SEED, text_cfg, text_count)
    save_file({f"audio.{k}": v for k, v in w.items()} | {f"text.{k}": v for k, v in text_w.items()},
              str(a.out / "weights.safetensors"))
    for name, text in audio_tower.mlir(cfg, w, frames, frozenset(a.fault)).items():
        (a.out / f"{name}.mlir").write_text(text)
    for name, text in text_layers.mlir(text_cfg, text_w, text_count, tokens).items():
        (a.out / f"{name}.mlir").write_text(text)
    (a.out / "stages.yaml").write_text(stages_yaml(layers, text_count))
    mel = audio_tower.mel(SEED, cfg, frames)
    text_hidden, pli = text_layers.inputs(SEED, text_cfg, tokens)
    record_oracle(audio_tower.mlx_tower(cfg, w), mel,
                  (text_cfg, text_w, text_count, text_hidden, pli), a.out / "oracle")
    weight_bytes = sum(v.nbytes for v in w.values()) + sum(v.nbytes for v in text_w.values())
    # Every stage's argument shapes (f32), for the floor's resident inputs.
    stage_args = {"sscp": [list(mel.shape)]}
    stage_args |= {f"layer_{i}": [[1, frames, hidden]] for i in range(layers)}
    stage_args |= {f"text_{i}": [list(text_hidden.shape), list(pli.shape)] for i in range(text_count)}
    summary = {"config": a.config, "hidden": hidden, "ff": 4 * hidden, "layers": layers,
               "frames": frames, "mel": list(mel.shape[1:]),
               "heads": cfg["conf_num_attention_heads"],
               "chunk": cfg["conf_attention_chunk_size"],
               "context_left": cfg["conf_attention_context_left"],
               "context_right": cfg["conf_attention_context_right"],
               "conv_kernel": cfg["conf_conv_kernel_size"],
               "sscp_channels": cfg["sscp_conv_channel_size"],
               "text_hidden": text_cfg["hidden_size"],
               "text_ff": text_cfg["intermediate_size"][0], "text_layers": text_count,
               "tokens": tokens, "weight_bytes": weight_bytes,
               "live_bytes": max(audio_tower.live_bytes(cfg, frames), text_layers.live_bytes(text_cfg, tokens)),
               "stage_args": stage_args, "seed": SEED}
    (a.out / "scale.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
