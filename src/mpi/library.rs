//! What was measured of the MPI library this process runs on, where it decides
//! how the exchange cuts its messages: how long runs back to back in one buffer
//! and at one stride in the other travel together ([`StridedRuns`]). Every rank
//! proposes its answer when a plan is made and the ranks agree on it, so both ends
//! of a stream cut the same messages.
//!
//! What the choices rest on was measured with `examples/bench.rs`,
//! `examples/grid_bench.rs` and `bench/pencil_messages.c`: strided sends pay on
//! Open MPI 4.1 and not on MPICH 4.0; on MPICH a strided receive is fast only
//! while both ends share a core, so there each long run is a message of its own;
//! on a crowded node long runs are read directly from the node peer's input
//! ([`crate::mpi::cross_memory`]), and only MPICH's waits sleep
//! ([`crate::mpi::waiting`]). The figures are in
//! `docs/src/performance/analysis.md` ("Strided sends", "Slots on a crowded
//! node", "A message per run on MPICH", "Direct reads on a crowded node",
//! "Listed read runs and sleeping waits").

use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

use mpi::ffi;

use crate::core::abi::dr_option;
use crate::mpi::node::crowded;
use crate::planning::messages::StridedRuns;

/// A plan's switches of how its exchange moves data (the options `strided_sends`,
/// `strided_slots`, `run_messages`, `direct_reads` and `sleeping_waits`): each
/// forced on (`Some(true)`), off (`Some(false)`), or left open (`None`) to the
/// switch's `DISTRESHAPE_*` environment variable, else to the choice measured for
/// the MPI library and the node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Switches {
    /// Long runs at a stride may travel through strided datatypes on both sides;
    /// measured: on under Open MPI.
    pub strided_sends: Option<bool>,
    /// Long runs at a stride travel through the slots (above the other two);
    /// measured: on unless the library is Open MPI, on a node with more than two
    /// ranks per processor.
    pub strided_slots: Option<bool>,
    /// Every long run at a stride is a message of its own (below slots, above
    /// strided sends); measured: on under MPICH.
    pub run_messages: Option<bool>,
    /// This rank proposes that the ranks of its node read one another's long runs
    /// directly ([`crate::mpi::cross_memory`]); measured: on a node with more than
    /// two ranks per processor, and for plans with strided storage.
    pub direct_reads: Option<bool>,
    /// Waits on a node with more ranks than processors sleep between polls once
    /// they have yielded a while ([`crate::mpi::waiting`]); measured: on under
    /// MPICH.
    pub sleeping_waits: Option<bool>,
}

impl Switches {
    /// These switches with the ones left open taken from the `DISTRESHAPE_*`
    /// environment variables (read once per process: reading allocates).
    pub fn with_environment(self) -> Switches {
        static ENVIRONMENT: OnceLock<Switches> = OnceLock::new();
        let set = ENVIRONMENT.get_or_init(|| Switches {
            strided_sends: switch(dr_option::DR_OPTION_STRIDED_SENDS),
            strided_slots: switch(dr_option::DR_OPTION_STRIDED_SLOTS),
            run_messages: switch(dr_option::DR_OPTION_RUN_MESSAGES),
            direct_reads: switch(dr_option::DR_OPTION_DIRECT_READS),
            sleeping_waits: switch(dr_option::DR_OPTION_SLEEPING_WAITS),
        });
        Switches {
            strided_sends: self.strided_sends.or(set.strided_sends),
            strided_slots: self.strided_slots.or(set.strided_slots),
            run_messages: self.run_messages.or(set.run_messages),
            direct_reads: self.direct_reads.or(set.direct_reads),
            sleeping_waits: self.sleeping_waits.or(set.sleeping_waits),
        }
    }

    /// Whether waits on an oversubscribed node sleep between polls once they
    /// have yielded a while: as the switch says, else when the library is MPICH.
    pub fn sleeping_waits(&self) -> bool {
        self.sleeping_waits.unwrap_or_else(|| library().mpich)
    }

    /// Whether this rank proposes that the ranks of its node read one another's
    /// long runs directly: as the switch says, else on a node with more than two
    /// ranks per processor. The node agrees on it ([`crate::mpi::cross_memory`]).
    pub fn proposed_direct_reads(&self) -> bool {
        self.direct_reads.unwrap_or_else(crowded)
    }

    /// Whether this rank turned direct reads off (the switch, or its environment
    /// variable, set to off): it then vetoes them for the plans that would take
    /// them by default.
    pub fn refuses_direct_reads(&self) -> bool {
        self.direct_reads == Some(false)
    }

    /// How this rank proposes that long strided runs travel: through the slots
    /// when `strided_slots` is on, or open and the library is not Open MPI on a
    /// node with more than two ranks per processor; else a message per run when
    /// `run_messages` is on, or open and the library is MPICH; else through
    /// strided datatypes on both sides when `strided_sends` is on, or open and the
    /// library is Open MPI; else through strided receives only. MPI need not be
    /// initialized.
    pub fn proposed_strided_runs(&self) -> StridedRuns {
        let Library {
            open_mpi, mpich, ..
        } = *library();
        let slots = self.strided_slots.unwrap_or_else(|| !open_mpi && crowded());
        let run_messages = self.run_messages.unwrap_or(mpich);
        let sends = self.strided_sends.unwrap_or(open_mpi);
        match (slots, run_messages, sends) {
            (true, _, _) => StridedRuns::Slots,
            (false, true, _) => StridedRuns::RunMessages,
            (false, false, true) => StridedRuns::StridedDatatypes,
            (false, false, false) => StridedRuns::StridedReceives,
        }
    }
}

/// Which MPI library this process runs on, from its version string.
#[derive(Clone, Copy, Debug)]
struct Library {
    /// Open MPI.
    open_mpi: bool,
    /// MPICH (or a library built on it).
    mpich: bool,
    /// SimGrid's SMPI, whose ranks are threads of one process.
    smpi: bool,
}

/// The MPI library, found once per process (reading its version allocates).
fn library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let version = library_version();
        Library {
            open_mpi: version.contains("Open MPI"),
            mpich: version.contains("MPICH"),
            smpi: version.contains("SMPI"),
        }
    })
}

/// Whether an error found when a request completes goes to
/// `MPI_COMM_WORLD`'s handler whatever the request's communicator's
/// ([`crate::mpi::world_handler`]): on MPICH (4.0 measured).
pub fn completion_errors_reach_world() -> bool {
    library().mpich
}

/// True when the MPI library is SimGrid's SMPI, whose ranks are threads of one
/// process.
pub fn is_smpi() -> bool {
    library().smpi
}

/// Whether the library's collectives start in their non-blocking form on
/// every rank, so that a rank can carry its other executions on while it
/// waits (`crate::mpi::waiting::complete_collective`): on MPICH and Open MPI,
/// where that costs no more than the blocking form within the noise. Not on
/// SMPI, which simulates its non-blocking collectives with so many more events
/// that plan creation at scale took minutes of real time rather than seconds
/// (docs/src/performance/analysis.md, "Several executions in flight").
pub fn nonblocking_collectives() -> bool {
    !library().smpi
}

/// The setting of the environment variable of the switch `option`: `Some` when it
/// is `1` or `0`.
fn switch(option: dr_option) -> Option<bool> {
    let name = option.variable()?;
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
