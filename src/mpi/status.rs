//! The MPI basics every MPI module uses: return codes as [`Result`]s naming the
//! call, lengths as MPI's 32-bit counts, and whether MPI may be called at all.

use std::os::raw::{c_char, c_int};

use mpi::ffi;

use crate::core::error::{Error, Result};

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

/// Converts a length to an MPI count.
pub fn count(len: usize) -> Result<c_int> {
    c_int::try_from(len)
        .map_err(|_| Error::Internal(format!("MPI count {len} exceeds the 32-bit limit")))
}
