//! A small downsampled picture of where a failing output's error lives (the
//! run record's optional `error_map`): the largest |production - oracle| per
//! cell over the tensor's two main axes, with the share of each cell the
//! padding mask excludes. The HTML report draws it as a heatmap; the record
//! holds no other per-element data. Computed by the runner
//! (`parity::run::error_map`).

use serde::{Deserialize, Serialize};

/// Most cells along each axis of an [`ErrorMap`].
pub const MAX_CELLS: usize = 64;

/// Downsampled error of one output over its two largest axes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorMap {
    /// The tensor axes drawn as rows and columns (the two largest; for a
    /// rank-1 tensor both are axis 0 and there is one row).
    pub axes: [usize; 2],
    /// The tensor's extent along those axes.
    pub dims: [usize; 2],
    /// Cells along each axis (at most [`MAX_CELLS`]); a cell covers
    /// `ceil(dim / MAX_CELLS)` positions of its axis (the last may cover fewer).
    pub cells: [usize; 2],
    /// Row-major `cells[0] x cells[1]`: the largest finite |error| over the
    /// cell's compared elements, every other axis reduced; null when the cell
    /// has no compared element with a finite error.
    pub max_abs: Vec<Option<f64>>,
    /// Row-major like `max_abs`: the fraction of the cell's elements the
    /// mask pads (1: the whole cell is padding, nothing in it was compared).
    pub padded: Vec<f64>,
    /// Per cell: elements whose error is NaN or infinite (one side only).
    pub nonfinite: Vec<u64>,
}
