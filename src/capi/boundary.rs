//! The panic boundary and this thread's last error, a caller's status and
//! message as an error, with the decoding of the arguments every C function
//! shares (dtypes, shapes, an execution's buffers).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::api::plan::Plan;
use crate::core::abi::{DtypeCode, StatusCode, dr_dtype, dr_status};
use crate::core::error::{Error, Result};
use crate::core::fallible::contain_panic;
use crate::mpi::buffers::Buffers;
use crate::planning::args::MAX_DIMS;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs `body` of a function that returns no status (a destructor): a panic is
/// caught here, as it must not unwind into C.
pub(crate) fn guard_without_status(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
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

/// The buffers of an execution of `plan` with their checked lengths (`in_elems`
/// `None` for the plan's own input length) and the first error to agree on.
pub(crate) fn c_buffers(
    plan: &Plan,
    (input, in_elems): (*const c_void, Option<i64>),
    (output, out_capacity): (*mut c_void, i64),
) -> (Buffers, Option<Error>) {
    let capacity = bytes(plan, "out_capacity", out_capacity);
    let input_bytes = in_elems.map_or(Ok(plan.input_span() * plan.elem_size()), |n| {
        bytes(plan, "in_elems", n)
    });
    let pre = input_bytes
        .as_ref()
        .err()
        .or(capacity.as_ref().err())
        .cloned();
    let buffers = Buffers::new(
        input.cast(),
        input_bytes.unwrap_or(0),
        output.cast(),
        capacity.unwrap_or(0),
    );
    (buffers, pre)
}

/// `elems` elements of the plan's type in bytes, or the error to agree on.
fn bytes(plan: &Plan, name: &str, elems: i64) -> Result<usize> {
    usize::try_from(elems)
        .map(|n| n.saturating_mul(plan.elem_size()))
        .map_err(|_| Error::BufferTooSmall(format!("{name} = {elems} is negative")))
}

/// The error a C caller reports as `status` with `message` (NULL for the
/// status's text); `None` for `DR_SUCCESS`.
///
/// # Safety
/// `message` NULL or a NUL-terminated string.
pub(crate) unsafe fn caller_error(status: StatusCode, message: *const c_char) -> Option<Error> {
    if status == dr_status::DR_SUCCESS as StatusCode {
        return None;
    }
    let detail = match (message.is_null(), dr_status::from_code(status)) {
        // SAFETY: a NUL-terminated string, as documented.
        (false, _) => unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned(),
        (true, Some(known)) => known.message().to_owned(),
        (true, None) => format!("caller_status = {status} is not a dr_status"),
    };
    Some(Error::from_code(status, detail))
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
