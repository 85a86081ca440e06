//! The module map keeps data flowing one way (docs: STYLE.md, "Shape of this
//! project"): inside each crate no two modules import each other, directly
//! or round a circle, and `bisect` takes nothing from `fuzz`. Reads the
//! sources as text, so it checks the tree as committed; a circle fails with
//! the modules on it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The code of `file` that is not a unit-test module or a whole-line
/// comment: tests may import freely, and a doc link is no dependency.
fn code(file: &Path) -> String {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` names module `module` as `crate::module` or
/// `super::module`, alone or in a `crate::{...}` group.
fn names(code: &str, module: &str) -> bool {
    let word_end = |rest: &str| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    ["crate::", "super::"].iter().any(|prefix| {
        code.match_indices(prefix).any(|(i, _)| {
            let rest = &code[i + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                group.split(',').any(|item| {
                    let item = item.trim();
                    item.strip_prefix(module).is_some_and(word_end)
                })
            } else {
                rest.strip_prefix(module).is_some_and(word_end)
            }
        })
    })
}

/// Module -> the modules it names, for the top-level files of `src`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for entry in fs::read_dir(src).unwrap_or_else(|e| panic!("{}: {e}", src.display())) {
        let path = entry.expect("directory entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if path.extension().is_some_and(|e| e == "rs") && !["lib", "main"].contains(&name) {
            files.insert(name.to_string(), code(&path));
        }
    }
    files
        .iter()
        .map(|(m, text)| {
            let deps = files
                .keys()
                .filter(|d| *d != m && names(text, d))
                .cloned()
                .collect();
            (m.clone(), deps)
        })
        .collect()
}

/// The modules of `g` that can reach themselves through another module, as
/// the strongly connected components of more than one module.
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for d in &g[&m] {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for m in g.keys() {
        let scc: BTreeSet<String> = reached[m]
            .iter()
            .filter(|d| reached[*d].contains(m))
            .cloned()
            .collect();
        if scc.len() > 1 && !out.contains(&scc) {
            out.push(scc);
        }
    }
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut found = Vec::new();
    for entry in fs::read_dir(root().join("crates")).expect("crates/") {
        let src = entry.expect("directory entry").path().join("src");
        if src.is_dir() {
            for c in circles(&graph(&src)) {
                found.push(format!("{}: {c:?}", src.display()));
            }
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn bisect_takes_nothing_from_fuzz() {
    let mut todo = vec![root().join("src/bisect")];
    let mut offenders = Vec::new();
    while let Some(dir) = todo.pop() {
        for entry in fs::read_dir(&dir).expect("src/bisect") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && names(&code(&path), "fuzz") {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "bisect imports from fuzz: {offenders:?}"
    );
}

#[test]
fn the_checker_sees_circles_and_grouped_imports() {
    assert!(names("use crate::{plan, run::RunRecord};", "run"));
    assert!(names("x: crate::shard::ShardRecord", "shard"));
    assert!(!names("use crate::shard_record::X;", "shard"));
    assert!(!names("use crate::{plan_stage};", "plan"));
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(m, ds)| (m.to_string(), ds.into_iter().map(String::from).collect()))
    .collect();
    let abc: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    assert_eq!(circles(&g), vec![abc]);
}
