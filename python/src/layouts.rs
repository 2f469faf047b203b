//! Process-grid layouts as the Python layer hands them over (`Layout._spec()`), and
//! the box a rank holds in one.

use distreshape::{Error, GridBox, Layout, Result};
use pyo3::prelude::*;

use crate::errors::to_py_err;

/// The layout whose spec (`Layout._spec()`, the layout as plain values: the global
/// shape, the process grid, the grid axis splitting each array axis, and the
/// explicit block lengths by array axis) is `spec`, naming `which` layout in the
/// error when it is not one. The Python layer has checked the spec's types and
/// ranges and sorted the lengths by axis (so that equal layouts hash alike on
/// every rank): only a fault of the package's own gives the error, which a plan
/// agrees on like any other.
pub fn layout_of(spec: &Bound<'_, PyAny>, which: &str) -> Result<Layout> {
    read_spec(spec).map_err(|e: PyErr| {
        Error::InvalidDistribution(format!("{which} is not a layout spec: {e}"))
    })
}

fn read_spec(spec: &Bound<'_, PyAny>) -> PyResult<Layout> {
    let shape: Vec<i64> = spec.get_item("shape")?.extract()?;
    let grid_dims: Vec<i64> = spec.get_item("grid_dims")?.extract()?;
    let axis_grid: Vec<Option<usize>> = spec.get_item("axis_grid")?.extract()?;
    let lengths: Vec<(usize, Vec<i64>)> = spec.get_item("lengths")?.extract()?;
    let unsplit = Layout::new(&shape, &grid_dims, &axis_grid);
    Ok(lengths.iter().fold(unsplit, |layout, (axis, given)| {
        layout.with_lengths(*axis, given)
    }))
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
    layout_of(&spec, "the layout")
        .and_then(|layout| layout.rank_box(nranks, rank))
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
