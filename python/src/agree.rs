//! Agreement on the errors found outside the library (the arrays' checks, the
//! Python layer's conversions), with the same outcome as the library's own: every
//! rank returns the error of the lowest failing rank, with that rank's message.

use std::os::raw::{c_int, c_void};

use distreshape::{Error, RawComm, Result};
use mpi::ffi;

/// Longest message shared with the other ranks, in bytes (as in the library).
const MESSAGE_BYTES: usize = 1024;

/// The agreed key packs the failing rank and its status as
/// `(size - rank) * STATUS_RADIX + code`: the maximum over ranks names the lowest
/// failing rank. Status codes are small (see `errors::status_names`).
const STATUS_RADIX: i64 = 256;

/// Agrees over `comm` on whether any rank failed (collective). Returns `Ok` on every
/// rank when no rank has a `local` error, else every rank returns the error of the
/// lowest failing rank, with that rank's message. One small allreduce when no rank
/// failed.
pub fn agree(comm: RawComm, local: Option<Error>) -> Result<()> {
    let (rank, size) = rank_and_size(comm)?;
    let key = local.as_ref().map_or(0, |e| {
        (size - rank) as i64 * STATUS_RADIX + i64::from(e.code())
    });
    let mut agreed = 0i64;
    // SAFETY: one i64 to send and one to receive; `comm` is a valid communicator
    // (the Python plan keeps mpi4py's communicator alive).
    let code = unsafe {
        ffi::MPI_Allreduce(
            (&raw const key).cast::<c_void>(),
            (&raw mut agreed).cast::<c_void>(),
            1,
            ffi::RSMPI_INT64_T,
            ffi::RSMPI_MAX,
            comm,
        )
    };
    check(code, "MPI_Allreduce")?;
    if agreed == 0 {
        return Ok(());
    }
    let root = size - (agreed / STATUS_RADIX) as usize;
    let status = (agreed % STATUS_RADIX) as i32;
    let mut message = [0u8; MESSAGE_BYTES];
    if let (true, Some(error)) = (rank == root, &local) {
        let detail = truncate(error.detail(), MESSAGE_BYTES);
        message[..detail.len()].copy_from_slice(detail.as_bytes());
    }
    // SAFETY: every rank passes a buffer of MESSAGE_BYTES bytes; `root` is a rank of
    // `comm` (decoded from a key some rank of it made).
    let sent = unsafe {
        ffi::MPI_Bcast(
            message.as_mut_ptr().cast::<c_void>(),
            MESSAGE_BYTES as c_int,
            ffi::RSMPI_UINT8_T,
            root as c_int,
            comm,
        )
    };
    check(sent, "MPI_Bcast")?;
    let end = message
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(MESSAGE_BYTES);
    let mut detail = String::from_utf8_lossy(&message[..end]).into_owned();
    match local {
        Some(own) if rank != root => detail += &format!("; rank {rank} also found: {own}"),
        None => detail += &format!(" (reported to rank {rank})"),
        _ => {}
    }
    Err(Error::from_code(status, detail))
}

/// This process's rank in `comm` and the size of `comm`.
pub fn rank_and_size(comm: RawComm) -> Result<(usize, usize)> {
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: `comm` is a valid communicator; the call writes one int.
    let ranked = unsafe { ffi::MPI_Comm_rank(comm, &mut rank) };
    check(ranked, "MPI_Comm_rank")?;
    // SAFETY: as above.
    let sized = unsafe { ffi::MPI_Comm_size(comm, &mut size) };
    check(sized, "MPI_Comm_size")?;
    Ok((rank as usize, size as usize))
}

/// The C handle of the communicator whose Fortran handle is `handle` (mpi4py's
/// `Comm.py2f()`).
pub fn from_fortran(handle: ffi::RSMPI_Fint) -> RawComm {
    // SAFETY: MPI_Comm_f2c (through rsmpi's wrapper of the macro) only converts a handle (an invalid one gives an invalid
    // handle, which the MPI calls using it report).
    unsafe { ffi::RSMPI_Comm_f2c(handle) }
}

/// `Err(Error::Mpi)` naming `call` unless `code` is MPI_SUCCESS.
fn check(code: c_int, call: &str) -> Result<()> {
    match code {
        0 => Ok(()),
        _ => Err(Error::Mpi(format!(
            "{call} failed with MPI error code {code}"
        ))),
    }
}

/// The longest prefix of `s` that fits in `max` bytes and ends on a char boundary.
fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
