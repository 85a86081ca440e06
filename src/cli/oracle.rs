//! `parity oracle index DIR`: build an oracle store's manifest.json from its dumps.

use parity_record::ExitCode;
use parity_tensor::index::{index_dir, naming::CasePattern, parse_provenance, IndexOptions};
use std::path::PathBuf;

/// `parity oracle` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum OracleCommand {
    /// Write DIR/manifest.json (schema parity.oracle-manifest/1) listing every
    /// .npy/.npz/.safetensors dump under DIR. Names: `<stem>` for an .npy,
    /// `<stem>/<key>` for an .npz/.safetensors, `@f64` appended when the file
    /// stem or the key ends in `_f64` or `@f64`, or the file is under the
    /// `--truth-dir` folder (see docs/your-model.md).
    /// Headers are read, never memory-mapped (a file truncated meanwhile is an
    /// error naming it); directory links into the tree or to its ancestors are
    /// not followed; names that are not UTF-8 are refused.
    Index(IndexArgs),
}

/// Arguments of `parity oracle index`.
#[derive(clap::Args, Debug)]
pub struct IndexArgs {
    /// The dump directory.
    dir: PathBuf,
    /// Write the manifest here instead of DIR/manifest.json (file paths are made relative to its directory).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Index only cases (first name component) matching this glob, or regex written `re:REGEX`.
    #[arg(long)]
    case_pattern: Option<String>,
    /// Name every tensor `<CASE>/<name>`: for a directory holding the dumps of one case
    /// (e.g. flat `conformer.0.attention.npy` files).
    #[arg(long)]
    case: Option<String>,
    /// A folder of the oracle's dumps in one precision, e.g. `f32` (with
    /// --truth-dir): left out of the tensor names, wherever it is in the tree.
    #[arg(long, value_name = "NAME")]
    oracle_dir: Option<String>,
    /// A folder of the f64 truth, e.g. `f64`: left out of the tensor names,
    /// and every tensor under it is that name's `@f64` truth, so
    /// `f32/mel.npy` and `f64/mel.npy` pair as `mel` and `mel@f64`.
    #[arg(long, value_name = "NAME")]
    truth_dir: Option<String>,
    /// A provenance field, KEY=VALUE (VALUE as JSON if it parses, else a string; dotted keys nest). Repeatable.
    #[arg(long = "provenance", value_name = "KEY=VALUE")]
    provenance: Vec<String>,
}

/// Runs a `parity oracle` subcommand.
pub fn run(command: OracleCommand) -> anyhow::Result<i32> {
    match command {
        OracleCommand::Index(args) => index(args),
    }
}

fn index(args: IndexArgs) -> anyhow::Result<i32> {
    let fail = |why: String| {
        eprintln!("parity: oracle index: {why}");
        Ok(ExitCode::Input.code())
    };
    let cases = match args.case_pattern.as_deref().map(CasePattern::new) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => return fail(e),
    };
    let provenance = match parse_provenance(&args.provenance) {
        Ok(p) => p,
        Err(e) => return fail(e.to_string()),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.dir.join(parity_tensor::store::MANIFEST_FILE));
    let manifest_dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let options = IndexOptions {
        cases,
        provenance,
        manifest_dir: Some(manifest_dir),
        case: args.case.clone(),
        oracle_dir: args.oracle_dir.clone(),
        truth_dir: args.truth_dir.clone(),
    };
    let built = match index_dir(&args.dir, &options) {
        Ok(b) => b,
        Err(e) => return fail(e.to_string()),
    };
    if let Err(e) = built.write(&out) {
        return fail(e.to_string());
    }
    let skipped = if built.skipped_cases.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = built.skipped_cases.iter().map(String::as_str).collect();
        format!(
            "; skipped cases not matching the pattern: {}",
            names.join(", ")
        )
    };
    let links = if built.skipped_links.is_empty() {
        String::new()
    } else {
        format!(
            "; directory links not followed (they lead back into the tree or to a directory already walked): {}",
            built.skipped_links.join(", ")
        )
    };
    if !built.unpaired_truth.is_empty() {
        let n = built.unpaired_truth.len();
        let shown: Vec<&str> = built
            .unpaired_truth
            .iter()
            .take(3)
            .map(String::as_str)
            .collect();
        eprintln!(
            "parity: oracle index: warning: {n} truth tensor(s) under `{}` have no oracle tensor of their name to be the truth of: {}{}; is the oracle's folder left in the names (--oracle-dir NAME)?",
            args.truth_dir.as_deref().unwrap_or(""),
            shown.join(", "),
            if n > 3 { ", ..." } else { "" }
        );
    }
    println!(
        "{}: {} tensors from {} files{skipped}{links}",
        out.display(),
        built.tensors.len(),
        built.files
    );
    Ok(ExitCode::Pass.code())
}
