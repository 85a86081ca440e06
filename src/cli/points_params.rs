//! The parameters part of `parity points`: the `#flow.parameter.named`
//! globals a module reads, which `subject.parameters` files must hold.

use serde::Serialize;

/// One parameter global: what `subject.parameters` files must hold.
#[derive(Serialize)]
pub(super) struct ParameterJson {
    scope: String,
    key: String,
    /// The global's symbol, without `@`.
    #[serde(skip_serializing_if = "Option::is_none")]
    global: Option<String>,
    #[serde(rename = "type")]
    ty: String,
    /// Its line in the module as given.
    line: usize,
}

/// The parameters `path` declares, read from its text as given (an
/// unreadable declaration is the spec preflight's to report; none here).
pub(super) fn parameters_of(path: &std::path::Path) -> Vec<ParameterJson> {
    let Ok(bytes) = parity_tensor::read_module_bytes(path) else {
        return Vec::new();
    };
    parity_mlir::parameter_globals(&String::from_utf8_lossy(&bytes))
        .unwrap_or_default()
        .into_iter()
        .map(|p| ParameterJson {
            scope: p.scope,
            key: p.key,
            global: p.global,
            ty: p.ty.text,
            line: p.line,
        })
        .collect()
}

/// The listing's parameters section (empty without parameters); names
/// quoted as the scope tree's points are, so terminal controls are shown.
pub(super) fn listing(parameters: &[ParameterJson]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if parameters.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nparameters (scope::key, global, type; files given by subject.parameters):"
    );
    for p in parameters {
        let name = if p.scope.is_empty() {
            super::points::quoted_name(&p.key)
        } else {
            format!(
                "{}::{}",
                super::points::quoted_name(&p.scope),
                super::points::quoted_name(&p.key)
            )
        };
        let global = p
            .global
            .as_deref()
            .map(|g| format!("@{g}"))
            .unwrap_or_default();
        let _ = writeln!(s, "  {name}  {global}  {}", p.ty);
    }
    s
}
