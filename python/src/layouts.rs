//! Process-grid layouts as the Python layer hands them over (`Layout._spec()`), and
//! the box a rank holds in one.

use distreshape::{Error, GridBox, Layout, Result};
use pyo3::prelude::*;

use crate::errors::to_py_err;

/// A layout as plain values: the global shape, the process grid, the grid axis
/// splitting each array axis, and the explicit block lengths by array axis (the
/// Python layer has checked their types and ranges, and sorted the lengths by
/// axis, so that equal layouts hash alike on every rank).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct LayoutSpec {
    shape: Vec<i64>,
    grid_dims: Vec<i64>,
    axis_grid: Vec<Option<usize>>,
    lengths: Vec<(usize, Vec<i64>)>,
}

impl LayoutSpec {
    /// Reads `spec`, the spec of `which` layout; an error naming it when it is not
    /// one (the Python layer makes specs, so only a fault of the package's own gives
    /// it; a plan agrees on it like on any error).
    pub fn from_python(spec: &Bound<'_, PyAny>, which: &str) -> Result<LayoutSpec> {
        spec.extract().map_err(|e: PyErr| {
            Error::InvalidDistribution(format!("{which} is not a layout spec: {e}"))
        })
    }

    /// The library's layout.
    pub fn layout(&self) -> Layout {
        let unsplit = Layout::new(&self.shape, &self.grid_dims, &self.axis_grid);
        self.lengths
            .iter()
            .fold(unsplit, |layout, (axis, lengths)| {
                layout.with_lengths(*axis, lengths)
            })
    }
}

/// `(offset, length)` along each axis of the box rank `rank` of `nranks` holds in
/// the layout `spec` (local, no MPI); `distreshape.Error` when the layout is not one
/// of `nranks` ranks (the message names the argument, its value and `rank`).
#[pyfunction]
pub fn layout_box(
    py: Python<'_>,
    spec: Bound<'_, PyAny>,
    nranks: usize,
    rank: usize,
) -> PyResult<Vec<(u64, u64)>> {
    LayoutSpec::from_python(&spec, "the layout")
        .and_then(|spec| spec.layout().rank_box(nranks, rank))
        .map(|rank_box| spans(&rank_box))
        .map_err(|e| to_py_err(py, e))
}

/// `(offset, length)` of a box along each axis.
pub fn spans(rank_box: &GridBox) -> Vec<(u64, u64)> {
    rank_box
        .offsets
        .iter()
        .copied()
        .zip(rank_box.extents.iter().copied())
        .collect()
}
