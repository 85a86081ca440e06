//! The repair search's slice of one function, and its search module loaded:
//! shared by the search on the failing case and the cross-case check's
//! carried copies, so both cut, split and feed the region the same way.

use super::super::error::BisectError;
use super::super::probe::Prober;
use super::scalar;
use super::selector::{op_blocks, split_function};
use parity_mlir::{emit_slices, Function, SliceArg, SliceInfo, SliceRequest, ValueId};
use parity_tensor::{DType, Tensor};
use std::time::{Duration, Instant};

/// The region of `func` from its fed values to its end, emitted as a module.
pub(super) struct RepairSlice {
    /// The emitted module text.
    text: String,
    /// Its ops and arguments.
    pub info: SliceInfo,
}

/// The slice's text split for the selector module: what precedes the
/// function, its signature, its ops' blocks in order, and the return.
pub(super) struct Parts<'a> {
    /// The text before the function.
    pub head: &'a str,
    /// The signature line.
    pub sig: &'a str,
    /// Each op's text block, in program order.
    pub blocks: Vec<(usize, &'a str)>,
    /// The trailing `func.return` line(s).
    pub ret: &'a str,
}

impl RepairSlice {
    /// Emits `func`'s region from `from` to `target` of the prober's module.
    pub fn emit(
        prober: &Prober,
        func: &Function,
        from: Vec<ValueId>,
        target: ValueId,
    ) -> Result<Self, BisectError> {
        let req = SliceRequest {
            name: "repair".into(),
            from,
            to: vec![target],
        };
        let (text, mut infos) =
            emit_slices(prober.module, func, "parity_repair", &[req]).map_err(|source| {
                BisectError::Slice {
                    function: func.name.clone(),
                    source,
                }
            })?;
        Ok(Self {
            text,
            info: infos.remove(0),
        })
    }

    /// The text's parts; `what` names the slice in an error.
    pub fn parts(&self, func: &Function, what: &'static str) -> Result<Parts<'_>, BisectError> {
        let emitted = |problem: &str| BisectError::EmittedText {
            what,
            problem: problem.to_string(),
        };
        let (head, sig, body) =
            split_function(&self.text).ok_or_else(|| emitted("no `@repair` function"))?;
        let (blocks, ret) = op_blocks(func, &self.info.ops, body)
            .ok_or_else(|| emitted("its ops are not where parsed"))?;
        Ok(Parts {
            head,
            sig,
            blocks,
            ret,
        })
    }
}

/// A search module compiled and loaded.
pub(super) struct Search {
    /// The module, loaded.
    pub loaded: parity_iree::LoadedModule,
    /// Its arguments: selector -1, scale 1, then the slice's fed values.
    pub args: Vec<Tensor>,
    /// How long its compile (or cache lookup) took.
    pub compile: Duration,
    /// Whether the artifact cache already held it.
    pub cached: bool,
}

/// Compiles and loads the search module `module` over the slice `info`
/// of `func`, fed from `feed`.
pub(super) fn load_search(
    prober: &mut Prober,
    func: &Function,
    label: &str,
    module: &str,
    info: &SliceInfo,
    feed: &[(ValueId, Tensor)],
) -> Result<Search, BisectError> {
    let t = Instant::now();
    let compiled = prober
        .cache
        .get_or_compile(prober.compiler, label, module.as_bytes(), &prober.options)
        .map_err(|source| BisectError::Compile {
            label: label.to_string(),
            source,
        })?;
    let compile = t.elapsed();
    prober.probes += 1;
    let loaded = prober
        .runtime
        .load(&compiled.vmfb, label)
        .map_err(|source| BisectError::Load {
            label: label.to_string(),
            source,
        })?;
    let mut args = vec![scalar(DType::I32, -1.0)?, scalar(DType::F32, 1.0)?];
    for (arg, _) in &info.args {
        match arg {
            SliceArg::From(i) => args.push(feed[*i].1.clone()),
            SliceArg::FuncArg(j) => {
                return Err(BisectError::MissingArgument {
                    slice: "repair".into(),
                    function: func.name.clone(),
                    index: *j,
                })
            }
        }
    }
    Ok(Search {
        loaded,
        args,
        compile,
        cached: matches!(compiled.outcome, parity_iree::CacheOutcome::Hit),
    })
}
