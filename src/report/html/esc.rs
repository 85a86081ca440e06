//! Escaping for the three contexts user strings reach in the HTML report:
//! element text and attribute values, and JSON inside a `<script>` data block.

use std::fmt::Write as _;

/// Escapes `s` for HTML text and double- or single-quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Serialises `value` as JSON safe inside `<script type="application/json">`:
/// `<`, `>`, `&` and the JavaScript line separators become `\uXXXX`
/// escapes, so no string can close the script element or open a comment.
pub fn json_script(value: &serde_json::Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_string());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "<script>alert(1)</script>\"'&";

    #[test]
    fn text_and_attributes_keep_no_markup() {
        let e = esc(HOSTILE);
        assert_eq!(e, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;");
        assert!(!e.contains(['<', '>', '"', '\'']));
    }

    #[test]
    fn script_json_cannot_close_its_element_and_round_trips() {
        let v = serde_json::json!({ "stage": HOSTILE, "sep": "\u{2028}" });
        let s = json_script(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }
}
