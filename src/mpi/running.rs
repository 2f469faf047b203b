//! The executions running in this process, so that each wait carries the others
//! on, as MPI's progress moves every request.
//!
//! An execution moves only while its rank moves it: each test posts its next
//! messages, reads its peers' runs, unpacks what arrived. With two executions in
//! flight, a rank waiting for one would leave the other where it stands, and a
//! rank that waits for them in the other order would wait for it: both ranks
//! would hang. So every execution counts itself here while it runs (from the
//! start of its agreement to the report of its end), and while more than one
//! of a process does, the waits of that process poll ([`crate::mpi::waiting`])
//! and carry the others on between polls ([`carry_others_on`]). With one
//! execution running, its waits are MPI's own.

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An execution that the waits of other executions can carry on.
pub trait InFlight {
    /// Carries the execution on as far as it goes without waiting, when this
    /// thread may and nobody else is moving it; keeps a failure for the
    /// execution's own next test or wait to report.
    fn carry_on(&self);
}

/// A running execution: the process whose it is (its rank in
/// `MPI_COMM_WORLD`: under SimGrid's SMPI every rank runs in one process) and,
/// unless it runs within one call ([`hold`]), its address.
struct Running {
    process: i32,
    execution: Option<*const dyn InFlight>,
}

// SAFETY: the registry only hands an address to `InFlight::carry_on`, whose
// implementations lock what they change and check that this thread may call
// MPI for the execution; an execution leaves the registry before it is moved
// or dropped (the contract of `start`).
unsafe impl Send for Running {}

/// The executions running.
static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());

/// How many entries [`RUNNING`] holds, of every process: a wait reads the
/// registry only when there are two.
static COUNT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set while this thread carries executions on, whose waits are then part
    /// of one poll of an outer wait.
    static CARRYING: Cell<bool> = const { Cell::new(false) };
}

/// Counts `execution` of `process` as running until [`stop`]: the waits of
/// other executions of `process` carry it on meanwhile. Allocates only when
/// more executions run at once than [`make_room`] made room for; if even that
/// fails, `execution` is not counted (its own waits still move it).
///
/// # Safety
/// `execution` stays at its address, valid, until [`stop`] is called with it.
pub unsafe fn start(process: i32, execution: *const dyn InFlight) {
    let mut running = lock();
    let counted = running
        .iter()
        .any(|r| r.execution.is_some_and(|e| same(e, execution)));
    if counted || running.try_reserve(1).is_err() {
        return;
    }
    running.push(Running {
        process,
        execution: Some(execution),
    });
    COUNT.store(running.len(), Ordering::Release);
}

/// Stops counting `execution` (nothing when it is not counted).
pub fn stop(execution: *const dyn InFlight) {
    let mut running = lock();
    running.retain(|r| !r.execution.is_some_and(|e| same(e, execution)));
    COUNT.store(running.len(), Ordering::Release);
}

/// How many executions may run at once: the plans and fused objects alive.
static ROOM: AtomicUsize = AtomicUsize::new(0);

/// Makes room for one more execution to run at once without allocating when
/// it starts: a plan's or a fused object's creation makes room for its own,
/// and its drop gives it back ([`give_back_room`]).
pub fn make_room() {
    let room = ROOM.fetch_add(1, Ordering::AcqRel) + 1;
    let mut running = lock();
    let more = room.saturating_sub(running.len());
    let _ = running.try_reserve(more);
}

/// Gives back the room [`make_room`] made (the registry keeps its memory).
pub fn give_back_room() {
    ROOM.fetch_sub(1, Ordering::AcqRel);
}

/// True when more than one execution of `process` runs: its waits must then
/// carry the others on while they wait.
pub fn others_running(process: i32) -> bool {
    more_running_than(process, 1)
}

/// True when some execution of `process` runs: a collective outside it (a
/// plan's or a fused object's creation) must carry it on while it waits.
pub fn any_running(process: i32) -> bool {
    more_running_than(process, 0)
}

/// True when more than `count` executions of `process` run (none while this
/// thread is carrying executions on: its waits are then part of one poll of
/// an outer wait).
fn more_running_than(process: i32, count: usize) -> bool {
    if COUNT.load(Ordering::Acquire) <= count || CARRYING.get() {
        return false;
    }
    let running = lock();
    running
        .iter()
        .filter(|r| r.process == process)
        .nth(count)
        .is_some()
}

/// Carries every running execution of `process` on once, without waiting,
/// unless another thread (or a wait further up this thread's stack) is doing
/// so.
pub fn carry_others_on(process: i32) {
    let Ok(running) = RUNNING.try_lock() else {
        return;
    };
    CARRYING.set(true);
    let mine = running.iter().filter(|r| r.process == process);
    for execution in mine.filter_map(|r| r.execution) {
        // SAFETY: valid while counted (the contract of `start`); counted while
        // the registry is locked, as here.
        unsafe { &*execution }.carry_on();
    }
    CARRYING.set(false);
}

/// An execution of a process that runs within one call (a fused execution),
/// counted while the guard lives: its waits then carry the others on, and
/// theirs know that it runs. Nothing else carries it on.
#[derive(Debug)]
#[must_use = "the execution counts as running while the guard lives"]
pub struct Held {
    process: i32,
}

/// Counts an execution of `process` running within the caller's call until
/// the guard drops (not counted when there is no memory for it).
pub fn hold(process: i32) -> Held {
    let mut running = lock();
    if running.try_reserve(1).is_ok() {
        running.push(Running {
            process,
            execution: None,
        });
        COUNT.store(running.len(), Ordering::Release);
    }
    Held { process }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut running = lock();
        let held = |r: &Running| r.process == self.process && r.execution.is_none();
        if let Some(at) = running.iter().position(held) {
            running.swap_remove(at);
        }
        COUNT.store(running.len(), Ordering::Release);
    }
}

/// The registry, locked (a panic while it was locked left a valid list).
fn lock() -> std::sync::MutexGuard<'static, Vec<Running>> {
    RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether two executions are one (by the address of their data).
fn same(a: *const dyn InFlight, b: *const dyn InFlight) -> bool {
    std::ptr::addr_eq(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(Cell<u32>);

    impl InFlight for Counting {
        fn carry_on(&self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn running_executions_of_a_process_are_carried_on_until_they_stop() {
        let (a, b, elsewhere) = (
            Counting(Cell::new(0)),
            Counting(Cell::new(0)),
            Counting(Cell::new(0)),
        );
        let (pa, pb, pe): (
            *const dyn InFlight,
            *const dyn InFlight,
            *const dyn InFlight,
        ) = (&a, &b, &elsewhere);
        // SAFETY: all three outlive their registration (stopped below).
        unsafe {
            start(7, pa);
            start(8, pe);
        }
        assert!(!others_running(7), "one of process 7, one of process 8");
        // SAFETY: as above; counted once however often started.
        unsafe {
            start(7, pb);
            start(7, pb);
        }
        assert!(others_running(7) && !others_running(8));
        carry_others_on(7);
        assert_eq!((a.0.get(), b.0.get(), elsewhere.0.get()), (1, 1, 0));
        stop(pa);
        assert!(!others_running(7));
        let held = hold(7);
        assert!(others_running(7));
        carry_others_on(7);
        assert_eq!((a.0.get(), b.0.get()), (1, 2));
        drop(held);
        assert!(!others_running(7));
        for execution in [pb, pb, pe] {
            stop(execution);
        }
        carry_others_on(7);
        carry_others_on(8);
        assert_eq!((b.0.get(), elsewhere.0.get()), (2, 0));
    }
}
