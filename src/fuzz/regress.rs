//! The persisted failing seeds: a text file of `INVARIANT SEED` lines
//! (`#` comments), replayed before any generated case and appended to when
//! a new violation is found. Committed, it is a regression suite.

use std::path::Path;

/// One persisted seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The invariant.
    pub invariant: String,
    /// The case seed.
    pub seed: u64,
}

/// Reads `path` (a missing file is empty); a malformed line is an error naming file and line.
pub fn read(path: &Path) -> Result<Vec<Entry>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    parse(&text).map_err(|(line, m)| format!("{}:{line}: {m}", path.display()))
}

/// Parses the file's text.
pub fn parse(text: &str) -> Result<Vec<Entry>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(inv), Some(seed), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err((i + 1, format!("`{line}` is not `INVARIANT SEED`")));
        };
        if !parity_spec::FUZZ_INVARIANTS.contains(&inv) {
            return Err((
                i + 1,
                format!(
                    "unknown invariant `{inv}` (known: {})",
                    parity_spec::FUZZ_INVARIANTS.join(", ")
                ),
            ));
        }
        let seed = seed.parse::<u64>().map_err(|_| {
            (
                i + 1,
                format!("seed `{seed}` is not an unsigned 64-bit integer"),
            )
        })?;
        out.push(Entry {
            invariant: inv.to_string(),
            seed,
        });
    }
    Ok(out)
}

/// Appends `entry` unless present (creating the file with a header).
pub fn append(path: &Path, entry: &Entry) -> Result<(), String> {
    let existing = read(path)?;
    if existing.contains(entry) {
        return Ok(());
    }
    let mut text = std::fs::read_to_string(path).unwrap_or_else(|_| {
        "# parity fuzz: persisted failing seeds (INVARIANT SEED), replayed before generated cases.\n"
            .to_string()
    });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("{} {}\n", entry.invariant, entry.seed));
    crate::report::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_with_line_numbers() {
        let ok = parse("# c\npad_content 12 # x\n\nbucket 3\n").unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(
            ok[0],
            Entry {
                invariant: "pad_content".into(),
                seed: 12
            }
        );
        assert_eq!(parse("pad_content\n").unwrap_err().0, 1);
        let e = parse("x\nnope 1\n").unwrap_err();
        assert_eq!(e.0, 1);
        let e = parse("bucket -1\n").unwrap_err();
        assert!(e.1.contains("not an unsigned"), "{}", e.1);
    }
}
