//! How bisect measures a value against a reference: max abs error in ULPs of
//! the budget dtype at the reference's largest magnitude, which stays
//! meaningful near zero and across a cancellation (unlike per-element ULPs).

use super::error::BisectError;
use parity_compare::{compare, CompareOptions};
use parity_mlir::{Function, Location, ValueId};
use parity_record::ValueMetrics;
use parity_spec::Stage;
use parity_tensor::{DType, OracleStore, Tensor};

/// An operation's own error above this many ULPs is more than rounding explains.
pub const LOCAL_ULP_BUDGET: f64 = 64.0;

/// A checkpoint found by the naming convention passes within this many ULPs.
pub const CHECKPOINT_ULP_BUDGET: f64 = 64.0;

/// The dtype whose rounding errors are measured in: the failing output's
/// `ulp_dtype`, else f32.
pub fn budget_dtype(stage: &Stage, output: Option<&str>) -> DType {
    stage
        .outputs
        .iter()
        .find(|o| Some(o.name.as_str()) == output)
        .and_then(|o| o.ulp_dtype)
        .unwrap_or(DType::F32)
}

/// Machine epsilon (spacing at 1) of a float dtype.
fn eps(d: DType) -> f64 {
    match d {
        DType::Bf16 => 2f64.powi(-7),
        DType::F16 => 2f64.powi(-10),
        DType::F64 => 2f64.powi(-52),
        _ => 2f64.powi(-23),
    }
}

/// One ULP of `budget` at magnitude `m`.
pub fn ulp_at(m: f64, budget: DType) -> f64 {
    if m > 0.0 && m.is_finite() {
        eps(budget) * 2f64.powi(m.log2().floor() as i32)
    } else {
        eps(budget) * f64::MIN_POSITIVE
    }
}

/// The largest finite |x| of a tensor (0 when there is none).
pub fn max_finite_abs(t: &Tensor) -> f64 {
    t.to_f64_vec()
        .iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |a, &x| a.max(x.abs()))
}

/// Compares `actual` (value `v`) with `reference`.
pub fn value_metrics(
    func: &Function,
    v: ValueId,
    actual: &Tensor,
    reference: &Tensor,
    against: &str,
    budget: DType,
) -> Result<ValueMetrics, BisectError> {
    let name = &func.values[v].name;
    let m = compare(actual, reference, None, &CompareOptions::default()).map_err(|source| {
        BisectError::Compare {
            value: name.clone(),
            against: against.to_string(),
            source,
        }
    })?;
    let max_ref = max_finite_abs(reference);
    let nonfinite = nonfinite_where_finite(actual, reference).len() as u64;
    let ulps_at_max = if m.nan_mismatch > 0 || m.inf_mismatch > 0 {
        f64::INFINITY
    } else {
        m.max_abs / ulp_at(max_ref, budget)
    };
    Ok(ValueMetrics {
        value: name.clone(),
        against: against.to_string(),
        max_abs: m.max_abs,
        rms: m.rms,
        max_ref,
        ulps_at_max,
        nonfinite,
    })
}

/// Indices where `actual` is NaN or infinite and `reference` is finite
/// (all of them when the shapes differ in element count: nothing lines up).
pub fn nonfinite_where_finite(actual: &Tensor, reference: &Tensor) -> Vec<usize> {
    let a = actual.to_f64_vec();
    let r = reference.to_f64_vec();
    if a.len() != r.len() {
        return (0..a.len()).filter(|&i| !a[i].is_finite()).collect();
    }
    a.iter()
        .zip(&r)
        .enumerate()
        .filter(|(_, (x, y))| !x.is_finite() && y.is_finite())
        .map(|(i, _)| i)
        .collect()
}

/// Whether every element is finite.
pub fn all_finite(t: &Tensor) -> bool {
    t.to_f64_vec().iter().all(|x| x.is_finite())
}

/// Shape without unit dimensions.
pub fn squeezed(shape: &[usize]) -> Vec<usize> {
    shape.iter().copied().filter(|&d| d != 1).collect()
}

/// An oracle tensor shaped like value `v` (reshaped when they differ only by
/// unit dimensions: an oracle that squeezes [1,32,1,1] to [1,32] still names
/// the same elements in the same order).
pub fn oracle_as(
    store: &OracleStore,
    name: &str,
    func: &Function,
    v: ValueId,
) -> Result<Tensor, BisectError> {
    let t = store
        .get(name)
        .map_err(|source| BisectError::OracleTensor {
            tensor: name.to_string(),
            source: Box::new(source),
        })?;
    match func.values[v].ty.shape() {
        Some(shape) if shape != t.shape() && squeezed(&shape) == squeezed(t.shape()) => t
            .reshaped(shape.clone())
            .ok_or_else(|| BisectError::OracleShape {
                tensor: name.to_string(),
                shape: shape.clone(),
            }),
        _ => Ok(t),
    }
}

/// A location for people: its named-scope path, else its innermost source
/// frame (`model.mlir:12:5` for hand-written MLIR), else the raw location
/// shortened: never a whole traceback (about 2 KB an op from JAX).
pub fn loc_label(loc: &Location) -> String {
    loc.path().unwrap_or_else(|| loc.brief().label())
}

/// `#12 %57 = stablehlo.rsqrt @ path`.
pub fn op_line(func: &Function, o: usize) -> String {
    let op = &func.ops[o];
    format!(
        "#{o} {} = {} @ {}",
        op.results
            .iter()
            .map(|&r| func.values[r].name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        op.name,
        loc_label(&op.loc)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulps_scale_with_magnitude_and_dtype() {
        assert_eq!(ulp_at(1.0, DType::F32), 2f64.powi(-23));
        assert_eq!(ulp_at(1.5, DType::F32), 2f64.powi(-23));
        assert_eq!(ulp_at(40.0, DType::F32), 2f64.powi(-23) * 32.0);
        assert_eq!(ulp_at(0.25, DType::Bf16), 2f64.powi(-9));
        assert!(ulp_at(0.0, DType::F32) > 0.0);
    }

    #[test]
    fn nonfinite_positions_count_only_where_the_reference_is_finite() {
        let a = Tensor::from_f32(vec![4], &[f32::NAN, 1.0, f32::INFINITY, f32::NAN]).unwrap();
        let r = Tensor::from_f32(vec![4], &[0.0, 1.0, 2.0, f32::NAN]).unwrap();
        assert_eq!(nonfinite_where_finite(&a, &r), vec![0, 2]);
        assert!(!all_finite(&a));
        assert!(all_finite(
            &Tensor::from_f32(vec![2], &[1.0, -3.0]).unwrap()
        ));
    }

    #[test]
    fn squeeze_ignores_unit_dimensions_only() {
        assert_eq!(squeezed(&[1, 32, 1, 1]), vec![32]);
        assert_eq!(squeezed(&[1, 32]), squeezed(&[32, 1]));
        assert_ne!(squeezed(&[2, 32]), squeezed(&[32, 2]));
    }
}
