#!/usr/bin/env python3
"""Build examples/tokens: a two-layer toy language model for `parity tokens`.

Run with the pinned fixture environment (tools/fixtures/requirements.txt):

    tools/fixtures/.venv/bin/python examples/tokens/make_fixture.py

Writes, next to this script:
  model.mlir, model_fault.mlir  production (toy_lm.py: JAX -> StableHLO, weights as arguments);
                                the fault: layer 1 ignores its sliding window
  model_scale.mlir              the decode-only fault: layer 1's attention scale is 1.25 / sqrt(D)
                                in decode (prefill is clean)
  model_prefill.mlir            the prefill-only fault: layer 0's attention scale is 1.5 / sqrt(D)
                                in prefill (decode is clean, but reads the prefill's caches)
  weights.safetensors           f32 weights, seeded
  oracle/<case>.npz             numpy f32 oracle: tokens, logits, per-step layer tensors
  oracle/<case>_f64.npz         numpy f64 truth, teacher-forced on the oracle's tokens
  oracle/manifest.json          parity.oracle-manifest/1 (step tensors as `<case>.sNN/<name>`)
  search.json                   what the prompt search found (the IREE runs it rests on)

The model: vocabulary 32, hidden 16, absolute position embeddings, two
pre-norm decoder layers (one head, KV cache of 24 rows; layer 0 full
attention, layer 1 a sliding window of 8 keys), a gelu MLP, a final RMS norm
and a head tied to the embedding. Tokens 30 and 31 have embedding rows one
f32 ULP apart (per element), so whenever they lead, their logits nearly tie:
that is where the near-tie case comes from. The prompts are chosen by search,
running the real IREE-compiled module (generic x86-64 CPU, as the specs pin):
`clean_a`/`clean_b` agree on every token with the clean module and, for
`clean_a`, the faulty module agrees on >= 8 tokens and then diverges;
`near_tie` flips at a step whose two logits are within the measured noise.
The two scale faults (toy_lm.FAULTS) are checked on `clean_a`, with the
factors chosen so that the checks hold: the decode-only one agrees on the
first tokens and flips later (each flip one that parity's old near-tie rule,
with the noise measured on the run under test, called a near tie); the
prefill-only one moves the logits of every step without flipping a token.
Everything is byte-reproducible: fixed seeds, sorted npz/safetensors writes
with fixed zip timestamps, and a deterministic search order.
"""

import hashlib
import io
import json
import os
import sys
import zipfile
from pathlib import Path


def _pin_cpu():
    """CPU dispatch pinned before numpy and JAX load (tools/fixtures/pin_cpu.env says why)."""
    env = Path(__file__).resolve().parents[2] / "tools" / "fixtures" / "pin_cpu.env"
    for line in env.read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            os.environ.setdefault(key, value)


_pin_cpu()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from safetensors.numpy import save as st_save  # noqa: E402

from toy_lm import (CTX, D, F, LAYERS, N, P, SEED, V, WEIGHTS, WINDOW, as_dict, embed,  # noqa: E402
                    head, layer, lower, weight_names)

HERE = Path(__file__).resolve().parent
ORACLE = HERE / "oracle"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

PARITY_FLAGS = ["--iree-input-type=stablehlo", "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                "--iree-llvmcpu-target-cpu=generic"]


class Iree:
    """The module compiled as parity compiles it (same IREE, same flags), to search prompts."""

    def __init__(self, text):
        import iree.compiler as ic
        import iree.runtime as rt
        vmfb = ic.compile_str(text, extra_args=PARITY_FLAGS)
        self.ctx = rt.SystemContext(config=rt.Config("local-task"))
        self.ctx.add_vm_module(rt.VmModule.copy_buffer(self.ctx.instance, vmfb))
        self.ws = [WEIGHTS[n] for n in weight_names()]

    def call(self, name, *args):
        out = self.ctx.modules.toy_lm[name](*args, *self.ws)
        return [np.asarray(o) for o in out]

    def run(self, prompt, forced=None):
        """Greedy (or teacher-forced on `forced`) tokens and logits per step."""
        logits, kc, vc = self.call("prefill_p4", np.asarray([prompt], np.int32))
        toks, rows = [], []
        for s in range(N):
            if s > 0:
                t = forced[s - 1] if forced is not None else toks[-1]
                logits, kc, vc = self.call("decode", np.asarray([[t]], np.int32),
                                           np.int32(P + s - 1), kc, vc)
            rows.append(logits[0].astype(np.float64))
            toks.append(int(np.argmax(logits[0])))
        return toks, rows


# ---- the oracle (numpy f32) and the truth (numpy f64), with every step's tensors

def reference(prompt, dtype, forced=None):
    """Greedy run (or teacher-forced on `forced`) in numpy at `dtype`:
    (tokens, per-step dict of tensors, final caches)."""
    w = {k: v.astype(dtype) for k, v in WEIGHTS.items()}
    glob = {k: w[k] for k in ("emb", "pos_emb", "final_norm")}
    lw = [as_dict(weight_names(i), [w[n] for n in weight_names(i)]) for i in range(LAYERS)]
    kc = np.zeros((LAYERS, CTX, D), dtype)
    vc = np.zeros((LAYERS, CTX, D), dtype)
    toks, steps = [], []
    for s in range(N):
        inp = np.asarray([prompt], np.int32) if s == 0 else np.asarray(
            [[(forced if forced is not None else toks)[s - 1]]], np.int32)
        pos = 0 if s == 0 else P + s - 1
        t = {"pos": np.asarray(pos, np.int32)}
        if s > 0:
            t["token"] = inp
        h = embed(np, inp, pos, glob)
        t["hidden_in"] = h.copy()
        for i in range(LAYERS):
            def tap(n, x):
                t[n] = np.array(x, copy=True)
                return x
            h, kc, vc = layer(np, h, pos, kc, vc, lw[i], i, tap=tap)
            t[f"layer_{i}_output"] = h.copy()
        logits = head(np, h, glob)
        t["logits"] = logits.copy()
        toks.append(int(np.argmax(logits[0])))
        steps.append(t)
    return toks, steps, kc, vc


def noise_verdict(prod_rows, oracle_rows, oracle_toks):
    """First mismatch and parity's verdict there (docs/tokens.md): near_tie when
    margin_p + margin_o <= 2 * max |dlogit| over the agreeing steps before it."""
    for s, (p, o) in enumerate(zip(prod_rows, oracle_rows)):
        a, b = int(np.argmax(p)), oracle_toks[s]
        if a != b:
            noise = max([float(np.abs(prod_rows[t] - oracle_rows[t]).max()) for t in range(s)], default=0.0)
            need = (p[a] - p[b]) + (o[b] - o[a])
            return s, ("near_tie" if o[b] == o[a] or need <= 2 * noise else "divergent"), need, noise
    return None, None, 0.0, 0.0


def write_npz(path, arrays):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            buf = io.BytesIO()
            # not ascontiguousarray: it turns a 0-d array into shape (1,)
            np.lib.format.write_array(buf, np.asarray(arrays[name], order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def case_arrays(prompt):
    """The oracle's arrays of one case (f32), the truth's (f64), and manifest entries."""
    toks, steps, kc, vc = reference(prompt, np.float32)
    _, tsteps, _, _ = reference(prompt, np.float64, forced=toks)
    arrays = {"prompt": np.asarray([prompt], np.int32), "tokens": np.asarray(toks, np.int32),
              "logits": np.concatenate([t["logits"] for t in steps]).astype(np.float32),
              "k_all": kc, "v_all": vc}
    truth = {"logits": np.concatenate([t["logits"] for t in tsteps])}
    for s, (t, tt) in enumerate(zip(steps, tsteps)):
        for k, v in t.items():
            arrays[f"s{s:02d}_{k}"] = v
        for k, v in tt.items():
            if k.startswith("layer_") or k == "logits":
                truth[f"s{s:02d}_{k}"] = v
    return toks, arrays, truth


DTYPES = {"float32": "f32", "float64": "f64", "int32": "i32"}


def manifest_entries(case, fname, arrays, suffix=""):
    out = {}
    for key, a in sorted(arrays.items()):
        name = f"{case}.{key[:3]}/{key[4:]}" if key[0] == "s" and key[1:3].isdigit() else f"{case}/{key}"
        out[name + suffix] = {"file": fname, "key": key, "dtype": DTYPES[str(a.dtype)], "shape": list(a.shape)}
        if not suffix and key in ("k_all", "v_all"):
            for s in range(N):  # every step case sees the case's whole-run caches
                out[f"{case}.s{s:02d}/{key}"] = out[name]
    return out


def search(clean, faulty):
    """Deterministic search over prompts of length P (tokens 0..29)."""
    rng = np.random.default_rng(SEED + 1)
    found, tried = {}, 0
    while len(found) < 3 and tried < 4000:
        tried += 1
        prompt = [int(x) for x in rng.integers(0, 30, P)]
        otoks, steps, _, _ = reference(prompt, np.float32)
        orows = [t["logits"][0].astype(np.float64) for t in steps]
        ptoks, prows = clean.run(prompt)
        s, verdict, need, noise = noise_verdict(prows, orows, otoks)
        if s is None and len(set(otoks)) >= 4:
            if "clean_a" not in found:
                ftoks, frows = faulty.run(prompt)
                fs, fverdict, _, _ = noise_verdict(frows, orows, otoks)
                if fs is not None and fs >= 8 and fverdict == "divergent":
                    found["clean_a"] = {"prompt": prompt, "fault_step": fs, "tried": tried}
                    continue
            elif "clean_b" not in found:
                found["clean_b"] = {"prompt": prompt, "tried": tried}
        elif s is not None and s >= 2 and verdict == "near_tie" and "near_tie" not in found:
            found["near_tie"] = {"prompt": prompt, "step": s, "needed_move": need,
                                 "noise": noise, "tried": tried}
    missing = {"clean_a", "clean_b", "near_tie"} - set(found)
    if missing:
        sys.exit(f"search: no prompt found for {sorted(missing)} in {tried} tries")
    return found


def spec_text(module, cases, exact, header):
    """A stages spec with a `tokens:` section (docs/stages-schema.md, "tokens")."""
    w = lambda names, ind: "".join(f"{ind}- {{weight: {n}}}\n" for n in names)
    layers = ""
    for i in range(LAYERS):
        h = "{stage: embed}" if i == 0 else f"{{stage: layer_{i - 1}.hidden}}"
        kv = ("{oracle: \"{case}/k_all\"}", "{oracle: \"{case}/v_all\"}") if i == 0 else (
            f"{{stage: layer_{i - 1}.k_cache}}", f"{{stage: layer_{i - 1}.v_cache}}")
        layers += f"""      - name: layer_{i}
        module: lm
        function: decode_layer_{i}
        args:
          - {h}
          - {{oracle: "{{case}}/pos"}}
          - {kv[0]}
          - {kv[1]}
{w(weight_names(i), "          ")}        outputs:
          - {{name: hidden, oracle: "{{case}}/layer_{i}_output", truth: "{{case}}/layer_{i}_output@f64",
             tolerance: [{{max_abs: 1.0e-4}}]}}
          - {{name: k_cache, oracle: "{{case}}/k_all", tolerance: [{{max_abs: 1.0e-4}}]}}
          - {{name: v_cache, oracle: "{{case}}/v_all", tolerance: [{{max_abs: 1.0e-4}}]}}
"""
    cases_text = "".join(f"    - {{name: {c}}}\n" for c in cases)
    return f"""{header}version: 1
subject:
  modules:
    lm: {{mlir: {module}}}
  target_backend: llvm-cpu
  driver: local-task
  flags: ["--iree-input-type=stablehlo", "--iree-llvmcpu-target-cpu=generic"]
weights: [weights.safetensors]
oracle: oracle
tokens:
  module: lm
  max_new_tokens: {N}
  prompt_length: "{P}"
  cases:
{cases_text}  prefill:
    function: prefill_p4
    args:
      - {{oracle: "{{case}}/prompt"}}
{w(weight_names(), "      ")}    outputs: [logits, k_cache, v_cache]
  decode:
    function: decode
    args:
      - {{token: {{dtype: i32, shape: [1, 1]}}}}
      - {{position: {{dtype: i32, shape: []}}}}
      - {{state: k_cache}}
      - {{state: v_cache}}
{w(weight_names(), "      ")}    outputs: [logits, k_cache, v_cache]
  logits: logits
  oracle:
    tokens: "{{case}}/tokens"
    logits: "{{case}}/logits"
    truth_logits: "{{case}}/logits@f64"
  verdict: {{exact_tokens: {"true" if exact else "false"}, top_k: 5}}
  step_stages:
    decode:
      - name: embed
        module: lm
        function: decode_embed
        args:
          - {{oracle: "{{case}}/token"}}
          - {{oracle: "{{case}}/pos"}}
          - {{weight: emb}}
          - {{weight: pos_emb}}
        outputs:
          - {{name: hidden, oracle: "{{case}}/hidden_in", tolerance: [{{max_abs: 1.0e-5}}]}}
{layers}      - name: head
        module: lm
        function: head
        args:
          - {{stage: layer_{LAYERS - 1}.hidden}}
          - {{weight: final_norm}}
          - {{weight: emb}}
        outputs:
          - {{name: logits, oracle: "{{case}}/logits", truth: "{{case}}/logits@f64", tolerance: [{{max_abs: 1.0e-4}}]}}
"""


SPECS = {
    "stages.yaml": ("model.mlir", ["clean_a", "clean_b", "near_tie"], False,
                    "# examples/tokens: the clean toy LM. Expected: clean_a and clean_b match the oracle\n"
                    "# token for token; near_tie flips at step 2 within the noise (near_tie, exit 0).\n"),
    "stages-fault.yaml": ("model_fault.mlir", ["clean_a"], False,
                          "# examples/tokens: layer 1 ignores its sliding window (model_fault.mlir).\n"
                          "# Expected: clean_a agrees for 10 tokens, then a divergent token localised to layer_1.\n"),
    "stages-exact.yaml": ("model.mlir", ["near_tie"], True,
                          "# examples/tokens: the near tie under exact_tokens: true. Expected: exit 1.\n"),
    "stages-scale.yaml": ("model_scale.mlir", ["clean_a", "clean_b"], False,
                          "# examples/tokens: layer 1's decode attention scale is 1.25 / sqrt(D) (model_scale.mlir).\n"
                          "# Expected: clean_a agrees for 3 tokens, then a divergent token localised to layer_1;\n"
                          "# clean_b flips no token but its logits fail the gate; exit 1.\n"),
    "stages-prefill.yaml": ("model_prefill.mlir", ["clean_a"], False,
                            "# examples/tokens: layer 0's prefill attention scale is 1.5 / sqrt(D) (model_prefill.mlir).\n"
                            "# Expected: no token flips, every step's logits fail the gate; exit 1.\n"),
}


def check_faults(found, modules):
    """The scale faults on `clean_a`, teacher-forced: what the docstring promises."""
    prompt = found["clean_a"]["prompt"]
    otoks, steps, _, _ = reference(prompt, np.float32)
    orows = [t["logits"][0].astype(np.float64) for t in steps]
    facts = {}
    for name, module in modules.items():
        ftoks, frows = module.run(prompt, forced=otoks)
        flips = [s for s in range(N) if ftoks[s] != otoks[s]]
        moved = max(float(np.abs(p - o).max()) for p, o in zip(frows, orows))
        old = [old_rule(frows, orows, otoks, s) for s in flips]
        facts[name] = {"flips": flips, "max_abs_dlogit": moved, "old_rule": old}
    scale, prefill = facts["scale"], facts["prefill"]
    if not (scale["flips"] and scale["flips"][0] >= 3 and all(v == "near_tie" for v in scale["old_rule"])):
        sys.exit(f"check_faults: the decode scale fault does not flip late near ties only: {scale}")
    if prefill["flips"] or prefill["max_abs_dlogit"] < 0.1:
        sys.exit(f"check_faults: the prefill fault flips a token or moves no logit: {prefill}")
    return facts


def old_rule(rows, orows, otoks, s):
    """parity's verdict before the reference noise: the noise was max |dlogit| over the
    teacher-forced steps before s whose tokens agree, i.e. measured on the run it judged."""
    a, b = int(np.argmax(rows[s])), otoks[s]
    agree = [t for t in range(s) if int(np.argmax(rows[t])) == otoks[t]]
    noise = max([float(np.abs(rows[t] - orows[t]).max()) for t in agree], default=0.0)
    need = (rows[s][a] - rows[s][b]) + (orows[s][b] - orows[s][a])
    return "near_tie" if orows[s][b] == orows[s][a] or need <= 2 * noise else "divergent"


def write_specs():
    for name, (module, cases, exact, header) in SPECS.items():
        header = "# Generated by examples/tokens/make_fixture.py. Do not edit.\n" + header
        (HERE / name).write_text(spec_text(module, cases, exact, header))


def main():
    ORACLE.mkdir(exist_ok=True)
    write_specs()
    if sys.argv[1:] == ["--specs"]:
        return
    texts = {f: lower(f) for f in (None, "window", "scale", "prefill")}
    (HERE / "model.mlir").write_text(texts[None])
    (HERE / "model_fault.mlir").write_text(texts["window"])
    (HERE / "model_scale.mlir").write_text(texts["scale"])
    (HERE / "model_prefill.mlir").write_text(texts["prefill"])
    (HERE / "weights.safetensors").write_bytes(st_save(dict(sorted(WEIGHTS.items()))))
    found = search(Iree(texts[None]), Iree(texts["window"]))
    found["clean_a"]["faults"] = check_faults(found, {f: Iree(texts[f]) for f in ("scale", "prefill")})
    tensors = {}
    for case in sorted(found):
        toks, arrays, truth = case_arrays(found[case]["prompt"])
        found[case]["oracle_tokens"] = toks
        write_npz(ORACLE / f"{case}.npz", arrays)
        write_npz(ORACLE / f"{case}_f64.npz", truth)
        tensors.update(manifest_entries(case, f"{case}.npz", arrays))
        tensors.update(manifest_entries(case, f"{case}_f64.npz", truth, "@f64"))
    script = Path(__file__).read_bytes() + (HERE / "toy_lm.py").read_bytes()
    manifest = {"schema": "parity.oracle-manifest/1",
                "provenance": {"producer": "examples/tokens/make_fixture.py: numpy f32 oracle, numpy f64 truth",
                               "versions": {"numpy": np.__version__, "jax": jax.__version__},
                               "config": {"vocab": V, "hidden": D, "ffn": F, "layers": LAYERS, "ctx": CTX,
                                          "window": list(WINDOW), "prompt_length": P, "new_tokens": N,
                                          "scripts_sha256": hashlib.sha256(script).hexdigest()},
                               "seeds": {"weights": SEED, "search": SEED + 1},
                               "cases": {c: {"prompt": found[c]["prompt"]} for c in sorted(found)}},
                "tensors": dict(sorted(tensors.items()))}
    (ORACLE / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (HERE / "search.json").write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    print(json.dumps(found, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
