//! Targets for the text formats: the stages spec (YAML) and generic-form MLIR.

use parity_mlir::SliceRequest;
use std::path::Path;

/// stages.yaml text: parse and validate (which also instantiates every case),
/// then walk the stage graph. Relative module paths resolve against
/// `examples/basic/`, so specs naming its modules get past the file checks.
pub fn spec(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/basic/fuzz-stages.yaml");
    let Ok(spec) = parity_spec::Spec::parse_str(text, &path) else {
        return;
    };
    let order = spec.topo_order();
    assert_eq!(
        order.len(),
        spec.stages.len(),
        "topo_order lost or repeated stages"
    );
    for stage in &spec.stages {
        assert!(
            spec.stage(&stage.name).is_some(),
            "stage `{}` not found by name",
            stage.name
        );
    }
}

/// Generic-form MLIR text: the nesting bound checked before the compiler
/// (any bytes), then parse into the SSA graph, resolve every named scope, cut
/// one slice per function, and promote the text to f64.
pub fn mlir(data: &[u8]) {
    if let Err(e) = parity_mlir::check_nesting(data) {
        assert!(
            e.line >= 1 && e.col >= 1,
            "nesting error without a position: {e}"
        );
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(module) = parity_mlir::parse(text) {
        for func in &module.functions {
            // resolve_point trims what the user typed and reads `%...` as an SSA
            // name, so scopes spelled so (a location string can be) are not nameable.
            let nameable = |s: &str| s.trim() == s && !s.starts_with('%');
            for (scope, value) in func
                .scope_outputs()
                .into_iter()
                .filter(|(s, _)| nameable(s))
            {
                assert_eq!(
                    func.resolve_point(&scope).ok(),
                    Some(value),
                    "scope `{scope}` of @{} does not resolve to itself",
                    func.name
                );
            }
            let req = SliceRequest {
                name: "fuzz_slice".into(),
                from: func.args.iter().copied().take(1).collect(),
                to: func.results.clone(),
            };
            let _ = parity_mlir::emit_slices(&module, func, "fuzz", &[req]);
        }
    }
    let _ = parity_mlir::promote_to_f64(text);
}
