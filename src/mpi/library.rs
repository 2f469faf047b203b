//! What was measured of the MPI library this process runs on, where it decides
//! how the exchange cuts its messages: how long runs back to back in one buffer
//! and at one stride in the other travel together ([`StridedRuns`]). Every rank
//! proposes its answer when a plan is made and the ranks agree on it, so both ends
//! of a stream cut the same messages.
//!
//! Measured with `examples/bench.rs`, `examples/grid_bench.rs` and
//! `bench/pencil_messages.c` (docs/src/performance/analysis.md):
//! - on Open MPI 4.1 a strided send took a slab split change at P = 4 from 61-64
//!   to 45 ms and bricks to x-pencils at P = 8 from 24-25 to 14-16 ms; on MPICH
//!   4.0 (ch4:ucx) it was no faster at P = 8 and as often a fifth slower as
//!   faster at P = 4;
//! - on MPICH, a receive through a strided datatype is fast only while the two
//!   ends share a core: with two ranks per core and the partners on different
//!   cores it took 2.2-2.7x the contiguous bound where a message per run took
//!   0.86-1.00x, and `grid_bench`'s x -> y pencils fell into that state in two
//!   runs of three (3.2-3.8x against 1.13-1.32x); with one rank per core a
//!   message per run took 1.07-1.18x of the bound against 1.12-3.34x, so there
//!   each long run is a message of its own;
//! - on MPICH with four ranks per core, a receive through a strided datatype took
//!   1.7-1.8x the contiguous bound where the same bytes through a slot, unpacked,
//!   took 1.2-1.3x, and a message per run was no faster than the slot for
//!   pencils and a fifth slower for bricks.
//! - with four ranks per core, reading long runs straight from the node peer's
//!   input ([`crate::mpi::cross_memory`]) took the slab exchanges on MPICH from
//!   1.9-2.1x the contiguous bound to 1.1-1.3x, and on Open MPI from 1.32-1.50x
//!   to 1.12-1.17x; pencil transposes at P = 8 from 77-95 ms to 44-51 on MPICH
//!   and from 31-39 ms to 27-29 on Open MPI. With two ranks per core it was even
//!   on MPICH and a tenth faster on Open MPI, within the noise.
//! - with more ranks than processors, waits that sleep between polls once they
//!   have yielded a while ([`crate::mpi::waiting`]) took pencil transposes at
//!   P = 8 on MPICH from 56-68 ms to 44-51, but on Open MPI, which yields by
//!   itself, from 29-34 ms to 37-47: only MPICH's waits sleep.

use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

use mpi::ffi;

use crate::mpi::node::crowded;
use crate::planning::messages::StridedRuns;

/// The environment variable that overrides the measured choice of strided sends:
/// `1` lets the exchange send through strided datatypes, `0` does not.
pub const STRIDED_SENDS_VARIABLE: &str = "DISTRESHAPE_STRIDED_SENDS";

/// The environment variable that overrides the measured choice of slots: `1`
/// makes long strided runs travel through the slots, `0` does not (it takes
/// precedence over [`STRIDED_SENDS_VARIABLE`]).
pub const STRIDED_SLOTS_VARIABLE: &str = "DISTRESHAPE_STRIDED_SLOTS";

/// The environment variable that overrides the measured choice of run messages:
/// `1` makes every long run a message of its own, `0` does not (below
/// [`STRIDED_SLOTS_VARIABLE`], above [`STRIDED_SENDS_VARIABLE`]).
pub const RUN_MESSAGES_VARIABLE: &str = "DISTRESHAPE_RUN_MESSAGES";

/// The environment variable that overrides the measured choice of direct reads
/// ([`crate::mpi::cross_memory`]): `1` lets the ranks of a node read one another's
/// long runs directly where the kernel allows it, `0` does not.
pub const DIRECT_READS_VARIABLE: &str = "DISTRESHAPE_DIRECT_READS";

/// The environment variable that overrides the measured choice of sleeping waits
/// ([`crate::mpi::waiting`]): `1` lets this process's waits on a node with more
/// ranks than processors sleep between polls once they have yielded a while,
/// `0` makes them only yield.
pub const SLEEPING_WAITS_VARIABLE: &str = "DISTRESHAPE_SLEEPING_WAITS";

/// Whether this process's waits on an oversubscribed node sleep between polls
/// once they have yielded a while: as [`SLEEPING_WAITS_VARIABLE`] says, else when
/// the library is MPICH. Decided once per process; each process waits its own way.
pub fn sleeping_waits() -> bool {
    static SLEEPING_WAITS: OnceLock<bool> = OnceLock::new();
    *SLEEPING_WAITS.get_or_init(|| {
        switch(SLEEPING_WAITS_VARIABLE).unwrap_or_else(|| library_version().contains("MPICH"))
    })
}

/// Whether this rank proposes that the ranks of its node read one another's long
/// runs directly: as [`DIRECT_READS_VARIABLE`] says, else on a node with more
/// than two ranks per processor. Decided once per process; the node agrees on it
/// ([`crate::mpi::cross_memory`]).
pub fn proposed_direct_reads() -> bool {
    static DIRECT_READS: OnceLock<bool> = OnceLock::new();
    *DIRECT_READS.get_or_init(|| switch(DIRECT_READS_VARIABLE).unwrap_or_else(crowded))
}

/// True when the MPI library is SimGrid's SMPI, whose ranks are threads of one
/// process.
pub fn is_smpi() -> bool {
    static SMPI: OnceLock<bool> = OnceLock::new();
    *SMPI.get_or_init(|| library_version().contains("SMPI"))
}

/// How this rank proposes that long strided runs travel: through the slots when
/// [`STRIDED_SLOTS_VARIABLE`] is `1`, or when it is not `0` and the library is
/// not Open MPI on a node with more than two ranks per processor; else a message
/// per run when [`RUN_MESSAGES_VARIABLE`] is `1`, or when it is not `0` and the
/// library is MPICH; else through strided datatypes on both sides when
/// [`STRIDED_SENDS_VARIABLE`] is `1`, or when it is not `0` and the library is
/// Open MPI; else through strided receives only.
/// Decided once per process (reading the environment allocates); MPI need not be
/// initialized.
pub fn proposed_strided_runs() -> StridedRuns {
    static STRIDED_RUNS: OnceLock<StridedRuns> = OnceLock::new();
    *STRIDED_RUNS.get_or_init(|| {
        let version = library_version();
        let (open_mpi, mpich) = (version.contains("Open MPI"), version.contains("MPICH"));
        let slots = switch(STRIDED_SLOTS_VARIABLE).unwrap_or_else(|| !open_mpi && crowded());
        let run_messages = switch(RUN_MESSAGES_VARIABLE).unwrap_or(mpich);
        let sends = switch(STRIDED_SENDS_VARIABLE).unwrap_or(open_mpi);
        match (slots, run_messages, sends) {
            (true, _, _) => StridedRuns::Slots,
            (false, true, _) => StridedRuns::RunMessages,
            (false, false, true) => StridedRuns::StridedDatatypes,
            (false, false, false) => StridedRuns::StridedReceives,
        }
    })
}

/// The setting of the environment variable `name`: `Some` when it is `1` or `0`.
fn switch(name: &str) -> Option<bool> {
    match std::env::var(name).as_deref().map(str::trim) {
        Ok("1") => Some(true),
        Ok("0") => Some(false),
        _ => None,
    }
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
