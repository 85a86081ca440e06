//! Parameters under the f64 promotion: a `util.global` keeps its stored type
//! (its parameter file holds those bytes, and IREE reads as many as the type
//! says), and each `util.global.load` of one keeps it too, followed by a
//! `stablehlo.convert` to f64 under the load's old name. The f64 ops then
//! see the stored values exactly (every f16, bf16 or f32 is an f64).

use crate::error::MlirError;

/// A run of module text: to promote, or already final.
pub(crate) enum Segment<'a> {
    /// Text [`crate::promote_to_f64`] rewrites as usual.
    Promote(&'a str),
    /// A global declaration kept as is, or a load rewritten with its convert.
    Final(String),
}

/// Splits `text` (a module in generic form, one op per line) into runs to
/// promote and global lines that keep their types; `promote_type` widens a
/// type's text (for the convert's result).
pub(crate) fn segments<'a>(
    text: &'a str,
    promote_type: impl Fn(&str) -> Result<String, MlirError>,
) -> Result<Vec<Segment<'a>>, MlirError> {
    let mut out = Vec::new();
    let mut run_start = 0;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let kept = if trimmed.starts_with("\"util.global\"(") {
            Some(line.to_string())
        } else if line.contains("\"util.global.load\"(") {
            Some(widened_load(text, line_start, line, &promote_type)?)
        } else {
            None
        };
        if let Some(kept) = kept {
            if run_start < line_start {
                out.push(Segment::Promote(&text[run_start..line_start]));
            }
            out.push(Segment::Final(kept));
            run_start = line_start + line.len();
        }
        line_start += line.len();
    }
    if run_start < text.len() {
        out.push(Segment::Promote(&text[run_start..]));
    }
    Ok(out)
}

/// `%5 = "util.global.load"() <{global = @w}> : () -> tensor<4xf32> loc(...)`
/// as the load under `%param_5` and `%5 = "stablehlo.convert"(%param_5)` to
/// the widened type. A load of a non-float global is kept as is.
fn widened_load(
    text: &str,
    at: usize,
    line: &str,
    promote_type: &impl Fn(&str) -> Result<String, MlirError>,
) -> Result<String, MlirError> {
    let bad = |why: &str| MlirError::at(text, at, format!("util.global.load: {why}"));
    let (lhs, rest) = line.split_once(" = ").ok_or_else(|| bad("no result"))?;
    let indent = &lhs[..lhs.len() - lhs.trim_start().len()];
    let result = lhs.trim();
    let name = result
        .strip_prefix('%')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .ok_or_else(|| bad("expected one plain result like `%5`"))?;
    let arrow = rest.rfind(") -> ").ok_or_else(|| bad("no result type"))?;
    let after = &rest[arrow + ") -> ".len()..];
    let ty_end = type_end(after);
    let ty = &after[..ty_end];
    let wide = promote_type(ty)?;
    if wide == ty {
        return Ok(line.to_string());
    }
    let newline = if line.ends_with('\n') { "\n" } else { "" };
    let stored = format!("%param_{name}");
    Ok(format!(
        "{indent}{stored} = {}{newline}{indent}{result} = \"stablehlo.convert\"({stored}) : ({ty}) -> {wide}{newline}",
        rest.trim_end_matches('\n'),
    ))
}

/// The length of the type at the start of `s`: up to a space outside `<>`.
fn type_end(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            ' ' | '\n' | '\r' if depth == 0 => return i,
            _ => {}
        }
    }
    s.len()
}
