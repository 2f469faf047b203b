//! The thread level MPI was initialized with, and which threads it lets call MPI.
//!
//! A plan is `Send`, so safe Rust can move it to any thread; MPI allows calls from
//! other threads than the main one only at `MPI_THREAD_SERIALIZED` (one thread at a
//! time) and `MPI_THREAD_MULTIPLE`. Below that (`MPI_THREAD_SINGLE`,
//! `MPI_THREAD_FUNNELED`), only the main thread (the one that initialized MPI) may
//! call MPI, so every plan entry point that calls MPI first checks its thread here
//! and refuses, without calling MPI, on any other. The checks use only
//! `MPI_Query_thread` and `MPI_Is_thread_main`, which the MPI standard lets any
//! thread call at any level (they exist to answer this question), once per plan,
//! when it is made; later checks compare thread ids in Rust.

use std::os::raw::c_int;
use std::thread::ThreadId;

use mpi::ffi;

use crate::core::error::{Error, Result};

/// What the thread level lets a plan do, recorded when the plan is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadLevel {
    /// The level MPI provides (`MPI_Query_thread`).
    provided: c_int,
    /// Below `MPI_THREAD_SERIALIZED`, the main thread: the only one that may call
    /// MPI. `None` when any thread may.
    main: Option<ThreadId>,
}

impl ThreadLevel {
    /// The level MPI was initialized with, checked for this thread: below
    /// `MPI_THREAD_SERIALIZED` this thread must be the main thread, and is
    /// recorded as the only one the plan may call MPI from. MPI must be
    /// initialized.
    pub fn of_this_thread() -> Result<ThreadLevel> {
        let mut provided: c_int = 0;
        // SAFETY: MPI is initialized (checked by the caller); any thread may ask.
        unsafe { ffi::MPI_Query_thread(&mut provided) };
        // SAFETY: reading an MPI constant.
        if provided >= unsafe { ffi::RSMPI_THREAD_SERIALIZED } {
            return Ok(ThreadLevel {
                provided,
                main: None,
            });
        }
        let mut main: c_int = 0;
        // SAFETY: as above; any thread may ask whether it is the main thread.
        unsafe { ffi::MPI_Is_thread_main(&mut main) };
        let level = ThreadLevel {
            provided,
            main: Some(std::thread::current().id()),
        };
        match main != 0 {
            true => Ok(level),
            false => Err(level.refusal("this process")),
        }
    }

    /// `Ok` when the thread level lets this thread call MPI for the plan, else an
    /// [`Error::Mpi`] naming the level and `rank`, without any MPI call.
    pub fn check(&self, rank: usize) -> Result<()> {
        match self.main {
            Some(main) if main != std::thread::current().id() => {
                Err(self.refusal(&format!("rank {rank}")))
            }
            _ => Ok(()),
        }
    }

    /// True when this thread may call MPI for the plan.
    pub fn allows_this_thread(&self) -> bool {
        self.main
            .is_none_or(|main| main == std::thread::current().id())
    }

    /// The error of a call from a thread that may not call MPI, on `whom`.
    fn refusal(&self, whom: &str) -> Error {
        Error::Mpi(format!(
            "MPI was initialized with {} and this thread is not the main thread ({whom}); \
             call DistReshape from the main thread, or initialize MPI with \
             MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE",
            level_name(self.provided)
        ))
    }
}

/// The name of thread level `level`.
fn level_name(level: c_int) -> &'static str {
    // SAFETY: reading MPI constants.
    let (single, funneled) = unsafe { (ffi::RSMPI_THREAD_SINGLE, ffi::RSMPI_THREAD_FUNNELED) };
    match level {
        l if l == single => "MPI_THREAD_SINGLE",
        l if l == funneled => "MPI_THREAD_FUNNELED",
        _ => "a thread level below MPI_THREAD_SERIALIZED",
    }
}
