//! A location in brief, for people: the scope path and the innermost source
//! frame. JAX (and Keras on JAX) write the whole Python traceback into every
//! op's location, about 2 KB of `callsite(...)` frames; reports show this
//! brief form and keep the raw text for the JSON record and a disclosure.

use crate::location::{Loc, Location};
use std::fmt;

/// Longest scope path, file name or fallback text shown; longer ones keep
/// their tail (the innermost scope, the file's own name) after an ellipsis.
pub const MAX_PART: usize = 96;

/// One source frame: `Dense.call` at `/src/model.py:6:24`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function, when the frame names one (JAX's traceback frames do).
    pub function: Option<String>,
    /// The source file as written.
    pub file: String,
    /// `line:col` (a `to` range dropped).
    pub at: String,
}

/// The parts of a location a person reads first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocBrief {
    /// The named-scope path ([`Location::path`]).
    pub scope: Option<String>,
    /// The innermost source frame: where the op was written.
    pub frame: Option<Frame>,
    /// The raw text without `loc(...)` and quotes, shortened: shown only when
    /// neither a scope nor a frame could be read.
    pub fallback: String,
}

impl Location {
    /// The scope path and innermost frame of this location, each bounded in
    /// length however long the traceback is.
    pub fn brief(&self) -> LocBrief {
        let parsed = self.parse();
        let frame = parsed.as_ref().and_then(innermost_frame);
        let scope = self.path().map(|p| shorten(&p, MAX_PART));
        let raw = self.raw.trim();
        let inner = raw
            .strip_prefix("loc(")
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(raw)
            .replace('"', "");
        LocBrief {
            scope,
            frame,
            fallback: shorten(&inner, MAX_PART),
        }
    }
}

impl LocBrief {
    /// One short label: the scope path, else the frame, else the fallback.
    /// This is what tables of many operations show.
    pub fn label(&self) -> String {
        match (&self.scope, &self.frame) {
            (Some(scope), _) => scope.clone(),
            (None, Some(frame)) => frame.to_string(),
            (None, None) => self.fallback.clone(),
        }
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(function) = &self.function {
            write!(f, "{function} at ")?;
        }
        write!(f, "{}:{}", shorten(&self.file, MAX_PART), self.at)
    }
}

/// `scope (function at file:line:col)`: both parts when there are both.
impl fmt::Display for LocBrief {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.scope, &self.frame) {
            (Some(scope), Some(frame)) => write!(f, "{scope} ({frame})"),
            _ => f.write_str(&self.label()),
        }
    }
}

/// The first frame in callee-first order: a callsite's callee before its
/// caller, a name's child, a fused location's first part that has one.
fn innermost_frame(loc: &Loc) -> Option<Frame> {
    match loc {
        Loc::File(file, at) => Some(Frame {
            function: None,
            file: file.clone(),
            at: shorten(at, 24),
        }),
        Loc::Name(name, Some(child)) => {
            let mut frame = innermost_frame(child)?;
            // A traceback frame is `"function"("file":l:c)`; a scope name
            // (`jit(f)/dense/add`) or a JAX primitive marker (`add:`) over a
            // file is not a function.
            let direct = matches!(**child, Loc::File(..));
            if direct && frame.function.is_none() && !name.contains('/') && !name.ends_with(':') {
                frame.function = Some(shorten(name, MAX_PART));
            }
            Some(frame)
        }
        Loc::CallSite(callee, caller) => {
            innermost_frame(callee).or_else(|| innermost_frame(caller))
        }
        Loc::Fused(parts) => parts.iter().find_map(innermost_frame),
        Loc::Name(_, None) | Loc::Unknown | Loc::Other => None,
    }
}

/// `text` when it is at most `max` characters, else `…` and its last `max - 1`.
fn shorten(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - (max - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brief(raw: &str) -> LocBrief {
        Location::new(raw).brief()
    }

    /// What JAX 0.10 writes for `Dense.call`'s matmul under `jax.named_scope("dense")`
    /// (exported, then printed with `--mlir-print-local-scope`).
    const JAX: &str = r#"loc("jit(model)/dense/dot_general"(callsite("Dense.call"("/tmp/locjax/m.py":6:24 to :34) at callsite("Dense.__call__"("/tmp/locjax/m.py":9:19 to :31) at callsite("model"("/tmp/locjax/m.py":11:11 to :22) at "<module>"("/tmp/locjax/m.py":12:6 to :119))))))"#;

    #[test]
    fn a_jax_traceback_shows_its_scope_and_innermost_frame() {
        let b = brief(JAX);
        assert_eq!(b.scope.as_deref(), Some("dense/dot_general"));
        assert_eq!(
            b.frame,
            Some(Frame {
                function: Some("Dense.call".into()),
                file: "/tmp/locjax/m.py".into(),
                at: "6:24".into(),
            })
        );
        assert_eq!(
            b.to_string(),
            "dense/dot_general (Dense.call at /tmp/locjax/m.py:6:24)"
        );
        assert_eq!(b.label(), "dense/dot_general");
    }

    #[test]
    fn the_primitive_marker_and_a_bare_file_are_not_functions() {
        // Older JAX wraps the scope name in `"<prim>:"(...)`; the scope is
        // what [`Location::path`] says, the frame has no function.
        let b = brief(r#"loc("add:"("jit(f)/enc/add"("m.py":3:4)))"#);
        assert_eq!(b.scope, Location::new(r#"loc("add:")"#).path());
        assert_eq!(b.frame.as_ref().map(|f| f.function.clone()), Some(None));
        assert_eq!(b.to_string(), "add: (m.py:3:4)");
        let b = brief(r#"loc("jit(f)/a/b"("x.py":3:4))"#);
        assert_eq!(b.to_string(), "a/b (x.py:3:4)");
    }

    #[test]
    fn without_a_scope_the_frame_is_the_label() {
        // A traceback with no scope name: the callsite chain of files alone.
        let b = brief(
            r#"loc(callsite("/k/dense.py":144:17 at callsite("/k/layer.py":901:20 at "/u/train.py":3:1)))"#,
        );
        assert_eq!(b.scope, None);
        assert_eq!(b.label(), "/k/dense.py:144:17");
        let b = brief(r#"loc(fused["a.py":1:2, "jit(f)/enc/mul"])"#);
        assert_eq!(b.to_string(), "enc/mul (a.py:1:2)");
        assert_eq!(brief("loc(unknown)").label(), "unknown");
        assert_eq!(brief("loc(#loc3)").label(), "#loc3");
        assert_eq!(brief(r#"loc("mel")"#).to_string(), "mel");
    }

    #[test]
    fn long_parts_keep_their_tail() {
        let deep = format!("jit(f)/{}op", "block/".repeat(40));
        let b = brief(&format!(
            "loc(\"{deep}\"(\"{}/model.py\":1:2))",
            "d".repeat(300)
        ));
        let scope = b.scope.clone().unwrap();
        assert!(
            scope.starts_with('…') && scope.ends_with("block/op"),
            "{scope}"
        );
        assert_eq!(scope.chars().count(), MAX_PART);
        let text = b.to_string();
        assert!(text.ends_with("/model.py:1:2)"), "{text}");
        assert!(text.chars().count() <= 2 * MAX_PART + 8, "{text}");
    }

    fn frame_loc() -> impl Strategy<Value = String> {
        (
            "[A-Za-z_<>.]{1,30}",
            "[a-z/_.]{1,200}",
            1u32..5000,
            1u32..200,
        )
            .prop_map(|(f, file, l, c)| format!(r#""{f}"("{file}":{l}:{c} to :{})"#, c + 3))
    }

    proptest! {
        /// However many frames, the brief is the scope and the innermost
        /// frame, bounded in length.
        #[test]
        fn a_chain_of_any_length_briefs_to_its_innermost_frame(
            frames in proptest::collection::vec(frame_loc(), 1..40),
            scope in "[a-z_]{1,10}(/[a-z_]{1,10}){0,6}",
        ) {
            let mut chain = frames.last().unwrap().clone();
            for f in frames.iter().rev().skip(1) {
                chain = format!("callsite({f} at {chain})");
            }
            let raw = format!("loc(\"jit(f)/{scope}\"({chain}))");
            let b = brief(&raw);
            prop_assert_eq!(b.scope.as_deref(), Some(scope.as_str()));
            let first = Location::new(format!("loc({})", frames[0])).brief().frame;
            prop_assert!(first.is_some());
            prop_assert_eq!(&b.frame, &first);
            prop_assert!(b.to_string().chars().count() <= 3 * MAX_PART + 16);
        }

        /// Any text: no panic, and every part bounded.
        #[test]
        fn any_text_briefs_without_panicking(raw in ".{0,600}") {
            for text in [raw.clone(), format!("loc({raw})")] {
                let b = brief(&text);
                prop_assert!(b.fallback.chars().count() <= MAX_PART);
                prop_assert!(b.label().chars().count() <= 3 * MAX_PART);
            }
        }
    }
}
