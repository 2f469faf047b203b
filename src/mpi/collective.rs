//! The collectives of 64-bit integers the library makes on a raw communicator
//! (its private duplicate, or the ranks of one node), each waiting as the node
//! allows ([`complete_collective`]) and checked.

use std::os::raw::c_void;

use mpi::ffi;

use crate::core::error::Result;
use crate::mpi::status::{check, count};
use crate::mpi::waiting::{Waits, complete_collective};

/// Gathers `mine` (the same length on every rank) from every rank of `comm`, in
/// rank order, into `all`, which holds `mine.len()` values per rank; waits as
/// [`complete_collective`] does.
pub fn allgather_i64(
    comm: ffi::MPI_Comm,
    waits: Waits,
    mine: &[i64],
    all: &mut [i64],
) -> Result<()> {
    let each = count(mine.len())?;
    let (send, receive) = (mine.as_ptr().cast::<c_void>(), all.as_mut_ptr().cast());
    // SAFETY: `all` holds mine.len() values per rank (caller's contract); both
    // outlive the collective, which completes before the call returns; the type
    // is an MPI constant.
    let code = unsafe {
        let int64 = ffi::RSMPI_INT64_T;
        complete_collective(
            waits,
            || ffi::MPI_Allgather(send, each, int64, receive, each, int64, comm),
            |request| ffi::MPI_Iallgather(send, each, int64, receive, each, int64, comm, request),
        )
    };
    check(code, "MPI_Allgather")
}

/// Reduces `send` element-wise with `op` over the ranks of `comm` into `receive`
/// (as long as `send`); waits as [`complete_collective`] does.
pub fn allreduce_i64(
    comm: ffi::MPI_Comm,
    waits: Waits,
    op: ffi::MPI_Op,
    send: &[i64],
    receive: &mut [i64],
) -> Result<()> {
    let n = count(send.len())?;
    let (send, receive) = (send.as_ptr().cast::<c_void>(), receive.as_mut_ptr().cast());
    // SAFETY: both buffers hold n values (caller's contract) and outlive the
    // collective, which completes before the call returns; the type is an MPI
    // constant.
    let code = unsafe {
        let int64 = ffi::RSMPI_INT64_T;
        complete_collective(
            waits,
            || ffi::MPI_Allreduce(send, receive, n, int64, op, comm),
            |request| ffi::MPI_Iallreduce(send, receive, n, int64, op, comm, request),
        )
    };
    check(code, "MPI_Allreduce")
}
