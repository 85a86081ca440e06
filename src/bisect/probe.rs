//! Probes: compile a slice of the stage's function with some values tapped as
//! extra results, run it on IREE, and hand back every result. One probe = one
//! variant built and run (production precision or the f64 shadow).

use super::error::BisectError;
use parity_iree::{ArtifactCache, CompileOptions, IreeCompiler, IreeRuntime};
use parity_mlir::{emit_slices, promote_to_f64, Function, Module, SliceArg, SliceRequest, ValueId};
use parity_tensor::{DType, Tensor};

/// Flags that make IREE compute f64 end to end (no demotion; system libm for
/// tanh/exp/... so the transcendental functions are double precision too).
/// Const-eval is off because IREE's const-eval JIT links its dispatches with
/// the embedded linker whatever `link-embedded` says, so an f64 `sin`/`cos`
/// of constants (a timing signal built in the graph) fails to link
/// (`iree-lld: undefined symbol: sin`); unfolded, it runs with the system libm.
pub const F64_FLAGS: &[&str] = &[
    "--iree-input-demote-f64-to-f32=false",
    "--iree-llvmcpu-link-embedded=false",
    "--iree-opt-const-eval=false",
];

/// Builds and runs slice variants of one function.
pub struct Prober<'a> {
    pub compiler: &'a IreeCompiler,
    pub cache: &'a ArtifactCache,
    pub runtime: &'a IreeRuntime,
    pub module: &'a Module,
    pub func: &'a Function,
    pub options: CompileOptions,
    /// Label for compiler diagnostics (the MLIR file).
    pub source_name: String,
    /// Variants built and run so far.
    pub probes: usize,
    /// Every probe's description, for the report.
    pub log: Vec<String>,
}

/// The IREE compiler, artifact cache and runtime that probes use.
#[derive(Clone, Copy)]
pub struct Iree<'a> {
    /// The compiler (in process).
    pub compiler: &'a IreeCompiler,
    /// The artifact cache probes compile through.
    pub cache: &'a ArtifactCache,
    /// The runtime probes run on.
    pub runtime: &'a IreeRuntime,
}

impl<'a> Prober<'a> {
    /// A prober of `func` (of `module`, read from `source_name`), compiled
    /// with `options` (the stage module's, from [`crate::target::Target::module_options`]); no probe run yet.
    pub fn new(
        iree: Iree<'a>,
        module: &'a Module,
        func: &'a Function,
        options: CompileOptions,
        source_name: String,
    ) -> Self {
        Prober {
            compiler: iree.compiler,
            cache: iree.cache,
            runtime: iree.runtime,
            module,
            func,
            options,
            source_name,
            probes: 0,
            log: Vec::new(),
        }
    }
}

/// One slice to run: values given (with their tensors) and values wanted.
pub struct Cut<'t> {
    /// Name of the slice function.
    pub name: String,
    /// Values fed from outside, with their tensors (production dtype).
    pub given: Vec<(ValueId, &'t Tensor)>,
    /// Values to return, in order.
    pub want: Vec<ValueId>,
}

impl Prober<'_> {
    /// Emits the slices as one module (f64-promoted when `shadow`), compiles it
    /// (through the cache), runs every slice and returns each slice's results.
    /// An error names the probe and what it was for.
    pub fn run(
        &mut self,
        cuts: &[Cut],
        shadow: bool,
        why: &str,
    ) -> Result<Vec<Vec<Tensor>>, BisectError> {
        let probe = self.probes + 1;
        self.run_probe(cuts, shadow, why)
            .map_err(|e| e.in_probe(probe, why))
    }

    fn run_probe(
        &mut self,
        cuts: &[Cut],
        shadow: bool,
        why: &str,
    ) -> Result<Vec<Vec<Tensor>>, BisectError> {
        let reqs: Vec<SliceRequest> = cuts
            .iter()
            .map(|c| SliceRequest {
                name: c.name.clone(),
                from: c.given.iter().map(|(v, _)| *v).collect(),
                to: c.want.clone(),
            })
            .collect();
        let (mut text, infos) = emit_slices(self.module, self.func, "parity_probe", &reqs)
            .map_err(|source| BisectError::Slice {
                function: self.func.name.clone(),
                source,
            })?;
        let mut options = self.options.clone();
        if shadow {
            text = promote_to_f64(&text).map_err(|source| BisectError::Promote {
                function: self.func.name.clone(),
                source,
            })?;
            text = widen_reduce_precision(&text);
            options
                .flags
                .extend(F64_FLAGS.iter().map(|s| s.to_string()));
        }
        self.probes += 1;
        self.log.push(format!(
            "probe {}: {} ({} slice{}, {} value{}{})",
            self.probes,
            why,
            cuts.len(),
            if cuts.len() == 1 { "" } else { "s" },
            cuts.iter().map(|c| c.want.len()).sum::<usize>(),
            if cuts.iter().map(|c| c.want.len()).sum::<usize>() == 1 {
                ""
            } else {
                "s"
            },
            if shadow { ", f64 shadow" } else { "" }
        ));
        let label = format!("{}[probe {}]", self.source_name, self.probes);
        // Probe modules are throwaway: a cache that cannot be written only
        // costs a recompile next time, so its warnings are dropped here.
        let vmfb = self
            .cache
            .get_or_compile(self.compiler, &label, text.as_bytes(), &options)
            .map_err(|source| BisectError::Compile {
                label: label.clone(),
                source,
            })?
            .vmfb;
        let loaded = self
            .runtime
            .load(&vmfb, &label)
            .map_err(|source| BisectError::Load {
                label: label.clone(),
                source,
            })?;
        let mut out = Vec::with_capacity(cuts.len());
        for (cut, info) in cuts.iter().zip(&infos) {
            let mut args = Vec::with_capacity(info.args.len());
            for (arg, _) in &info.args {
                let t = match arg {
                    SliceArg::From(i) => cut.given[*i].1,
                    SliceArg::FuncArg(j) => {
                        return Err(BisectError::MissingArgument {
                            slice: cut.name.clone(),
                            function: self.func.name.clone(),
                            index: *j,
                        })
                    }
                };
                args.push(if shadow { widen(t)? } else { t.clone() });
            }
            let results =
                loaded
                    .invoke(&cut.name, &args)
                    .map_err(|source| BisectError::Invoke {
                        slice: cut.name.clone(),
                        source,
                    })?;
            out.push(results);
        }
        Ok(out)
    }
}

/// A float tensor as f64 (exactly); other dtypes unchanged.
pub fn widen(t: &Tensor) -> Result<Tensor, BisectError> {
    if t.dtype().is_float() && t.dtype() != DType::F64 {
        Tensor::from_f64(t.shape().to_vec(), &t.to_f64_vec()).map_err(|source| {
            BisectError::Tensor {
                what: "widening to f64",
                source,
            }
        })
    } else {
        Ok(t.clone())
    }
}

/// An f64 tensor rounded to `dtype` (round to nearest even).
pub fn narrow(t: &Tensor, dtype: DType) -> Result<Tensor, BisectError> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    Tensor::from_f64_as(dtype, t.shape().to_vec(), &t.to_f64_vec()).map_err(|source| {
        BisectError::Tensor {
            what: "rounding the f64 shadow",
            source,
        }
    })
}

/// Parses an MLIR element type name into a parity dtype.
pub fn dtype_of(element: &str) -> Option<DType> {
    element.parse::<DType>().ok()
}

/// In the f64 shadow every precision-reducing step becomes exact: converts to a
/// narrower float already are (promotion makes them f64 -> f64), and
/// `stablehlo.reduce_precision` is widened to f64's 11 exponent / 52 mantissa
/// bits (the identity on f64), so the shadow is the intended value, not a
/// replay of the rounding.
pub fn widen_reduce_precision(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.contains("\"stablehlo.reduce_precision\"") {
            let l = set_int_attr(line, "exponent_bits = ", 11);
            out.push_str(&set_int_attr(&l, "mantissa_bits = ", 52));
        } else {
            out.push_str(line);
        }
    }
    out
}

fn set_int_attr(line: &str, key: &str, value: u32) -> String {
    match line.find(key) {
        Some(i) => {
            let start = i + key.len();
            let digits = line[start..].bytes().take_while(u8::is_ascii_digit).count();
            format!("{}{value}{}", &line[..start], &line[start + digits..])
        }
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_precision_becomes_f64_identity_in_the_shadow() {
        let t = "  %1 = \"stablehlo.reduce_precision\"(%0) <{exponent_bits = 8 : i32, mantissa_bits = 7 : i32}> : (tensor<f64>) -> tensor<f64>\n  %2 = \"stablehlo.add\"(%1, %1) {mantissa_bits = 7 : i32} : (tensor<f64>, tensor<f64>) -> tensor<f64>\n";
        let w = widen_reduce_precision(t);
        assert!(
            w.contains("exponent_bits = 11 : i32, mantissa_bits = 52 : i32"),
            "{w}"
        );
        // Other ops untouched.
        assert!(w.contains("{mantissa_bits = 7 : i32}"), "{w}");
    }
}
