//! The reproducer's `@check` wrapper: `@repro` fed from numpy-friendly types
//! (bf16 arguments as f32) with every float result widened to f64, so the
//! expected values can be the higher-precision reference itself.

use super::{CHECK_FUNCTION, REPRO_FUNCTION};
use parity_mlir::Type;
use std::fmt::Write as _;

/// The element type of a tensor type's text (`tensor<4x8xbf16>` -> `bf16`).
fn element_of(ty: &str) -> &str {
    ty.strip_suffix('>')
        .and_then(|t| t.rsplit(['x', '<']).next())
        .unwrap_or("")
}

/// `tensor<4x8xbf16>` with another element type.
fn with_element(ty: &str, element: &str) -> Option<String> {
    let body = ty.strip_suffix('>')?;
    let cut = body.rfind(['x', '<'])?;
    Some(format!("{}{element}>", &body[..=cut]))
}

/// Appends `@check` to the module: bf16 arguments taken as f32 and
/// converted, float results converted to f64, everything else passed through.
pub(super) fn insert_check(
    text: &mut String,
    args: &[&str],
    results: &[&str],
) -> Result<(), String> {
    let end = text
        .rfind('}')
        .ok_or("the reproducer module has no closing brace")?;
    let mut body = String::new();
    let mut outer_args = Vec::new();
    let mut call_args = Vec::new();
    for (k, ty) in args.iter().enumerate() {
        if element_of(ty) == "bf16" {
            let wide = with_element(ty, "f32").ok_or_else(|| format!("argument type {ty}"))?;
            let _ = writeln!(
                body,
                "    %n{k} = stablehlo.convert %a{k} : ({wide}) -> {ty}"
            );
            outer_args.push(format!("%a{k}: {wide}"));
            call_args.push(format!("%n{k}"));
        } else {
            outer_args.push(format!("%a{k}: {ty}"));
            call_args.push(format!("%a{k}"));
        }
    }
    let single = results.len() == 1;
    let result = |k: usize| {
        if single {
            "%r".to_string()
        } else {
            format!("%r#{k}")
        }
    };
    let _ = writeln!(
        body,
        "    {} = func.call @{REPRO_FUNCTION}({}) : ({}) -> ({})",
        if single {
            "%r".to_string()
        } else {
            format!("%r:{}", results.len())
        },
        call_args.join(", "),
        args.join(", "),
        results.join(", ")
    );
    let mut outs = Vec::new();
    let mut out_types = Vec::new();
    for (k, ty) in results.iter().enumerate() {
        if Type::new(*ty).is_float() && element_of(ty) != "f64" {
            let wide = with_element(ty, "f64").ok_or_else(|| format!("result type {ty}"))?;
            let _ = writeln!(
                body,
                "    %w{k} = stablehlo.convert {} : ({ty}) -> {wide}",
                result(k)
            );
            outs.push(format!("%w{k}"));
            out_types.push(wide);
        } else {
            outs.push(result(k));
            out_types.push(ty.to_string());
        }
    }
    let _ = writeln!(
        body,
        "    return {} : {}",
        outs.join(", "),
        out_types.join(", ")
    );
    let wrapper = format!(
        "  func.func public @{CHECK_FUNCTION}({}) -> ({}) {{\n{body}  }}\n",
        outer_args.join(", "),
        out_types.join(", ")
    );
    text.insert_str(end, &wrapper);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_types_are_read_and_replaced() {
        assert_eq!(element_of("tensor<4x8xbf16>"), "bf16");
        assert_eq!(element_of("tensor<f32>"), "f32");
        assert_eq!(
            with_element("tensor<4x8xbf16>", "f32").as_deref(),
            Some("tensor<4x8xf32>")
        );
        assert_eq!(
            with_element("tensor<f32>", "f64").as_deref(),
            Some("tensor<f64>")
        );
    }

    #[test]
    fn the_check_wrapper_converts_bf16_in_and_floats_out() {
        let mut text = "module @m {\n  func.func public @repro() {}\n}\n".to_string();
        insert_check(
            &mut text,
            &["tensor<4xbf16>", "tensor<4xi32>"],
            &["tensor<4xbf16>", "tensor<4xi32>"],
        )
        .unwrap();
        assert!(text.contains("@check(%a0: tensor<4xf32>, %a1: tensor<4xi32>)"));
        assert!(text.contains("%n0 = stablehlo.convert %a0 : (tensor<4xf32>) -> tensor<4xbf16>"));
        assert!(text.contains("%r:2 = func.call @repro(%n0, %a1)"));
        assert!(text.contains("%w0 = stablehlo.convert %r#0 : (tensor<4xbf16>) -> tensor<4xf64>"));
        assert!(text.contains("return %w0, %r#1 : tensor<4xf64>, tensor<4xi32>"));
        assert!(text.trim_end().ends_with('}'));
    }
}
