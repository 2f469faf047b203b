//! Fallible allocation and panic containment: what lets every layer turn an
//! exhausted allocator or a bug into an error that the ranks can agree on.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::core::error::{Error, Result};
use crate::core::faults::allocation_allowed;

/// An empty vector with room for `capacity` values, or [`Error::OutOfMemory`]
/// naming `what` and `rank`.
pub fn try_vec<T>(capacity: usize, what: &str, rank: usize) -> Result<Vec<T>> {
    try_room(capacity, what).map_err(|e| e.on_rank(rank))
}

/// [`try_vec`] where the caller names the rank (a layer that does not know it).
pub fn try_room<T>(capacity: usize, what: &str) -> Result<Vec<T>> {
    let bytes = capacity.saturating_mul(size_of::<T>());
    let mut v = Vec::new();
    let within_limit = allocation_allowed(bytes as u64);
    if within_limit && v.try_reserve_exact(capacity).is_ok() {
        return Ok(v);
    }
    Err(Error::OutOfMemory(format!(
        "cannot allocate {bytes} bytes for {what}"
    )))
}

/// Appends `value` to `v`, growing it fallibly: [`Error::OutOfMemory`] naming
/// `what` when it cannot grow.
pub fn try_push<T>(v: &mut Vec<T>, value: T, what: &str, rank: usize) -> Result<()> {
    if v.try_reserve(1).is_err() {
        return Err(Error::OutOfMemory(format!(
            "cannot keep {what} on rank {rank}"
        )));
    }
    v.push(value);
    Ok(())
}

/// Runs a step that holds no MPI state, turning a panic into [`Error::Internal`] so
/// that it can be agreed with the other ranks instead of unwinding through them.
pub(crate) fn contain_panic<T>(step: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(step)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::Internal(format!("panic inside DistReshape: {what}")))
    })
}
