//! Property test of the parameter-declaration reader: any scope and key
//! (quotes, backslashes, `::`, `>`, non-ASCII), any static tensor type, in
//! the pretty and the generic form, among other globals, read back exactly.

use parity_mlir::{parameter_globals, ParameterGlobal, Type};
use proptest::prelude::*;

/// `s` as an MLIR string literal body (the escapes MLIR prints).
fn escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\22"),
            b'\\' => out.push_str("\\\\"),
            b if !(0x20..0x7f).contains(&b) => out.push_str(&format!("\\{b:02X}")),
            b => out.push(b as char),
        }
    }
    out
}

fn name() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9_.:<>\"\\\\ é/-]{0,12}").unwrap()
}

fn tensor_type() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(1usize..9, 0..4),
        prop_oneof![
            Just("f32"),
            Just("bf16"),
            Just("f16"),
            Just("i8"),
            Just("i32")
        ],
    )
        .prop_map(|(dims, el)| {
            let dims: String = dims.iter().map(|d| format!("{d}x")).collect();
            format!("tensor<{dims}{el}>")
        })
}

proptest! {
    #[test]
    fn declarations_read_back(
        params in proptest::collection::vec((name(), name(), tensor_type(), any::<bool>()), 0..5),
    ) {
        let mut src = String::from("module {\n  util.global private @plain = dense<0.0> : tensor<2xf32>\n");
        let mut want = Vec::new();
        for (i, (scope, key, ty, generic)) in params.iter().enumerate() {
            let attr = if scope.is_empty() {
                format!("#flow.parameter.named<\"{}\">", escape(key))
            } else {
                format!("#flow.parameter.named<\"{}\"::\"{}\">", escape(scope), escape(key))
            };
            let line = src.lines().count() + 1;
            if *generic {
                src.push_str(&format!(
                    "  \"util.global\"() <{{initial_value = {attr} : {ty}, sym_name = \"g{i}\", sym_visibility = \"private\", type = {ty}}}> : () -> ()\n"
                ));
            } else {
                src.push_str(&format!("  util.global private @g{i} = {attr} : {ty}\n"));
            }
            want.push(ParameterGlobal {
                scope: scope.clone(),
                key: key.clone(),
                global: Some(format!("g{i}")),
                ty: Type::new(ty.clone()),
                line,
            });
        }
        src.push_str("}\n");
        let got = parameter_globals(&src).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
        prop_assert_eq!(got, want, "{}", src);
    }

    #[test]
    fn arbitrary_text_never_panics(src in "[#a-z.<>\":=@ \\\\\n]{0,80}") {
        let _ = parameter_globals(&src);
        let with_marker = format!("#flow.parameter.named<{src}");
        let _ = parameter_globals(&with_marker);
    }
}
