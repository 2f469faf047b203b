//! The extension module `distreshape._native`: DistReshape's plans over mpi4py's
//! communicators and NumPy's arrays. The Python API is the pure-Python package
//! around it (`distreshape/__init__.py`), which turns the caller's arguments into
//! the plain values taken here.
//!
//! Every collective call here returns the same outcome on every rank: the library
//! agrees on the errors it finds together with the errors found here (array
//! checks) and by the Python layer, which it is handed
//! (`Plan::execute_raw_agreeing`), so no rank is left waiting.

#![warn(clippy::undocumented_unsafe_blocks)]

mod arrays;
mod errors;
mod fused;
mod layouts;
mod plan;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<plan::NativePlan>()?;
    m.add_class::<plan::NativeRequest>()?;
    m.add_class::<fused::NativeFused>()?;
    m.add_function(wrap_pyfunction!(errors::status_names, m)?)?;
    m.add_function(wrap_pyfunction!(plan::option_names, m)?)?;
    m.add_function(wrap_pyfunction!(balanced_slab, m)?)?;
    m.add_function(wrap_pyfunction!(layouts::layout_box, m)?)?;
    Ok(())
}

/// `(offset, length)` of rank `rank`'s slab when `extent` rows are balanced over
/// `nranks` ranks: Heat's formula, the library's default output distribution.
#[pyfunction]
fn balanced_slab(extent: u64, nranks: u64, rank: u64) -> PyResult<(u64, u64)> {
    if rank >= nranks {
        return Err(PyValueError::new_err(format!(
            "rank {rank} is not below nranks = {nranks}"
        )));
    }
    let slab = distreshape::balanced_slab(extent, nranks, rank);
    Ok((slab.offset, slab.len))
}
