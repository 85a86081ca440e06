//! Reading and validating a serving scenario file (model in `serving`).

use crate::arg_parse::location;
use crate::error::{Scope, SpecError, SpecErrorKind};
use crate::parse::base_dir;
use crate::reader::Cx;
use crate::serving::{
    Cancel, PrebuiltServing, Request, RequestInput, Scenario, ScenarioSource, SERVING_CONTEXT,
};
use crate::yaml::{parse_document, Node};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

const TOP_KEYS: &[&str] = &[
    "version",
    "spec",
    "module",
    "vmfb",
    "oracle",
    "tokenizer",
    "slots",
    "context",
    "max_steps",
    "requests",
];
const REQUEST_KEYS: &[&str] = &[
    "id",
    "case",
    "all_padded",
    "max_new_tokens",
    "arrive",
    "cancel_at",
    "cancel_after",
];
/// Default bound on engine steps.
const DEFAULT_MAX_STEPS: u64 = 512;
/// Most slots a scenario may ask for.
const MAX_SLOTS: usize = 16;

impl Scenario {
    /// Reads, parses and validates the scenario at `path`; relative paths in
    /// it resolve against its directory.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, SpecError> {
        let path = path.as_ref();
        let text = crate::read_text(path)?;
        Scenario::parse_str(&text, path)
    }

    /// Parses and validates scenario text; `path` names the file in messages
    /// and its directory is the base for `spec` and `module` (which must exist).
    pub fn parse_str(text: &str, path: impl AsRef<Path>) -> Result<Scenario, SpecError> {
        let path = path.as_ref();
        let root = parse_document(text, path)?;
        let cx = Cx {
            file: path,
            scope: Scope::Top,
        };
        let top = cx.map(&root, "scenario", "a serving scenario", TOP_KEYS)?;
        let version = top.req(&cx, "version")?;
        if version.as_i128() != Some(1) {
            return Err(SpecErrorKind::UnsupportedVersion {
                at: cx.at(version),
                found: version
                    .scalar()
                    .map_or_else(|| version.describe(), str::to_string),
            }
            .into());
        }
        let base = base_dir(path);
        let path_of =
            |node: &Node, key: &str, dir: bool| -> Result<std::path::PathBuf, SpecError> {
                let p = base.join(cx.name(node, key)?);
                let (ok, what) = if dir {
                    (p.is_dir(), "directory")
                } else {
                    (p.is_file(), "file")
                };
                if !ok {
                    return Err(cx.invalid(
                        node,
                        format!("`{key}`: {what} {} does not exist", p.display()),
                    ));
                }
                Ok(p)
            };
        let source = match (
            top.opt("oracle"),
            top.opt("spec"),
            top.opt("module"),
            top.opt("vmfb"),
        ) {
            (Some(o), None, None, None) => ScenarioSource::Oracle(path_of(o, "oracle", true)?),
            (Some(o), _, _, _) => {
                return Err(cx.invalid(
                    o,
                    "`oracle` (a black-box-only scenario) excludes `spec`, `module` and `vmfb`"
                        .into(),
                ))
            }
            (None, _, module, vmfb) => {
                let spec = path_of(top.req(&cx, "spec")?, "spec", false)?;
                let prebuilt = match vmfb {
                    Some(v) => {
                        let map = cx.free_map(
                            v,
                            "vmfb",
                            "`vmfb:` (spec target -> prebuilt serving module)",
                        )?;
                        let mut prebuilt = BTreeMap::new();
                        for (key, value) in map.entries() {
                            let target = cx.name(key, "target name")?;
                            let path = path_of(value, &format!("vmfb.{target}"), false)?;
                            prebuilt.insert(
                                target,
                                PrebuiltServing {
                                    path,
                                    location: location(key),
                                },
                            );
                        }
                        if prebuilt.is_empty() {
                            return Err(cx.invalid(v, "`vmfb:` is empty: name a spec target and its prebuilt serving module, or leave `vmfb:` out".into()));
                        }
                        prebuilt
                    }
                    None => BTreeMap::new(),
                };
                let module = match module {
                    Some(m) => Some(path_of(m, "module", false)?),
                    None if prebuilt.is_empty() => {
                        // The usual message for a missing key, naming `module`.
                        top.req(&cx, "module")?;
                        None
                    }
                    None => None,
                };
                ScenarioSource::Production {
                    spec,
                    module,
                    prebuilt,
                }
            }
        };
        let tokenizer = match top.opt("tokenizer") {
            Some(n) => Some(path_of(n, "tokenizer", false)?),
            None => None,
        };
        let slots_node = top.req(&cx, "slots")?;
        let slots = cx.usize(slots_node, "slots")?;
        if slots == 0 || slots > MAX_SLOTS {
            return Err(cx.invalid(
                slots_node,
                format!("`slots` must be 1..={MAX_SLOTS}, not {slots}"),
            ));
        }
        let context = match top.opt("context") {
            Some(n) => positive(&cx, n, "context")?,
            None => SERVING_CONTEXT,
        };
        let max_steps = match top.opt("max_steps") {
            Some(n) => positive(&cx, n, "max_steps")?,
            None => DEFAULT_MAX_STEPS,
        };
        let list_node = top.req(&cx, "requests")?;
        let items = cx.list(list_node, "requests")?;
        if items.is_empty() {
            return Err(cx.invalid(list_node, "`requests` must not be empty".into()));
        }
        let mut seen = HashSet::new();
        let mut requests = Vec::with_capacity(items.len());
        for item in items {
            let r = parse_request(&cx, item, max_steps)?;
            if !seen.insert(r.id.clone()) {
                return Err(cx.invalid(item, format!("duplicate request id `{}`", r.id)));
            }
            requests.push(r);
        }
        Ok(Scenario {
            path: path.to_path_buf(),
            source,
            tokenizer,
            slots: slots as u32,
            context,
            max_steps,
            requests,
            location: location(list_node),
        })
    }
}

fn positive(cx: &Cx<'_>, node: &Node, field: &str) -> Result<u64, SpecError> {
    let v = cx.usize(node, field)?;
    if v == 0 {
        return Err(cx.invalid(node, format!("`{field}` must be at least 1")));
    }
    Ok(v as u64)
}

fn parse_request(top: &Cx<'_>, node: &Node, max_steps: u64) -> Result<Request, SpecError> {
    let m = top.map(node, "requests", "a request", REQUEST_KEYS)?;
    let id = top.name(m.req(top, "id")?, "id")?;
    let cx = top.with(Scope::Request(id.clone()));
    let input = match (m.opt("case"), m.opt("all_padded")) {
        (Some(c), None) => RequestInput::Case(cx.name(c, "case")?),
        (None, Some(c)) => RequestInput::AllPadded(cx.name(c, "all_padded")?),
        _ => {
            return Err(cx.invalid(
                node,
                "a request needs exactly one of `case` (an oracle token case) or `all_padded` (that case's clips with every frame padded)".into(),
            ))
        }
    };
    let n_node = m.req(&cx, "max_new_tokens")?;
    let max_new_tokens = positive(&cx, n_node, "max_new_tokens")?;
    let max_new_tokens = u32::try_from(max_new_tokens)
        .map_err(|_| cx.invalid(n_node, "`max_new_tokens` is too large".into()))?;
    let arrive_node = m.req(&cx, "arrive")?;
    let arrive = cx.usize(arrive_node, "arrive")? as u64;
    if arrive >= max_steps {
        return Err(cx.invalid(
            arrive_node,
            format!("`arrive` {arrive} is not before `max_steps` {max_steps}"),
        ));
    }
    let cancel = match (m.opt("cancel_at"), m.opt("cancel_after")) {
        (None, None) => None,
        (Some(n), None) => {
            let step = cx.usize(n, "cancel_at")? as u64;
            if step <= arrive {
                return Err(cx.invalid(
                    n,
                    format!("`cancel_at` {step} must be after `arrive` {arrive}"),
                ));
            }
            Some(Cancel::AtStep(step))
        }
        (None, Some(n)) => {
            let k = positive(&cx, n, "cancel_after")?;
            Some(Cancel::AfterTokens(u32::try_from(k).map_err(|_| {
                cx.invalid(n, "`cancel_after` is too large".into())
            })?))
        }
        (Some(n), Some(_)) => {
            return Err(cx.invalid(
                n,
                "`cancel_at` (a step) and `cancel_after` (a token count) exclude each other".into(),
            ))
        }
    };
    Ok(Request {
        id,
        input,
        max_new_tokens,
        arrive,
        cancel,
        location: location(node),
    })
}
