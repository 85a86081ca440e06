//! Making user strings safe for where they are shown: a terminal (no raw
//! control sequences) and XML 1.0 (only the characters it can hold).

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether a terminal would act on `c` rather than show it: C0 controls
/// other than newline and tab, DEL, and the C1 controls (U+0080..U+009F,
/// which include the one-character CSI).
fn is_terminal_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
}

/// `s` with every terminal control character shown escaped (`\x1b`,
/// `\u{9b}`), so names and file contents cannot move the cursor, recolour or
/// retitle the terminal.
pub fn terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_terminal_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_terminal_control(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// Whether XML 1.0 can hold `c` at all (even escaped): tab, newline,
/// carriage return, U+0020..U+D7FF, U+E000..U+FFFD, U+10000 and up.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `s` with every character XML 1.0 cannot hold replaced by its escaped
/// form as text (`\u{fffe}`), so the document stays parseable and the
/// reader still sees that something was there. Also drops the other C0/C1
/// controls' terminal meaning the same way, for text shown from XML.
pub fn xml(s: &str) -> Cow<'_, str> {
    if s.chars()
        .all(|c| is_xml_char(c) && !is_terminal_control(c) || c == '\r')
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\r' || (is_xml_char(c) && !is_terminal_control(c)) {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_controls_and_keeps_text() {
        assert_eq!(terminal("layer_norm"), "layer_norm");
        assert_eq!(terminal("a\nb\tc"), "a\nb\tc");
        assert_eq!(
            terminal("\x1b[31mred\x1b]0;title\x07"),
            "\\x1b[31mred\\x1b]0;title\\x07"
        );
        assert_eq!(terminal("csi\u{9b}2J del\x7f"), "csi\\u{9b}2J del\\x7f");
        assert_eq!(terminal("é ∑ 😀"), "é ∑ 😀");
    }

    #[test]
    fn xml_keeps_only_what_xml_can_hold() {
        assert_eq!(
            xml("a<b & \"c\""),
            "a<b & \"c\"",
            "escaping is the writer's job"
        );
        assert_eq!(xml("x\u{FFFE}y\u{FFFF}z"), "x\\u{fffe}y\\u{ffff}z");
        assert_eq!(
            xml("nul\0 esc\x1b bell\x07"),
            "nul\\u{0} esc\\u{1b} bell\\u{7}"
        );
        assert_eq!(xml("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
        assert_eq!(xml("😀 \u{FFFD}"), "😀 \u{FFFD}");
    }
}
