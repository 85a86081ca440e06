//! How dump files and their arrays are named in an indexed manifest, and
//! which cases a `--case-pattern` selects.
//!
//! The rule (documented in docs/your-model.md, "Building the oracle store"):
//! - a file's *stem* is its path relative to the store directory, without the
//!   extension, `/`-separated (`full128`, `full128/conformer.0.attention`);
//! - the f64 marker: a stem (last component) or an array key ending in `_f64`
//!   or `@f64` marks f64 ground truth; it is stripped and `@f64` is appended
//!   to the tensor name (`full128_f64.npz` key `x` -> `full128/x@f64`);
//! - an `.npy` file is one tensor named by its stem; an `.npz` or
//!   `.safetensors` file holds tensors `<stem>/<key>`;
//! - precision folders (`--oracle-dir f32 --truth-dir f64`): a directory
//!   named by either is left out of the names, and everything under the
//!   truth folder is f64 truth (`f32/mel.npy` -> `mel`, `f64/mel.npy` ->
//!   `mel@f64`), so one folder per precision pairs without renaming;
//! - a tensor's *case* is the first `/` component of its name.

use regex::Regex;

/// Which cases to index: a glob (`full*`, `case_?`, `[ab]*`) or, written
/// `re:<regex>`, a regular expression; either must match the whole case name.
#[derive(Debug, Clone)]
pub struct CasePattern {
    source: String,
    regex: Regex,
}

impl CasePattern {
    /// Parses a glob, or a regex when prefixed with `re:`. The error says why it is invalid.
    pub fn new(pattern: &str) -> Result<CasePattern, String> {
        let body = match pattern.strip_prefix("re:") {
            Some(re) => re.to_string(),
            None => glob_to_regex(pattern),
        };
        let regex = Regex::new(&format!("^(?:{body})$"))
            .map_err(|e| format!("invalid case pattern `{pattern}`: {e}"))?;
        Ok(CasePattern {
            source: pattern.to_string(),
            regex,
        })
    }

    /// Whether `case` is selected.
    pub fn matches(&self, case: &str) -> bool {
        self.regex.is_match(case)
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

/// `*` any run, `?` one character, `[...]` a class (`[!...]` negated); everything else literal.
fn glob_to_regex(glob: &str) -> String {
    let mut out = String::new();
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '[' => {
                let mut class = String::new();
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == ']' && !class.is_empty() {
                        closed = true;
                        break;
                    }
                    class.push(d);
                }
                if closed {
                    let class = match class.strip_prefix('!') {
                        Some(rest) => format!("^{rest}"),
                        None => class,
                    };
                    out.push('[');
                    out.push_str(&class.replace('\\', "\\\\").replace('[', "\\["));
                    out.push(']');
                } else {
                    out.push_str(&regex::escape(&format!("[{class}")));
                }
            }
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

/// A file's relative path components with its precision folder left out
/// (the first directory named `oracle_dir` or `truth_dir`), and whether it
/// was the truth folder.
pub(crate) fn precision_dirs(
    components: &[String],
    oracle_dir: Option<&str>,
    truth_dir: Option<&str>,
) -> (Vec<String>, bool) {
    let dirs = components.len().saturating_sub(1);
    let is = |c: &String, name: Option<&str>| name == Some(c.as_str());
    match components[..dirs]
        .iter()
        .position(|c| is(c, oracle_dir) || is(c, truth_dir))
    {
        Some(i) => {
            let truth = is(&components[i], truth_dir);
            let mut rest = components.to_vec();
            rest.remove(i);
            (rest, truth)
        }
        None => (components.to_vec(), false),
    }
}

/// Refuses a precision folder that is no single directory name, or the same
/// folder named for both.
pub(crate) fn check_precision_dirs(
    oracle_dir: Option<&str>,
    truth_dir: Option<&str>,
) -> Result<(), super::IndexError> {
    for (flag, name) in [("--oracle-dir", oracle_dir), ("--truth-dir", truth_dir)] {
        let Some(name) = name else { continue };
        let why = if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            "a precision folder is one directory name, not a path"
        } else if oracle_dir == truth_dir {
            "--oracle-dir and --truth-dir name the same folder"
        } else {
            continue;
        };
        return Err(super::IndexError::PrecisionDir {
            flag,
            name: name.to_string(),
            why: why.to_string(),
        });
    }
    Ok(())
}

/// `name` without an f64 marker (`_f64` / `@f64` suffix) and whether it had one.
pub(crate) fn strip_f64(name: &str) -> (&str, bool) {
    for marker in ["_f64", "@f64"] {
        if let Some(base) = name.strip_suffix(marker) {
            if !base.is_empty() {
                return (base, true);
            }
        }
    }
    (name, false)
}

/// The stem of a file (relative path components, extension dropped from the
/// last) with its f64 marker stripped, and whether it had one.
pub(crate) fn file_stem(components: &[String]) -> Option<(String, bool)> {
    let (last, dirs) = components.split_last()?;
    let stem = match last.rsplit_once('.') {
        Some((stem, _ext)) if !stem.is_empty() => stem,
        _ => return None,
    };
    let (stem, f64) = strip_f64(stem);
    let mut parts: Vec<&str> = dirs.iter().map(String::as_str).collect();
    parts.push(stem);
    Some((parts.join("/"), f64))
}

/// The manifest name of an array: `base` (the stem, or `<stem>/<key>` with the
/// key's own marker stripped) plus `@f64` when the file or key is marked.
pub(crate) fn tensor_name(stem: &str, key: Option<&str>, file_f64: bool) -> String {
    let (mut name, key_f64) = match key {
        None => (stem.to_string(), false),
        Some(k) => {
            let (k, f) = strip_f64(k);
            (format!("{stem}/{k}"), f)
        }
    };
    if file_f64 || key_f64 {
        name.push_str("@f64");
    }
    name
}

/// The case of a tensor name: its first `/` component.
pub(crate) fn case_of(name: &str) -> &str {
    name.split('/').next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_regexes_match_whole_case_names() {
        let p = CasePattern::new("full*").unwrap();
        assert!(p.matches("full128") && !p.matches("xfull128"));
        let p = CasePattern::new("case_?").unwrap();
        assert!(p.matches("case_1") && !p.matches("case_12"));
        let p = CasePattern::new("[!p]*").unwrap();
        assert!(p.matches("full128") && !p.matches("partial77"));
        let p = CasePattern::new("a.b").unwrap();
        assert!(p.matches("a.b") && !p.matches("axb"));
        let p = CasePattern::new("re:(full|partial)[0-9]+").unwrap();
        assert!(p.matches("partial77") && !p.matches("partial77_pad"));
        assert!(CasePattern::new("re:(").unwrap_err().contains("re:("));
    }

    #[test]
    fn precision_folders_leave_the_names_and_mark_the_truth() {
        let c = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (f32, f64) = (Some("f32"), Some("f64"));
        assert_eq!(
            precision_dirs(&c(&["f64", "full", "mel.npy"]), f32, f64),
            (c(&["full", "mel.npy"]), true)
        );
        assert_eq!(
            precision_dirs(&c(&["full", "f32", "mel.npy"]), f32, f64),
            (c(&["full", "mel.npy"]), false)
        );
        // A file named like the folder is no folder; without the flags nothing moves.
        assert_eq!(precision_dirs(&c(&["f64"]), f32, f64), (c(&["f64"]), false));
        assert_eq!(
            precision_dirs(&c(&["f64", "mel.npy"]), None, None),
            (c(&["f64", "mel.npy"]), false)
        );
    }

    #[test]
    fn names_and_f64_markers() {
        let c = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            file_stem(&c(&["full128_f64.npz"])),
            Some(("full128".into(), true))
        );
        assert_eq!(
            file_stem(&c(&["full128", "conformer.0.attention.npy"])),
            Some(("full128/conformer.0.attention".into(), false))
        );
        assert_eq!(file_stem(&c(&[".npy"])), None);
        assert_eq!(tensor_name("full128", Some("x"), true), "full128/x@f64");
        assert_eq!(
            tensor_name("full128", Some("x@f64"), false),
            "full128/x@f64"
        );
        assert_eq!(tensor_name("c/a.b", None, false), "c/a.b");
        assert_eq!(strip_f64("_f64"), ("_f64", false));
        assert_eq!(case_of("full128/x@f64"), "full128");
    }
}
