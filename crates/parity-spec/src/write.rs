//! Writing YAML for specs parity generates (e.g. bisect's reproducer): the
//! one piece of YAML syntax they need, a scalar that reads back as exactly
//! the given string.

use std::fmt::Write as _;

/// `s` as a YAML double-quoted scalar that any YAML 1.2 parser reads back as
/// `s`: backslash and quote escaped, every control character, DEL, C1
/// control, BOM and line/paragraph separator as a `\uXXXX` escape.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || matches!(c, '\u{FEFF}' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::quote;
    use saphyr_parser::{Event, Parser};

    fn read_back(yaml: &str) -> String {
        Parser::new_from_str(yaml)
            .filter_map(|e| match e.expect("valid YAML").0 {
                Event::Scalar(v, ..) => Some(v.to_string()),
                _ => None,
            })
            .next()
            .expect("one scalar")
    }

    #[test]
    fn quoted_scalars_read_back_exactly() {
        for s in [
            "plain",
            "--iree-flag=a b",
            "quote \" and backslash \\ and # hash: colon",
            "tab\tnewline\ncr\r nul\0 esc\x1b del\x7f c1\u{85}\u{9b}",
            "bom\u{FEFF} sep\u{2028}\u{2029} é 😀",
            "- leading dash",
            "",
            "'single'",
        ] {
            let yaml = format!("k: {}\n", quote(s));
            let got = Parser::new_from_str(&yaml)
                .filter_map(|e| match e.expect("valid YAML").0 {
                    Event::Scalar(v, ..) => Some(v.to_string()),
                    _ => None,
                })
                .nth(1)
                .expect("the value");
            assert_eq!(got, s, "{yaml}");
        }
        assert_eq!(read_back(&quote("x")), "x");
    }
}
