//! The terminal: the run table, the bisect text or the compare summary.

use super::table::Colour;
use super::{baseline, bisect_text, compare_text, table, Renderer, ReportError};
use parity_record::AnyRecord;

/// Text for a terminal (or a pipe: colour is a choice, see [`Colour::detect`]).
#[derive(Clone, Copy, Debug)]
pub struct Terminal {
    /// Colour the status column.
    pub colour: Colour,
    /// Only the run's errors (each errored stage's message) and the closing
    /// summary, not the table.
    pub quiet: bool,
    /// Every row of a run's table, not one line per stage plus the rows
    /// that did not pass.
    pub verbose: bool,
}

impl Renderer for Terminal {
    fn render(&self, record: &AnyRecord) -> Result<Vec<u8>, ReportError> {
        let text = match record {
            AnyRecord::Run(r) if self.quiet => table::quiet(r),
            AnyRecord::Run(r) => table::render(r, self.colour, self.verbose),
            AnyRecord::Bisect(b) => bisect_text::text(b),
            AnyRecord::Compare(c) => compare_text::text(c),
            AnyRecord::Tokens(t) => super::tokens_text::text(t),
            AnyRecord::Serving(s) => super::serving_text::text(s),
            AnyRecord::Baseline(b) => baseline::text(b),
            AnyRecord::Fuzz(f) => super::fuzz_text::text(f),
            AnyRecord::History(h) => super::history_text::text(h, self.colour),
            AnyRecord::Dispatches(d) => super::dispatches_text::text(d),
        };
        Ok(text.into_bytes())
    }
}
