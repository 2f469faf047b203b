//! The fault-injection switches (only with the `test-hooks` feature) that tests use
//! to prove that allocation failures, internal panics and MPI failures come back as
//! errors on every rank; without the feature nothing is injected.

use crate::core::error::{Error, Result};

/// The switches, compiled only with the `test-hooks` feature (the fault tests'
/// build of the library).
#[cfg(feature = "test-hooks")]
mod hooks {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    static ALLOCATION_LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);
    static PANIC_IN_PLANNING: AtomicBool = AtomicBool::new(false);
    static FAIL_EXCHANGE: AtomicBool = AtomicBool::new(false);
    static PANIC_IN_EXCHANGE: AtomicBool = AtomicBool::new(false);
    static FAIL_DATATYPE: AtomicBool = AtomicBool::new(false);

    /// Test hook: makes every allocation of the library larger than `bytes` fail as
    /// if the machine were out of memory (`None` removes the limit). Process-wide.
    pub fn set_allocation_limit(bytes: Option<u64>) {
        ALLOCATION_LIMIT.store(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Test hook: makes the validation step of plan creation panic on this process.
    pub fn set_panic_in_planning(enabled: bool) {
        PANIC_IN_PLANNING.store(enabled, Ordering::Relaxed);
    }

    /// Test hook: makes the next exchange on this process fail as if MPI had, just
    /// before it first waits for its messages (they are all posted by then).
    pub fn set_exchange_failure(enabled: bool) {
        FAIL_EXCHANGE.store(enabled, Ordering::Relaxed);
    }

    /// Test hook: makes the next exchange on this process panic, just before it
    /// first waits for its messages (they are all posted by then).
    pub fn set_exchange_panic(enabled: bool) {
        PANIC_IN_EXCHANGE.store(enabled, Ordering::Relaxed);
    }

    /// Test hook: makes the next datatype the library makes on this process
    /// fail in MPI (a count of -1 handed to MPI in place of the constructor).
    pub fn set_datatype_failure(enabled: bool) {
        FAIL_DATATYPE.store(enabled, Ordering::Relaxed);
    }

    pub(crate) fn allocation_allowed(bytes: u64) -> bool {
        bytes <= ALLOCATION_LIMIT.load(Ordering::Relaxed)
    }

    pub(crate) fn datatype_failure_requested() -> bool {
        FAIL_DATATYPE.swap(false, Ordering::Relaxed)
    }

    pub(crate) fn panic_requested() -> bool {
        PANIC_IN_PLANNING.load(Ordering::Relaxed)
    }

    pub(crate) fn exchange_failure_requested() -> bool {
        FAIL_EXCHANGE.swap(false, Ordering::Relaxed)
    }

    pub(crate) fn exchange_panic_requested() -> bool {
        PANIC_IN_EXCHANGE.swap(false, Ordering::Relaxed)
    }
}
pub(crate) use hooks::allocation_allowed;
#[cfg(feature = "test-hooks")]
pub use hooks::{
    set_allocation_limit, set_datatype_failure, set_exchange_failure, set_exchange_panic,
    set_panic_in_planning,
};

/// Without the test hooks nothing is injected.
#[cfg(not(feature = "test-hooks"))]
mod hooks {
    pub(crate) fn allocation_allowed(_bytes: u64) -> bool {
        true
    }

    pub(crate) fn panic_requested() -> bool {
        false
    }

    pub(crate) fn exchange_failure_requested() -> bool {
        false
    }

    pub(crate) fn exchange_panic_requested() -> bool {
        false
    }

    pub(crate) fn datatype_failure_requested() -> bool {
        false
    }
}

/// Panics when the test hook asks for it.
pub(crate) fn injected_panic_point() {
    if hooks::panic_requested() {
        panic!("panic injected by the test hook set_panic_in_planning");
    }
}

/// Whether the next datatype is to fail in MPI's constructor (a test hook).
pub(crate) fn injected_datatype_fault() -> bool {
    hooks::datatype_failure_requested()
}

/// Panics, or fails like an MPI call, when a test hook asks for it.
pub(crate) fn injected_exchange_fault() -> Result<()> {
    if hooks::exchange_panic_requested() {
        panic!("panic injected by the test hook set_exchange_panic");
    }
    if hooks::exchange_failure_requested() {
        return Err(Error::Mpi(
            "MPI_Waitall failed: injected by the test hook set_exchange_failure".into(),
        ));
    }
    Ok(())
}
