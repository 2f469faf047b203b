//! The C functions about the library itself rather than a plan: the balanced
//! slab formula, the version, and the fault-injection hooks of the test build.

use std::ffi::c_char;

use crate::capi::boundary::guard;
use crate::core::abi::dr_status;
use crate::core::error::Error;
use crate::distribution::layout::balanced_slab;

/// The balanced slab of `extent` rows for `rank` of `nranks` (pure, no MPI):
/// `len = extent/nranks + (rank < extent%nranks)`, `offset = rank*(extent/nranks) +
/// min(rank, extent%nranks)`.
///
/// # Safety
/// `len` and `offset` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_balanced_slab(
    extent: i64,
    nranks: i32,
    rank: i32,
    len: *mut i64,
    offset: *mut i64,
) -> dr_status {
    guard(|| {
        if len.is_null() || offset.is_null() {
            return Err(Error::NullPointer("len or offset is NULL".into()));
        }
        if extent < 0 {
            return Err(Error::InvalidShape(format!(
                "extent = {extent} is negative"
            )));
        }
        if nranks < 1 || rank < 0 || rank >= nranks {
            return Err(Error::InvalidDistribution(format!(
                "rank = {rank} is not in [0, nranks = {nranks})"
            )));
        }
        let slab = balanced_slab(extent as u64, nranks as u64, rank as u64);
        // SAFETY: both pointers are non-null and writable.
        unsafe {
            *len = slab.len as i64;
            *offset = slab.offset as i64;
        }
        Ok(())
    })
}

/// The library version, e.g. "0.3.0".
#[unsafe(no_mangle)]
pub extern "C" fn dr_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// makes every allocation of the library larger than `bytes` fail as if memory were
/// exhausted, on this process (a negative value removes the limit).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_allocation_limit(bytes: i64) {
    crate::core::faults::set_allocation_limit(u64::try_from(bytes).ok());
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// when `enabled` is non-zero, plan creation panics inside the library on this
/// process (the panic is caught and reported as DR_ERROR_INTERNAL everywhere).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_panic(enabled: i32) {
    crate::core::faults::set_panic_in_planning(enabled != 0);
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// when `enabled` is non-zero, the next exchange on this process fails with
/// DR_ERROR_MPI once all its first messages are posted.
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_exchange_failure(enabled: i32) {
    crate::core::faults::set_exchange_failure(enabled != 0);
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// when `enabled` is non-zero, the next datatype the library makes on this
/// process fails in MPI (a count of -1 handed to MPI in place of the
/// constructor, which MPI refuses).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_datatype_failure(enabled: i32) {
    crate::core::faults::set_datatype_failure(enabled != 0);
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// when `enabled` is non-zero, the next exchange on this process panics once all
/// its first messages are posted (the panic is caught and reported as
/// DR_ERROR_INTERNAL on this rank).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_exchange_panic(enabled: i32) {
    crate::core::faults::set_exchange_panic(enabled != 0);
}
