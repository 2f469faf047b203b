//! The library's private communicator: a duplicate of the caller's with
//! MPI_ERRORS_RETURN, and the few collectives the planner needs, each checked.

use std::os::raw::{c_char, c_int, c_void};

use mpi::ffi;

use crate::error::{Error, Result};

/// The raw MPI communicator handle type (`MPI_Comm` of the MPI library we were built with).
pub type RawComm = ffi::MPI_Comm;

/// Converts an MPI return code into a [`Result`], naming the call that failed.
pub fn check(code: c_int, call: &str) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    let mut text = [0 as c_char; 512];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING (512 in MPICH and Open MPI) bytes.
    let described = unsafe { ffi::MPI_Error_string(code, text.as_mut_ptr(), &mut len) } == 0;
    let reason = if described {
        let bytes: Vec<u8> = text[..len.max(0) as usize]
            .iter()
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        format!("error code {code}")
    };
    Err(Error::Mpi(format!("{call} failed: {reason}")))
}

/// True when MPI is initialized and not yet finalized.
pub fn mpi_is_usable() -> bool {
    let (mut init, mut fin): (c_int, c_int) = (0, 0);
    // SAFETY: both calls may be made at any time, even before MPI_Init.
    unsafe {
        ffi::MPI_Initialized(&mut init);
        ffi::MPI_Finalized(&mut fin);
    }
    init != 0 && fin == 0
}

/// Most values [`Comm::allreduce_max`] reduces in one call.
pub const MAX_REDUCED: usize = 256;

/// `Ok` when MPI is initialized and not yet finalized, else
/// [`Error::MpiNotInitialized`]: checked before any MPI call, so that a call after
/// `MPI_Finalize` returns an error instead of aborting the process.
pub fn require_mpi() -> Result<()> {
    if mpi_is_usable() {
        return Ok(());
    }
    Err(Error::MpiNotInitialized(
        "call MPI_Init (or MPI_Init_thread) before DistReshape, and do not call it after MPI_Finalize"
            .into(),
    ))
}

/// A duplicate of a caller's communicator, freed on drop. Messages on it never mix
/// with the caller's, and MPI errors on it are returned rather than fatal.
#[derive(Debug)]
pub struct Comm {
    raw: RawComm,
    rank: usize,
    size: usize,
}

// SAFETY: the handle is only used through MPI calls, which the MPI library
// synchronizes when initialized with MPI_THREAD_MULTIPLE (documented requirement for
// using one plan from several threads, and never concurrently).
unsafe impl Send for Comm {}
// SAFETY: as above.
unsafe impl Sync for Comm {}

impl Comm {
    /// Duplicates `caller` (collective over it). Fails without communicating when MPI
    /// is not usable or `caller` is MPI_COMM_NULL or an intercommunicator.
    pub fn duplicate(caller: RawComm) -> Result<Comm> {
        require_mpi()?;
        // SAFETY: reading an MPI constant handle.
        if caller == unsafe { ffi::RSMPI_COMM_NULL } {
            return Err(Error::InvalidCommunicator(format!(
                "comm is MPI_COMM_NULL (on rank {} of MPI_COMM_WORLD)",
                world_rank()
            )));
        }
        let mut inter: c_int = 0;
        check(
            // SAFETY: caller is a non-null communicator handle supplied by the user.
            unsafe { ffi::MPI_Comm_test_inter(caller, &mut inter) },
            "MPI_Comm_test_inter",
        )
        .map_err(|e| Error::InvalidCommunicator(e.detail().to_string()))?;
        if inter != 0 {
            return Err(Error::InvalidCommunicator(format!(
                "comm is an intercommunicator; DistReshape needs an intracommunicator (on rank {} of MPI_COMM_WORLD)",
                world_rank()
            )));
        }
        let mut raw = caller;
        check(
            // SAFETY: duplicating a valid intracommunicator into a local handle.
            unsafe { ffi::MPI_Comm_dup(caller, &mut raw) },
            "MPI_Comm_dup",
        )?;
        let mut comm = Comm {
            raw,
            rank: 0,
            size: 1,
        };
        check(
            // SAFETY: raw is our own valid communicator.
            unsafe { ffi::MPI_Comm_set_errhandler(raw, ffi::RSMPI_ERRORS_RETURN) },
            "MPI_Comm_set_errhandler",
        )?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        check(
            // SAFETY: raw is our own valid communicator.
            unsafe { ffi::MPI_Comm_rank(raw, &mut rank) },
            "MPI_Comm_rank",
        )?;
        check(
            // SAFETY: raw is our own valid communicator.
            unsafe { ffi::MPI_Comm_size(raw, &mut size) },
            "MPI_Comm_size",
        )?;
        comm.rank = rank as usize;
        comm.size = size as usize;
        Ok(comm)
    }

    /// The raw handle of the duplicate.
    pub fn raw(&self) -> RawComm {
        self.raw
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Element-wise maximum of `values` (at most [`MAX_REDUCED`]) over all ranks, in
    /// place, without allocating.
    pub fn allreduce_max(&self, values: &mut [i64]) -> Result<()> {
        let mut send = [0i64; MAX_REDUCED];
        let send = send.get_mut(..values.len()).ok_or_else(|| {
            Error::Internal(format!(
                "{} values to reduce, at most {MAX_REDUCED}",
                values.len()
            ))
        })?;
        send.copy_from_slice(values);
        // SAFETY: both buffers hold values.len() i64 values (rsmpi has no MPI_IN_PLACE,
        // hence the copy).
        check(
            unsafe {
                ffi::MPI_Allreduce(
                    send.as_ptr().cast::<c_void>(),
                    values.as_mut_ptr().cast::<c_void>(),
                    count(values.len())?,
                    ffi::RSMPI_INT64_T,
                    ffi::RSMPI_MAX,
                    self.raw,
                )
            },
            "MPI_Allreduce",
        )
    }

    /// Gathers `mine` (the same length on every rank) from every rank, in rank order,
    /// into `all`, whose capacity must already hold them (so nothing allocates here).
    pub fn allgather_into(&self, mine: &[i64], all: &mut Vec<i64>) -> Result<()> {
        let n = mine.len() * self.size;
        if all.capacity() < n {
            return Err(Error::Internal(format!(
                "allgather buffer holds {} < {n}",
                all.capacity()
            )));
        }
        all.resize(n, 0);
        // SAFETY: all holds mine.len() values per rank.
        check(
            unsafe {
                ffi::MPI_Allgather(
                    mine.as_ptr().cast::<c_void>(),
                    count(mine.len())?,
                    ffi::RSMPI_INT64_T,
                    all.as_mut_ptr().cast::<c_void>(),
                    count(mine.len())?,
                    ffi::RSMPI_INT64_T,
                    self.raw,
                )
            },
            "MPI_Allgather",
        )
    }

    /// Broadcasts `bytes` from `root`.
    pub fn broadcast(&self, bytes: &mut [u8], root: usize) -> Result<()> {
        // SAFETY: every rank passes a buffer of the same length.
        check(
            unsafe {
                ffi::MPI_Bcast(
                    bytes.as_mut_ptr().cast::<c_void>(),
                    count(bytes.len())?,
                    ffi::RSMPI_UINT8_T,
                    root as c_int,
                    self.raw,
                )
            },
            "MPI_Bcast",
        )
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if mpi_is_usable() {
            // SAFETY: raw is our own duplicate, freed exactly once.
            unsafe { ffi::MPI_Comm_free(&mut self.raw) };
        }
    }
}

/// This process's rank in MPI_COMM_WORLD, to name it in messages about a
/// communicator that cannot be used.
fn world_rank() -> c_int {
    let mut rank: c_int = -1;
    // SAFETY: MPI is initialized (checked by the caller); MPI_COMM_WORLD is valid.
    unsafe { ffi::MPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut rank) };
    rank
}

/// Converts a length to an MPI count.
pub fn count(len: usize) -> Result<c_int> {
    c_int::try_from(len)
        .map_err(|_| Error::Internal(format!("MPI count {len} exceeds the 32-bit limit")))
}
