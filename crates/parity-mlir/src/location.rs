//! Source locations (`loc(...)`) and the named-scope paths JAX writes into them.

use crate::cursor::{unescape, Cursor, MAX_DEPTH};

/// A location as printed: `loc("jit(f)/encoder/add")`, `loc(unknown)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The `loc(...)` text; `loc(unknown)` when the source had none.
    pub raw: String,
}

/// The structure of a location, as far as paths and frames need it.
pub(crate) enum Loc {
    Unknown,
    /// `"name"` or `"name"(child)`; the child does not contribute to the path
    /// (it is a source frame, or JAX's traceback under the scope name).
    Name(String, Option<Box<Loc>>),
    /// `callsite(callee at caller)`.
    CallSite(Box<Loc>, Box<Loc>),
    /// `fused[...]` or `fused<...>[...]`.
    Fused(Vec<Loc>),
    /// `"file":line:col` (a `to` range dropped): the file and `line:col`.
    File(String, String),
    /// Anything else without a scope name (an alias, an unknown form).
    Other,
}

impl Location {
    /// Wraps `loc(...)` text.
    pub fn new(raw: impl Into<String>) -> Self {
        Location { raw: raw.into() }
    }

    /// The unknown location.
    pub fn unknown() -> Self {
        Location::new("loc(unknown)")
    }

    /// Named-scope path: strip leading `jit(...)` segments; callsite => caller path with its
    /// trailing `jit(...)` segments removed + "/" + callee path; name(child) => name;
    /// fused => first named; else None.
    ///
    /// `callsite("pad" at "jit(f)/conformer_0/light_conv/causal_pad/jit(_pad)")` gives
    /// `conformer_0/light_conv/causal_pad/pad`.
    pub fn path(&self) -> Option<String> {
        self.path_segments().map(|segments| segments.join("/"))
    }

    /// The name of a named location, as written: `loc("params['w']")` and
    /// `loc("x"("file":1:2))` give `params['w']` and `x`; any other form None.
    /// This is how JAX and the subject's exports name function arguments.
    pub fn name(&self) -> Option<String> {
        let mut cur = Cursor::new(&self.raw);
        if !cur.eat_keyword("loc") || !cur.eat(b'(') {
            return None;
        }
        match parse_loc(&mut cur, 0)? {
            Loc::Name(name, _) => Some(name),
            _ => None,
        }
    }

    /// [`Location::path`] as segments (a segment may itself contain `/` inside parentheses).
    pub(crate) fn path_segments(&self) -> Option<Vec<String>> {
        loc_segments(&self.parse()?).filter(|segments| !segments.is_empty())
    }

    /// The location's structure, when it parses.
    pub(crate) fn parse(&self) -> Option<Loc> {
        let mut cur = Cursor::new(&self.raw);
        if !cur.eat_keyword("loc") || !cur.eat(b'(') {
            return None;
        }
        parse_loc(&mut cur, 0)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.raw)
    }
}

fn parse_loc(cur: &mut Cursor<'_>, depth: usize) -> Option<Loc> {
    if depth > MAX_DEPTH {
        return None;
    }
    cur.skip_ws();
    if cur.peek() == Some(b'"') {
        let (s, e) = cur.string_lit().ok()?;
        let name = unescape(&cur.src[s + 1..e - 1]);
        cur.skip_ws();
        match cur.peek() {
            Some(b'(') => {
                cur.pos += 1;
                let child = parse_loc(cur, depth + 1)?;
                cur.eat(b')')
                    .then_some(Loc::Name(name, Some(Box::new(child))))
            }
            Some(b':') => {
                // "file":line:col, possibly with a `to` range (`to :34`,
                // `to 14:1`): nothing named here. Read exactly that, so that a
                // file frame as a callsite's callee leaves its ` at ...`.
                let digits = |b: u8| b.is_ascii_digit() || b == b':';
                let start = cur.take_while(digits) + 1;
                let at = cur.src[start.min(cur.pos)..cur.pos].to_string();
                let before_range = cur.pos;
                if cur.eat_keyword("to") {
                    cur.skip_ws();
                    cur.take_while(digits);
                } else {
                    cur.pos = before_range;
                }
                Some(Loc::File(name, at))
            }
            _ => Some(Loc::Name(name, None)),
        }
    } else if cur.eat_keyword("unknown") {
        Some(Loc::Unknown)
    } else if cur.eat_keyword("callsite") {
        if !cur.eat(b'(') {
            return None;
        }
        let callee = parse_loc(cur, depth + 1)?;
        if !cur.eat_keyword("at") {
            return None;
        }
        let caller = parse_loc(cur, depth + 1)?;
        cur.eat(b')')
            .then(|| Loc::CallSite(Box::new(callee), Box::new(caller)))
    } else if cur.eat_keyword("fused") {
        cur.skip_ws();
        if cur.peek() == Some(b'<') {
            cur.skip_balanced().ok()?;
        }
        if !cur.eat(b'[') {
            return None;
        }
        let mut parts = Vec::new();
        if cur.eat(b']') {
            return Some(Loc::Fused(parts));
        }
        loop {
            parts.push(parse_loc(cur, depth + 1)?);
            if cur.eat(b']') {
                return Some(Loc::Fused(parts));
            }
            if !cur.eat(b',') {
                return None;
            }
        }
    } else {
        // An alias (`#loc3`) or an unknown form: skip to the end of this location.
        let start = cur.pos;
        while cur.peek().is_some_and(|b| !matches!(b, b')' | b']' | b',')) {
            if cur.peek() == Some(b'"') {
                cur.string_lit().ok()?;
            } else {
                cur.pos += 1;
            }
        }
        (cur.pos > start).then_some(Loc::Other)
    }
}

/// Splits a scope name on `/` outside parentheses (`jit(a/b)` stays one segment).
fn split_segments(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, b) in name.bytes().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b'/' if depth == 0 => {
                out.push(name[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(name[start..].to_string());
    out.retain(|s| !s.is_empty());
    out
}

fn is_jit(segment: &str) -> bool {
    segment.starts_with("jit(") && segment.ends_with(')')
}

fn loc_segments(loc: &Loc) -> Option<Vec<String>> {
    match loc {
        Loc::Name(name, _) => {
            let segs = split_segments(name);
            let skip = segs.iter().take_while(|s| is_jit(s)).count();
            let segs = segs[skip..].to_vec();
            (!segs.is_empty()).then_some(segs)
        }
        Loc::CallSite(callee, caller) => {
            let caller = loc_segments(caller).map(|mut segs| {
                while segs.last().is_some_and(|s| is_jit(s)) {
                    segs.pop();
                }
                segs
            });
            let callee = loc_segments(callee);
            match (caller, callee) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                (Some(a), None) => (!a.is_empty()).then_some(a),
                (None, b) => b,
            }
        }
        Loc::Fused(parts) => parts.iter().find_map(loc_segments),
        Loc::Unknown | Loc::File(..) | Loc::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(raw: &str) -> Option<String> {
        Location::new(raw).path()
    }

    #[test]
    fn argument_names() {
        let name = |raw: &str| Location::new(raw).name();
        assert_eq!(
            name(r#"loc("params['model.audio_tower.w']")"#).as_deref(),
            Some("params['model.audio_tower.w']")
        );
        assert_eq!(name(r#"loc("x"("a.py":1:2))"#).as_deref(), Some("x"));
        assert_eq!(name("loc(unknown)"), None);
        assert_eq!(name(r#"loc("a.py":1:2)"#), None);
    }

    #[test]
    fn named_paths() {
        assert_eq!(
            path(r#"loc("jit(f)/conformer_0/attention/add")"#).as_deref(),
            Some("conformer_0/attention/add")
        );
        assert_eq!(path(r#"loc("jit(f)")"#), None);
        assert_eq!(path(r#"loc("mel")"#).as_deref(), Some("mel"));
        assert_eq!(
            path(r#"loc("jit(f)/a/b"("x.py":3:4))"#).as_deref(),
            Some("a/b")
        );
        assert_eq!(
            path(r#"loc("jit(f)/rel_shift/buwnh,fnh->bnuwf/transpose")"#).as_deref(),
            Some("rel_shift/buwnh,fnh->bnuwf/transpose")
        );
    }

    #[test]
    fn callsite_paths() {
        assert_eq!(
            path(r#"loc(callsite("pad" at "jit(f)/conformer_0/light_conv/causal_pad/jit(_pad)"))"#)
                .as_deref(),
            Some("conformer_0/light_conv/causal_pad/pad")
        );
        assert_eq!(
            path(r#"loc(callsite("reduce_window_sum:"("reduce_window_sum") at "jit(g)/s/jit(cumsum)"))"#)
                .as_deref(),
            Some("s/reduce_window_sum:")
        );
        // Nested callsites: the caller is itself a callsite.
        assert_eq!(
            path(r#"loc(callsite(callsite("inner" at "jit(f)/a/jit(h)") at "jit(f)/b/jit(g)"))"#)
                .as_deref(),
            Some("b/a/inner")
        );
        assert_eq!(
            path(r#"loc(callsite("x" at unknown))"#).as_deref(),
            Some("x")
        );
        // A file frame as the callee (a traceback without scope names) ends
        // at its position: the caller still parses.
        assert_eq!(
            path(r#"loc(callsite("a.py":1:2 to :9 at "jit(f)/enc/add"))"#).as_deref(),
            Some("enc/add")
        );
        assert_eq!(
            path(r#"loc(callsite("a.py":1:2 at callsite("b.py":3:4 to 5:6 at "c.py":7:8)))"#),
            None
        );
    }

    #[test]
    fn fused_unknown_and_file_paths() {
        assert_eq!(
            path(r#"loc(fused["a.py":1:2, "jit(f)/enc/mul", "jit(f)/other"])"#).as_deref(),
            Some("enc/mul")
        );
        assert_eq!(
            path(r#"loc(fused<"tag">[unknown, "jit(f)/x"])"#).as_deref(),
            Some("x")
        );
        assert_eq!(path("loc(unknown)"), None);
        assert_eq!(path(r#"loc("model.py":12:3)"#), None);
        assert_eq!(path(r#"loc("model.py":12:3 to 14:1)"#), None);
        assert_eq!(path("loc(#loc3)"), None);
        assert_eq!(path("garbage"), None);
        assert_eq!(path(r#"loc("a\"b/c")"#).as_deref(), Some("a\"b/c"));
    }
}
