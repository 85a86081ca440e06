//! MLIR types, kept as text with a few structural queries.

/// A type as printed: `tensor<1x64xf32>`, `tensor<i1>`, `!stablehlo.token`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Type {
    /// The printed text.
    pub text: String,
}

/// A ranked or unranked tensor type split into its dimensions and element type.
pub(crate) struct TensorParts<'a> {
    /// Dimensions as written (`4`, `?`, `*`); empty for a rank-0 tensor.
    pub(crate) dims: Vec<&'a str>,
    /// The element type text: `f32`, `complex<f32>`, `index`.
    pub(crate) element: &'a str,
    /// Byte offset of `element` within the text given to [`tensor_parts`].
    pub(crate) element_offset: usize,
}

/// Splits `tensor<...>` into dimensions and element type (an encoding after `,` is ignored).
pub(crate) fn tensor_parts(text: &str) -> Option<TensorParts<'_>> {
    let body = text.strip_prefix("tensor<")?.strip_suffix('>')?;
    let body_offset = "tensor<".len();
    let bytes = body.as_bytes();
    let mut dims = Vec::new();
    let mut pos = 0;
    loop {
        let start = pos;
        if bytes.get(pos) == Some(&b'*') || bytes.get(pos) == Some(&b'?') {
            pos += 1;
        } else {
            while bytes.get(pos).is_some_and(|b| b.is_ascii_digit()) {
                pos += 1;
            }
        }
        if pos > start && bytes.get(pos) == Some(&b'x') {
            dims.push(&body[start..pos]);
            pos += 1;
        } else {
            pos = start;
            break;
        }
    }
    // The element type runs to the end or to a top-level `,` (an encoding).
    let rest = &body[pos..];
    let mut depth = 0usize;
    let mut end = rest.len();
    for (i, b) in rest.bytes().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let element = rest[..end].trim();
    if element.is_empty() {
        return None;
    }
    Some(TensorParts {
        dims,
        element,
        element_offset: body_offset + pos,
    })
}

/// Whether an element type name is a floating-point type (`f32`, `bf16`, `f8E4M3FN`, `tf32`).
pub(crate) fn is_float_name(name: &str) -> bool {
    let b = name.as_bytes();
    name == "bf16" || name == "tf32" || (b.len() >= 2 && b[0] == b'f' && b[1].is_ascii_digit())
}

impl Type {
    /// Wraps printed type text.
    pub fn new(text: impl Into<String>) -> Self {
        Type { text: text.into() }
    }

    /// The element type of a tensor (`f32`, `bf16`, `i1`, `ui8`, `complex<f32>`), or the type
    /// itself when it is a bare integer or float type; `None` otherwise.
    pub fn element(&self) -> Option<&str> {
        if let Some(parts) = tensor_parts(&self.text) {
            return Some(parts.element);
        }
        let t = self.text.as_str();
        let is_int = |s: &str| {
            let digits = s
                .strip_prefix("ui")
                .or_else(|| s.strip_prefix("si"))
                .or_else(|| s.strip_prefix('i'));
            digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        };
        (is_float_name(t) || is_int(t) || t == "index").then_some(t)
    }

    /// The static shape of a ranked tensor (`[]` for `tensor<f32>`); `None` for dynamic or
    /// unranked tensors and non-tensor types.
    pub fn shape(&self) -> Option<Vec<usize>> {
        let parts = tensor_parts(&self.text)?;
        parts.dims.iter().map(|d| d.parse().ok()).collect()
    }

    /// Whether the (element) type is a floating-point type.
    pub fn is_float(&self) -> bool {
        self.element().is_some_and(is_float_name)
    }
}

impl std::fmt::Display for Type {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_queries() {
        let t = Type::new("tensor<1x32x64xf32>");
        assert_eq!(t.element(), Some("f32"));
        assert_eq!(t.shape(), Some(vec![1, 32, 64]));
        assert!(t.is_float());
        let s = Type::new("tensor<f32>");
        assert_eq!(s.shape(), Some(vec![]));
        let b = Type::new("tensor<1x32xi1>");
        assert_eq!(b.element(), Some("i1"));
        assert!(!b.is_float());
        assert_eq!(Type::new("tensor<4xindex>").element(), Some("index"));
        assert_eq!(Type::new("tensor<?x4xbf16>").shape(), None);
        assert_eq!(Type::new("tensor<?x4xbf16>").element(), Some("bf16"));
        assert_eq!(Type::new("tensor<*xf16>").shape(), None);
        assert_eq!(Type::new("tensor<2xui8>").element(), Some("ui8"));
        assert_eq!(
            Type::new("tensor<2xcomplex<f32>>").element(),
            Some("complex<f32>")
        );
        assert!(!Type::new("tensor<2xcomplex<f32>>").is_float());
        assert_eq!(Type::new("tensor<3xf32, #enc>").shape(), Some(vec![3]));
        assert_eq!(Type::new("f64").element(), Some("f64"));
        assert_eq!(Type::new("f64").shape(), None);
        assert_eq!(Type::new("!stablehlo.token").element(), None);
        assert!(Type::new("tensor<8xf8E4M3FN>").is_float());
    }
}
