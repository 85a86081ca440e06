//! Reading `subject.targets:`: each target's backend, device, flags and its
//! own prebuilt modules.

use crate::arg_parse::location;
use crate::error::SpecError;
use crate::model::{Module, ModuleSource, Stage, Subject, TargetSpec, TargetTolerance};
use crate::reader::Cx;
use crate::yaml::Node;
use std::collections::BTreeMap;
use std::path::Path;

const TARGET_KEYS: &[&str] = &["backend", "device", "flags", "modules", "tolerances"];

/// `subject.targets:`, a mapping of target name -> `{backend, device, flags,
/// modules}`. `modules` names subject modules, so `subject.modules` is read
/// first and passed in.
pub(crate) fn parse_targets(
    cx: &Cx<'_>,
    node: &Node,
    subject_modules: &BTreeMap<String, Module>,
    base: &Path,
) -> Result<Vec<TargetSpec>, SpecError> {
    let map = cx.free_map(node, "targets", "subject.targets")?;
    let mut targets = Vec::new();
    for (key, value) in map.entries() {
        let name = cx.name(key, "target name")?;
        if name.contains(',') || name.chars().any(char::is_whitespace) {
            return Err(cx.invalid(
                key,
                format!("target name `{name}` may not hold a comma or a space (`--target a,b` lists names)"),
            ));
        }
        let t = cx.map(value, "target", "a target", TARGET_KEYS)?;
        let flags = match t.opt("flags") {
            Some(f) => {
                let flags = cx.strings(f, "flags")?;
                resolve_substitutions(flags, base)
                    .map_err(|m| cx.invalid(f, format!("target `{name}`: {m}")))?
            }
            None => Vec::new(),
        };
        let modules = match t.opt("modules") {
            Some(m) => parse_target_modules(cx, &name, m, subject_modules, base)?,
            None => BTreeMap::new(),
        };
        let tolerances = match t.opt("tolerances") {
            Some(node) => {
                let map = cx.free_map(node, "tolerances", "a target's tolerances")?;
                let mut tolerances = BTreeMap::new();
                for (key, value) in map.entries() {
                    let output = cx.name(key, "output name")?;
                    let criteria = crate::tolerance::tolerance(cx, value, "tolerance")?;
                    let location = location(key);
                    tolerances.insert(output, TargetTolerance { criteria, location });
                }
                tolerances
            }
            None => BTreeMap::new(),
        };
        targets.push(TargetSpec {
            backend: cx.name(t.req(cx, "backend")?, "backend")?,
            device: cx.name(t.req(cx, "device")?, "device")?,
            flags,
            modules,
            tolerances,
            location: location(value),
            name,
        });
    }
    if targets.is_empty() {
        return Err(cx.invalid(
            node,
            "`subject.targets` is empty; name at least one target".into(),
        ));
    }
    Ok(targets)
}

/// IREE's flag that splices a hand-edited `hal.executable` into a compile
/// (parity applies it between two phases of the pipeline, parity-iree's
/// `phased`).
const SUBSTITUTE_SOURCE_FLAG: &str = "--iree-hal-substitute-executable-source=";

/// A target's flags with every executable substitution's file resolved
/// against the spec's directory; a file that does not exist is an error
/// naming the executable and the path, before anything compiles.
fn resolve_substitutions(flags: Vec<String>, base: &Path) -> Result<Vec<String>, String> {
    flags
        .into_iter()
        .map(|flag| {
            let Some(value) = flag.strip_prefix(SUBSTITUTE_SOURCE_FLAG) else {
                return Ok(flag);
            };
            let pairs = value
                .split(',')
                .map(|pair| {
                    let Some((name, file)) = pair.split_once('=') else {
                        return Err(format!("`{flag}`: `{pair}` is not `EXECUTABLE=FILE.mlir`"));
                    };
                    let path = base.join(file);
                    if !path.is_file() {
                        return Err(format!(
                            "the substitution for executable `{name}`: file {} does not exist",
                            path.display()
                        ));
                    }
                    Ok(format!("{name}={}", path.display()))
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(format!("{SUBSTITUTE_SOURCE_FLAG}{}", pairs.join(",")))
        })
        .collect()
}

/// A target's `modules:`, subject module name -> path of a prebuilt vmfb
/// for this target. Only prebuilt modules are per target: an MLIR module is
/// compiled for every target from the one source, with the target's flags.
fn parse_target_modules(
    cx: &Cx<'_>,
    target: &str,
    node: &Node,
    subject_modules: &BTreeMap<String, Module>,
    base: &Path,
) -> Result<BTreeMap<String, Module>, SpecError> {
    let map = cx.free_map(node, "modules", "a target's modules")?;
    let mut modules = BTreeMap::new();
    for (key, value) in map.entries() {
        let name = cx.name(key, "module name")?;
        if !subject_modules.contains_key(&name) {
            let declared: Vec<&str> = subject_modules.keys().map(String::as_str).collect();
            return Err(cx.invalid(
                key,
                format!(
                    "target `{target}`: no module named `{name}` in `subject.modules` (declared: {}); a target's `modules` gives its own vmfb for a subject module",
                    declared.join(", ")
                ),
            ));
        }
        if value.scalar().is_none() {
            return Err(cx.wrong_type(value, "modules", "the path of a prebuilt .vmfb"));
        }
        let path = base.join(cx.name(value, "vmfb")?);
        if !path.is_file() {
            return Err(cx.invalid(
                value,
                format!(
                    "target `{target}`: module `{name}`: file {} does not exist",
                    path.display()
                ),
            ));
        }
        modules.insert(
            name,
            Module {
                source: ModuleSource::Vmfb(path),
                flags: Vec::new(),
                location: location(value),
            },
        );
    }
    Ok(modules)
}

/// Every output a target's `tolerances:` names must be an output of some
/// stage (a typo would otherwise loosen nothing, silently).
pub(crate) fn check_target_tolerances(
    cx: &Cx<'_>,
    subject: &Subject,
    stages: &[Stage],
) -> Result<(), SpecError> {
    for target in &subject.targets {
        for (output, tolerance) in &target.tolerances {
            if !stages
                .iter()
                .any(|s| s.outputs.iter().any(|o| &o.name == output))
            {
                return Err(SpecError::from(crate::error::SpecErrorKind::Invalid {
                    at: crate::error::Position {
                        file: cx.file.to_path_buf(),
                        line: tolerance.location.line,
                        col: tolerance.location.col,
                        alias: None,
                    },
                    scope: crate::error::Scope::Top,
                    message: format!(
                        "target `{}`: tolerances: no stage has an output named `{output}`",
                        target.name
                    ),
                }));
            }
        }
    }
    Ok(())
}
