//! The progress bar of `parity check` (indicatif), drawn only when stderr
//! is a terminal.

use crate::report::sanitize;
use crate::run::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A progress bar on stderr, or nothing when stderr is not a terminal.
pub struct Bar(Option<ProgressBar>);

impl Bar {
    /// A bar when stderr is a terminal.
    pub fn for_stderr() -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar(None);
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("[{pos}/{len}] {wide_msg}") {
            bar.set_style(style);
        }
        Bar(Some(bar))
    }

    /// Shows one finished stage run.
    pub fn update(&self, p: &Progress) {
        if let Some(bar) = &self.0 {
            bar.set_length(p.total as u64);
            bar.set_position(p.done as u64);
            bar.set_message(format!(
                "{} ({}, {}): {}",
                sanitize::terminal(&p.stage.name),
                sanitize::terminal(&p.stage.case),
                p.stage.mode.name(),
                p.stage.status.name()
            ));
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
