//! `bind:`: a stage's arguments bound by the function's MLIR argument names
//! (`loc("...")` on each argument) instead of listed in order.
//!
//! A rule is either explicit (`arg:` an argument's MLIR name or 0-based
//! index) or a pattern (`match:` a regular expression on the whole name, its
//! `$1`..`$9` captures substituted into the tensor name). Explicit rules win
//! over patterns. The names are only known once the module is read, so
//! [`bind_args`] runs at run time; unbound and doubly bound arguments are
//! errors naming the stage, the argument (index and MLIR name) and the spec's
//! `file:line:col`.

use crate::stage_model::{Arg, Location, Stage};
use std::path::Path;

/// The rule types live below the stage that holds them.
pub use crate::stage_model::{Bind, BindRule, BindTarget, NamePattern};

/// Why a stage's `bind:` rules do not bind its function's arguments one to one.
/// Messages start with the spec's `file:line:col` and the stage.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// An argument no rule binds.
    #[error("{at}: {stage}: argument {index} ({name}) of `{function}` is bound by no `bind` rule; add `{{arg: {hint}, ...}}` or a `match:` pattern for it")]
    Unbound {
        /// `file:line:col` of `bind:`.
        at: String,
        /// Whose arguments: "stage `NAME`" or "tokens.decode".
        stage: String,
        /// The function.
        function: String,
        /// 0-based argument index.
        index: usize,
        /// The MLIR name, quoted, or `no MLIR name`.
        name: String,
        /// What to write after `arg:`.
        hint: String,
    },
    /// An argument two rules bind.
    #[error("{at}: {stage}: argument {index} ({name}) of `{function}` is bound twice: by the rule at line {first_line} and by this one; make one of them explicit (`arg:` wins over `match:`) or narrow a pattern")]
    DoublyBound {
        /// `file:line:col` of the second rule.
        at: String,
        /// Whose arguments: "stage `NAME`" or "tokens.decode".
        stage: String,
        /// The function.
        function: String,
        /// 0-based argument index.
        index: usize,
        /// The MLIR name, quoted.
        name: String,
        /// Line of the first rule.
        first_line: usize,
    },
    /// An explicit rule names an argument the function does not have, or a
    /// pattern matches no argument (a typo would otherwise go unnoticed).
    #[error("{at}: {stage}: {what} of `{function}` (its arguments: {available})")]
    NoMatch {
        /// `file:line:col` of the rule.
        at: String,
        /// Whose arguments: "stage `NAME`" or "tokens.decode".
        stage: String,
        /// The function.
        function: String,
        /// What names nothing.
        what: String,
        /// The function's argument names.
        available: String,
    },
}

/// The digits `d` of every `$d` in `text` (`$$` is a literal `$`).
pub(crate) fn capture_refs(text: &str) -> impl Iterator<Item = usize> + '_ {
    let mut chars = text.chars().peekable();
    std::iter::from_fn(move || {
        while let Some(c) = chars.next() {
            if c != '$' {
                continue;
            }
            match chars.peek().copied() {
                Some('$') => {
                    chars.next();
                }
                Some(d) if d.is_ascii_digit() => {
                    chars.next();
                    return d.to_digit(10).map(|d| d as usize);
                }
                _ => {}
            }
        }
        None
    })
}

/// `text` with `$d` replaced by capture `d` (after `replace`) and `$$` by `$`.
pub(crate) fn expand(text: &str, captures: &[String], replace: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('$', Some('$')) => {
                chars.next();
                out.push('$');
            }
            ('$', Some(d)) if d.is_ascii_digit() => {
                chars.next();
                let index = d.to_digit(10).map_or(0, |d| d as usize);
                let mut capture = captures.get(index).cloned().unwrap_or_default();
                for (from, to) in replace {
                    capture = capture.replace(from.as_str(), to);
                }
                out.push_str(&capture);
            }
            _ => out.push(c),
        }
    }
    out
}

/// The arguments of an instantiated `bind:` stage, in the function's
/// argument order, with the position of the rule that bound each, given the
/// function's argument names (`None` for an argument without one).
pub fn bind_args(
    spec_path: &Path,
    stage: &Stage,
    function: &str,
    names: &[Option<String>],
) -> Result<(Vec<Arg>, Vec<Location>), Box<BindError>> {
    bind_args_in(spec_path, stage, function, names, None)
}

/// What the function a `slice:` stage cuts offers beyond the slice's own
/// arguments: the names a rule of a `bind:` list shared by several slices
/// may target on another slice.
pub struct SliceScope<'a> {
    /// The whole function's MLIR argument names.
    pub function_args: &'a [Option<String>],
    /// Whether a name is a point of the function (another slice's `from`).
    pub is_point: &'a dyn Fn(&str) -> bool,
}

impl SliceScope<'_> {
    /// Whether `name` is an argument of the whole function or a point of it.
    fn knows(&self, name: &str) -> bool {
        self.function_args
            .iter()
            .any(|a| a.as_deref() == Some(name))
            || (self.is_point)(name)
    }
}

/// [`bind_args`]; for a `slice:` stage (`slice` given), a rule for an
/// argument the slice does not take is ignored, so one `bind:` list serves
/// every slice of a function: an `arg:` naming an argument or a point of the
/// function that the slice does not take, and a `match:` matching only
/// function arguments the slice does not take. A rule naming nothing in the
/// function is still an error (a typo).
pub fn bind_args_in(
    spec_path: &Path,
    stage: &Stage,
    function: &str,
    names: &[Option<String>],
    slice: Option<&SliceScope<'_>>,
) -> Result<(Vec<Arg>, Vec<Location>), Box<BindError>> {
    let Some(bind) = &stage.bind else {
        return Ok((stage.args.clone(), stage.locations.args.clone()));
    };
    let preset = vec![None; names.len()];
    let who = format!("stage `{}`", stage.name);
    let owner = BindOwner {
        spec_path,
        name: &who,
        function,
        location: bind.location,
    };
    let bound = bind_rules(&owner, &bind.rules, names, slice, &preset)?;
    Ok(bound.into_iter().flatten().unzip())
}

/// Who a list of `bind:` rules belongs to, for messages: a stage, or a token
/// call (`tokens.decode`).
pub(crate) struct BindOwner<'a> {
    /// The spec file.
    pub spec_path: &'a Path,
    /// Whose arguments, for messages: "stage `NAME`" or "tokens.decode".
    pub name: &'a str,
    /// The function whose arguments are bound.
    pub function: &'a str,
    /// Where `bind:` is.
    pub location: Location,
}

/// Binds `rules` to `names`, one argument each. `preset[i]` is the location
/// of something outside `rules` that already binds argument `i` (a token
/// call's `token:`/`position:`/`state:` rule): a pattern skips it, an `arg:`
/// rule naming it is a double binding. The result has `None` exactly at the
/// preset arguments.
pub(crate) fn bind_rules(
    owner: &BindOwner<'_>,
    rules: &[BindRule],
    names: &[Option<String>],
    slice: Option<&SliceScope<'_>>,
    preset: &[Option<Location>],
) -> Result<Vec<Option<(Arg, Location)>>, Box<BindError>> {
    let at = |loc: Location| format!("{}:{}:{}", owner.spec_path.display(), loc.line, loc.col);
    let shown = |i: usize| match &names[i] {
        Some(n) => format!("`{n}`"),
        None => "no MLIR name".to_string(),
    };
    let available = || {
        (0..names.len())
            .map(|i| format!("{i}: {}", shown(i)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let no_match = |rule: &BindRule, what: String| {
        Box::new(BindError::NoMatch {
            at: at(rule.location),
            stage: owner.name.to_string(),
            function: owner.function.to_string(),
            what,
            available: available(),
        })
    };
    let doubly = |rule: &BindRule, index: usize, first_line: usize| {
        Box::new(BindError::DoublyBound {
            at: at(rule.location),
            stage: owner.name.to_string(),
            function: owner.function.to_string(),
            index,
            name: shown(index),
            first_line,
        })
    };
    let mut chosen: Vec<Option<(&BindRule, Arg)>> = vec![None; names.len()];
    // Explicit rules first: they win over patterns.
    for rule in rules {
        let index = match &rule.target {
            BindTarget::Pattern(_) => continue,
            BindTarget::Index(i) if *i < names.len() => *i,
            BindTarget::Index(i) => {
                return Err(no_match(
                    rule,
                    format!("`arg: {i}` is past the last argument"),
                ))
            }
            BindTarget::Name(n) => {
                match names.iter().position(|m| m.as_deref() == Some(n.as_str())) {
                    Some(i) => i,
                    None if slice.is_some_and(|s| s.knows(n)) => continue,
                    None => return Err(no_match(rule, format!("`arg: {n}` names no argument"))),
                }
            }
        };
        if let Some(first) = preset.get(index).copied().flatten() {
            return Err(doubly(rule, index, first.line));
        }
        if let Some((first, _)) = &chosen[index] {
            return Err(doubly(rule, index, first.location.line));
        }
        chosen[index] = Some((rule, rule.source.clone()));
    }
    let explicit: Vec<bool> = chosen
        .iter()
        .enumerate()
        .map(|(i, c)| c.is_some() || preset.get(i).is_some_and(Option::is_some))
        .collect();
    for rule in rules {
        let BindTarget::Pattern(pattern) = &rule.target else {
            continue;
        };
        let mut matched = false;
        for (index, name) in names.iter().enumerate() {
            let Some(captures) = name.as_deref().and_then(|n| pattern.captures(n)) else {
                continue;
            };
            matched = true;
            if explicit[index] {
                continue;
            }
            if let Some((first, _)) = &chosen[index] {
                return Err(doubly(rule, index, first.location.line));
            }
            let source = match &rule.source {
                Arg::Oracle(t) => Arg::Oracle(expand(t, &captures, &rule.replace)),
                Arg::Weight(t) => Arg::Weight(expand(t, &captures, &rule.replace)),
                other => other.clone(),
            };
            chosen[index] = Some((rule, source));
        }
        let elsewhere = || {
            slice.is_some_and(|s| {
                s.function_args
                    .iter()
                    .flatten()
                    .any(|n| pattern.captures(n).is_some())
            })
        };
        if !matched && !elsewhere() {
            return Err(no_match(
                rule,
                format!("`match: {}` matches no argument", pattern.text),
            ));
        }
    }
    let mut bound = Vec::with_capacity(names.len());
    for (index, slot) in chosen.into_iter().enumerate() {
        if preset.get(index).is_some_and(Option::is_some) {
            bound.push(None);
            continue;
        }
        let Some((rule, arg)) = slot else {
            return Err(Box::new(BindError::Unbound {
                at: at(owner.location),
                stage: owner.name.to_string(),
                function: owner.function.to_string(),
                index,
                name: shown(index),
                hint: match &names[index] {
                    Some(n) => crate::write::quote(n),
                    None => index.to_string(),
                },
            }));
        };
        bound.push(Some((arg, rule.location)));
    }
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_expand_with_replacements_and_dollar_escapes() {
        let p = NamePattern::new("audio_tower__(.*)").unwrap();
        let caps = p.captures("audio_tower__conv_0__norm__weight").unwrap();
        let out = expand(
            "model.audio_tower.$1 costs $$1",
            &caps,
            &[("__".into(), ".".into())],
        );
        assert_eq!(out, "model.audio_tower.conv_0.norm.weight costs $1");
        assert!(p.captures("x_audio_tower__a").is_none(), "anchored");
        assert_eq!(capture_refs("$1 $$2 $3x").collect::<Vec<_>>(), vec![1, 3]);
    }
}
