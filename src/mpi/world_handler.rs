//! MPICH 4.0 hands an error found when a request completes (`MPI_Wait`,
//! `MPI_Test` and their forms on many requests) to `MPI_COMM_WORLD`'s error
//! handler, whatever the handler of the request's communicator: usually
//! `MPI_ERRORS_ARE_FATAL`, so such an error in a plan's exchange (a truncated
//! message, a failed peer) would abort the caller's job rather than return
//! `DR_ERROR_MPI` from the plan's private communicator, whose handler returns.
//! Where no other thread may call MPI at the same time (below
//! `MPI_THREAD_MULTIPLE`), a plan's completion calls therefore run with
//! `MPI_COMM_WORLD`'s handler set to `MPI_ERRORS_RETURN`, the caller's put back
//! right after, so that no call of the caller's ever sees the swap. Under
//! `MPI_THREAD_MULTIPLE` another thread's call could, so the handler stays the
//! caller's (docs/src/reliability.md). Open MPI hands such errors to the
//! request's communicator.
//!
//! Both MPICH 4.0 and Open MPI 4.1 hand errors of the calls made on no
//! communicator (a datatype's constructor, its commit, its free) to
//! `MPI_COMM_WORLD`'s handler too: the plan's datatype calls run with the
//! same swap, on either library, below `MPI_THREAD_MULTIPLE`
//! ([`world_swappable`]).

use std::os::raw::c_int;

use mpi::ffi;

use crate::mpi::library::completion_errors_reach_world;

/// Whether this process's completion calls swap `MPI_COMM_WORLD`'s handler:
/// where completion errors reach it, below `MPI_THREAD_MULTIPLE`. MPI must be
/// initialized.
pub fn swapped_for_completions() -> bool {
    completion_errors_reach_world() && world_swappable()
}

/// Whether a call of ours may swap `MPI_COMM_WORLD`'s handler: below
/// `MPI_THREAD_MULTIPLE`, where no other thread calls MPI meanwhile. MPI must
/// be initialized.
pub fn world_swappable() -> bool {
    let mut provided: c_int = 0;
    // SAFETY: MPI is initialized (the caller's contract); any thread may ask.
    unsafe { ffi::MPI_Query_thread(&mut provided) };
    // SAFETY: reading an MPI constant.
    provided < unsafe { ffi::RSMPI_THREAD_MULTIPLE }
}

/// While it lives, `MPI_COMM_WORLD`'s error handler is `MPI_ERRORS_RETURN`
/// (when it was made `swapped`); dropping it puts the previous one back.
#[must_use = "the handler is swapped only while the guard lives"]
pub struct WorldErrorsReturned {
    previous: Option<ffi::MPI_Errhandler>,
}

impl WorldErrorsReturned {
    /// Swaps the handler when `swapped` (a plan's
    /// [`crate::mpi::waiting::Waits::world_errors_returned`]).
    pub fn during(swapped: bool) -> WorldErrorsReturned {
        if !swapped {
            return WorldErrorsReturned { previous: None };
        }
        // SAFETY: reading MPI constant handles.
        let (world, returned) = unsafe { (ffi::RSMPI_COMM_WORLD, ffi::RSMPI_ERRORS_RETURN) };
        // SAFETY: an uninitialized handle that MPI_Comm_get_errhandler sets.
        let mut previous = unsafe { std::mem::zeroed() };
        // SAFETY: MPI_COMM_WORLD is valid while MPI is (the plan's calls need
        // it); no other thread calls MPI meanwhile (`swapped` says so).
        unsafe {
            ffi::MPI_Comm_get_errhandler(world, &mut previous);
            ffi::MPI_Comm_set_errhandler(world, returned);
        }
        WorldErrorsReturned {
            previous: Some(previous),
        }
    }
}

impl Drop for WorldErrorsReturned {
    fn drop(&mut self) {
        if let Some(mut previous) = self.previous.take() {
            // SAFETY: as in `during`; the handle is the one MPI gave there,
            // freed once after it is set back.
            unsafe {
                ffi::MPI_Comm_set_errhandler(ffi::RSMPI_COMM_WORLD, previous);
                ffi::MPI_Errhandler_free(&mut previous);
            }
        }
    }
}
