//! Executing a plan allocates nothing: everything it needs is allocated when the plan
//! is created.
//!
//! A counting global allocator records the bytes allocated on the test's thread while
//! a plan executes (after its creation). The `seed` reshape of Heat's PR 873,
//! (10, n, 10) split 1 -> (10, 10n) split 1, is executed at two sizes, out of place and
//! in place: neither allocates. A reshape that takes the general exchange path is
//! checked out of place (in place there, the bytes that leave the rank are staged).
//!
//! MPI is initialized here (a singleton MPI process: no `mpiexec` needed with MPICH),
//! so this file holds a single test: MPI can be initialized once per process.
//!
//! Only allocations through Rust's global allocator are counted; the MPI library's own
//! `malloc` calls are not (the benchmark's VmHWM measurement covers those).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use distreshape::{Plan, ReshapeArgs, Route};

/// Counts the bytes and calls of allocations made by threads that enabled counting,
/// and the peak of their live bytes.
struct Counting;

static BYTES: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

fn record_alloc(size: usize) {
    if counting() {
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        let live = LIVE.fetch_add(size as u64, Ordering::Relaxed) + size as u64;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

fn record_free(size: usize) {
    if counting() {
        // Saturating: memory allocated before counting started may be freed during it.
        let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
            Some(l.saturating_sub(size as u64))
        });
    }
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record_alloc(layout.size());
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record_alloc(layout.size());
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record_free(layout.size());
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record_free(layout.size());
        record_alloc(new_size);
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap used by `f` on this thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Usage {
    bytes: u64,
    calls: u64,
    peak_live: u64,
}

fn measure(f: impl FnOnce()) -> Usage {
    BYTES.store(0, Ordering::Relaxed);
    CALLS.store(0, Ordering::Relaxed);
    LIVE.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    Usage {
        bytes: BYTES.load(Ordering::Relaxed),
        calls: CALLS.load(Ordering::Relaxed),
        peak_live: PEAK.load(Ordering::Relaxed),
    }
}

/// Plans `gshape split -> new_shape new_split` over all of MPI_COMM_WORLD (one rank
/// here), fills the input with the global flat index, and returns the heap used by an
/// out-of-place and an in-place execution (both verified).
fn usage(
    world: &mpi::topology::SimpleCommunicator,
    gshape: &[i64],
    split: usize,
    new_shape: &[i64],
    new_split: usize,
    path: Route,
) -> (Usage, Usage) {
    let args = ReshapeArgs::new(
        8,
        gshape,
        Some(split),
        gshape[split],
        new_shape,
        Some(new_split),
    );
    let plan = Plan::new(world, &args).expect("plan");
    assert_eq!(plan.path(), path, "{gshape:?} -> {new_shape:?}");
    let input: Vec<f64> = (0..plan.input_elems()).map(|i| i as f64).collect();
    let mut output = vec![f64::NAN; plan.output_elems()];
    // Warm-up: MPI's lazily allocated state is not the plan's.
    plan.execute(&input, &mut output).expect("execute");
    output.fill(f64::NAN);
    let out_of_place = measure(|| plan.execute(&input, &mut output).expect("execute"));
    assert!(
        output.iter().enumerate().all(|(i, &x)| x == i as f64),
        "wrong output"
    );
    let mut buffer = input.clone();
    buffer.resize(plan.input_elems().max(plan.output_elems()), f64::NAN);
    let in_place = measure(|| {
        plan.execute_in_place(&mut buffer)
            .expect("execute in place")
    });
    assert!(
        buffer[..plan.output_elems()]
            .iter()
            .enumerate()
            .all(|(i, &x)| x == i as f64),
        "wrong output in place"
    );
    (out_of_place, in_place)
}

#[test]
fn execute_heap_does_not_grow_with_the_array() {
    let universe = mpi::initialize().expect("MPI initialization (singleton, no mpiexec needed)");
    let world = universe.world();
    let seed = |n: i64| usage(&world, &[10, n, 10], 1, &[10, 10 * n], 1, Route::Local);
    let (small, small_ip) = seed(1_000);
    let (big, big_ip) = seed(100_000);
    println!("seed n=1000:   out of place {small:?}, in place {small_ip:?}");
    println!("seed n=100000: out of place {big:?}, in place {big_ip:?}");
    for (usage, what) in [
        (small, "out of place, n=1000"),
        (big, "out of place, n=100000"),
        (small_ip, "in place, n=1000"),
        (big_ip, "in place, n=100000"),
    ] {
        assert_eq!(
            usage.calls, 0,
            "seed {what}: executing allocates: {usage:?}"
        );
    }
    // The general exchange path (a different split axis), out of place.
    let flat = |n: i64| usage(&world, &[10, n, 10], 1, &[10 * n * 10], 0, Route::Exchange);
    let ((small, _), (big, _)) = (flat(1_000), flat(100_000));
    println!("flatten n=1000: {small:?}; n=100000: {big:?}");
    for (usage, n) in [(small, 1_000), (big, 100_000)] {
        assert_eq!(
            usage.calls, 0,
            "flatten n={n}: executing allocates: {usage:?}"
        );
    }
}
