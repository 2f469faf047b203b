//! The library's errors as Python's `distreshape.Error`, with the C ABI's status
//! codes and names.

use std::collections::BTreeMap;

use distreshape::Error;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// The C enumerator name (`dr_status` in `distreshape.h`) of `error`'s status.
///
/// The only copy of the names in this crate: the lead engineer replaces it by the
/// crate's status table (`Error::status_name()`) when that lands.
pub fn status_name(error: &Error) -> &'static str {
    match error {
        Error::NullPointer(_) => "DR_ERROR_NULL_POINTER",
        Error::InvalidDtype(_) => "DR_ERROR_INVALID_DTYPE",
        Error::InvalidShape(_) => "DR_ERROR_INVALID_SHAPE",
        Error::InvalidSplit(_) => "DR_ERROR_INVALID_SPLIT",
        Error::InvalidDistribution(_) => "DR_ERROR_INVALID_DISTRIBUTION",
        Error::InconsistentArguments(_) => "DR_ERROR_INCONSISTENT_ARGUMENTS",
        Error::BufferTooSmall(_) => "DR_ERROR_BUFFER_TOO_SMALL",
        Error::Aliasing(_) => "DR_ERROR_ALIASING",
        Error::OutOfMemory(_) => "DR_ERROR_OUT_OF_MEMORY",
        Error::Mpi(_) => "DR_ERROR_MPI",
        Error::MpiNotInitialized(_) => "DR_ERROR_MPI_NOT_INITIALIZED",
        Error::InvalidCommunicator(_) => "DR_ERROR_INVALID_COMMUNICATOR",
        Error::Internal(_) => "DR_ERROR_INTERNAL",
        Error::ExecutionInProgress(_) => "DR_ERROR_EXECUTION_IN_PROGRESS",
    }
}

/// Every error status code with its C enumerator name (`{3: "DR_ERROR_INVALID_SHAPE", ...}`),
/// for the Python layer, which raises the same errors.
#[pyfunction]
pub fn status_names() -> BTreeMap<i32, &'static str> {
    // The codes are small (a `dr_status` is a C enum); a code the library does not
    // know comes back as another one, so the round trip keeps only real codes.
    (1..=i32::from(i8::MAX))
        .filter_map(|code| {
            let error = Error::from_code(code, String::new());
            (error.code() == code).then(|| (code, status_name(&error)))
        })
        .collect()
}

/// `error` as a `distreshape.Error` (message, `.status`, `.status_name`).
pub fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
    static ERROR_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let raised = ERROR_CLASS
        .import(py, "distreshape._errors", "Error")
        .and_then(|class| class.call1((error.to_string(), error.code(), status_name(&error))));
    match raised {
        Ok(instance) => PyErr::from_value(instance),
        Err(import_failed) => import_failed,
    }
}
