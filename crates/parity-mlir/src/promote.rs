//! Rewriting a sliced module to f64, for a float64 "truth" run of the same ops.

use crate::cursor::{is_ident_byte, Cursor};
use crate::error::MlirError;
use crate::types::tensor_parts;

/// Ops whose meaning changes when their float types widen.
const REFUSED_OPS: [&str; 2] = ["stablehlo.bitcast_convert", "stablehlo.custom_call"];

/// A float element type that promotion rewrites.
#[derive(Debug, Clone, Copy)]
enum Narrow {
    F16,
    Bf16,
    F32,
}

impl Narrow {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "f16" => Some(Narrow::F16),
            "bf16" => Some(Narrow::Bf16),
            "f32" => Some(Narrow::F32),
            _ => None,
        }
    }

    fn bytes(self) -> usize {
        match self {
            Narrow::F16 | Narrow::Bf16 => 2,
            Narrow::F32 => 4,
        }
    }

    fn to_f64(self, bits: u64) -> f64 {
        match self {
            Narrow::F16 => half::f16::from_bits(bits as u16).to_f64(),
            Narrow::Bf16 => half::bf16::from_bits(bits as u16).to_f64(),
            Narrow::F32 => f64::from(f32::from_bits(bits as u32)),
        }
    }
}

/// An element type that promotion rewrites: a narrow float, or a complex of one.
#[derive(Debug, Clone, Copy)]
struct Element {
    narrow: Narrow,
    complex: bool,
}

impl Element {
    fn parse(name: &str) -> Option<Self> {
        if let Some(inner) = name
            .strip_prefix("complex<")
            .and_then(|s| s.strip_suffix('>'))
        {
            return Narrow::from_name(inner.trim()).map(|narrow| Element {
                narrow,
                complex: true,
            });
        }
        Narrow::from_name(name).map(|narrow| Element {
            narrow,
            complex: false,
        })
    }

    fn promoted(self) -> &'static str {
        if self.complex {
            "complex<f64>"
        } else {
            "f64"
        }
    }
}

/// Rewrite every float element type (f16, bf16, f32) to f64 in a module text produced by
/// [`crate::emit_slices`]: tensor types everywhere (function signatures, region block
/// arguments, dense attribute types) and dense float constants. Decimal literals keep
/// their text; hex literals (`dense<"0x...">` splat or full, and `dense<0xFF800000>`
/// scalars) are decoded in their old width (little-endian) and re-encoded as f64.
///
/// Ops whose meaning changes under promotion (`stablehlo.bitcast_convert`,
/// `stablehlo.custom_call`) are an error naming the op's line; so is a float
/// `dense_resource` constant, whose bytes are not in the text.
///
/// A `util.global` (a parameter's) keeps its type and each load of one is
/// converted to f64 after it (`promote_params`), so the parameter files are
/// read as they are and the f64 ops see their values exactly.
pub fn promote_to_f64(text: &str) -> Result<String, MlirError> {
    if !text.contains("\"util.global") {
        return promote_text(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut lines_before = 0;
    for segment in crate::promote_params::segments(text, promote_text)? {
        match segment {
            crate::promote_params::Segment::Promote(run) => {
                // Errors name the line in `text`, not in the run.
                out.push_str(&promote_text(run).map_err(|mut e| {
                    e.line += lines_before;
                    e
                })?);
                lines_before += run.matches('\n').count();
            }
            crate::promote_params::Segment::Final(line) => {
                out.push_str(&line);
                // A rewritten load is one line of `text` (two of `out`).
                lines_before += 1;
            }
        }
    }
    Ok(out)
}

/// [`promote_to_f64`] of text without globals.
fn promote_text(text: &str) -> Result<String, MlirError> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let at_word = i == 0 || !is_ident_byte(bytes[i - 1]);
        if b == b'"' {
            let mut cur = Cursor::new(text);
            cur.pos = i;
            let (s, e) = cur.string_lit()?;
            let body = &text[s + 1..e - 1];
            if REFUSED_OPS.contains(&body) && bytes.get(e) == Some(&b'(') {
                return Err(MlirError::at(
                    text,
                    s,
                    format!("`{body}` cannot be promoted to f64: its meaning depends on the element width"),
                ));
            }
            i = e;
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if at_word && bytes[i..].starts_with(b"tensor<") {
            let end = balanced_end(text, i + "tensor".len())?;
            let ty = &text[i..end];
            if let Some(parts) = tensor_parts(ty) {
                if let Some(element) = Element::parse(parts.element) {
                    out.push_str(&text[copied..i]);
                    out.push_str(&ty[..parts.element_offset]);
                    out.push_str(element.promoted());
                    out.push_str(&ty[parts.element_offset + parts.element.len()..]);
                    copied = end;
                }
            }
            i = end;
        } else if at_word && bytes[i..].starts_with(b"dense") {
            let resource = bytes[i..].starts_with(b"dense_resource<");
            let open = i + if resource { "dense_resource" } else { "dense" }.len();
            if bytes.get(open) != Some(&b'<') {
                i += 1;
                continue;
            }
            let end = balanced_end(text, open)?;
            let Some(element) = attr_element(text, end) else {
                i = end;
                continue;
            };
            if resource {
                return Err(MlirError::at(
                    text,
                    i,
                    "a float `dense_resource` constant cannot be promoted to f64: its bytes are not in the text",
                ));
            }
            let body = promote_dense_body(text, open + 1, &text[open + 1..end - 1], element)?;
            out.push_str(&text[copied..=open]);
            out.push_str(&body);
            out.push('>');
            copied = end;
            i = end;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    Ok(out)
}

/// End (exclusive) of the bracket run opening at `open`.
fn balanced_end(text: &str, open: usize) -> Result<usize, MlirError> {
    let mut cur = Cursor::new(text);
    cur.pos = open;
    Ok(cur.skip_balanced()?.1)
}

/// The promotable element type of the ` : tensor<...>` that follows an attribute ending at `end`.
fn attr_element(text: &str, end: usize) -> Option<Element> {
    let mut cur = Cursor::new(text);
    cur.pos = end;
    if !cur.eat(b':') {
        return None;
    }
    let ty = cur.type_text().ok()?;
    Element::parse(tensor_parts(ty)?.element)
}

/// Rewrites the inside of `dense<...>` for an f64 element type. `offset` is where `body`
/// starts in `text`, for errors.
fn promote_dense_body(
    text: &str,
    offset: usize,
    body: &str,
    element: Element,
) -> Result<String, MlirError> {
    let trimmed = body.trim();
    if let Some(quoted) = trimmed.strip_prefix('"') {
        let hex = quoted
            .strip_suffix('"')
            .and_then(|q| q.strip_prefix("0x").or_else(|| q.strip_prefix("0X")))
            .ok_or_else(|| {
                MlirError::at(
                    text,
                    offset,
                    "expected a hex string (\"0x...\") in a float dense attribute",
                )
            })?;
        return promote_hex_blob(hex, element)
            .map(|h| format!("\"0x{h}\""))
            .map_err(|m| MlirError::at(text, offset, m));
    }
    // Nested lists of decimal or hex scalars: only the hex scalars change.
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let starts_hex = (i == 0 || !is_ident_byte(bytes[i - 1]))
            && bytes[i] == b'0'
            && matches!(bytes.get(i + 1), Some(b'x' | b'X'));
        if !starts_hex {
            i += 1;
            continue;
        }
        let digits_start = i + 2;
        let mut j = digits_start;
        while j < bytes.len() && bytes[j].is_ascii_hexdigit() {
            j += 1;
        }
        let digits = &body[digits_start..j];
        let width = element.narrow.bytes() * 2;
        let bits = (!digits.is_empty() && digits.len() <= width)
            .then(|| u64::from_str_radix(digits, 16).ok())
            .flatten()
            .ok_or_else(|| {
                MlirError::at(
                    text,
                    offset + i,
                    format!(
                        "hex float literal `0x{digits}` does not fit a {}-bit float",
                        width * 4
                    ),
                )
            })?;
        let value = element.narrow.to_f64(bits);
        out.push_str(&body[copied..i]);
        out.push_str(&format!("0x{:016X}", value.to_bits()));
        copied = j;
        i = j;
    }
    out.push_str(&body[copied..]);
    Ok(out)
}

/// Re-encodes a little-endian hex blob of narrow floats as f64s (a splat stays one element).
fn promote_hex_blob(hex: &str, element: Element) -> Result<String, String> {
    if !hex.len().is_multiple_of(2) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("malformed hex data `0x{}`", truncate(hex)));
    }
    let data: Vec<u8> = (0..hex.len())
        .step_by(2)
        .filter_map(|k| u8::from_str_radix(&hex[k..k + 2], 16).ok())
        .collect();
    let width = element.narrow.bytes();
    let per_element = width * if element.complex { 2 } else { 1 };
    if data.is_empty() || !data.len().is_multiple_of(per_element) {
        return Err(format!(
            "hex data of {} bytes is not a whole number of {per_element}-byte elements",
            data.len()
        ));
    }
    let mut out = String::with_capacity(data.len() / width * 16);
    for chunk in data.chunks_exact(width) {
        let bits = chunk
            .iter()
            .rev()
            .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte));
        for byte in element.narrow.to_f64(bits).to_le_bytes() {
            out.push_str(&format!("{byte:02X}"));
        }
    }
    Ok(out)
}

fn truncate(s: &str) -> &str {
    s.get(..16).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_hex(values: &[f32]) -> String {
        values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .map(|b| format!("{b:02X}"))
            .collect()
    }

    fn f64_hex(values: &[f64]) -> String {
        values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .map(|b| format!("{b:02X}"))
            .collect()
    }

    #[test]
    fn non_ascii_text_outside_strings() {
        let out = promote_to_f64("\u{e9}tensor<f32> \u{2192} tensor<2xbf16>").unwrap();
        // No panic on a multi-byte character; a non-ASCII byte is not part of an identifier.
        assert_eq!(out, "\u{e9}tensor<f64> \u{2192} tensor<2xf64>");
    }

    #[test]
    fn globals_keep_their_type_and_loads_are_converted_to_f64() {
        let text = "module @s {\n  \"util.global\"() <{initial_value = #flow.parameter.named<\"m\"::\"w\"> : tensor<4xf32>, sym_name = \"w\", type = tensor<4xf32>}> : () -> ()\n  func.func public @f(%arg0: tensor<4xf32>) -> (tensor<4xf32>) {\n    %3 = \"util.global.load\"() <{global = @w}> : () -> tensor<4xf32> loc(\"m.mlir\":3:5)\n    %4 = \"stablehlo.add\"(%arg0, %3) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n    \"func.return\"(%4) : (tensor<4xf32>) -> ()\n  }\n}\n";
        let out = promote_to_f64(text).unwrap();
        let want = "module @s {\n  \"util.global\"() <{initial_value = #flow.parameter.named<\"m\"::\"w\"> : tensor<4xf32>, sym_name = \"w\", type = tensor<4xf32>}> : () -> ()\n  func.func public @f(%arg0: tensor<4xf64>) -> (tensor<4xf64>) {\n    %param_3 = \"util.global.load\"() <{global = @w}> : () -> tensor<4xf32> loc(\"m.mlir\":3:5)\n    %3 = \"stablehlo.convert\"(%param_3) : (tensor<4xf32>) -> tensor<4xf64>\n    %4 = \"stablehlo.add\"(%arg0, %3) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>\n    \"func.return\"(%4) : (tensor<4xf64>) -> ()\n  }\n}\n";
        assert_eq!(out, want);
        // An integer global's load needs no convert.
        let ints = text.replace("f32>", "i32>");
        assert_eq!(promote_to_f64(&ints).unwrap(), ints);
        // Errors after a kept line still name their line in the input.
        let bad = text.replace("stablehlo.add", "stablehlo.bitcast_convert");
        assert_eq!(promote_to_f64(&bad).unwrap_err().line, 5);
    }

    #[test]
    fn hex_blobs() {
        let f32e = Element {
            narrow: Narrow::F32,
            complex: false,
        };
        assert_eq!(
            promote_hex_blob(&f32_hex(&[1.0, -2.5, 0.1]), f32e).unwrap(),
            f64_hex(&[1.0, -2.5, f64::from(0.1f32)])
        );
        let bf = Element {
            narrow: Narrow::Bf16,
            complex: false,
        };
        // bf16 0x3F80 = 1.0, 0xC020 = -2.5 (little-endian bytes).
        assert_eq!(
            promote_hex_blob("803F20C0", bf).unwrap(),
            f64_hex(&[1.0, -2.5])
        );
        assert!(promote_hex_blob("803F20", bf).is_err());
        assert!(promote_hex_blob("zz", bf).is_err());
        let c = Element {
            narrow: Narrow::F32,
            complex: true,
        };
        assert_eq!(
            promote_hex_blob(&f32_hex(&[1.0, 2.0]), c).unwrap(),
            f64_hex(&[1.0, 2.0])
        );
        assert!(promote_hex_blob(&f32_hex(&[1.0]), c).is_err());
    }
}
