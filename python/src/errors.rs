//! The library's errors as Python's `distreshape.Error`, with the C ABI's status
//! codes and names.

use std::collections::BTreeMap;

use distreshape::Error;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// Every error status code with its C enumerator name (`{3: "DR_ERROR_INVALID_SHAPE", ...}`),
/// for the Python layer, which raises the same errors.
#[pyfunction]
pub fn status_names() -> BTreeMap<i32, &'static str> {
    // The codes are small (a `dr_status` is a C enum); a code the library does not
    // know comes back as another one, so the round trip keeps only real codes.
    (1..=i32::from(i8::MAX))
        .filter_map(|code| {
            let error = Error::from_code(code, String::new());
            (error.code() == code).then(|| (code, error.status_name()))
        })
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
