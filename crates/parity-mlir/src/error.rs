//! The one error type of this crate: a message at a line and column.

/// Something wrong with MLIR text (parse, slice or promotion), located in that text.
///
/// `line` and `col` are 1-based; `col` counts characters. For errors that are
/// not about a position in text (a bad slice request), they point at the
/// function the request is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}:{col}: {message}")]
pub struct MlirError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    /// What is wrong.
    pub message: String,
}

impl MlirError {
    /// An error at a byte offset of `src`.
    pub(crate) fn at(src: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, col) = line_col(src.as_bytes(), offset);
        MlirError {
            line,
            col,
            message: message.into(),
        }
    }

    /// An error at a known line, column 1.
    pub(crate) fn at_line(line: usize, message: impl Into<String>) -> Self {
        MlirError {
            line,
            col: 1,
            message: message.into(),
        }
    }
}

/// 1-based line and character column of a byte offset (clamped to the text).
pub(crate) fn line_col(bytes: &[u8], offset: usize) -> (usize, usize) {
    let offset = offset.min(bytes.len());
    let before = &bytes[..offset];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    // Count characters, not bytes: skip UTF-8 continuation bytes.
    let col = 1 + before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count();
    (line, col)
}

/// Byte offsets where each line starts, for cheap offset -> line lookups.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(src: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            src.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}
