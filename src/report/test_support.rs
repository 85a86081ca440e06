//! What the renderer tests share: a record rendered to text, and the plain
//! terminal renderer.

use super::table::Colour;
use super::{Renderer, Terminal};
use parity_record::AnyRecord;

/// `record` rendered by `r`, as text.
pub(super) fn text(r: &dyn Renderer, record: impl Into<AnyRecord>) -> String {
    String::from_utf8(r.render(&record.into()).unwrap()).unwrap()
}

/// The terminal renderer without colour, at the default verbosity.
pub(super) const TERM: Terminal = Terminal {
    colour: Colour::Off,
    quiet: false,
    verbose: false,
};
