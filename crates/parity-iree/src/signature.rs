//! Typed function signatures, parsed from IREE's ABI declaration text
//! (`iree.abi.declaration`, see [`crate::LoadedModule::declaration`]), e.g.
//! `sync func @add(%input0: tensor<4xf32>, %input1: tensor<?x4xbf16>) -> (%output0: tensor<4xf32>)`.
//!
//! The runner checks a stage's arguments against this before invoking, so a
//! wrong count, dtype or shape is an input error at the stage's position in
//! stages.yaml instead of a runtime failure inside IREE.

use parity_tensor::DType;

/// One argument or result type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// `tensor<...>`: dimensions (None for a dynamic `?`) and the element type as written.
    Tensor {
        /// Each dimension; None where the declaration says `?`.
        dims: Vec<Option<usize>>,
        /// The MLIR element type, e.g. `f32`, `bf16`, `i1`, `ui8`.
        element: String,
    },
    /// Anything else (a scalar, a buffer view, a list): not checked.
    Other(String),
}

/// A function's argument and result types, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Argument types.
    pub args: Vec<ValueType>,
    /// Result types.
    pub results: Vec<ValueType>,
}

impl ValueType {
    /// Why `dtype`/`shape` cannot be passed as this type, or None when it fits
    /// (or the type is not one parity can check).
    pub fn mismatch(&self, dtype: DType, shape: &[usize]) -> Option<String> {
        let ValueType::Tensor { dims, element } = self else {
            return None;
        };
        if accepts(element, dtype) == Some(false) {
            return Some(format!("dtype {dtype} but the function takes {self}"));
        }
        let fits = dims.len() == shape.len()
            && dims
                .iter()
                .zip(shape)
                .all(|(d, s)| d.is_none_or(|d| d == *s));
        (!fits).then(|| format!("shape {shape:?} but the function takes {self}"))
    }
}

impl std::fmt::Display for ValueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueType::Tensor { dims, element } => {
                f.write_str("tensor<")?;
                for d in dims {
                    match d {
                        Some(n) => write!(f, "{n}x")?,
                        None => f.write_str("?x")?,
                    }
                }
                write!(f, "{element}>")
            }
            ValueType::Other(text) => f.write_str(text),
        }
    }
}

/// Whether an MLIR element type takes a parity dtype; None for element types
/// parity has no dtype for (then nothing is checked). Signless integers take
/// the signed dtype of their width, and `i8` also `u8`.
fn accepts(element: &str, dtype: DType) -> Option<bool> {
    let ok: &[DType] = match element {
        "i1" => &[DType::Bool],
        "i8" => &[DType::I8, DType::U8],
        "si8" => &[DType::I8],
        "ui8" => &[DType::U8],
        "i16" | "si16" => &[DType::I16],
        "i32" | "si32" => &[DType::I32],
        "i64" | "si64" => &[DType::I64],
        "f16" => &[DType::F16],
        "bf16" => &[DType::Bf16],
        "f32" => &[DType::F32],
        "f64" => &[DType::F64],
        _ => return None,
    };
    Some(ok.contains(&dtype))
}

/// Parses a declaration; Err says what could not be read.
pub fn parse_declaration(text: &str) -> Result<Signature, String> {
    let text = text.trim();
    let rest = text
        .strip_prefix("sync ")
        .or_else(|| text.strip_prefix("async "))
        .unwrap_or(text);
    let rest = rest
        .strip_prefix("func @")
        .ok_or_else(|| format!("expected `func @name(...)`, got `{text}`"))?;
    let open = rest.find('(').ok_or("no argument list")?;
    let (args, after) = bracketed(&rest[open..]).ok_or("unbalanced argument list")?;
    let after = after.trim();
    let results = if after.is_empty() {
        Vec::new()
    } else {
        let after = after
            .strip_prefix("->")
            .ok_or_else(|| format!("expected `->` after the arguments, got `{after}`"))?
            .trim();
        if after.starts_with('(') {
            let (inner, tail) = bracketed(after).ok_or("unbalanced result list")?;
            if !tail.trim().is_empty() {
                return Err(format!("unexpected `{}` after the results", tail.trim()));
            }
            parse_list(inner)?
        } else {
            parse_list(after)?
        }
    };
    Ok(Signature {
        args: parse_list(args)?,
        results,
    })
}

/// Splits `(inner)rest` at the matching parenthesis.
fn bracketed(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            ')' | '>' | ']' | '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some((&s[1..i], &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses a comma-separated list of `%name: type` or bare types.
fn parse_list(s: &str) -> Result<Vec<ValueType>, String> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            ')' | '>' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    items
        .into_iter()
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(parse_item)
        .collect()
}

/// One `%name: type` (or bare type).
fn parse_item(item: &str) -> Result<ValueType, String> {
    let ty = match item.strip_prefix('%') {
        Some(named) => named
            .split_once(':')
            .map(|(_, ty)| ty.trim())
            .ok_or_else(|| format!("`{item}` has no type"))?,
        None => item,
    };
    let Some(body) = ty.strip_prefix("tensor<").and_then(|t| t.strip_suffix('>')) else {
        return Ok(ValueType::Other(ty.to_string()));
    };
    // An encoding (`tensor<4xf32, #enc>`) does not change what parity passes.
    let body = body.split(',').next().unwrap_or(body).trim();
    let mut parts: Vec<&str> = body.split('x').collect();
    let element = parts.pop().unwrap_or_default().trim().to_string();
    if element.is_empty() {
        return Err(format!("`{ty}` has no element type"));
    }
    let dims = parts
        .into_iter()
        .map(|d| match d.trim() {
            "?" => Ok(None),
            n => n
                .parse::<usize>()
                .map(Some)
                .map_err(|_| format!("`{ty}`: bad dimension `{n}`")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ValueType::Tensor { dims, element })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(dims: &[Option<usize>], element: &str) -> ValueType {
        ValueType::Tensor {
            dims: dims.to_vec(),
            element: element.into(),
        }
    }

    #[test]
    fn parses_iree_declarations() {
        let sig = parse_declaration(
            "sync func @add(%input0: tensor<4xf32>, %input1: tensor<?x4xbf16>) -> (%output0: tensor<4xf32>)",
        )
        .unwrap();
        assert_eq!(
            sig.args,
            vec![t(&[Some(4)], "f32"), t(&[None, Some(4)], "bf16")]
        );
        assert_eq!(sig.results, vec![t(&[Some(4)], "f32")]);
        let sig = parse_declaration("sync func @s(%input0: tensor<i32>) -> (%output0: tensor<2x3xi1>, %output1: tensor<f64>)").unwrap();
        assert_eq!(sig.args, vec![t(&[], "i32")]);
        assert_eq!(
            sig.results,
            vec![t(&[Some(2), Some(3)], "i1"), t(&[], "f64")]
        );
        let sig = parse_declaration("async func @n()").unwrap();
        assert!(sig.args.is_empty() && sig.results.is_empty());
        let sig =
            parse_declaration("sync func @o(%input0: !hal.buffer_view) -> tensor<2xf32, #enc>")
                .unwrap();
        assert_eq!(sig.args, vec![ValueType::Other("!hal.buffer_view".into())]);
        assert_eq!(sig.results, vec![t(&[Some(2)], "f32")]);
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        for bad in [
            "",
            "func add()",
            "sync func @f(%a: tensor<4xf32>",
            "sync func @f(%a) -> ()",
            "sync func @f(%a: tensor<4xqxf32>)",
            "sync func @f() => ()",
        ] {
            assert!(parse_declaration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mismatches_name_what_differs() {
        let ty = t(&[None, Some(4)], "f32");
        assert_eq!(ty.mismatch(DType::F32, &[7, 4]), None);
        let m = ty.mismatch(DType::F16, &[7, 4]).unwrap();
        assert!(
            m.contains("dtype f16") && m.contains("tensor<?x4xf32>"),
            "{m}"
        );
        let m = ty.mismatch(DType::F32, &[7, 5]).unwrap();
        assert!(m.contains("shape [7, 5]"), "{m}");
        assert!(ty.mismatch(DType::F32, &[4]).is_some());
        assert_eq!(t(&[], "i8").mismatch(DType::U8, &[]), None);
        assert_eq!(t(&[], "f8E4M3FN").mismatch(DType::U8, &[]), None);
        assert_eq!(
            ValueType::Other("i32".into()).mismatch(DType::F32, &[3]),
            None
        );
    }

    proptest! {
        #[test]
        fn display_round_trips(dims in proptest::collection::vec(proptest::option::of(0usize..100), 0..5),
                               element in prop_oneof!["f32", "bf16", "i1", "i64"]) {
            let ty = t(&dims, &element);
            let decl = format!("sync func @f(%input0: {ty}) -> (%output0: {ty}, %output1: {ty})");
            let sig = parse_declaration(&decl).unwrap();
            prop_assert_eq!(sig.args, vec![ty.clone()]);
            prop_assert_eq!(sig.results, vec![ty.clone(), ty]);
        }

        #[test]
        fn never_panics(text in ".{0,80}") {
            let _ = parse_declaration(&text);
        }
    }
}
