//! Point-to-point MPI shared by both exchange engines: starting one send or
//! receive, completing a set of requests, and cancelling them after a failure.

use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::core::error::Result;
use crate::core::faults::injected_exchange_failure;
use crate::mpi::comm::{Comm, check, count};
use crate::planning::schedule::Side;

/// Starts the send (`MPI_Isend`) or receive (`MPI_Irecv`) of `count` items of
/// `datatype` at `at`, with `peer` over `comm`, tagged `tag`.
///
/// # Safety
/// `at` valid for the message (readable for a send, writable for a receive) until
/// `request` completes.
pub unsafe fn start(
    side: Side,
    (at, count, datatype): (*mut u8, c_int, ffi::MPI_Datatype),
    (comm, peer, tag): (&Comm, c_int, c_int),
    request: &mut ffi::MPI_Request,
) -> Result<()> {
    let at = at.cast::<c_void>();
    // SAFETY: as documented.
    let (code, call) = unsafe {
        match side {
            Side::Send => (
                ffi::MPI_Isend(at, count, datatype, peer, tag, comm.raw(), request),
                "MPI_Isend",
            ),
            Side::Receive => (
                ffi::MPI_Irecv(at, count, datatype, peer, tag, comm.raw(), request),
                "MPI_Irecv",
            ),
        }
    };
    check(code, call)
}

/// Cancels every active request of `requests` and waits for it (MPI guarantees that
/// a cancelled request's wait returns, whatever the other ranks do), so that no
/// buffer is released while MPI may still use it.
pub fn cancel_all(requests: &mut [ffi::MPI_Request]) {
    for request in requests {
        // SAFETY: reading an MPI constant handle.
        if *request == unsafe { ffi::RSMPI_REQUEST_NULL } {
            continue;
        }
        // SAFETY: an active request; errors are moot here, the execution has
        // already failed.
        unsafe {
            ffi::MPI_Cancel(request);
            ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
        }
    }
}

/// Completes every request of `requests`: waits when `blocking`, else only tests,
/// returning whether they have all completed.
pub fn complete_all(requests: &mut [ffi::MPI_Request], blocking: bool) -> Result<bool> {
    injected_exchange_failure()?;
    let (n, all) = (count(requests.len())?, requests.as_mut_ptr());
    let mut done: c_int = 1;
    // SAFETY: the slice holds requests.len() valid (or null) requests.
    let code = unsafe {
        let statuses = ffi::RSMPI_STATUSES_IGNORE;
        match blocking {
            true => ffi::MPI_Waitall(n, all, statuses),
            false => ffi::MPI_Testall(n, all, &mut done, statuses),
        }
    };
    check(
        code,
        if blocking {
            "MPI_Waitall"
        } else {
            "MPI_Testall"
        },
    )?;
    Ok(done != 0)
}
