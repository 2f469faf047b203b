//! How this process waits for its messages and collectives: in `MPI_Wait` (one
//! request at a time, `crate::mpi::p2p`) / `MPI_Waitsome` and MPI's blocking
//! collectives, or, when the node runs more ranks
//! than it has processors or this process runs more than one execution
//! ([`Waits::polling`]), by polling with `MPI_Testall` / `MPI_Testsome` / `MPI_Test` (a
//! collective in its non-blocking form), carrying the other executions on
//! ([`carry_others_on`]) and giving the processor away between polls
//! (`sched_yield`, and on MPICH short sleeps once a wait has yielded a while,
//! [`crate::mpi::library::Switches::sleeping_waits`], a plan's choice).
//!
//! MPICH's waits spin. On an oversubscribed node a rank spinning for a message takes
//! the processor from the rank that would send it, in the exchange and in the
//! agreement that starts every execution (an `MPI_Allreduce`); yielding waits
//! give it back (docs/src/performance/analysis.md, "P = 4 on 2 cores", "Grid
//! layouts on shared cores" and "Listed read runs and sleeping waits"). Open MPI yields by itself when
//! oversubscribed; yielding here too changes nothing there. On a node with a
//! processor per rank the waits are MPI's own.

use std::os::raw::c_int;

use mpi::ffi;

use crate::mpi::library::nonblocking_collectives;
use crate::mpi::node::oversubscribed;
use crate::mpi::running::{any_running, carry_others_on, others_running};
use crate::mpi::world_handler::WorldErrorsReturned;

/// How one rank's waits go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    /// The rank's process (its rank in `MPI_COMM_WORLD`), whose other running
    /// executions its waits carry on.
    pub process: i32,
    /// Whether polls sleep between polls once they have yielded a while
    /// (MPICH, the option `sleeping_waits`).
    pub sleeping: bool,
    /// Whether its completion calls run with `MPI_COMM_WORLD`'s error handler
    /// set to `MPI_ERRORS_RETURN` ([`crate::mpi::world_handler`]).
    pub world_errors_returned: bool,
}

impl Waits {
    /// Whether a wait polls rather than blocks in MPI: on a node with more
    /// ranks than processors, or while other executions of the process run
    /// (they move only when carried on).
    pub fn polling(self) -> bool {
        others_running(self.process) || oversubscribed()
    }

    /// Whether a collective's wait polls: as [`Waits::polling`], and also
    /// while a single execution of the process runs, since a collective may
    /// belong to none (a plan's creation between a begin and its wait).
    fn polling_collective(self) -> bool {
        any_running(self.process) || oversubscribed()
    }
}

/// How many times a wait yields the processor (`sched_yield`) between polls
/// before it sleeps between them instead.
const YIELDING_POLLS: u32 = 16;

/// How long a wait sleeps between polls once it has yielded [`YIELDING_POLLS`]
/// times, where waits sleep. A rank that yields stays runnable, so on a crowded
/// node the scheduler sees every processor busy while the ranks queued on one
/// may all be waiting: sleeping takes the rank off its run queue, and an idle
/// processor pulls a rank that has work (measured on MPICH:
/// docs/src/performance/analysis.md, "Listed read runs and sleeping waits").
const SLEEP_BETWEEN_POLLS: std::time::Duration = std::time::Duration::from_micros(50);

/// Polls `test` until it reports completion or fails, carrying the other
/// running executions of the process on and yielding the processor between
/// polls, or, when `waits.sleeping`, sleeping [`SLEEP_BETWEEN_POLLS`] after the
/// first [`YIELDING_POLLS`]; returns the status code of the last poll.
pub fn poll_giving_way(mut test: impl FnMut() -> (i32, bool), waits: Waits) -> i32 {
    let mut polls = 0u32;
    loop {
        let (code, done) = test();
        if code != 0 || done {
            return code;
        }
        carry_others_on(waits.process);
        polls = polls.saturating_add(1);
        if waits.sleeping && polls > YIELDING_POLLS {
            std::thread::sleep(SLEEP_BETWEEN_POLLS);
        } else {
            std::thread::yield_now();
        }
    }
}

/// Runs a collective to completion: `start` (its non-blocking form, which sets
/// the request), then `MPI_Wait`, or while an execution of the process runs or
/// the node is oversubscribed, `MPI_Test` polled as [`poll_giving_way`] polls. Every rank starts the
/// non-blocking form, whether it polls or not: MPI matches no blocking
/// collective with a non-blocking one, and whether a rank polls is its own (the
/// executions it runs). Where the library's collectives block
/// ([`nonblocking_collectives`]: SMPI), `blocking` (MPI's blocking call) runs
/// instead. Returns MPI's status code.
pub fn complete_collective(
    waits: Waits,
    blocking: impl FnOnce() -> c_int,
    start: impl FnOnce(&mut ffi::MPI_Request) -> c_int,
) -> c_int {
    if !nonblocking_collectives() {
        return blocking();
    }
    let _returned = WorldErrorsReturned::during(waits.world_errors_returned);
    // SAFETY: reading an MPI constant handle.
    let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
    let code = start(&mut request);
    if code != 0 {
        return code;
    }
    if !waits.polling_collective() {
        // SAFETY: `request` is the collective's, started above; the buffers
        // `start` was given outlive this function, which returns once it completed.
        return unsafe { ffi::MPI_Wait(&mut request, ffi::RSMPI_STATUS_IGNORE) };
    }
    poll_giving_way(
        || {
            let mut done: c_int = 0;
            // SAFETY: as above.
            let code = unsafe { ffi::MPI_Test(&mut request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
            (code, done != 0)
        },
        waits,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_stops_at_completion_or_failure_yielding_or_sleeping() {
        for sleeping in [false, true] {
            let waits = Waits {
                process: 0,
                sleeping,
                world_errors_returned: false,
            };
            let mut polls = 0;
            let last = YIELDING_POLLS + 3;
            let done = poll_giving_way(
                || {
                    polls += 1;
                    (0, polls == last)
                },
                waits,
            );
            assert_eq!((done, polls), (0, last));
            assert_eq!(poll_giving_way(|| (5, false), waits), 5);
        }
    }
}
