//! `parity doctor [SPEC]`: what this machine can run, before anything runs.
//! The runtime's drivers and the devices each sees, the compiler and its
//! targets, the artifact cache, and, with a spec, whether each of its
//! targets is ready (the preflight every command runs first).

use crate::target::cuda::query_device;
use crate::target::module_check::summary;
use crate::target::vmfb::executables;
use crate::target::Target;
use parity_iree::{available_devices, IreeCompiler, DRIVERS_BUILT_IN};
use parity_record::ExitCode;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `parity doctor`.
#[derive(clap::Args, Debug)]
pub struct DoctorArgs {
    /// A spec whose targets to check (none: only the machine's facts).
    spec: Option<PathBuf>,
    /// Directory of the compiled-artifact cache.
    #[arg(long, env = "PARITY_CACHE_DIR", default_value = ".parity-cache")]
    cache_dir: PathBuf,
    /// Path to libIREECompiler.so (default: found through EERIE_PYTHON's iree-base-compiler).
    #[arg(long, env = "PARITY_IREE_COMPILER_LIB")]
    iree_compiler_lib: Option<PathBuf>,
}

/// Prints the facts; exit 2 when a spec is given and one of its targets is
/// not ready (or the spec is invalid), else 0.
pub fn run(args: DoctorArgs) -> anyhow::Result<i32> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "parity {} (IREE runtime 3.13.0, eerie 0.7.0)",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, "\nruntime drivers and the devices each sees:");
    for driver in DRIVERS_BUILT_IN {
        let seen = match available_devices(driver) {
            Ok(devices) if devices.is_empty() => "no device".to_string(),
            Ok(devices) => devices
                .iter()
                .map(|d| match d.path.is_empty() {
                    true => format!("{}: {}", d.ordinal, d.name),
                    false => format!("{}: {} ({})", d.ordinal, d.name, d.path),
                })
                .collect::<Vec<_>>()
                .join("; "),
            Err(e) => format!("unavailable: {}", one_line(&e.to_string())),
        };
        let _ = writeln!(out, "  {driver:<11} {seen}");
    }
    cuda_lines(&mut out);
    let compiler = IreeCompiler::load(args.iree_compiler_lib.as_deref());
    let _ = writeln!(out, "\ncompiler:");
    match &compiler {
        Ok(c) => {
            let _ = writeln!(out, "  library     {}", c.library_path().display());
            let _ = writeln!(out, "  revision    {}", c.revision());
            let _ = writeln!(out, "  targets     {}", c.target_backends().join(", "));
        }
        Err(e) => {
            let _ = writeln!(out, "  not loaded: {}", one_line(&e.to_string()));
        }
    }
    let (entries, bytes) = cache_size(&args.cache_dir);
    let _ = writeln!(
        out,
        "\nartifact cache: {} ({entries} files, {:.1} MiB)",
        args.cache_dir.display(),
        bytes as f64 / (1024.0 * 1024.0)
    );
    let mut code = ExitCode::Pass;
    if let Some(path) = &args.spec {
        let _ = writeln!(out, "\ntargets of {}:", path.display());
        match parity_spec::Spec::load(path) {
            Err(e) => {
                let _ = writeln!(out, "  the spec is invalid: {e}");
                code = ExitCode::Input;
            }
            Ok(spec) => {
                for t in &spec.subject.targets {
                    let target = Target::select(&spec, Some(&t.name))?;
                    let mut problems = Vec::new();
                    if let Err(e) = target.preflight() {
                        problems.push(e.to_string());
                    }
                    if let Ok(c) = &compiler {
                        if !c.target_backends().iter().any(|b| b == &t.backend) {
                            problems.push(format!(
                                "the compiler has no backend `{}` (it has: {})",
                                t.backend,
                                c.target_backends().join(", ")
                            ));
                        } else if let Err(e) = target.preflight_compile(c, &args.cache_dir) {
                            problems.push(e.to_string());
                        }
                    }
                    if let Err(e) = target.preflight_modules(&spec) {
                        problems.push(e.to_string());
                    }
                    let state = if problems.is_empty() {
                        "ready".to_string()
                    } else {
                        code = ExitCode::Input;
                        format!("NOT READY: {}", problems.join("; "))
                    };
                    let _ = writeln!(
                        out,
                        "  {:<10} backend {:<13} device {:<11} flags [{}]  {state}",
                        t.name,
                        t.backend,
                        t.device,
                        t.flags.join(" ")
                    );
                    prebuilt_lines(&mut out, &spec, &target);
                }
            }
        }
    }
    print!("{out}");
    Ok(code.code())
}

/// What libcuda says about each CUDA device (compute capability, driver
/// version): the facts a CUDA module's PTX is checked against.
fn cuda_lines(out: &mut String) {
    let _ = writeln!(out, "\ncuda devices (libcuda):");
    for ordinal in 0..16 {
        match query_device(ordinal) {
            Ok(device) => {
                let _ = writeln!(out, "  {}", device.describe());
            }
            Err(e) => {
                if ordinal == 0 {
                    let _ = writeln!(out, "  none: {e}");
                }
                break;
            }
        }
    }
}

/// One line per prebuilt module `target` runs: its file and what its
/// executables are built for, read from the file.
fn prebuilt_lines(out: &mut String, spec: &parity_spec::Spec, target: &Target) {
    for (name, declared) in &spec.subject.modules {
        let parity_spec::ModuleSource::Vmfb(path) = &target.module(name, declared).source else {
            continue;
        };
        let formats = match parity_tensor::read_module_bytes(path) {
            Err(e) => format!("cannot be read: {}", one_line(&e.to_string())),
            Ok(bytes) => match executables(&bytes) {
                Some(e) if !e.is_empty() => summary(&e),
                Some(_) => "no executables".to_string(),
                None => "formats unknown (not a zip-framed vmfb)".to_string(),
            },
        };
        let _ = writeln!(out, "    module `{name}` ({}): {formats}", path.display());
    }
}

/// The first line of a message, for a table cell.
fn one_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_string()
}

/// Files and bytes under the cache directory (0 when it does not exist).
fn cache_size(dir: &std::path::Path) -> (usize, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .flatten()
        .filter_map(|e| e.metadata().ok().filter(|m| m.is_file()))
        .fold((0, 0), |(n, b), m| (n + 1, b + m.len()))
}
