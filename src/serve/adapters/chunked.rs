//! `Transfer-Encoding: chunked` bodies (RFC 9112 section 7.1) as plain byte
//! streams, for the black-box HTTP client.

use std::io::{BufRead, Read};

/// A `Transfer-Encoding: chunked` body as a plain byte stream.
pub struct Chunked<R> {
    inner: R,
    left: u64,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    /// Decodes the chunked body read from `inner`.
    pub fn new(inner: R) -> Self {
        Chunked {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        if self.done {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.inner.by_ref().take(1024).read_line(&mut line)?;
            if line.trim().is_empty() {
                // The CRLF after the previous chunk.
                line.clear();
                self.inner.by_ref().take(1024).read_line(&mut line)?;
            }
            let size = line.trim().split(';').next().unwrap_or("");
            self.left = u64::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left as usize);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(invalid("the chunked body ended mid-chunk"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn chunked_bodies_are_decoded() {
        let raw = b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let mut s = String::new();
        Chunked::new(&raw[..]).read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello world");
        let mut s = String::new();
        assert!(Chunked::new(&b"zz\r\n"[..]).read_to_string(&mut s).is_err());
    }

    proptest! {
        #[test]
        fn any_chunking_decodes_to_the_payload(
            payload in proptest::collection::vec(any::<u8>(), 0..512),
            cuts in proptest::collection::vec(1usize..64, 1..16),
        ) {
            let mut raw = Vec::new();
            let (mut at, mut k) = (0, 0);
            while at < payload.len() {
                let n = cuts[k % cuts.len()].min(payload.len() - at);
                raw.extend(format!("{n:x}\r\n").bytes());
                raw.extend(&payload[at..at + n]);
                raw.extend(b"\r\n");
                at += n;
                k += 1;
            }
            raw.extend(b"0\r\n\r\n");
            let mut back = Vec::new();
            Chunked::new(raw.as_slice()).read_to_end(&mut back).unwrap();
            prop_assert_eq!(back, payload);
        }

        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut sink = Vec::new();
            let _ = Chunked::new(bytes.as_slice()).read_to_end(&mut sink);
        }
    }
}
