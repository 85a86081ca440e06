//! A bound on bracket nesting in MLIR text, checked before the text reaches
//! a recursive parser. The IREE compiler's MLIR parser recurses once per
//! nested region, attribute or type, on the caller's stack: 10,000 nested
//! regions overflowed the main thread's stack and aborted parity with no
//! message (issue 28), while parity's own reader stops at
//! [`crate::cursor`]'s depth of 200. This scan uses no recursion, so it
//! answers for any depth.

use crate::error::{line_col, MlirError};

/// Deepest bracket nesting (`(`, `[`, `{` together) accepted in source text:
/// five times the region depth parity's reader takes, far below the ~2,000
/// nested regions the compiler's parser survives on an 8 MiB stack.
pub const MAX_SOURCE_NESTING: usize = 1000;

/// The MLIR bytecode magic; bytecode is not text and is not scanned.
const BYTECODE_MAGIC: &[u8] = b"ML\xefR";

/// Checks that `(`, `[` and `{` nest at most [`MAX_SOURCE_NESTING`] deep in
/// the MLIR text `src`, outside string literals and `//` comments. The error
/// names the line and column of the first bracket past the bound.
pub fn check_nesting(src: &[u8]) -> Result<(), MlirError> {
    if src.starts_with(BYTECODE_MAGIC) {
        return Ok(());
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < src.len() {
        match src[i] {
            b'"' => {
                // Skip the string literal, honouring backslash escapes.
                i += 1;
                while i < src.len() && src[i] != b'"' {
                    i += if src[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if src.get(i + 1) == Some(&b'/') => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_SOURCE_NESTING {
                    let (line, col) = line_col(src, i);
                    return Err(MlirError {
                        line,
                        col,
                        message: format!(
                            "brackets nest more than {MAX_SOURCE_NESTING} deep (regions, \
                             attributes or types nested this far would overflow the \
                             compiler's parser); flatten the module"
                        ),
                    });
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` nested `scf.execute_region`s in one function, as in issue 28.
    fn nested(n: usize) -> String {
        let mut s = String::from("func.func @main(%a: tensor<f32>) -> tensor<f32> {\n");
        for i in 0..n {
            s += &format!("%r{i} = scf.execute_region -> tensor<f32> {{\n");
        }
        s += "scf.yield %a : tensor<f32>\n";
        for i in (0..n).rev() {
            s += "}\n";
            if i > 0 {
                s += &format!("scf.yield %r{i} : tensor<f32>\n");
            }
        }
        s + "return %r0 : tensor<f32>\n}\n"
    }

    #[test]
    fn deep_nesting_is_refused_at_its_line() {
        assert!(check_nesting(nested(998).as_bytes()).is_ok());
        let err = check_nesting(nested(10_000).as_bytes()).unwrap_err();
        // Line 1 opens the function's body; line 1001 opens region 999, the 1001st `{`.
        assert_eq!((err.line, err.col), (1001, 43), "{err}");
        assert!(err.message.contains("more than 1000 deep"), "{err}");
    }

    #[test]
    fn brackets_in_strings_and_comments_do_not_count() {
        let mut s = String::from("// ");
        s += &"{".repeat(5000);
        s += "\n\"";
        s += &"(\\\"".repeat(5000);
        s += "\" loc(\"a\")\n";
        assert!(check_nesting(s.as_bytes()).is_ok());
        assert!(check_nesting(b"ML\xefR{{{{").is_ok());
    }
}
