//! What was measured of the MPI library this process runs on, where it decides
//! how the exchange cuts its messages: whether one send through a strided datatype
//! beats a message per run. Every rank proposes its answer when a plan is made and
//! the ranks agree on it, so both ends of a stream cut the same messages.
//!
//! Measured with `examples/bench.rs` and `examples/grid_bench.rs`
//! (docs/src/performance/analysis.md): on Open MPI 4.1 a strided send took a
//! slab split change at P = 4 from 61-64 to 45 ms and bricks to x-pencils at
//! P = 8 from 24-25 to 14-16 ms; on MPICH 4.0 (ch4:ucx) it was no faster at P = 8
//! and as often a fifth slower as faster at P = 4, so there each run keeps a
//! message of its own.

use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

use mpi::ffi;

/// The environment variable that overrides the measured choice: `1` lets the
/// exchange send through strided datatypes, `0` does not.
pub const STRIDED_SENDS_VARIABLE: &str = "DISTRESHAPE_STRIDED_SENDS";

/// True when this rank proposes that long runs back to back in the receiver's
/// buffer and at one stride in the sender's travel as one strided send: as
/// [`STRIDED_SENDS_VARIABLE`] says when it is `0` or `1`, else when the MPI
/// library is Open MPI. Decided once per process (reading the environment
/// allocates); MPI need not be initialized.
pub fn strided_sends_pay() -> bool {
    static STRIDED_SENDS: OnceLock<bool> = OnceLock::new();
    *STRIDED_SENDS.get_or_init(|| {
        match std::env::var(STRIDED_SENDS_VARIABLE)
            .as_deref()
            .map(str::trim)
        {
            Ok("1") => true,
            Ok("0") => false,
            _ => library_version().contains("Open MPI"),
        }
    })
}

/// The MPI library's version string (`MPI_Get_library_version`, which MPI lets
/// any thread call, before `MPI_Init` and after `MPI_Finalize` too).
fn library_version() -> String {
    // SAFETY: reading an MPI constant.
    let capacity = unsafe { ffi::RSMPI_MAX_LIBRARY_VERSION_STRING }.max(1);
    let mut version = vec![0u8; capacity as usize];
    let mut len: c_int = 0;
    // SAFETY: `version` holds MPI_MAX_LIBRARY_VERSION_STRING bytes, as the call
    // requires; it writes at most that many and their length into `len`.
    let code =
        unsafe { ffi::MPI_Get_library_version(version.as_mut_ptr().cast::<c_char>(), &mut len) };
    let len = if code == 0 {
        len.clamp(0, capacity) as usize
    } else {
        0
    };
    String::from_utf8_lossy(&version[..len]).into_owned()
}
