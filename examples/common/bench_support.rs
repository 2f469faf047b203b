//! What the benchmarks (`bench.rs`, `grid_bench.rs`) share: the peak resident
//! set a call grows, reductions over the ranks, barrier-timed repeats, the cost of
//! executing in place, medians and JSON numbers. Included by each with `#[path = "common/bench_support.rs"] mod
//! support;` (a directory without `main.rs` is no example of its own).

use std::time::Instant;

use distreshape::Plan;
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::SimpleCommunicator;

/// A field of /proc/self/status in bytes (0 when unreadable).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// How much a call grew the peak resident set.
pub struct PeakGrowth {
    /// The growth in bytes.
    pub bytes: u64,
    /// Whether the peak could be reset to the current resident set first (else
    /// the growth is only above the process's earlier peak).
    #[allow(
        dead_code,
        reason = "bench.rs reports it; grid_bench.rs includes this module too"
    )]
    pub reset: bool,
}

/// Runs `f` and returns the growth of the peak resident set it caused.
pub fn peak_growth(f: impl FnOnce()) -> PeakGrowth {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = if reset {
        status_bytes("VmHWM").max(status_bytes("VmRSS"))
    } else {
        status_bytes("VmHWM")
    };
    f();
    PeakGrowth {
        bytes: status_bytes("VmHWM").saturating_sub(before),
        reset,
    }
}

/// Element-wise max over the ranks.
pub fn max_f64(world: &SimpleCommunicator, local: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; local.len()];
    world.all_reduce_into(local, &mut out[..], SystemOperation::max());
    out
}

/// Max over the ranks.
pub fn max_u64(world: &SimpleCommunicator, x: u64) -> u64 {
    let mut out = 0u64;
    world.all_reduce_into(&x, &mut out, SystemOperation::max());
    out
}

/// True when `x` holds on every rank.
pub fn all_true(world: &SimpleCommunicator, x: bool) -> bool {
    max_u64(world, u64::from(!x)) == 0
}

/// The median (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Runs `f` once after a barrier and returns its local duration in seconds: one
/// step of a benchmark loop that interleaves several measured steps.
pub fn barrier_timed(world: &SimpleCommunicator, f: impl FnOnce()) -> f64 {
    yielding_barrier(world);
    let t0 = Instant::now();
    f();
    t0.elapsed().as_secs_f64()
}

/// Times each of `cases` once a round, in turn, over `runs.warmup +
/// runs.repeat` rounds, each run between barriers: on a machine whose speed
/// drifts from one minute to the next, every case is then timed over the same
/// stretch of time as the baselines it is compared with. Returns, per case,
/// the per-round max-over-ranks times, warm-up excluded.
#[allow(
    dead_code,
    reason = "strided_bench.rs times its cases so; bench.rs and grid_bench.rs include this module too"
)]
pub fn timed_rounds(
    world: &SimpleCommunicator,
    runs: Runs,
    cases: &mut [&mut dyn FnMut()],
) -> Vec<Vec<f64>> {
    let mut local = vec![Vec::with_capacity(runs.repeat); cases.len()];
    for round in 0..runs.warmup + runs.repeat {
        for (case, times) in cases.iter_mut().zip(&mut local) {
            let dt = barrier_timed(world, case);
            if round >= runs.warmup {
                times.push(dt);
            }
        }
    }
    yielding_barrier(world);
    local.iter().map(|times| max_f64(world, times)).collect()
}

/// How many runs [`timed`] (or rounds [`timed_rounds`]) makes: `warmup`
/// untimed, then `repeat` timed.
pub struct Runs {
    /// Runs before the timed ones.
    pub warmup: usize,
    /// Timed runs.
    pub repeat: usize,
}

/// A barrier whose wait yields the processor between polls: on a node with
/// more ranks than processors a rank done with its part then leaves the
/// processor to the ranks still working, as the library's own waits do,
/// instead of spinning in MPI's barrier until the scheduler's next tick.
fn yielding_barrier(world: &SimpleCommunicator) {
    let mut request = world.immediate_barrier();
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        std::thread::yield_now();
    }
}

/// Times `f` over `runs.warmup + runs.repeat` runs, each between barriers, `pre`
/// (untimed) before each; returns the per-repeat max-over-ranks times, warm-up
/// excluded.
pub fn timed(
    world: &SimpleCommunicator,
    runs: Runs,
    mut pre: impl FnMut(),
    mut f: impl FnMut(),
) -> Vec<f64> {
    let mut local = Vec::with_capacity(runs.repeat);
    for i in 0..runs.warmup + runs.repeat {
        pre();
        yielding_barrier(world);
        let t = Instant::now();
        f();
        let dt = t.elapsed().as_secs_f64();
        yielding_barrier(world);
        if i >= runs.warmup {
            local.push(dt);
        }
    }
    max_f64(world, &local)
}

/// What executing a plan in place costs.
pub struct InPlaceCost {
    /// The timed runs' max-over-ranks times.
    pub times: Vec<f64>,
    /// This rank's extra peak memory in bytes: the larger of the first
    /// execution's peak (which makes the in-place schedule and staging) and a
    /// later one's plus the staging the plan keeps.
    pub extra_bytes: u64,
}

/// Executes `plan` in place on `buffer` (holding this rank's input): once to make
/// its in-place schedule and staging, then `runs` timed (`refill` putting the
/// input back, untimed, before each), then once more, each peak measured. Leaves
/// the output in `buffer`.
pub fn in_place_cost(
    world: &SimpleCommunicator,
    plan: &Plan,
    buffer: &mut Vec<f64>,
    runs: Runs,
    refill: impl Fn(&mut Vec<f64>),
) -> InPlaceCost {
    yielding_barrier(world);
    let first = peak_growth(|| plan.execute_in_place(buffer).expect("execute in place")).bytes;
    let times = {
        let buf = std::cell::RefCell::new(&mut *buffer);
        timed(
            world,
            runs,
            || refill(&mut buf.borrow_mut()),
            || {
                plan.execute_in_place(&mut buf.borrow_mut()[..])
                    .expect("execute in place")
            },
        )
    };
    refill(buffer);
    yielding_barrier(world);
    let transient = peak_growth(|| plan.execute_in_place(buffer).expect("execute in place")).bytes;
    let kept = plan.in_place_staging_bytes().unwrap_or(0) as u64;
    InPlaceCost {
        times,
        extra_bytes: (transient + kept).max(first),
    }
}

/// A JSON number, `null` when not finite.
pub fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}
