//! docs/your-model.md, section 5 ("Token specs"), walked as written on
//! examples/llama: the doc's `parity points` command, its recorder call
//! (run with PARITY_TENSOR_PYTHON, tools/fixtures/.venv/bin/python, into a
//! temporary store that must equal the committed oracle byte for byte), its
//! token spec (the YAML block, run as it stands), and every row of its fault
//! table (spec, step, layer, and the step chain's trust check). The snippets
//! are read out of the doc, so a doc edit that breaks them fails here.

mod common;

use common::{parity, repo};
use parity_tensor::OracleStore;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Section 5 of docs/your-model.md.
fn section() -> String {
    let doc = std::fs::read_to_string(repo().join("docs/your-model.md")).unwrap();
    let start = doc
        .find("## 5. Token specs")
        .expect("docs/your-model.md has a section 5 on token specs");
    let rest = &doc[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    rest[..end].to_string()
}

/// The section's first fenced block in `lang`.
fn block(section: &str, lang: &str) -> String {
    let open = format!("```{lang}\n");
    let start = section
        .find(&open)
        .unwrap_or_else(|| panic!("no {lang} block"))
        + open.len();
    let len = section[start..].find("```").unwrap();
    section[start..start + len].to_string()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn llama() -> std::path::PathBuf {
    repo().join("examples/llama")
}

/// `parity tokens SPEC` in examples/llama; (exit code, stdout, record).
fn tokens(spec: &Path) -> (i32, String, Value) {
    let out = tempfile::tempdir().unwrap();
    let o = parity(
        &llama(),
        &[
            "tokens",
            spec.to_str().unwrap(),
            "--out-dir",
            out.path().to_str().unwrap(),
        ],
    );
    let record = std::fs::read_to_string(out.path().join("tokens.json")).expect("tokens.json");
    (
        o.status.code().unwrap_or(-1),
        text(&o),
        serde_json::from_str(&record).unwrap(),
    )
}

#[test]
fn the_guides_points_command_lists_the_names_and_the_layer_cuts() {
    let command = "parity points decode.mlir --function main --cuts";
    assert!(section().contains(&format!("`{command}`")));
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let o = parity(&llama(), &args);
    let listing = text(&o);
    assert!(o.status.success(), "{listing}");
    for needle in [
        "%arg0: tensor<1x1xi32> \"token\"",
        "%arg1: tensor<i32> \"pos\"",
        "%arg2: tensor<2x2x24x8xf32> \"k_cache\"",
        "%arg3: tensor<2x2x24x8xf32> \"v_cache\"",
        "\"params['model.embed_tokens.weight']\"",
        "from: [embed], to: [layer_0]",
        "from: [layer_0], to: [layer_1]",
        "from: [layer_1], to: [head]",
    ] {
        assert!(listing.contains(needle), "{needle} not in:\n{listing}");
    }
}

/// The doc's Python, its prompt alpha's (measured.json), with the store
/// written to a temporary directory: mlx-lm regenerates alpha's part
/// of the committed oracle byte for byte, and `parity oracle index` reads
/// the store as it is.
#[test]
fn the_guides_recorder_call_reproduces_the_committed_oracle() {
    let python = std::env::var_os("PARITY_TENSOR_PYTHON").expect(
        "PARITY_TENSOR_PYTHON must name a Python with mlx-lm and numpy \
         (tools/fixtures/.venv/bin/python; ci/test.sh exports it)",
    );
    let snippet = block(&section(), "python");
    assert!(
        snippet.contains("rec.save(\"examples/llama/oracle\")"),
        "{snippet}"
    );
    let measured: Value =
        serde_json::from_slice(&std::fs::read(llama().join("measured.json")).unwrap()).unwrap();
    let prompt: Vec<String> = measured["cases"]["alpha"]["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    let line = format!("prompt = [{}]", prompt.join(", "));
    assert!(snippet.contains(&line), "{line} not in:\n{snippet}");
    let store = tempfile::tempdir().unwrap();
    let script = snippet.replace(
        "\"examples/llama/oracle\"",
        &format!("{:?}", store.path().display().to_string()),
    );
    let run = Command::new(&python)
        .arg("-c")
        .arg(&script)
        .current_dir(repo())
        .env("PYTHONPATH", repo().join("python/parity_mlx_recorder/src"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run PARITY_TENSOR_PYTHON={python:?}: {e}"));
    assert!(run.status.success(), "{}", text(&run));

    let recorded = OracleStore::open(store.path()).unwrap();
    let committed = OracleStore::open(llama().join("oracle")).unwrap();
    let mut names: Vec<&String> = recorded.names().iter().collect();
    names.sort();
    let mut want: Vec<&String> = committed
        .names()
        .iter()
        .filter(|n| n.starts_with("alpha/") || n.starts_with("alpha."))
        .collect();
    want.sort();
    assert_eq!(names, want);
    // 12 steps of token, pos, embed, two layers in and out, logits, and the
    // decode steps' two caches; prompt, tokens and logits of the case.
    assert_eq!(names.len(), 12 * 8 + 11 * 2 + 3);
    for name in names {
        let (a, b) = (recorded.get(name).unwrap(), committed.get(name).unwrap());
        assert_eq!(
            (a.dtype(), a.shape(), a.to_f64_vec()),
            (b.dtype(), b.shape(), b.to_f64_vec()),
            "{name}"
        );
    }

    let manifest = store.path().join("reindexed.json");
    let index = parity(
        store.path(),
        &[
            "oracle",
            "index",
            store.path().to_str().unwrap(),
            "--out",
            manifest.to_str().unwrap(),
        ],
    );
    assert!(index.status.success(), "{}", text(&index));
    let reindexed: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let mut reindexed: Vec<String> = reindexed["tensors"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    reindexed.sort();
    let mut original: Vec<String> = recorded.names().to_vec();
    original.sort();
    assert_eq!(reindexed, original);
}

/// examples/llama/stages.yaml's header (modules, weights, oracle) with
/// absolute paths, and `tokens` as given.
fn spec_with(tokens: &str, decode_mlir: &str) -> String {
    let spec = std::fs::read_to_string(llama().join("stages.yaml")).unwrap();
    let head = &spec[..spec.find("\ntokens:").unwrap() + 1];
    let abs = |p: &str| llama().join(p).display().to_string();
    head.replace(
        "{mlir: prefill.mlir}",
        &format!("{{mlir: {}}}", abs("prefill.mlir")),
    )
    .replace(
        "{mlir: decode.mlir}",
        &format!("{{mlir: {}}}", abs(decode_mlir)),
    )
    .replace("[../mlx-lm/", &format!("[{}/", abs("../mlx-lm")))
    .replace("oracle: oracle", &format!("oracle: {}", abs("oracle")))
        + tokens
}

/// The doc's `tokens:` block as written: the clean modules match mlx-lm on
/// every token of the three cases, within the tolerance it sets.
#[test]
fn the_guides_token_spec_passes_on_the_clean_modules() {
    let yaml = block(&section(), "yaml");
    assert!(yaml.starts_with("tokens:\n"), "{yaml}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guide.yaml");
    std::fs::write(&path, spec_with(&yaml, "decode.mlir")).unwrap();
    let (code, stdout, r) = tokens(&path);
    assert_eq!(code, 0, "{stdout}");
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for c in cases {
        assert_eq!(c["status"], "pass", "{}", c["case"]);
        assert_eq!(c["greedy_tokens"], c["oracle_tokens"]);
        assert_eq!(c["teacher_forced_tokens"], c["oracle_tokens"]);
        assert_eq!(c["oracle_tokens"].as_array().unwrap().len(), 12);
        let d = c["summary"]["max_abs_delta_logit"].as_f64().unwrap();
        assert!(d > 0.0 && d < 2.4e-5, "{}: {d}", c["case"]);
        assert_eq!(c["reference_noise"]["source"], "spec");
    }
}

/// One row of the doc's fault table: the spec, the case and step it names,
/// and the layer it says the step is localised to.
struct Row {
    spec: String,
    case: String,
    step: u64,
    layer: String,
}

fn table(section: &str) -> Vec<Row> {
    let tick = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    section
        .lines()
        .filter(|l| l.starts_with("| `stages-"))
        .map(|l| {
            let cells: Vec<&str> = l.split(" | ").collect();
            let result = cells[2];
            let step = result
                .split("step ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("no step in {result}"));
            let after = result.split("localised to ").nth(1).expect("localised to");
            Row {
                spec: tick(cells[0])[0].clone(),
                case: tick(result)[0].clone(),
                step,
                layer: tick(after)[0].clone(),
            }
        })
        .collect()
}

/// Every row of the fault table holds: exit 1, the first finding at the
/// row's case and step, in its layer, with a step chain that reproduces the
/// call bit for bit (so the localisation is trusted, as the doc says).
#[test]
fn the_guides_fault_table_holds_row_by_row() {
    let rows = table(&section());
    let specs: Vec<&str> = rows.iter().map(|r| r.spec.as_str()).collect();
    assert_eq!(
        specs,
        [
            "stages-decode-scale.yaml",
            "stages-decode-eps.yaml",
            "stages-prefill-scale.yaml"
        ]
    );
    for row in rows {
        let (code, stdout, r) = tokens(&llama().join(&row.spec));
        assert_eq!(code, 1, "{}: {stdout}", row.spec);
        let f = &r["findings"][0];
        assert_eq!(
            (
                f["case"].as_str().unwrap(),
                f["step"].as_u64().unwrap(),
                f["first_divergent_layer"]["stage"].as_str()
            ),
            (row.case.as_str(), row.step, Some(row.layer.as_str())),
            "{}",
            row.spec
        );
        assert_eq!(f["chain_check"]["bit_identical"], true, "{}", row.spec);
    }
}
