//! Server-sent events as OpenAI-style servers send them: `data:` lines,
//! events separated by a blank line, `data: [DONE]` at the end. Comments
//! (`:`), `event:`, `id:` and `retry:` lines are read and ignored.

use std::io::{BufRead, Read};

/// Longest line read (a bigger one is a malformed stream, not a memory hog).
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// One event of a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseEvent {
    /// A `data:` payload (multi-line data joined with `\n`).
    Data(String),
    /// `data: [DONE]`.
    Done,
}

/// Why a stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// The connection failed (or timed out) mid-stream.
    #[error("reading the event stream: {0}")]
    Io(#[from] std::io::Error),
    /// A line longer than [`MAX_LINE`] or not UTF-8.
    #[error("event stream line {line}: {message}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// Reads events from a byte stream.
pub struct SseReader<R> {
    inner: R,
    line: usize,
}

impl<R: BufRead> SseReader<R> {
    /// Reads from `inner` (the response body).
    pub fn new(inner: R) -> SseReader<R> {
        SseReader { inner, line: 0 }
    }

    /// The next event; None at the end of the stream.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut data: Option<String> = None;
        loop {
            let mut raw = Vec::new();
            let n = Read::by_ref(&mut self.inner)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut raw)?;
            if n == 0 {
                // End of stream: a pending event without its blank line still counts.
                return Ok(data.map(finish));
            }
            self.line += 1;
            if raw.len() > MAX_LINE {
                return Err(SseError::Malformed {
                    line: self.line,
                    message: format!("longer than {MAX_LINE} bytes"),
                });
            }
            let text = std::str::from_utf8(&raw).map_err(|_| SseError::Malformed {
                line: self.line,
                message: "not UTF-8".to_string(),
            })?;
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            if text.is_empty() {
                if let Some(d) = data.take() {
                    return Ok(Some(finish(d)));
                }
                continue;
            }
            let (field, value) = match text.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (text, ""),
            };
            if field == "data" {
                match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_string()),
                }
            }
        }
    }
}

fn finish(data: String) -> SseEvent {
    if data.trim() == "[DONE]" {
        SseEvent::Done
    } else {
        SseEvent::Data(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(text: &str) -> Result<Vec<SseEvent>, SseError> {
        let mut r = SseReader::new(text.as_bytes());
        let mut out = Vec::new();
        while let Some(e) = r.next_event()? {
            out.push(e);
        }
        Ok(out)
    }

    #[test]
    fn reads_data_events_comments_and_done() {
        let events =
            all(": hi\n\ndata: {\"a\":1}\n\nevent: x\ndata: 2\ndata: 3\r\n\r\ndata: [DONE]\n\n")
                .unwrap();
        assert_eq!(
            events,
            vec![
                SseEvent::Data("{\"a\":1}".into()),
                SseEvent::Data("2\n3".into()),
                SseEvent::Done
            ]
        );
    }

    #[test]
    fn a_stream_cut_mid_event_still_yields_it_and_then_ends() {
        assert_eq!(all("data: 1").unwrap(), vec![SseEvent::Data("1".into())]);
        assert_eq!(all("").unwrap(), vec![]);
    }

    #[test]
    fn non_utf8_is_malformed_with_its_line() {
        let mut r = SseReader::new(&b"data: 1\n\ndata: \xff\n\n"[..]);
        assert!(r.next_event().unwrap().is_some());
        let e = r.next_event().unwrap_err();
        assert_eq!(e.to_string(), "event stream line 3: not UTF-8");
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut r = SseReader::new(bytes.as_slice());
            for _ in 0..300 {
                match r.next_event() {
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
        }

        #[test]
        fn written_events_read_back(payloads in proptest::collection::vec("[a-z0-9{}\":,]{1,20}", 0..8)) {
            let mut text = String::new();
            for p in &payloads {
                text.push_str(&format!("data: {p}\n\n"));
            }
            text.push_str("data: [DONE]\n\n");
            let mut want: Vec<SseEvent> = payloads.iter().cloned().map(SseEvent::Data).collect();
            want.push(SseEvent::Done);
            prop_assert_eq!(all(&text).unwrap(), want);
        }
    }
}
