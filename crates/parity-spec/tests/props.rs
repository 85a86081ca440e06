//! Property tests: no input makes the parser panic, and topo order is a valid
//! dependency order for arbitrary DAGs.

mod common;

use common::{Fixture, HEADER};
use proptest::prelude::*;

/// A valid spec to mutate; it exercises most of the schema.
const BASE: &str = r#"version: 1
subject:
  modules:
    audio: {mlir: subject/audio.mlir, flags: ["-O2"]}
  flags: ["--iree-input-type=stablehlo"]
oracle: dumps
cases:
  - {name: c1, vars: {bucket: 128}}
tolerances:
  f32: &t [{max_ulp: 64}, {allclose: {atol: 1e-5, rtol: 0}}]
stages:
  - name: a
    module: audio
    function: "f_b{bucket}"
    args:
      - {oracle: "{case}/mel"}
      - {literal: {dtype: i32, shape: [2], values: [1, 2]}}
    outputs:
      - name: o
        oracle: "{case}/o"
        mask: {arg: 0, axes: [0, 1], padded: true}
        tolerance: *t
  - name: b
    module: audio
    function: g
    args: [{stage: a.o}, {weight: w}]
    outputs: [{name: p, oracle: "{case}/p", truth: "{case}/p@f64", ulp_dtype: bf16}]
"#;

/// Fragments that are likely to hit interesting parser and schema paths.
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ": ",
    "- ",
    "\n",
    "  ",
    "&x ",
    "*x",
    "*t",
    "!!str ",
    "'",
    "\"",
    "#",
    "|\n",
    ">\n",
    "---\n",
    "...\n",
    "~",
    "null",
    "-1",
    "1e999",
    ".nan",
    "{case}",
    "{{",
    "}}",
    "{stage: b.p}",
    "stage: a",
    "version: 2",
    "\t",
    "\u{feff}",
    "é",
    "\0",
    "? ",
    ",",
];

fn mutate(base: &str, edits: &[(usize, usize, usize)]) -> String {
    let mut text: Vec<char> = base.chars().collect();
    for &(kind, pos, arg) in edits {
        let pos = pos % (text.len() + 1);
        match kind % 3 {
            0 => {
                let end = (pos + arg % 12).min(text.len());
                text.drain(pos..end);
            }
            1 => {
                let frag = FRAGMENTS[arg % FRAGMENTS.len()];
                for (i, c) in frag.chars().enumerate() {
                    text.insert(pos + i, c);
                }
            }
            _ => {
                if pos < text.len() {
                    text[pos] = char::from_u32(32 + (arg % 95) as u32).unwrap_or(' ');
                }
            }
        }
    }
    text.into_iter().collect()
}

#[test]
fn base_spec_is_valid() {
    let fx = Fixture::new();
    let spec = fx.parse(BASE).unwrap();
    assert_eq!(spec.stages.len(), 2);
    assert_eq!(spec.topo_order(), vec![0, 1]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        let fx = Fixture::new();
        let _ = fx.parse(&text);
    }

    #[test]
    fn yaml_token_soup_never_panics(parts in prop::collection::vec(0..FRAGMENTS.len(), 0..80)) {
        let fx = Fixture::new();
        let text: String = parts.into_iter().map(|i| FRAGMENTS[i]).collect();
        let _ = fx.parse(&text);
    }

    #[test]
    fn mutated_valid_spec_never_panics(edits in prop::collection::vec((0usize..3, 0usize..2000, 0usize..1000), 1..6)) {
        let fx = Fixture::new();
        let text = mutate(BASE, &edits);
        match fx.parse(&text) {
            Ok(spec) => {
                // Whatever survived must still be internally consistent.
                prop_assert!(!spec.stages.is_empty());
                let mut order = spec.topo_order();
                order.sort_unstable();
                prop_assert_eq!(order, (0..spec.stages.len()).collect::<Vec<_>>());
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("stages.yaml"), "error without file: {}", msg);
            }
        }
    }

    #[test]
    fn topo_order_respects_dependencies(
        n in 1usize..12,
        edges in prop::collection::vec((0usize..12, 0usize..12), 0..30),
        perm_seed in any::<u64>(),
    ) {
        // Stage `s{i}` may depend on `s{j}` only for j < i, so the graph is a DAG;
        // the stages are then written in a shuffled file order.
        let mut deps: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (a, b) in edges {
            let (i, j) = (a % n, b % n);
            if j < i && !deps[i].contains(&j) {
                deps[i].push(j);
            }
        }
        let mut file_order: Vec<usize> = (0..n).collect();
        let mut seed = perm_seed;
        for k in (1..n).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            file_order.swap(k, (seed >> 33) as usize % (k + 1));
        }
        let mut text = format!("{HEADER}stages:\n");
        for &i in &file_order {
            let args: Vec<String> = deps[i].iter().map(|j| format!("{{stage: s{j}}}")).collect();
            text.push_str(&format!(
                "  - {{name: s{i}, module: audio, function: f, args: [{}], outputs: [{{name: o, oracle: x}}]}}\n",
                args.join(", ")
            ));
        }
        let fx = Fixture::new();
        let spec = fx.parse(&text).unwrap();
        let order = spec.topo_order();
        let mut seen = vec![false; n];
        for &idx in &order {
            let stage = &spec.stages[idx];
            for dep in stage.dependencies() {
                let d = spec.stages.iter().position(|s| s.name == dep).unwrap();
                prop_assert!(seen[d], "{} ran before its dependency {}", stage.name, dep);
            }
            prop_assert!(!seen[idx], "stage {} twice", idx);
            seen[idx] = true;
        }
        prop_assert!(seen.iter().all(|&s| s));
    }
}
