//! The library's errors as Python's `distreshape.Error`, with the C ABI's status
//! codes and names.

use std::collections::BTreeMap;

use distreshape::{Error, Status};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Every error status code with its C enumerator name (`{3: "DR_ERROR_INVALID_SHAPE", ...}`),
/// from the library's status table, for the Python layer, which raises the same
/// errors.
#[pyfunction]
pub fn status_names() -> BTreeMap<i32, &'static str> {
    Status::ALL
        .into_iter()
        .filter(|status| *status != Status::DR_SUCCESS)
        .map(|status| (status as i32, status.name()))
        .collect()
}

/// `error` as a `distreshape.Error` (message, `.status`, `.status_name`).
pub fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
    static ERROR_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let raised = ERROR_CLASS
        .import(py, "distreshape._errors", "Error")
        .and_then(|class| class.call1((error.to_string(), error.code(), error.status_name())));
    match raised {
        Ok(instance) => PyErr::from_value(instance),
        Err(import_failed) => import_failed,
    }
}
