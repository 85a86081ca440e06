//! Reading `bind:` rules (see `bind` for what they mean).

use crate::arg_parse::{location, parse_arg_entry};
use crate::bind::{capture_refs, Bind, BindRule, BindTarget, NamePattern};
use crate::error::SpecError;
use crate::model::Arg;
use crate::reader::Cx;
use crate::yaml::Node;

const RULE_KEYS: &[&str] = &[
    "arg", "match", "replace", "oracle", "weight", "stage", "literal",
];

/// Reads `bind: [rule, ...]`.
pub(crate) fn parse_bind(
    cx: &Cx<'_>,
    stage: &str,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<Bind, SpecError> {
    let mut rules: Vec<BindRule> = Vec::new();
    for (i, item) in cx.list(node, "bind")?.iter().enumerate() {
        let rule = parse_rule(cx, stage, i, item, literal_budget)?;
        if !matches!(rule.target, BindTarget::Pattern(_)) {
            if let Some(prev) = rules.iter().find(|r| r.target == rule.target) {
                return Err(cx.invalid(
                    item,
                    format!(
                        "bind rule {i} names the same argument as the rule at line {}",
                        prev.location.line
                    ),
                ));
            }
        }
        rules.push(rule);
    }
    if rules.is_empty() {
        return Err(cx.invalid(node, "`bind` is empty; list at least one rule".into()));
    }
    Ok(Bind {
        rules,
        location: location(node),
    })
}

/// Reads one rule (item `index` of a `bind:` list).
pub(crate) fn parse_rule(
    cx: &Cx<'_>,
    stage: &str,
    index: usize,
    node: &Node,
    literal_budget: &mut usize,
) -> Result<BindRule, SpecError> {
    let m = cx.map(node, "bind rule", "bind rule", RULE_KEYS)?;
    let target = match (m.opt("arg"), m.opt("match")) {
        (Some(a), None) => match a.as_i128() {
            Some(_) => BindTarget::Index(cx.usize(a, "arg")?),
            None => BindTarget::Name(cx.name(a, "arg")?),
        },
        (None, Some(p)) => {
            let text = cx.name(p, "match")?;
            let pattern = NamePattern::new(&text).map_err(|e| {
                cx.invalid(p, format!("bind rule {index}: `match` is not a valid regular expression: {e}"))
            })?;
            BindTarget::Pattern(pattern)
        }
        _ => {
            return Err(cx.invalid(
                node,
                format!("bind rule {index} needs exactly one of `arg` (an argument's MLIR name or index) or `match` (a pattern on the names)"),
            ))
        }
    };
    // The source is an ordinary argument: the rule minus its own keys.
    let sources: Vec<(&Node, &Node)> = m
        .entries()
        .filter(|(k, _)| !matches!(k.scalar(), Some("arg" | "match" | "replace")))
        .collect();
    let [(key, value)] = sources.as_slice() else {
        return Err(cx.invalid(
            node,
            format!("bind rule {index} needs exactly one of: oracle, weight, stage, literal"),
        ));
    };
    let source = parse_arg_entry(
        cx,
        stage,
        index,
        key.scalar().unwrap_or_default(),
        value,
        literal_budget,
    )?;
    let mut replace = Vec::new();
    if let BindTarget::Pattern(pattern) = &target {
        let (Arg::Oracle(name) | Arg::Weight(name)) = &source else {
            return Err(cx.invalid(
                node,
                format!("bind rule {index}: a `match` rule binds `oracle:` or `weight:` names (use `arg:` for a `stage:` or `literal:`)"),
            ));
        };
        if let Some(bad) = capture_refs(name).find(|&d| d >= pattern.groups()) {
            return Err(cx.invalid(
                value,
                format!(
                    "bind rule {index}: `${bad}` but the pattern has {} capture groups",
                    pattern.groups() - 1
                ),
            ));
        }
        if let Some(r) = m.opt("replace") {
            for (from, to) in cx.free_map(r, "replace", "replace")?.entries() {
                let from_text = cx.string(from, "replace key")?;
                if from_text.is_empty() {
                    return Err(cx.invalid(from, "a `replace` key must not be empty".into()));
                }
                replace.push((from_text, cx.string(to, "replace value")?));
            }
        }
    } else if let Some(r) = m.opt("replace") {
        return Err(cx.invalid(
            r,
            "`replace` applies to a `match` rule's captures; an `arg:` rule has none".into(),
        ));
    }
    Ok(BindRule {
        target,
        source,
        replace,
        location: location(node),
    })
}
