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

mod common;

use common::alloc::{Counting, Usage, measure};
use distreshape::{Plan, ReshapeArgs, Route};

#[global_allocator]
static GLOBAL: Counting = Counting;

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
    let ((), out_of_place) = measure(|| plan.execute(&input, &mut output).expect("execute"));
    assert!(
        output.iter().enumerate().all(|(i, &x)| x == i as f64),
        "wrong output"
    );
    let mut buffer = input.clone();
    buffer.resize(plan.input_elems().max(plan.output_elems()), f64::NAN);
    let ((), in_place) = measure(|| {
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
