//! The reproducer's two ways in: `run.sh` (the pip-installed IREE tools, no
//! parity) and `stages.yaml` (the same check inside parity).

use super::CHECK_FUNCTION;
use crate::target::Target;
use parity_iree::CompileOptions;
use parity_spec::yaml_quote;
use parity_tensor::Tensor;
use std::fmt::Write as _;

/// Everything both scripts say about how `@check` is compiled, fed and judged.
pub(super) struct Scripts<'a> {
    /// Where it runs.
    pub target: &'a Target,
    /// The compile options (f64 results already kept f64).
    pub options: &'a CompileOptions,
    /// Parameter scopes and their files, by absolute path.
    pub parameters: &'a [(String, Vec<String>)],
    /// `@check`'s argument files, without `.npy`.
    pub arg_names: &'a [String],
    /// The absolute threshold of each result.
    pub thresholds: &'a [f64],
}

/// The subject's parameter files by scope: a slice of a parameterised
/// function reads them where they are (they may be many GB), by absolute path.
pub(super) fn parameter_files(target: &Target) -> Vec<(String, Vec<String>)> {
    target
        .parameter_scopes()
        .into_iter()
        .map(|(scope, files)| {
            let files = files
                .iter()
                .map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
                .map(|f| f.display().to_string())
                .collect();
            (scope, files)
        })
        .collect()
}

impl Scripts<'_> {
    /// `run.sh`: compiles the slice and runs `@check` against the `expected`
    /// result files, exiting non-zero on a mismatch.
    pub fn run_sh(&self, expected: usize) -> String {
        let flags = self.options.effective_flags();
        let mut sh = String::from(
            "#!/bin/sh\n# Reproduces the mismatch parity bisect found, with the pip-installed IREE tools\n\
             # (iree-base-compiler / iree-base-runtime 3.13): exits non-zero when the slice's\n\
             # result differs from expected_*.npy by more than the threshold.\nset -e\ncd \"$(dirname \"$0\")\"\n",
        );
        let _ = writeln!(
            sh,
            "iree-compile {} slice.mlir -o slice.vmfb",
            shell_words::join(&flags)
        );
        let _ = writeln!(sh, "{}", self.run_module(expected));
        sh
    }

    /// The `iree-run-module` line: device, parameters, inputs, expected
    /// outputs and the threshold.
    fn run_module(&self, expected: usize) -> String {
        let mut run = format!(
            "iree-run-module --module=slice.vmfb {} --function={CHECK_FUNCTION}",
            shell_words::quote(&format!("--device={}", self.target.device()))
        );
        for (scope, files) in self.parameters {
            for f in files {
                let _ = write!(
                    run,
                    " {}",
                    shell_words::quote(&format!("--parameters={scope}={f}"))
                );
            }
        }
        for a in self.arg_names {
            let _ = write!(run, " --input=@{a}.npy");
        }
        for k in 0..expected {
            let _ = write!(run, " --expected_output=@expected_{k}.npy");
        }
        // One flag per dtype: the tightest threshold of the float results.
        let thr = self
            .thresholds
            .iter()
            .copied()
            .filter(|t| t.is_finite() && *t > 0.0)
            .fold(f64::INFINITY, f64::min);
        if thr.is_finite() {
            let _ = write!(run, " --expected_f64_threshold={thr:e} --expected_rtol=0");
        }
        run
    }

    /// `stages.yaml`: the subject, one case and one stage calling `@check`
    /// with each of `expected` held to its threshold (non-floats exactly).
    pub fn stages_yaml(&self, expected: &[Tensor]) -> String {
        let mut y = String::from("# parity bisect reproducer: `parity check stages.yaml` in this directory.\nversion: 1\nsubject:\n  modules:\n    repro: {mlir: slice.mlir}\n");
        let _ = writeln!(y, "  target_backend: {}", yaml_quote(self.target.backend()));
        let _ = writeln!(y, "  driver: {}", yaml_quote(self.target.device()));
        let _ = writeln!(
            y,
            "  flags: [{}]",
            self.options
                .flags
                .iter()
                .map(|f| yaml_quote(f))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if !self.parameters.is_empty() {
            y.push_str("  parameters:\n");
            for (scope, files) in self.parameters {
                let files: Vec<String> = files.iter().map(|f| yaml_quote(f)).collect();
                let _ = writeln!(y, "    {}: [{}]", yaml_quote(scope), files.join(", "));
            }
        }
        let _ = writeln!(
            y,
            "oracle: .\ncases: [{{name: repro}}]\nstages:\n  - name: repro\n    module: repro\n    function: {CHECK_FUNCTION}\n    args:"
        );
        for a in self.arg_names {
            let _ = writeln!(y, "      - {{oracle: {}}}", yaml_quote(a));
        }
        y.push_str("    outputs:\n");
        for (k, t) in expected.iter().enumerate() {
            let tolerance = match self.thresholds.get(k) {
                Some(thr) if t.dtype().is_float() => format!("[{{max_abs: {thr:e}}}]"),
                _ => "[exact]".to_string(),
            };
            let _ = writeln!(
                y,
                "      - {{name: out_{k}, oracle: expected_{k}, tolerance: {tolerance}}}"
            );
        }
        y
    }
}
