//! What a run's results depend on, for the record: each module's source and
//! artifact cache key, and the oracle store's own provenance.

use super::inputs::InputSources;
use super::slices::SliceModule;
use super::RunOptions;
use crate::target::Target;
use parity_iree::{ArtifactCache, IreeCompiler};
use parity_record::{ModuleProvenance, OracleProvenance, Provenance};
use parity_spec::{ModuleSource, Spec};

/// The provenance of a run of `spec`: every declared module (cache key when
/// it is MLIR and the compiler is loaded), every generated slice module, and
/// the oracle manifest's `provenance` object.
pub fn collect(
    spec: &Spec,
    target: &Target,
    options: &RunOptions,
    compiler: &Result<IreeCompiler, super::module_error::CompilerUnavailable>,
    slices: &[SliceModule],
    sources: &InputSources,
) -> Provenance {
    let cache = ArtifactCache::new(&options.cache_dir);
    let key = |mlir: &[u8], module: &parity_spec::Module| {
        let compiler = compiler.as_ref().ok()?;
        cache
            .key(compiler, mlir, &target.compile_options(&module.flags))
            .ok()
    };
    let mut modules: Vec<ModuleProvenance> = spec
        .subject
        .modules
        .iter()
        .map(|(name, module)| {
            let module = target.module(name, module);
            let (source, cache_key) = match &module.source {
                ModuleSource::Vmfb(path) => (path, None),
                ModuleSource::Mlir(path) => (
                    path,
                    parity_tensor::read_module_bytes(path)
                        .ok()
                        .and_then(|m| key(&m, module)),
                ),
            };
            ModuleProvenance {
                name: name.clone(),
                source: source.display().to_string(),
                cache_key,
            }
        })
        .collect();
    for slice in slices {
        let Some(parent) = spec.subject.modules.get(&slice.parent) else {
            continue;
        };
        let source = match &parent.source {
            ModuleSource::Mlir(p) | ModuleSource::Vmfb(p) => format!("{}#slices", p.display()),
        };
        modules.push(ModuleProvenance {
            name: slice.name.clone(),
            source,
            cache_key: key(slice.mlir.as_bytes(), parent),
        });
    }
    Provenance {
        modules,
        oracle: Some(OracleProvenance {
            path: spec.oracle.display().to_string(),
            provenance: sources.oracle_provenance().clone(),
        }),
        weight_transforms: Vec::new(),
        uploads: Vec::new(),
    }
}
