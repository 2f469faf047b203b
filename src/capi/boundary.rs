//! The panic boundary and this thread's last error, with the decoding of the
//! arguments every C function shares (dtypes, shapes).

use std::cell::RefCell;
use std::ffi::{CString, c_char};

use crate::core::abi::{DtypeCode, StatusCode, dr_dtype, dr_status};
use crate::core::error::{Error, Result};
use crate::core::fallible::contain_panic;
use crate::planning::args::MAX_DIMS;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs `body`, turning errors and panics into a status and this thread's message.
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> dr_status {
    let outcome = contain_panic(body);
    match outcome {
        Ok(()) => dr_status::DR_SUCCESS,
        Err(error) => {
            let text = CString::new(error.to_string().replace('\0', " ")).unwrap_or_default();
            // try_with: never panic (thread teardown) outside the panic guard.
            let _ = LAST_ERROR.try_with(|last| last.replace(text));
            error.status()
        }
    }
}

/// Bytes per element of a dtype code.
pub(crate) fn elem_size(dtype: DtypeCode) -> Result<usize> {
    dr_dtype::from_code(dtype)
        .map(dr_dtype::size)
        .ok_or_else(|| Error::InvalidDtype(format!("dtype = {dtype} is not a dr_dtype value")))
}

/// Reads a C shape array.
///
/// # Safety
/// `shape` must point to `ndims` values when `ndims > 0`.
pub(crate) unsafe fn shape_arg<T: Copy>(name: &str, ndims: i32, shape: *const T) -> Result<Vec<T>> {
    match usize::try_from(ndims) {
        Ok(0) => Ok(Vec::new()),
        Ok(n) if n <= MAX_DIMS && !shape.is_null() => {
            // SAFETY: the caller passes n values.
            Ok(unsafe { std::slice::from_raw_parts(shape, n) }.to_vec())
        }
        Ok(n) if n <= MAX_DIMS => Err(Error::NullPointer(format!(
            "{name} is NULL with {n} dimensions"
        ))),
        _ => Err(Error::InvalidShape(format!(
            "{name}: ndims = {ndims} is outside [0, {MAX_DIMS}]"
        ))),
    }
}

/// A static description of a status (never NULL).
#[unsafe(no_mangle)]
pub extern "C" fn dr_status_string(status: StatusCode) -> *const c_char {
    dr_status::from_code(status)
        .map_or(c"unknown status", dr_status::text)
        .as_ptr()
}

/// The message of this thread's last failed call, naming the argument, its value
/// and the rank (empty if no call failed). Valid until the next failing call on
/// this thread.
#[unsafe(no_mangle)]
pub extern "C" fn dr_last_error_message() -> *const c_char {
    // try_with and try_borrow: this runs outside the panic guard, so it must not panic.
    LAST_ERROR
        .try_with(|last| last.try_borrow().map(|m| m.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::abi::{DR_MAX_DIMS, DR_SPLIT_NONE};

    #[test]
    fn constants_match_the_engine() {
        assert_eq!(DR_MAX_DIMS as usize, MAX_DIMS);
        assert_eq!(DR_SPLIT_NONE, -1);
    }

    #[test]
    fn status_strings_come_from_the_table() {
        // SAFETY: dr_status_string returns a static NUL-terminated string.
        let text = |code| unsafe { std::ffi::CStr::from_ptr(dr_status_string(code)) };
        assert_eq!(text(3), c"invalid shape");
        assert_eq!(text(15), c"invalid plan option");
        assert_eq!(text(99), c"unknown status");
        assert_eq!(text(-1), c"unknown status");
    }
}
