//! The IREE parameters a module declares: `util.global`s whose initial value
//! is `#flow.parameter.named<"scope"::"key">` (or `#stream.parameter.named`,
//! or without a scope: `<"key">`), with the global's type, read from the
//! module text in its pretty or generic form, so parity can check the
//! parameter files against them before anything runs.
//!
//! ```text
//! util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4x4xf32>
//! "util.global"() <{initial_value = #flow.parameter.named<"model"::"w"> : tensor<4x4xf32>, sym_name = "w", ...}> : () -> ()
//! ```

use crate::error::MlirError;
use crate::types::Type;

/// One parameter a module reads: the global it initialises and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterGlobal {
    /// The scope (`""` when the attribute names none).
    pub scope: String,
    /// The key within the scope.
    pub key: String,
    /// The global's symbol name, without `@`, when the text names it.
    pub global: Option<String>,
    /// The global's type, e.g. `tensor<4x4xf32>`.
    pub ty: Type,
    /// 1-based line of the attribute.
    pub line: usize,
}

impl ParameterGlobal {
    /// `scope::key` as IREE names it in messages (`key` alone without a scope).
    pub fn name(&self) -> String {
        if self.scope.is_empty() {
            self.key.clone()
        } else {
            format!("{}::{}", self.scope, self.key)
        }
    }
}

/// The attribute spellings that name a parameter (before and after IREE's
/// flow-to-stream conversion).
const MARKERS: &[&str] = &["#flow.parameter.named<", "#stream.parameter.named<"];

/// Every parameter `src` declares, in text order. Err: an attribute that
/// starts but does not parse (an unterminated string, no `: type` after it).
pub fn parameter_globals(src: &str) -> Result<Vec<ParameterGlobal>, MlirError> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some((at, marker)) = next_marker(src, from) {
        let body = at + marker.len();
        let (first, mut pos) = read_string(src, body)?;
        let (scope, key) = if src[pos..].starts_with("::") {
            let (key, after) = read_string(src, pos + 2)?;
            pos = after;
            (first, key)
        } else {
            (String::new(), first)
        };
        // An optional configuration runs to the attribute's closing `>`.
        pos = close_angle(src, pos)
            .ok_or_else(|| MlirError::at(src, at, "parameter attribute is not closed with `>`"))?;
        let ty = read_type(src, pos).ok_or_else(|| {
            MlirError::at(src, at, "parameter attribute is not followed by `: TYPE`")
        })?;
        let (line, _) = crate::error::line_col(src.as_bytes(), at);
        found.push(ParameterGlobal {
            scope,
            key,
            global: global_name(src, at),
            ty: Type::new(ty),
            line,
        });
        from = pos;
    }
    Ok(found)
}

/// The next parameter attribute at or after `from`: its offset and marker.
fn next_marker(src: &str, from: usize) -> Option<(usize, &'static str)> {
    MARKERS
        .iter()
        .filter_map(|m| src[from..].find(m).map(|i| (from + i, *m)))
        .min_by_key(|(i, _)| *i)
}

/// An MLIR string literal starting at `at` (a `"`), decoded; and the offset
/// after its closing quote. Escapes: `\"`, `\\`, `\n`, `\t` and `\XX` hex.
fn read_string(src: &str, at: usize) -> Result<(String, usize), MlirError> {
    let bytes = src.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return Err(MlirError::at(src, at, "expected a quoted parameter name"));
    }
    let mut out = Vec::new();
    let mut i = at + 1;
    loop {
        match bytes.get(i) {
            None | Some(b'\n') => {
                return Err(MlirError::at(src, at, "unterminated parameter name"))
            }
            Some(b'"') => break,
            Some(b'\\') => {
                let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
                match bytes.get(i + 1) {
                    Some(b'"') => out.push(b'"'),
                    Some(b'\\') => out.push(b'\\'),
                    Some(b'n') => out.push(b'\n'),
                    Some(b't') => out.push(b'\t'),
                    b => match (hex(b), hex(bytes.get(i + 2))) {
                        (Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 1;
                        }
                        _ => return Err(MlirError::at(src, i, "unknown escape in parameter name")),
                    },
                }
                i += 2;
            }
            Some(&b) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), i + 1))
}

/// The offset after the `>` that closes an attribute whose body is at `pos`
/// (nested `<>`, `{}` and strings skipped).
fn close_angle(src: &str, mut pos: usize) -> Option<usize> {
    let bytes = src.as_bytes();
    let mut depth = 0usize;
    while let Some(&b) = bytes.get(pos) {
        match b {
            b'"' => pos = read_string(src, pos).ok()?.1 - 1,
            b'<' | b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth = depth.checked_sub(1)?,
            b'>' if depth == 0 => return Some(pos + 1),
            b'>' => depth -= 1,
            b'\n' => return None,
            _ => {}
        }
        pos += 1;
    }
    None
}

/// The type after `: ` at `pos`: up to a top-level `,`, `}`, space or line end.
fn read_type(src: &str, pos: usize) -> Option<String> {
    let rest = src[pos..].trim_start_matches([' ', '\t']);
    let rest = rest.strip_prefix(':')?.trim_start_matches([' ', '\t']);
    let mut depth = 0usize;
    let mut end = rest.len();
    for (i, c) in rest.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth > 0 => depth -= 1,
            ',' | '}' | ' ' | '\t' | '\n' | '\r' if depth == 0 => {
                end = i;
                break;
            }
            '\n' => return None,
            _ => {}
        }
    }
    let ty = rest[..end].trim();
    (!ty.is_empty()).then(|| ty.to_string())
}

/// The symbol of the global on the attribute's line: `@name` before it
/// (pretty form) or `sym_name = "name"` (generic form).
fn global_name(src: &str, at: usize) -> Option<String> {
    let start = src[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = src[at..].find('\n').map_or(src.len(), |i| at + i);
    let before = &src[start..at];
    if let Some(i) = before.rfind('@') {
        let name: String = before[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "_$.-".contains(*c))
            .collect();
        if !name.is_empty() {
            return Some(name);
        }
    }
    let line = &src[start..end];
    let i = line.find("sym_name = ")? + "sym_name = ".len();
    let abs = start + i;
    read_string(src, abs).ok().map(|(s, _)| s)
}

/// Whether `c` continues a bare MLIR symbol name.
fn symbol_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_$.-".contains(c)
}

/// The functions of `src` whose bodies name the symbol `@global` (its
/// `util.global.load @w`, or `global = @w` in the generic form), by a scan
/// of each function's text up to the next function. Names as written.
pub fn functions_reading(src: &str, global: &str) -> Vec<String> {
    let mut starts: Vec<(usize, String)> = Vec::new();
    for (at, _) in src.match_indices("func.func") {
        let line_end = src[at..].find('\n').map_or(src.len(), |i| at + i);
        let line = &src[at..line_end];
        let name = if line.starts_with("func.func\"") {
            // Generic form: `"func.func"() <{... sym_name = "f" ...}>`.
            line.find("sym_name = \"").and_then(|i| {
                let rest = &line[i + "sym_name = \"".len()..];
                rest.find('"').map(|e| rest[..e].to_string())
            })
        } else {
            line.find('@').map(|i| {
                line[i + 1..]
                    .chars()
                    .take_while(|&c| symbol_char(c))
                    .collect()
            })
        };
        if let Some(name) = name.filter(|n: &String| !n.is_empty()) {
            starts.push((at, name));
        }
    }
    let needle = format!("@{global}");
    let mut out = Vec::new();
    for (i, (at, name)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(src.len(), |(next, _)| *next);
        let body = &src[*at..end];
        let reads = body
            .match_indices(&needle)
            .any(|(j, _)| !body[j + needle.len()..].starts_with(symbol_char));
        if reads && !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// `slice` (a module [`crate::emit_slices`] is writing) with those of
/// `globals` (`util.global` declarations as written) that its ops read
/// (`global = @w`) inserted after its `module ... {` line: a slice of a
/// function that reads parameters keeps the globals (and so the parameters)
/// it reads, and no others.
pub(crate) fn with_globals(slice: String, globals: &[String]) -> String {
    // Most slices read no global: leave them alone.
    if globals.is_empty() || !slice.contains("\"util.global.load\"") {
        return slice;
    }
    let read: Vec<&str> = globals
        .iter()
        .map(String::as_str)
        .filter(|op| {
            let Some(i) = op.find("sym_name = ") else {
                return false;
            };
            let Ok((name, _)) = read_string(op, i + "sym_name = ".len()) else {
                return false;
            };
            let needle = format!("@{name}");
            slice
                .match_indices(&needle)
                .any(|(j, _)| !slice[j + needle.len()..].starts_with(symbol_char))
        })
        .collect();
    // The module line `emit_slices` writes: `module @name {`.
    let open = slice
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .find(|&i| slice[i..].starts_with("module "))
        .and_then(|i| slice[i..].find('\n').map(|e| i + e + 1));
    let (Some(open), false) = (open, read.is_empty()) else {
        return slice;
    };
    let mut out =
        String::with_capacity(slice.len() + read.iter().map(|g| g.len() + 3).sum::<usize>());
    out.push_str(&slice[..open]);
    for g in read {
        out.push_str("  ");
        out.push_str(g.trim());
        out.push('\n');
    }
    out.push_str(&slice[open..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_and_generic_forms_read_the_same_parameter() {
        let pretty = "module {\n  util.global private @w = #flow.parameter.named<\"model\"::\"w\"> : tensor<4x4xf32>\n}\n";
        let generic = "\"util.global\"() <{initial_value = #flow.parameter.named<\"model\"::\"w\"> : tensor<4x4xf32>, sym_name = \"w\", sym_visibility = \"private\", type = tensor<4x4xf32>}> : () -> ()\n";
        for (src, line) in [(pretty, 2), (generic, 1)] {
            let got = parameter_globals(src).unwrap();
            assert_eq!(
                got,
                vec![ParameterGlobal {
                    scope: "model".into(),
                    key: "w".into(),
                    global: Some("w".into()),
                    ty: Type::new("tensor<4x4xf32>"),
                    line,
                }]
            );
            assert_eq!(got[0].name(), "model::w");
        }
    }

    #[test]
    fn unscoped_stream_form_escapes_and_no_parameters() {
        let src =
            "util.global private @b = #stream.parameter.named<\"a\\22b\\\\c\"> : tensor<2xbf16>\n";
        let got = parameter_globals(src).unwrap();
        assert_eq!(got[0].scope, "");
        assert_eq!(got[0].key, "a\"b\\c");
        assert_eq!(got[0].name(), "a\"b\\c");
        assert_eq!(got[0].ty.shape(), Some(vec![2]));
        assert!(parameter_globals("func.func @f() {}\n").unwrap().is_empty());
    }

    #[test]
    fn functions_reading_a_global_in_both_forms() {
        let pretty = "util.global private @w = #flow.parameter.named<\"m\"::\"w\"> : tensor<f32>\nutil.global private @w2 = #flow.parameter.named<\"m\"::\"w2\"> : tensor<f32>\nfunc.func @a() {\n  %0 = util.global.load @w : tensor<f32>\n}\nfunc.func private @b() {\n  %0 = util.global.load @w2 : tensor<f32>\n}\n";
        assert_eq!(functions_reading(pretty, "w"), vec!["a".to_string()]);
        assert_eq!(functions_reading(pretty, "w2"), vec!["b".to_string()]);
        let generic = "\"func.func\"() <{function_type = () -> (), sym_name = \"g\"}> ({\n  %0 = \"util.global.load\"() <{global = @w}> : () -> tensor<f32>\n}) : () -> ()\n";
        assert_eq!(functions_reading(generic, "w"), vec!["g".to_string()]);
        assert!(functions_reading(generic, "v").is_empty());
    }

    #[test]
    fn a_slice_keeps_the_globals_it_reads_and_no_others() {
        let globals = vec![
            "\"util.global\"() <{sym_name = \"w\", type = tensor<f32>}> : () -> ()".to_string(),
            "\"util.global\"() <{sym_name = \"w2\", type = tensor<f32>}> : () -> ()".to_string(),
        ];
        let slice = "// Slices of @f, cut by parity-mlir.\nmodule @s {\n  func.func public @a() -> tensor<f32> {\n    %0 = \"util.global.load\"() <{global = @w}> : () -> tensor<f32>\n  }\n}\n";
        let kept = with_globals(slice.to_string(), &globals);
        assert_eq!(
            kept,
            slice.replace(
                "module @s {\n",
                "module @s {\n  \"util.global\"() <{sym_name = \"w\", type = tensor<f32>}> : () -> ()\n"
            )
        );
        let none = slice.replace("@w}", "@v}");
        assert_eq!(with_globals(none.clone(), &globals), none);
        // What it wrote parses back, globals and all.
        let module = crate::parse(&kept).unwrap();
        assert_eq!(module.globals, globals[..1].to_vec());
        assert_eq!(module.functions.len(), 1);
    }

    #[test]
    fn malformed_attributes_are_errors_at_their_line() {
        let e = parameter_globals("\n@w = #flow.parameter.named<\"model\"::\"w> : tensor<f32>\n")
            .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parameter_globals("@w = #flow.parameter.named<\"model\"::\"w\">\n").unwrap_err();
        assert!(e.message.contains(": TYPE"), "{e}");
    }
}
