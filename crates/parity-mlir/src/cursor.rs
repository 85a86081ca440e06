//! Byte-level scanning of MLIR text: whitespace, identifiers, string literals and
//! balanced bracket runs. Every delimiter it looks for is ASCII, so every offset it
//! hands out is a char boundary of the source.

use crate::error::MlirError;

/// Nesting beyond this is refused rather than risking the stack.
pub(crate) const MAX_DEPTH: usize = 200;

/// A position in MLIR source text.
pub(crate) struct Cursor<'a> {
    pub(crate) src: &'a str,
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
}

/// Characters allowed in bare identifiers, keywords and type names.
pub(crate) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

/// Characters allowed after `%`, `^` or `@` in SSA names, block labels and symbols.
pub(crate) fn is_suffix_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Cursor {
            src,
            bytes: src.as_bytes(),
            pos: 0,
        }
    }

    pub(crate) fn err(&self, message: impl Into<String>) -> MlirError {
        MlirError::at(self.src, self.pos, message)
    }

    pub(crate) fn err_at(&self, offset: usize, message: impl Into<String>) -> MlirError {
        MlirError::at(self.src, offset, message)
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(crate) fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    pub(crate) fn starts_with(&self, s: &str) -> bool {
        self.bytes[self.pos.min(self.bytes.len())..].starts_with(s.as_bytes())
    }

    /// True when `word` is next and is not the prefix of a longer identifier.
    pub(crate) fn at_keyword(&self, word: &str) -> bool {
        self.starts_with(word)
            && !self
                .bytes
                .get(self.pos + word.len())
                .is_some_and(|&b| is_ident_byte(b))
    }

    /// Skips whitespace and `//` comments.
    pub(crate) fn skip_ws(&mut self) {
        while let Some(b) = self.peek() {
            if b.is_ascii_whitespace() {
                self.pos += 1;
            } else if b == b'/' && self.peek_at(1) == Some(b'/') {
                while let Some(c) = self.peek() {
                    if c == b'\n' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// Skips whitespace, then consumes `b` if it is next.
    pub(crate) fn eat(&mut self, b: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips whitespace, then consumes `s` if it is next.
    pub(crate) fn eat_str(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Skips whitespace, then consumes the keyword `word` if it is next.
    pub(crate) fn eat_keyword(&mut self, word: &str) -> bool {
        self.skip_ws();
        if self.at_keyword(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    pub(crate) fn expect(&mut self, b: u8, what: &str) -> Result<(), MlirError> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(self.err(format!(
                "expected `{}` {what}, found {}",
                b as char,
                self.found()
            )))
        }
    }

    pub(crate) fn expect_str(&mut self, s: &str, what: &str) -> Result<(), MlirError> {
        if self.eat_str(s) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{s}` {what}, found {}", self.found())))
        }
    }

    /// A short description of what is at the cursor, for error messages.
    pub(crate) fn found(&self) -> String {
        if self.at_end() {
            return "end of input".to_string();
        }
        let rest = &self.bytes[self.pos..];
        let n = rest
            .iter()
            .take(24)
            .position(|&b| b == b'\n')
            .unwrap_or(rest.len().min(24));
        format!("`{}`", String::from_utf8_lossy(&rest[..n]))
    }

    /// Consumes a run of bytes accepted by `pred`; returns its start.
    pub(crate) fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(&pred) {
            self.pos += 1;
        }
        start
    }

    /// A bare identifier (`func.func`, `tensor`, `loc`); empty when none is next.
    pub(crate) fn ident(&mut self) -> &'a str {
        self.skip_ws();
        let start = self.take_while(is_ident_byte);
        &self.src[start..self.pos]
    }

    /// A sigil-prefixed name (`%12`, `%arg3`, `^bb0`, `@main`) starting at the cursor.
    pub(crate) fn sigil_name(&mut self, sigil: u8, what: &str) -> Result<&'a str, MlirError> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() != Some(sigil) {
            return Err(self.err(format!("expected {what}, found {}", self.found())));
        }
        self.pos += 1;
        if sigil == b'@' && self.peek() == Some(b'"') {
            self.string_lit()?;
        } else {
            self.take_while(is_suffix_byte);
        }
        if self.pos == start + 1 {
            return Err(self.err_at(start, format!("expected {what}, found {}", self.found())));
        }
        Ok(&self.src[start..self.pos])
    }

    /// An unsigned decimal integer.
    pub(crate) fn integer(&mut self, what: &str) -> Result<usize, MlirError> {
        self.skip_ws();
        let start = self.take_while(|b| b.is_ascii_digit());
        self.src[start..self.pos]
            .parse()
            .map_err(|_| self.err_at(start, format!("expected {what}")))
    }

    /// A string literal at the cursor; returns the span including the quotes.
    pub(crate) fn string_lit(&mut self) -> Result<(usize, usize), MlirError> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() != Some(b'"') {
            return Err(self.err(format!("expected a string literal, found {}", self.found())));
        }
        self.pos += 1;
        loop {
            match self.peek() {
                None | Some(b'\n') => {
                    return Err(self.err_at(start, "unterminated string literal"));
                }
                Some(b'\\') => self.pos += 2,
                Some(b'"') => {
                    self.pos += 1;
                    return Ok((start, self.pos));
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// Skips a bracketed run starting at an opener (`(`, `[`, `{`, `<`) through its
    /// matching closer, honouring string literals and the `>` of `->`.
    pub(crate) fn skip_balanced(&mut self) -> Result<(usize, usize), MlirError> {
        self.skip_ws();
        let start = self.pos;
        let mut stack: Vec<(u8, usize)> = Vec::new();
        loop {
            let Some(b) = self.peek() else {
                let (open, at) = stack.last().copied().unwrap_or((b'(', start));
                return Err(self.err_at(at, format!("unclosed `{}`", open as char)));
            };
            match b {
                b'"' => {
                    self.string_lit()?;
                    continue;
                }
                b'(' | b'[' | b'{' | b'<' => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(self.err("nesting too deep"));
                    }
                    stack.push((b, self.pos));
                }
                b'>' if self.pos > 0 && self.bytes[self.pos - 1] == b'-' => {}
                b')' | b']' | b'}' | b'>' => {
                    let want = match stack.pop() {
                        Some((b'(', _)) => b')',
                        Some((b'[', _)) => b']',
                        Some((b'{', _)) => b'}',
                        Some((_, _)) => b'>',
                        None => return Err(self.err(format!("unexpected `{}`", b as char))),
                    };
                    if b != want {
                        return Err(self.err(format!(
                            "expected `{}`, found `{}`",
                            want as char, b as char
                        )));
                    }
                    if stack.is_empty() {
                        self.pos += 1;
                        return Ok((start, self.pos));
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
    }
}

/// Decodes the body of an MLIR string literal (`\"`, `\\`, `\n`, `\t`, `\XX` hex escapes).
pub(crate) fn unescape(body: &str) -> String {
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            let c = bytes[i + 1];
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match (c, hex) {
                (_, Some(v)) => {
                    out.push(v);
                    i += 3;
                    continue;
                }
                (b'n', _) => out.push(b'\n'),
                (b't', _) => out.push(b'\t'),
                _ => out.push(c),
            }
            i += 2;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
