//! Keeps compiler diagnostics readable: a failing compile can attach whole
//! HAL executables to a note (megabytes of IR), which must not flood the
//! terminal or the JSON records. Every diagnostic keeps its headline and the
//! first lines of what follows; the total is capped; what was left out is said.

/// Lines kept after each diagnostic's headline.
pub const LINES_PER_DIAGNOSTIC: usize = 12;

/// Upper bound on the kept text, in bytes (at a line boundary).
pub const MAX_DIAGNOSTIC_BYTES: usize = 16 * 1024;

/// Whether `line` starts a new diagnostic (`file:1:2: error: ...`,
/// `iree-lld: error: ...`, `<unknown>:0: note: ...`).
fn is_headline(line: &str) -> bool {
    [": error: ", ": warning: ", ": note: ", ": remark: "]
        .iter()
        .any(|k| line.contains(k))
        && !line.starts_with(char::is_whitespace)
}

/// `text` bounded as described in the module doc; unchanged when already small.
pub fn bound(text: &str) -> String {
    if text.len() <= MAX_DIAGNOSTIC_BYTES && text.lines().count() <= 4 * LINES_PER_DIAGNOSTIC {
        return text.to_string();
    }
    let mut out = String::new();
    let (mut tail, mut omitted_lines, mut omitted_bytes, mut over) =
        (0usize, 0usize, 0usize, false);
    let mut pending_omitted = 0usize;
    let flush = |out: &mut String, pending: &mut usize| {
        if *pending > 0 {
            out.push_str(&format!("    [... {} more lines omitted]\n", *pending));
            *pending = 0;
        }
    };
    for line in text.lines() {
        let headline = is_headline(line);
        if headline {
            flush(&mut out, &mut pending_omitted);
            tail = 0;
        } else {
            tail += 1;
        }
        let keep = !over && (headline || tail <= LINES_PER_DIAGNOSTIC);
        if keep && out.len() + line.len() + 1 > MAX_DIAGNOSTIC_BYTES {
            over = true;
        }
        if keep && !over {
            out.push_str(line);
            out.push('\n');
        } else {
            omitted_lines += 1;
            omitted_bytes += line.len() + 1;
            if !over {
                pending_omitted += 1;
            }
        }
    }
    flush(&mut out, &mut pending_omitted);
    out.push_str(&format!(
        "[compiler output bounded: {omitted_lines} lines ({omitted_bytes} bytes) of {} bytes omitted]",
        text.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_diagnostics_are_unchanged() {
        let t = "m.mlir:3:5: error: bad op\n  %x = foo\n";
        assert_eq!(bound(t), t);
    }

    #[test]
    fn a_huge_ir_dump_keeps_every_headline_and_says_what_it_left_out() {
        let mut t = String::from("iree-lld: error: undefined symbol: sin\n");
        t.push_str("m.mlir:5:8: error: failed to link executable\n");
        for i in 0..100_000 {
            t.push_str(&format!("  \"hal.executable_op_{i}\"() : () -> ()\n"));
        }
        t.push_str("m.mlir:5:8: error: failed to serialize executables\n");
        let b = bound(&t);
        assert!(b.len() <= MAX_DIAGNOSTIC_BYTES + 200, "{}", b.len());
        assert!(b.contains("undefined symbol: sin"));
        assert!(b.contains("failed to link executable"));
        assert!(b.contains("failed to serialize executables"));
        assert!(b.contains("hal.executable_op_0"));
        assert!(!b.contains("hal.executable_op_50000"));
        assert!(b.contains("more lines omitted"));
        let omitted = 100_000 - LINES_PER_DIAGNOSTIC;
        assert!(
            b.contains(&format!("{omitted} lines")),
            "the omitted count is exact: {}",
            &b[b.len() - 120..]
        );
    }

    #[test]
    fn the_byte_cap_holds_with_many_headlines() {
        let t: String = (0..10_000)
            .map(|i| format!("m.mlir:{i}:1: error: failure number {i}\n"))
            .collect();
        let b = bound(&t);
        assert!(b.len() <= MAX_DIAGNOSTIC_BYTES + 200);
        assert!(b.contains("failure number 0\n"));
        assert!(b.ends_with("bytes omitted]"));
    }
}
