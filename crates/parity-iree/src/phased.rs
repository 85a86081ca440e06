//! Compiles that run a pass between two phases of IREE's standard pipeline:
//! dispatch tracing after `flow` ([`TracedModule`](crate::TracedModule)) and executable
//! substitution after `executable-sources`.
//!
//! IREE's `--iree-hal-substitute-executable-source=NAME=FILE` (splice a
//! hand-edited `hal.executable` into a compile, the debugging guide's way to
//! test one dispatch) is a process-wide option the in-process session
//! rejects ("option not found"). The pass behind it,
//! `iree-hal-substitute-executables{substitutions=NAME=FILE}`, runs at the
//! same point of the pipeline here instead: compile to `executable-sources`
//! (interfaces materialised, executables not yet configured), substitute,
//! compile on from there. So a target's `flags:` may carry that option and
//! every command compiles with it.

use crate::compiler::{diagnostics_text, CompileOptions, IreeCompiler, COMPILE_LOCK};
use crate::error::IreeError;
use std::path::Path;

/// The flag whose substitutions parity applies itself (`NAME=FILE[,NAME=FILE]`).
pub const SUBSTITUTE_SOURCE_FLAG: &str = "--iree-hal-substitute-executable-source";

/// IREE's other substitution flags, which parity cannot apply in process.
const UNSUPPORTED_SUBSTITUTIONS: [&str; 3] = [
    "--iree-hal-substitute-executable-object",
    "--iree-hal-substitute-executable-sources-from",
    "--iree-hal-substitute-executable-objects-from",
];

/// One `NAME=FILE` of [`SUBSTITUTE_SOURCE_FLAG`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Substitution {
    /// The `hal.executable` symbol replaced (`main_dispatch_3`).
    pub executable: String,
    /// The MLIR file holding the replacement `hal.executable`.
    pub file: String,
}

impl CompileOptions {
    /// The executable substitutions the flags ask for, in order; an error
    /// for a value that is not `NAME=FILE[,NAME=FILE...]`, a path the pass
    /// syntax cannot carry, or a substitution flag parity cannot apply.
    pub fn substitutions(&self) -> Result<Vec<Substitution>, String> {
        let mut out = Vec::new();
        for flag in &self.flags {
            if let Some(bad) = UNSUPPORTED_SUBSTITUTIONS
                .iter()
                .find(|p| flag.starts_with(*p))
            {
                return Err(format!(
                    "`{bad}` is a process-wide compiler option parity cannot apply in process; \
                     use `{SUBSTITUTE_SOURCE_FLAG}=NAME=FILE.mlir` (a hand-edited \
                     `hal.executable`, as `--iree-hal-dump-executable-sources-to` writes it)"
                ));
            }
            let Some(value) = flag.strip_prefix(SUBSTITUTE_SOURCE_FLAG) else {
                continue;
            };
            let Some(value) = value.strip_prefix('=') else {
                return Err(format!(
                    "`{flag}`: expected `{SUBSTITUTE_SOURCE_FLAG}=NAME=FILE`"
                ));
            };
            for pair in value.split(',') {
                let (name, file) = pair.split_once('=').unwrap_or((pair, ""));
                if name.is_empty() || file.is_empty() {
                    return Err(format!(
                        "`{flag}`: `{pair}` is not `NAME=FILE` (an executable symbol and the \
                         file of its replacement)"
                    ));
                }
                if file
                    .chars()
                    .any(|c| c.is_whitespace() || "{}\"'=".contains(c))
                {
                    return Err(format!(
                        "`{flag}`: the file `{file}` has a space, quote, brace or `=`, which the \
                         pass option syntax cannot carry; rename or link it"
                    ));
                }
                out.push(Substitution {
                    executable: name.to_string(),
                    file: file.to_string(),
                });
            }
        }
        Ok(out)
    }

    /// The flags the compiler session is given: every flag but the
    /// substitutions parity applies itself.
    pub(crate) fn session_flags(&self) -> Vec<String> {
        self.effective_flags()
            .into_iter()
            .filter(|f| !f.starts_with(SUBSTITUTE_SOURCE_FLAG))
            .collect()
    }
}

/// The pass pipeline that substitutes `subs` (files made absolute: the pass
/// would resolve a relative one against a search path the session lacks).
fn substitute_pass(subs: &[Substitution]) -> Result<String, String> {
    let pairs = subs
        .iter()
        .map(|s| {
            let path = std::path::absolute(Path::new(&s.file))
                .map_err(|e| format!("substitution file `{}`: {e}", s.file))?;
            if !path.is_file() {
                return Err(format!(
                    "substitution for executable `{}`: file `{}` does not exist",
                    s.executable,
                    path.display()
                ));
            }
            Ok(format!("{}={}", s.executable, path.display()))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(format!(
        "iree-hal-substitute-executables{{substitutions={}}}",
        pairs.join(",")
    ))
}

/// What a phased compile produced.
pub(crate) struct Phased {
    /// The module.
    pub vmfb: Vec<u8>,
    /// The IR at the end of `flow` with the trace pass run, when traced.
    pub flow_ir: Option<String>,
    /// The substituted executables this module has none of (IREE only
    /// warns; in a module split per function most are elsewhere).
    pub unmatched: Vec<String>,
}

/// The executables of `subs` that `ir` (the `executable-sources` IR,
/// generic form) does not define.
fn unmatched(ir: &str, subs: &[Substitution]) -> Vec<String> {
    subs.iter()
        .filter(|s| {
            !ir.contains(&format!(
                "\"hal.executable\"() <{{sym_name = \"{}\"",
                s.executable
            ))
        })
        .map(|s| s.executable.clone())
        .collect()
}

impl IreeCompiler {
    /// Compiles `mlir` through the standard pipeline, running `trace_pass`
    /// after the `flow` phase when given and the option's executable
    /// substitutions after `executable-sources` when it has any. Each step
    /// hands the next its IR as text (generic form, locations inline).
    pub(crate) fn compile_phased(
        &self,
        source_name: &str,
        mlir: &[u8],
        options: &CompileOptions,
        trace_pass: Option<&str>,
    ) -> Result<Phased, IreeError> {
        options.validate(source_name)?;
        let invalid = |message: String| IreeError::InvalidOptions {
            source_name: source_name.to_string(),
            message,
        };
        let subs = options.substitutions().map_err(invalid)?;
        let substitute = if subs.is_empty() {
            None
        } else {
            Some(substitute_pass(&subs).map_err(invalid)?)
        };
        // Locations printed inline (process-wide printing flags, set once).
        self.global_flags(&[]);
        let _one_at_a_time = COMPILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |e: eerie::compiler::CompilerError| IreeError::Compile {
            source_name: source_name.to_string(),
            diagnostics: diagnostics_text(&e, source_name),
        };
        let mut session = self.inner.create_session();
        session.set_flags(options.session_flags()).map_err(fail)?;
        let mut text: Option<String> = None;
        let mut from: Option<&str> = None;
        let mut flow_ir = None;
        let mut missing = Vec::new();
        let steps = [
            ("flow", trace_pass),
            ("executable-sources", substitute.as_deref()),
        ];
        for (phase, pass) in steps {
            let Some(pass) = pass else { continue };
            let input = text.as_ref().map_or(mlir, |t| t.as_bytes());
            let out = self
                .step(&session, input, from, Some((phase, pass)))
                .map_err(fail)?;
            let ir = String::from_utf8_lossy(&out).into_owned();
            if phase == "flow" {
                flow_ir = Some(ir.clone());
            } else {
                // After the pass: a substituted executable keeps its name.
                missing = unmatched(&ir, &subs);
            }
            text = Some(ir);
            from = Some(phase);
        }
        let input = text.as_ref().map_or(mlir, |t| t.as_bytes());
        let vmfb = self.step(&session, input, from, None).map_err(fail)?;
        Ok(Phased {
            vmfb,
            flow_ir,
            unmatched: missing,
        })
    }
}

impl IreeCompiler {
    /// One invocation of the standard pipeline on `input`, from phase
    /// `from` (the start when None): to `(phase, pass)`, running `pass`
    /// there and returning the IR; or, when None, to the end, returning
    /// the vmfb.
    fn step(
        &self,
        session: &eerie::compiler::Session<'_>,
        input: &[u8],
        from: Option<&str>,
        to: Option<(&str, &str)>,
    ) -> Result<Vec<u8>, eerie::compiler::CompilerError> {
        let source = session.create_source_from_buf(input)?;
        let mut invocation = session.create_invocation();
        let mut out = eerie::compiler::MemBufferOutput::new(&self.inner)?;
        let inv = invocation.parse_source(source)?;
        inv.set_verify_ir(true);
        if let Some(from) = from {
            inv.set_compile_from_phase(from)?;
        }
        match to {
            Some((phase, pass)) => {
                inv.set_compile_to_phase(phase)?
                    .pipeline(eerie::compiler::Pipeline::Std)?
                    .run_pass_pipeline(pass)?
                    .output_ir(&mut out)?;
            }
            None => {
                inv.pipeline(eerie::compiler::Pipeline::Std)?
                    .output_vm_byte_code(&mut out)?;
            }
        }
        Ok(out.map_memory()?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(flags: &[&str]) -> CompileOptions {
        CompileOptions::new("llvm-cpu", flags.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn substitutions_parse_in_order_and_leave_the_session_flags() {
        let o = opts(&[
            "--iree-opt-level=O2",
            "--iree-hal-substitute-executable-source=a_dispatch_0=/x/a.mlir,b=/y/b.mlir",
        ]);
        let subs = o.substitutions().unwrap();
        assert_eq!(
            subs,
            vec![
                Substitution {
                    executable: "a_dispatch_0".into(),
                    file: "/x/a.mlir".into()
                },
                Substitution {
                    executable: "b".into(),
                    file: "/y/b.mlir".into()
                },
            ]
        );
        let session = o.session_flags();
        assert!(session.iter().any(|f| f == "--iree-opt-level=O2"));
        assert!(!session.iter().any(|f| f.contains("substitute")));
        assert!(opts(&["--iree-opt-level=O2"])
            .substitutions()
            .unwrap()
            .is_empty());
    }

    #[test]
    fn malformed_or_unsupported_substitutions_are_refused() {
        for bad in [
            "--iree-hal-substitute-executable-source",
            "--iree-hal-substitute-executable-source=a",
            "--iree-hal-substitute-executable-source==f.mlir",
            "--iree-hal-substitute-executable-source=a=",
            "--iree-hal-substitute-executable-source=a=my file.mlir",
            "--iree-hal-substitute-executable-source=a=f}.mlir",
            "--iree-hal-substitute-executable-object=a=f.o",
            "--iree-hal-substitute-executable-sources-from=/d",
        ] {
            assert!(opts(&[bad]).substitutions().is_err(), "{bad}");
        }
    }

    #[test]
    fn unmatched_substitutions_are_the_executables_the_ir_lacks() {
        let ir = "\"hal.executable\"() <{sym_name = \"f_dispatch_0\"}> ({";
        let sub = |name: &str| Substitution {
            executable: name.into(),
            file: "x.mlir".into(),
        };
        assert_eq!(
            unmatched(ir, &[sub("f_dispatch_0"), sub("f_dispatch_1")]),
            ["f_dispatch_1"]
        );
    }

    #[test]
    fn a_missing_substitution_file_is_named() {
        let subs = [Substitution {
            executable: "main_dispatch_0".into(),
            file: "/nonexistent/sub.mlir".into(),
        }];
        let e = substitute_pass(&subs).unwrap_err();
        assert!(
            e.contains("main_dispatch_0") && e.contains("/nonexistent/sub.mlir"),
            "{e}"
        );
    }
}
