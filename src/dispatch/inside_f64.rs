//! The operation named inside a dispatch, run alone in f64 on the CPU from
//! the reference target's operands: the truth that says which target's
//! result is off (bisect's f64 shadow, one operation wide).

use super::inside::cut;
use super::stage::Env;
use parity_iree::{CompileOptions, IreeRuntime};
use parity_mlir::{Function, Module, ValueId};
use parity_record::InsideVsF64;
use parity_tensor::Tensor;
use std::collections::HashMap;

/// A target is `off` when its error is at least this many times the other's.
const OFF_FACTOR: f64 = 2.0;

/// The op `o`'s result `result` in f64, from `values` (the reference
/// target's tensors by value), against each target's result there.
#[allow(clippy::too_many_arguments)]
pub fn vs_f64(
    env: &Env,
    module: &Module,
    func: &Function,
    o: usize,
    result: ValueId,
    values: &HashMap<ValueId, Tensor>,
    reference: &Tensor,
    tested: &Tensor,
) -> Result<InsideVsF64, String> {
    let op = &func.ops[o];
    let mut operands: Vec<ValueId> = Vec::new();
    for &v in op.operands.iter().chain(&op.captures) {
        if !operands.contains(&v) {
            operands.push(v);
        }
    }
    let (text, order) = cut(module, func, &operands, &[result])?;
    let text = parity_mlir::promote_to_f64(&text).map_err(|e| e.to_string())?;
    let text = crate::bisect::widen_reduce_precision(&text);
    let args = order
        .iter()
        .map(|&i| {
            let v = operands[i];
            let t = values
                .get(&v)
                .ok_or_else(|| format!("operand %{v} of the operation has no reference value"))?;
            crate::bisect::widen(t).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
    let flags = crate::bisect::F64_FLAGS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let options = CompileOptions::new("llvm-cpu", flags);
    let vmfb = env
        .cache
        .get_or_compile(env.compiler, "inside[f64]", text.as_bytes(), &options)
        .map_err(|e| e.to_string())?;
    let runtime = IreeRuntime::new("local-task").map_err(|e| e.to_string())?;
    let truth = runtime
        .load(&vmfb.vmfb, "inside[f64]")
        .map_err(|e| e.to_string())?
        .invoke("inside", &args)
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .ok_or("the f64 run returned nothing")?
        .to_f64_vec();
    let reference_err = err(&reference.to_f64_vec(), &truth);
    let target_err = err(&tested.to_f64_vec(), &truth);
    let off = if target_err >= OFF_FACTOR * reference_err && target_err > 0.0 {
        Some(env.target.name().to_string())
    } else if reference_err >= OFF_FACTOR * target_err && reference_err > 0.0 {
        Some(env.reference.name().to_string())
    } else {
        None
    };
    Ok(InsideVsF64 {
        reference_err,
        target_err,
        off,
    })
}

/// The largest |x - truth|; a non-finite x where the truth is finite is
/// infinitely far, and so is a length mismatch.
fn err(x: &[f64], truth: &[f64]) -> f64 {
    if x.len() != truth.len() {
        return f64::INFINITY;
    }
    x.iter()
        .zip(truth)
        .map(|(a, t)| match (a.is_finite(), t.is_finite()) {
            (true, true) => (a - t).abs(),
            (false, true) => f64::INFINITY,
            _ => 0.0,
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::err;

    #[test]
    fn error_is_the_largest_gap_and_non_finite_is_infinitely_far() {
        assert_eq!(err(&[1.0, 2.5], &[1.0, 2.0]), 0.5);
        assert_eq!(err(&[f64::NAN], &[1.0]), f64::INFINITY);
        assert_eq!(err(&[f64::INFINITY], &[f64::INFINITY]), 0.0);
        assert_eq!(err(&[1.0], &[1.0, 2.0]), f64::INFINITY);
    }
}
