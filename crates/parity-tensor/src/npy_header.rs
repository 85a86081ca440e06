//! Parsing of the `.npy` preamble and header dictionary.
//!
//! The header is a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`. numpy and
//! MLX spell it slightly differently (MLX writes `(2, 3, )` and `(2, )`), so
//! this is a small tolerant literal parser rather than pattern matching.
//! Errors are plain strings; callers attach the file and member names.

use crate::dtype::DType;

/// The `.npy` magic string.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Largest header we accept. numpy itself refuses headers over 10 000 bytes by
/// default; 1 MiB leaves room for odd writers while bounding what we parse.
pub(crate) const MAX_HEADER_LEN: usize = 1 << 20;

/// numpy's own limit on the number of dimensions.
pub(crate) const MAX_NDIM: usize = 64;

/// Nesting limit for the literal parser, so hostile `((((...` cannot overflow the stack.
const MAX_DEPTH: usize = 4;

/// Where the header text sits, from the fixed-size preamble.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Preamble {
    /// Format major version (1, 2 or 3).
    pub major: u8,
    /// Offset of the header text (10 for v1, 12 for v2/v3).
    pub header_start: usize,
    /// Length of the header text in bytes.
    pub header_len: usize,
}

impl Preamble {
    /// Offset of the first data byte.
    pub fn data_start(&self) -> usize {
        self.header_start + self.header_len
    }
}

/// The decoded header dictionary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NpyHeader {
    /// Element type.
    pub dtype: DType,
    /// True when elements are stored big-endian (`>` descr).
    pub big_endian: bool,
    /// True when data is stored in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape as declared.
    pub shape: Vec<usize>,
}

/// Reads the magic, version and header length from the first 12 (or 10) bytes.
pub(crate) fn parse_preamble(bytes: &[u8]) -> Result<Preamble, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not an .npy file (missing \\x93NUMPY magic)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_start, header_len) = match major {
        1 => (10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 => {
            let b = bytes
                .get(8..12)
                .ok_or("file ends inside the v2/v3 header length")?;
            let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            (
                12,
                usize::try_from(len).map_err(|_| "header length too large")?,
            )
        }
        _ => return Err(format!("unsupported .npy format version {major}.{minor}")),
    };
    if header_len > MAX_HEADER_LEN {
        return Err(format!(
            "header length {header_len} exceeds the {MAX_HEADER_LEN}-byte limit"
        ));
    }
    Ok(Preamble {
        major,
        header_start,
        header_len,
    })
}

/// Parses the header text (the bytes after the preamble) of a version `major` file.
pub(crate) fn parse_header(text: &[u8], major: u8) -> Result<NpyHeader, String> {
    // v1/v2 headers are latin-1, v3 UTF-8; only string contents may be non-ASCII.
    let text: String = if major >= 3 {
        std::str::from_utf8(text)
            .map_err(|_| "v3 header is not valid UTF-8")?
            .to_owned()
    } else {
        text.iter().map(|&b| b as char).collect()
    };
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let dict = match p.value(0)? {
        Lit::Dict(d) => d,
        _ => return Err("header is not a dict".into()),
    };
    p.skip_ws();
    if p.i != p.s.len() {
        return Err("trailing characters after the header dict".into());
    }
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (k, v) in dict {
        let slot_taken = match k.as_str() {
            "descr" => descr.replace(v).is_some(),
            "fortran_order" => fortran.replace(v).is_some(),
            "shape" => shape.replace(v).is_some(),
            other => return Err(format!("unexpected header key '{other}'")),
        };
        if slot_taken {
            return Err(format!("duplicate header key '{k}'"));
        }
    }
    let (dtype, big_endian) = match descr.ok_or("header has no 'descr'")? {
        Lit::Str(s) => parse_descr(&s)?,
        _ => return Err("structured dtypes (non-string 'descr') are not supported".into()),
    };
    let fortran_order = match fortran.ok_or("header has no 'fortran_order'")? {
        Lit::Bool(b) => b,
        _ => return Err("'fortran_order' is not True/False".into()),
    };
    let shape = match shape.ok_or("header has no 'shape'")? {
        Lit::Tuple(items) => items
            .into_iter()
            .map(|v| match v {
                Lit::Int(n) => Ok(n),
                _ => Err("'shape' holds a non-integer".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("'shape' is not a tuple".into()),
    };
    if shape.len() > MAX_NDIM {
        return Err(format!(
            "{} dimensions exceed the limit of {MAX_NDIM}",
            shape.len()
        ));
    }
    Ok(NpyHeader {
        dtype,
        big_endian,
        fortran_order,
        shape,
    })
}

/// Maps a numpy type string to a dtype and byte order.
///
/// bfloat16 has no numpy type code: numpy + ml_dtypes and MLX's `mx.save`
/// both write it as the raw 2-byte void `<V2`, so `V2` is read as bf16.
pub(crate) fn parse_descr(descr: &str) -> Result<(DType, bool), String> {
    let unsupported = || format!("unsupported dtype '{descr}'");
    let (order, code) = match descr.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => ('<', &descr[1..]),
        Some(b'>') => ('>', &descr[1..]),
        _ => ('<', descr),
    };
    let dtype = match code {
        "b1" | "?" => DType::Bool,
        "u1" => DType::U8,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        "V2" => DType::Bf16,
        _ => return Err(unsupported()),
    };
    Ok((dtype, order == '>' && dtype.size() > 1))
}

/// The descr parity writes for `dtype` (little-endian; bf16 as `<V2`, see [`parse_descr`]).
pub(crate) fn descr_for(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::Bf16 => "<V2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
    }
}

/// A Python literal, restricted to what npy headers contain.
enum Lit {
    Str(String),
    Bool(bool),
    Int(usize),
    Tuple(Vec<Lit>),
    Dict(Vec<(String, Lit)>),
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err("header literal nested too deeply".into());
        }
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut items = Vec::new();
                while !self.eat(b'}') {
                    let key = match self.value(depth + 1)? {
                        Lit::Str(s) => s,
                        _ => return Err("header dict key is not a string".into()),
                    };
                    if !self.eat(b':') {
                        return Err("expected ':' in header dict".into());
                    }
                    items.push((key, self.value(depth + 1)?));
                    if !self.eat(b',') && self.peek() != Some(b'}') {
                        return Err("expected ',' or '}' in header dict".into());
                    }
                }
                Ok(Lit::Dict(items))
            }
            Some(open @ (b'(' | b'[')) => {
                self.i += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                while !self.eat(close) {
                    items.push(self.value(depth + 1)?);
                    if !self.eat(b',') && self.peek() != Some(close) {
                        return Err("expected ',' or closing bracket in header".into());
                    }
                }
                Ok(Lit::Tuple(items))
            }
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i] != q {
                    if self.s[self.i] == b'\\' {
                        return Err("escape sequences in header strings are not supported".into());
                    }
                    self.i += 1;
                }
                if self.i >= self.s.len() {
                    return Err("unterminated string in header".into());
                }
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Ok(Lit::Str(s))
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                    self.i += 1;
                }
                // Python 2 era numpy wrote longs as `3L`.
                let digits = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                digits
                    .parse::<usize>()
                    .map(Lit::Int)
                    .map_err(|_| format!("integer '{digits}' in header is out of range"))
            }
            Some(_) => {
                for (word, lit) in [("True", true), ("False", false)] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(Lit::Bool(lit));
                    }
                }
                Err(format!("unexpected character at header offset {}", self.i))
            }
            None => Err("header ends unexpectedly".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_and_mlx_spellings() {
        let np = parse_header(
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   \n",
            1,
        );
        let mlx = parse_header(
            b"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, )}\n",
            1,
        );
        let (np, mlx) = (np.unwrap(), mlx.unwrap());
        assert_eq!(np.shape, vec![2, 3]);
        assert!(!np.fortran_order && mlx.fortran_order);
        assert_eq!(
            parse_header(b"{'descr':'>i8','fortran_order':False,'shape':()}", 1)
                .unwrap()
                .shape,
            Vec::<usize>::new()
        );
        let h = parse_header(
            b"{'descr': '<V2', 'fortran_order': False, 'shape': (7L,), }",
            1,
        )
        .unwrap();
        assert_eq!((h.dtype, h.shape), (DType::Bf16, vec![7]));
    }

    #[test]
    fn rejects_bad_headers() {
        for bad in [
            &b"{'descr': '<f4', 'shape': (2,)}"[..],
            b"{'descr': '<u4', 'fortran_order': False, 'shape': (2,)}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
            b"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
            b"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': ((((((1,),),),),),)}",
            b"{'descr': '<f4'",
        ] {
            assert!(
                parse_header(bad, 1).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn preamble_versions() {
        let mut v1 = MAGIC.to_vec();
        v1.extend([1, 0, 0x76, 0]);
        assert_eq!(parse_preamble(&v1).unwrap().data_start(), 10 + 0x76);
        let mut v3 = MAGIC.to_vec();
        v3.extend([3, 0, 5, 0, 0, 0]);
        let p = parse_preamble(&v3).unwrap();
        assert_eq!((p.major, p.data_start()), (3, 17));
        let mut huge = MAGIC.to_vec();
        huge.extend([2, 0, 0xff, 0xff, 0xff, 0xff]);
        assert!(parse_preamble(&huge).is_err());
        assert!(parse_preamble(b"\x93NUMPY\x04\x00\x00\x00").is_err());
    }
}
