//! Attribute text: an entry of an attribute dictionary, a string attribute's
//! contents. Shared by the parser, the pretty-form reader and the splitter.

use crate::cursor::{unescape, Cursor};

/// The text of entry `key` in an attribute dictionary `{a = 1, b = "x"}`.
pub(crate) fn dict_entry<'a>(dict: &'a str, key: &str) -> Option<&'a str> {
    let mut cur = Cursor::new(dict);
    if !cur.eat(b'{') {
        return None;
    }
    loop {
        cur.skip_ws();
        let k = if cur.peek() == Some(b'"') {
            let (s, e) = cur.string_lit().ok()?;
            &dict[s + 1..e - 1]
        } else {
            cur.ident()
        };
        if k.is_empty() {
            return None;
        }
        let value = if cur.eat(b'=') {
            cur.skip_ws();
            let start = cur.pos;
            skip_value(&mut cur)?;
            dict[start..cur.pos].trim()
        } else {
            "unit"
        };
        if k == key {
            return Some(value);
        }
        if !cur.eat(b',') {
            return None;
        }
    }
}

/// Skips an attribute value up to a top-level `,` or `}`.
fn skip_value(cur: &mut Cursor<'_>) -> Option<()> {
    loop {
        match cur.peek()? {
            b',' | b'}' => return Some(()),
            b'"' => {
                cur.string_lit().ok()?;
            }
            b'(' | b'[' | b'{' | b'<' => {
                cur.skip_balanced().ok()?;
            }
            b'-' if cur.peek_at(1) == Some(b'>') => cur.pos += 2,
            _ => cur.pos += 1,
        }
    }
}

/// The decoded contents of a string attribute `"..."`.
pub(crate) fn string_value(v: &str) -> Option<String> {
    let body = v.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(body))
}
