//! Tolerance lists: YAML nodes to `parity_compare::Criterion`.
//!
//! `Criterion` derives `Deserialize`; we go through `serde_json::Value` so the
//! compare crate stays the single definition of the criterion syntax, while
//! errors still point at the YAML node that holds the criterion.

use crate::reader::Cx;
use crate::yaml::{truncate, Node, Value};
use crate::SpecError;
use parity_compare::Criterion;
use serde::Deserialize;
use serde_json::{Map, Number, Value as Json};

/// Converts a node to JSON using the YAML 1.2 core schema for plain scalars.
fn to_json(cx: &Cx<'_>, node: &Node) -> Result<Json, SpecError> {
    Ok(match &node.value {
        Value::Scalar { text, .. } => {
            if node.is_null() {
                Json::Null
            } else if let Some(b) = node.as_bool() {
                Json::Bool(b)
            } else if let Some(i) = node.as_i128() {
                if let Ok(u) = u64::try_from(i) {
                    Json::Number(u.into())
                } else if let Ok(s) = i64::try_from(i) {
                    Json::Number(s.into())
                } else {
                    return Err(cx.invalid(node, format!("integer `{text}` is out of range")));
                }
            } else if let Some(f) = node.as_f64() {
                match Number::from_f64(f) {
                    Some(n) => Json::Number(n),
                    None => {
                        return Err(
                            cx.invalid(node, format!("tolerance value `{text}` must be finite"))
                        )
                    }
                }
            } else {
                Json::String(text.clone())
            }
        }
        Value::Seq(items) => Json::Array(
            items
                .iter()
                .map(|n| to_json(cx, n))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(pairs) => {
            let mut map = Map::new();
            for (k, v) in pairs {
                let key = cx.string(k, "key")?;
                map.insert(key, to_json(cx, v)?);
            }
            Json::Object(map)
        }
    })
}

/// Reads one criterion, e.g. `{max_abs: 1e-5}`, `{allclose: {atol: 1e-5, rtol: 0}}` or `exact`.
pub(crate) fn criterion(cx: &Cx<'_>, node: &Node) -> Result<Criterion, SpecError> {
    let json = to_json(cx, node)?;
    let shown = truncate(&json.to_string(), 80);
    let parsed = Criterion::deserialize(json).map_err(|e| {
        cx.invalid(
            node,
            format!(
                "invalid tolerance criterion {shown}: {e} \
                 (e.g. {{max_abs: 1e-5}}, {{max_ulp: 4}}, {{allclose: {{atol: 1e-5, rtol: 1e-6}}}}, exact)"
            ),
        )
    })?;
    check_values(cx, node, &parsed)?;
    Ok(parsed)
}

/// Rejects thresholds that can never mean what the user intended.
fn check_values(cx: &Cx<'_>, node: &Node, c: &Criterion) -> Result<(), SpecError> {
    let bad = |what: &str| Err(cx.invalid(node, format!("tolerance criterion: {what}")));
    match c {
        Criterion::MaxAbs(v) | Criterion::Rms(v) | Criterion::RelL2(v) if *v < 0.0 => {
            bad("threshold must not be negative")
        }
        Criterion::CosineMin(v) if !(-1.0..=1.0).contains(v) => {
            bad("cosine_min must be in [-1, 1]")
        }
        Criterion::Allclose {
            atol,
            rtol,
            max_fraction,
        } if *atol < 0.0 || *rtol < 0.0 || !(0.0..=1.0).contains(max_fraction) => {
            bad("allclose needs atol >= 0, rtol >= 0 and max_fraction in [0, 1]")
        }
        Criterion::UlpQuantile { q, .. } if !(0.0..=1.0).contains(q) => {
            bad("ulp_quantile q must be in [0, 1]")
        }
        Criterion::VsF64 { factor, tol } if *factor < 0.0 || *tol < 0.0 => {
            bad("vs_f64 needs factor >= 0 and tol >= 0")
        }
        _ => Ok(()),
    }
}

/// Reads a tolerance: a list of criteria that must all hold.
pub(crate) fn tolerance(
    cx: &Cx<'_>,
    node: &Node,
    field: &str,
) -> Result<Vec<Criterion>, SpecError> {
    let items = cx.list(node, field)?;
    if items.is_empty() {
        return Err(cx.invalid(
            node,
            format!("`{field}` is an empty list; give at least one criterion"),
        ));
    }
    items.iter().map(|n| criterion(cx, n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Scope;
    use crate::yaml::parse_document;
    use std::path::Path;

    fn parse(text: &str) -> Result<Vec<Criterion>, SpecError> {
        let file = Path::new("s.yaml");
        let node = parse_document(text, file)?;
        let cx = Cx {
            file,
            scope: Scope::Stage("st".into()),
        };
        tolerance(&cx, &node, "tolerance")
    }

    #[test]
    fn all_forms_parse() {
        let got = parse(
            "[{max_abs: 1e-5}, {rms: 1}, {max_ulp: 64}, exact, \
             {allclose: {atol: 1e-5, rtol: 1.3e-6}}, {ulp_quantile: {q: 0.99, max: 4}}, \
             {vs_f64: {factor: 2}}]",
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Criterion::MaxAbs(1e-5),
                Criterion::Rms(1.0),
                Criterion::MaxUlp(64),
                Criterion::Exact,
                Criterion::Allclose {
                    atol: 1e-5,
                    rtol: 1.3e-6,
                    max_fraction: 0.0
                },
                Criterion::UlpQuantile { q: 0.99, max: 4 },
                Criterion::VsF64 {
                    factor: 2.0,
                    tol: 0.0
                },
            ]
        );
    }

    #[test]
    fn bad_criteria_point_at_the_item() {
        let err = parse("- {max_abs: 1e-5}\n- {max_abz: 1}\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("s.yaml:2:3: stage `st`: invalid tolerance criterion"),
            "{err}"
        );
        assert!(err.contains("max_abz"), "{err}");
        let err = parse("[{max_ulp: 1.5}]").unwrap_err().to_string();
        assert!(err.contains("s.yaml:1:2"), "{err}");
        let err = parse("[{max_abs: -1}]").unwrap_err().to_string();
        assert!(err.contains("must not be negative"), "{err}");
        let err = parse("[{max_abs: .nan}]").unwrap_err().to_string();
        assert!(err.contains("must be finite"), "{err}");
        let err = parse("[]").unwrap_err().to_string();
        assert!(err.contains("empty list"), "{err}");
        let err = parse("{max_abs: 1}").unwrap_err().to_string();
        assert!(err.contains("must be a list"), "{err}");
    }
}
