//! Benchmark of distributed reshapes, with the baselines measured in the same run.
//!
//! ```text
//! cargo build --release --example bench
//! mpiexec -n P target/release/examples/bench [--case NAME[,NAME...]] [--repeat N]
//!                                            [--warmup N] [--json FILE] [--list] [--cold]
//! ```
//!
//! For every case (float64 elements, input value = global C-order flat index, built
//! slab by slab without materializing the global array):
//! - plan creation is timed once (max over ranks);
//! - `execute` runs `warmup` + `repeat` times, each run between barriers; the reported
//!   time is the median over the repeats of the max over ranks;
//! - the growth of the peak resident set (VmHWM, reset by writing 5 to
//!   /proc/self/clear_refs when the kernel allows, otherwise bracketed by the previous
//!   peak) during one execute, with every buffer already touched, is reported as the
//!   max over ranks in MiB and as a fraction of the local data size (max(input,
//!   output) bytes of that rank);
//! - every output element is verified (out of place and in place);
//! - the same plan runs in place (one buffer sized for both input and output); where
//!   data moves, its target is at most 1.5x the execute time with extra memory (peak
//!   growth plus the staging the plan keeps for in place) within max(64 MiB, 10 % of
//!   the local data);
//! - baselines: `memcpy` of the local input into the output, `memcpy` of the bytes
//!   that stay on the rank, and `MPI_Alltoallv` over MPI_COMM_WORLD of exactly the
//!   per-peer volumes the plan sends, from and into contiguous buffers;
//! - `ratio_vs_baseline` = median / (memcpy of the bytes that stay + Alltoallv of the
//!   bytes that move), or median / memcpy when no rank moves anything;
//! - `first_s` is the plan's first execute, timed before anything else of the case,
//!   and `first_ratio` its ratio to the first run of the same baseline; with `--cold`
//!   (no throwaway warm-up plan) and one `--case`, that is the first execute in a
//!   fresh process.
//!
//! Rank 0 prints a table and, with `--json FILE`, writes one JSON object per case and
//! line.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::raw::{c_char, c_int, c_void};
use std::time::Instant;

use distreshape::{Plan, ReshapeArgs, Route, Slab, balanced_slab};
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::ffi;
use mpi::topology::{Communicator, SimpleCommunicator};

#[path = "common/bench_support.rs"]
mod support;

use support::{
    InPlaceCost, PeakGrowth, Runs, all_true, barrier_timed, in_place_cost, json_num, max_f64,
    max_u64, median, peak_growth, timed,
};

const MIB: f64 = 1024.0 * 1024.0;

/// One benchmark case.
struct Case {
    name: &'static str,
    gshape: &'static [u64],
    split: Option<usize>,
    new_shape: &'static [u64],
    new_split: Option<usize>,
    /// Rank 0 holds half the rows, the others share the rest.
    unbalanced: bool,
    /// Target ratio to the baseline when data moves between ranks (1.1 to memcpy
    /// when nothing moves).
    target: f64,
    /// Measures overlap instead: an execution with a compute kernel of about its
    /// own duration between begin and end, against execute + compute in sequence.
    overlap: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "seed",
        gshape: &[10, 10_000, 10],
        split: Some(1),
        new_shape: &[10, 100_000],
        new_split: Some(1),
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "seed_big",
        gshape: &[10, 1_000_000, 10],
        split: Some(1),
        new_shape: &[10, 10_000_000],
        new_split: Some(1),
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "same_split_rebalance",
        gshape: &[1000, 1000, 100],
        split: Some(0),
        new_shape: &[4000, 250, 100],
        new_split: Some(0),
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "unbalanced_rebalance",
        gshape: &[1000, 1000, 100],
        split: Some(0),
        new_shape: &[4000, 250, 100],
        new_split: Some(0),
        unbalanced: true,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "split_change",
        gshape: &[1000, 1000, 100],
        split: Some(0),
        new_shape: &[1000, 100_000],
        new_split: Some(1),
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "infeasible_same_split",
        gshape: &[100, 1000, 1000],
        split: Some(1),
        new_shape: &[1000, 100, 1000],
        new_split: Some(1),
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "flatten",
        gshape: &[1000, 1000, 100],
        split: Some(1),
        new_shape: &[100_000_000],
        new_split: Some(0),
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "scattered_split_change",
        gshape: &[1000, 100, 1000],
        split: Some(0),
        new_shape: &[1000, 100, 1000],
        new_split: Some(2),
        unbalanced: false,
        target: 1.3,
        overlap: false,
    },
    Case {
        name: "small_latency",
        gshape: &[64, 64, 64],
        split: Some(0),
        new_shape: &[64, 64, 64],
        new_split: Some(2),
        unbalanced: false,
        target: 1.5,
        overlap: false,
    },
    Case {
        name: "to_replicated",
        gshape: &[1000, 1000, 10],
        split: Some(0),
        new_shape: &[10_000, 1000],
        new_split: None,
        unbalanced: false,
        target: 1.25,
        overlap: false,
    },
    Case {
        name: "overlap",
        gshape: &[1000, 1000, 100],
        split: Some(0),
        new_shape: &[1000, 100_000],
        new_split: Some(1),
        unbalanced: false,
        target: 0.75,
        overlap: true,
    },
];

struct Options {
    cases: Vec<String>,
    repeat: usize,
    warmup: usize,
    json: Option<String>,
    list: bool,
    /// Skip the throwaway warm-up plan, so that the first case's `first_s` is the
    /// first execute in a fresh process.
    cold: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        cases: Vec::new(),
        repeat: 10,
        warmup: 1,
        json: None,
        list: false,
        cold: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--case" => o
                .cases
                .extend(value("--case")?.split(',').map(str::to_string)),
            "--repeat" => {
                o.repeat = value("--repeat")?
                    .parse()
                    .map_err(|e| format!("--repeat: {e}"))?
            }
            "--warmup" => {
                o.warmup = value("--warmup")?
                    .parse()
                    .map_err(|e| format!("--warmup: {e}"))?
            }
            "--json" => o.json = Some(value("--json")?),
            "--list" => o.list = true,
            "--cold" => o.cold = true,
            "-h" | "--help" => {
                return Err("usage: mpiexec -n P bench [--case NAME[,NAME]] [--repeat N] [--warmup N] [--json FILE] [--list] [--cold]".into());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    o.repeat = o.repeat.max(1);
    for c in &o.cases {
        if !CASES.iter().any(|k| k.name == c) {
            let names: Vec<&str> = CASES.iter().map(|k| k.name).collect();
            return Err(format!("unknown case {c:?}; cases: {}", names.join(", ")));
        }
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------
// Data: slabs enumerated with plain arithmetic, independent of the crate's layouts.
// ---------------------------------------------------------------------------------

/// Rows `[off, off + len)` of `axis` of `shape` (all of it when `axis` is `None`) as
/// contiguous runs `(local_start, global_start, n)` in C order.
fn for_each_run(
    shape: &[u64],
    axis: Option<usize>,
    off: u64,
    len: u64,
    mut f: impl FnMut(usize, u64, usize),
) {
    let total: u64 = shape.iter().product();
    let Some(axis) = axis else {
        f(0, 0, total as usize);
        return;
    };
    let outer: u64 = shape[..axis].iter().product();
    let inner: u64 = shape[axis + 1..].iter().product();
    let extent = shape[axis];
    let n = (len * inner) as usize;
    if n == 0 {
        return;
    }
    for o in 0..outer {
        f(o as usize * n, (o * extent + off) * inner, n);
    }
}

fn slab_elems(shape: &[u64], axis: Option<usize>, len: u64) -> usize {
    match axis {
        None => shape.iter().product::<u64>() as usize,
        Some(a) => (shape.iter().product::<u64>() / shape[a].max(1) * len) as usize,
    }
}

fn fill(buf: &mut [f64], shape: &[u64], axis: Option<usize>, off: u64, len: u64) {
    for_each_run(shape, axis, off, len, |l, g, n| {
        for (j, x) in buf[l..l + n].iter_mut().enumerate() {
            *x = (g + j as u64) as f64;
        }
    });
}

fn verify(buf: &[f64], shape: &[u64], axis: Option<usize>, off: u64, len: u64) -> bool {
    let mut ok = buf.len() >= slab_elems(shape, axis, len);
    if !ok {
        return false;
    }
    for_each_run(shape, axis, off, len, |l, g, n| {
        if ok {
            ok = buf[l..l + n]
                .iter()
                .enumerate()
                .all(|(j, &x)| x == (g + j as u64) as f64);
        }
    });
    ok
}

/// Input rows of every rank.
fn input_lens(case: &Case, p: u64) -> Vec<u64> {
    let Some(axis) = case.split else {
        return vec![0; p as usize];
    };
    let extent = case.gshape[axis];
    if !case.unbalanced || p == 1 {
        return (0..p).map(|r| balanced_slab(extent, p, r).len).collect();
    }
    let first = extent / 2;
    let rest = extent - first;
    std::iter::once(first)
        .chain((0..p - 1).map(|r| balanced_slab(rest, p - 1, r).len))
        .collect()
}

// ---------------------------------------------------------------------------------
// Measurement helpers
// ---------------------------------------------------------------------------------

fn sum_u64(world: &SimpleCommunicator, x: u64) -> u64 {
    let mut out = 0u64;
    world.all_reduce_into(&x, &mut out, SystemOperation::sum());
    out
}

/// The compute kernel overlapped with an execution: `passes` sweeps over `work`,
/// calling `between` after every 64 Ki elements.
fn kernel(work: &mut [f64], passes: usize, between: &mut dyn FnMut()) {
    for _ in 0..passes {
        for chunk in work.chunks_mut(1 << 16) {
            chunk
                .iter_mut()
                .for_each(|x| *x = x.mul_add(1.000_000_1, 1e-9));
            between();
        }
    }
    std::hint::black_box(work);
}

/// Median times of (execution overlapped with the kernel, execution then kernel),
/// the kernel sized to take about as long as one execution.
fn overlap_times(
    world: &SimpleCommunicator,
    plan: &Plan,
    (input, output): (&[f64], &mut [f64]),
    repeat: usize,
) -> (f64, f64) {
    let mut work = vec![1.0f64; 1 << 22];
    let exec = median(&timed(
        world,
        Runs { warmup: 1, repeat },
        || {},
        || plan.execute(input, output).expect("execute"),
    ));
    let sweep = median(&timed(
        world,
        Runs {
            warmup: 1,
            repeat: 3,
        },
        || {},
        || kernel(&mut work, 1, &mut || {}),
    ));
    let passes = ((exec / sweep).round() as usize).max(1);
    let compute = median(&timed(
        world,
        Runs { warmup: 1, repeat },
        || {},
        || kernel(&mut work, passes, &mut || {}),
    ));
    let overlapped = median(&timed(
        world,
        Runs { warmup: 1, repeat },
        || {},
        || {
            plan.execute_overlapped(input, output, |execution| {
                kernel(&mut work, passes, &mut || {
                    let _ = execution.test();
                })
            })
            .expect("overlapped execute")
        },
    ));
    (overlapped, exec + compute)
}

/// Raw MPI_Alltoallv over MPI_COMM_WORLD of float64 counts, contiguous buffers.
fn alltoallv(
    send: &[f64],
    scounts: &[c_int],
    sdispls: &[c_int],
    recv: &mut [f64],
    rcounts: &[c_int],
    rdispls: &[c_int],
) {
    // SAFETY: the counts and displacements lie within the buffers (built from the
    // same per-peer volumes); every rank calls it with matching counts.
    let code = unsafe {
        ffi::MPI_Alltoallv(
            send.as_ptr().cast::<c_void>(),
            scounts.as_ptr(),
            sdispls.as_ptr(),
            ffi::RSMPI_DOUBLE,
            recv.as_mut_ptr().cast::<c_void>(),
            rcounts.as_ptr(),
            rdispls.as_ptr(),
            ffi::RSMPI_DOUBLE,
            ffi::RSMPI_COMM_WORLD,
        )
    };
    assert_eq!(code, 0, "MPI_Alltoallv failed");
}

fn counts_and_displs(
    p: usize,
    transfers: &[distreshape::testing::PeerVolume],
) -> (Vec<c_int>, Vec<c_int>, usize) {
    let mut counts = vec![0 as c_int; p];
    for t in transfers {
        counts[t.peer] = c_int::try_from(t.elems).expect("per-peer count fits in an MPI int");
    }
    let mut displs = vec![0 as c_int; p];
    let mut total: usize = 0;
    for r in 0..p {
        displs[r] = c_int::try_from(total).expect("displacement fits in an MPI int");
        total += counts[r] as usize;
    }
    (counts, displs, total)
}

fn library_version() -> String {
    let mut buf = vec![0 as c_char; 8192];
    let mut len: c_int = 0;
    // SAFETY: the buffer is larger than MPI_MAX_LIBRARY_VERSION_STRING.
    unsafe { ffi::MPI_Get_library_version(buf.as_mut_ptr(), &mut len) };
    let bytes: Vec<u8> = buf[..len.max(0) as usize]
        .iter()
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string()
}

// ---------------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------------

struct Row {
    case: &'static str,
    procs: usize,
    elements: u64,
    path: &'static str,
    bytes_sent: u64,
    bytes_copied: u64,
    max_peers: u64,
    plan_s: f64,
    median_s: f64,
    min_s: f64,
    first_s: f64,
    first_ratio: f64,
    memcpy_s: f64,
    memcpy_stay_s: f64,
    alltoallv_s: f64,
    baseline_s: f64,
    ratio_vs_baseline: f64,
    ratio_vs_memcpy: f64,
    ratio_vs_alltoallv: f64,
    inplace_median_s: f64,
    extra_peak_mib: f64,
    extra_peak_fraction: f64,
    inplace_extra_peak_mib: f64,
    inplace_extra_peak_fraction: f64,
    local_data_mib: f64,
    peak_reset: bool,
    correct: bool,
    inplace_correct: bool,
    moves: bool,
    time_target: f64,
    time_ok: bool,
    inplace_ok: bool,
    memory_ok: bool,
    repeat: usize,
}

/// In place, where data moves: at most this times the out-of-place execute, with
/// extra memory (transient peak plus the staging the plan keeps) within
/// max(64 MiB, 10 % of the local data).
const INPLACE_TIME_TARGET: f64 = 1.5;

fn run_case(world: &SimpleCommunicator, case: &Case, o: &Options) -> Row {
    let p = world.size() as usize;
    let rank = world.rank() as usize;
    let lens = input_lens(case, p as u64);
    let in_off: u64 = lens[..rank].iter().sum();
    let in_len = lens[rank];
    let gshape: Vec<i64> = case.gshape.iter().map(|&x| x as i64).collect();
    let new_shape: Vec<i64> = case.new_shape.iter().map(|&x| x as i64).collect();
    let args = ReshapeArgs::new(
        8,
        &gshape,
        case.split,
        in_len as i64,
        &new_shape,
        case.new_split,
    );
    let Slab {
        offset: out_off,
        len: out_len,
    } = match case.new_split {
        Some(a) => balanced_slab(case.new_shape[a], p as u64, rank as u64),
        None => Slab::default(),
    };
    let in_elems = slab_elems(case.gshape, case.split, in_len);
    let out_elems = slab_elems(case.new_shape, case.new_split, out_len);

    // Plan creation.
    world.barrier();
    let t = Instant::now();
    let plan = Plan::new(world, &args).expect("plan creation");
    let plan_local = t.elapsed().as_secs_f64();
    assert_eq!(plan.input_elems(), in_elems, "input size of the plan");
    assert_eq!(plan.output_elems(), out_elems, "output size of the plan");
    let stats = plan.stats();
    let rp = plan.rank_plan();

    // Buffers, all touched.
    let mut input = vec![0.0f64; in_elems];
    fill(&mut input, case.gshape, case.split, in_off, in_len);
    let mut output = vec![f64::NAN; out_elems];

    // Out of place, interleaved with the baselines (so that drifting machine load
    // affects all of them alike): memcpy of the local input into the output, memcpy
    // of the bytes that stay, the plan, and Alltoallv of the plan's per-peer volumes.
    let n_copy = in_elems.min(out_elems);
    let n_stay = (rp.local_elems as usize).min(n_copy);
    let (scounts, sdispls, stotal) = counts_and_displs(p, &rp.sends);
    let (rcounts, rdispls, rtotal) = counts_and_displs(p, &rp.recvs);
    let send: Vec<f64> = (0..stotal).map(|i| i as f64).collect();
    let mut recv = vec![f64::NAN; rtotal];
    let first = {
        let mut t = [0.0f64; 2];
        t[0] = barrier_timed(world, || {
            plan.execute(&input, &mut output).expect("execute")
        });
        t[1] = barrier_timed(world, || {
            output[..n_stay].copy_from_slice(&input[..n_stay]);
            std::hint::black_box(&mut output);
        });
        t[1] += barrier_timed(world, || {
            alltoallv(&send, &scounts, &sdispls, &mut recv, &rcounts, &rdispls)
        });
        max_f64(world, &t)
    };
    let repeat = {
        // Small cases get more repeats: their medians are cheap and noisier.
        let warm = timed(
            world,
            Runs {
                warmup: o.warmup.max(1),
                repeat: 1,
            },
            || {},
            || {
                plan.execute(&input, &mut output).expect("execute");
            },
        );
        if warm[0] < 0.02 {
            o.repeat.max(31)
        } else {
            o.repeat
        }
    };
    let mut local_times = vec![[0.0f64; 4]; repeat];
    for i in 0..o.warmup + repeat {
        let mut t = [0.0f64; 4];
        t[0] = barrier_timed(world, || {
            output[..n_copy].copy_from_slice(&input[..n_copy]);
            std::hint::black_box(&mut output);
        });
        t[1] = barrier_timed(world, || {
            output[..n_stay].copy_from_slice(&input[..n_stay]);
            std::hint::black_box(&mut output);
        });
        t[2] = barrier_timed(world, || {
            plan.execute(&input, &mut output).expect("execute")
        });
        t[3] = barrier_timed(world, || {
            alltoallv(&send, &scounts, &sdispls, &mut recv, &rcounts, &rdispls)
        });
        world.barrier();
        if i >= o.warmup {
            local_times[i - o.warmup] = t;
        }
    }
    drop((send, recv));
    let flat: Vec<f64> = local_times.iter().flatten().copied().collect();
    let all = max_f64(world, &flat);
    let series = |k: usize| -> Vec<f64> { all.iter().skip(k).step_by(4).copied().collect() };
    let (memcpy_times, stay_times, exec_times, a2a_times) =
        (series(0), series(1), series(2), series(3));
    output.fill(f64::NAN);
    world.barrier();
    let PeakGrowth {
        bytes: extra,
        reset,
    } = peak_growth(|| plan.execute(&input, &mut output).expect("execute"));
    let correct = verify(&output, case.new_shape, case.new_split, out_off, out_len);
    let overlap = case
        .overlap
        .then(|| overlap_times(world, &plan, (&input, &mut output), repeat));

    // In place: one buffer sized for both.
    drop(output);
    let mut buffer = vec![f64::NAN; in_elems.max(out_elems)];
    fill(&mut buffer, case.gshape, case.split, in_off, in_len);
    let identity = rp.is_identity();
    let refill = |b: &mut Vec<f64>| {
        if !identity {
            fill(b, case.gshape, case.split, in_off, in_len);
        }
    };
    let runs = Runs {
        warmup: o.warmup,
        repeat,
    };
    let InPlaceCost {
        times: inplace_times,
        extra_bytes: extra_inplace,
    } = in_place_cost(world, &plan, &mut buffer, runs, refill);
    let inplace_correct = verify(&buffer, case.new_shape, case.new_split, out_off, out_len);
    drop(buffer);
    drop(input);

    // Reductions.
    let local_data = (in_elems.max(out_elems) * 8) as f64;
    let frac = extra as f64 / local_data.max(1.0);
    let frac_inplace = extra_inplace as f64 / local_data.max(1.0);
    let limit = (64.0 * MIB).max(0.1 * local_data);
    let mem_ok_local = (extra as f64) <= limit;
    let inplace_mem_ok = all_true(world, (extra_inplace as f64) <= limit);
    let m = max_f64(
        world,
        &[
            plan_local,
            extra as f64 / MIB,
            frac,
            extra_inplace as f64 / MIB,
            frac_inplace,
            local_data / MIB,
        ],
    );
    let bytes_sent = sum_u64(world, stats.bytes_sent);
    let bytes_copied = sum_u64(world, stats.bytes_copied_locally);
    let max_peers = max_u64(world, stats.peers_sent.max(stats.peers_received) as u64);
    let correct = all_true(world, correct);
    let inplace_correct = all_true(world, inplace_correct);
    let memory_ok = all_true(world, mem_ok_local);
    let peak_reset = all_true(world, reset);

    let median_s = median(&exec_times);
    let memcpy_s = median(&memcpy_times);
    let memcpy_stay_s = median(&stay_times);
    let alltoallv_s = median(&a2a_times);
    let inplace_median_s = median(&inplace_times);
    let moves = bytes_sent > 0;
    let baseline_s = match overlap {
        Some((_, serial)) => serial,
        None if moves => memcpy_stay_s + alltoallv_s,
        None => memcpy_s,
    };
    let time_target = if moves { case.target } else { 1.1 };
    // The overlap case compares the overlapped time with execute + compute.
    let ratio = overlap.map_or(median_s, |(overlapped, _)| overlapped) / baseline_s;
    Row {
        case: case.name,
        procs: p,
        elements: case.gshape.iter().product(),
        path: match plan.path() {
            Route::Local => "local",
            Route::Exchange => "exchange",
        },
        bytes_sent,
        bytes_copied,
        max_peers,
        plan_s: m[0],
        median_s,
        min_s: exec_times.iter().copied().fold(f64::INFINITY, f64::min),
        first_s: first[0],
        first_ratio: first[0] / if moves { first[1] } else { memcpy_s },
        memcpy_s,
        memcpy_stay_s,
        alltoallv_s,
        baseline_s,
        ratio_vs_baseline: ratio,
        ratio_vs_memcpy: median_s / memcpy_s,
        ratio_vs_alltoallv: median_s / alltoallv_s,
        inplace_median_s,
        extra_peak_mib: m[1],
        extra_peak_fraction: m[2],
        inplace_extra_peak_mib: m[3],
        inplace_extra_peak_fraction: m[4],
        local_data_mib: m[5],
        peak_reset,
        correct,
        inplace_correct,
        moves,
        time_target,
        time_ok: ratio <= time_target,
        inplace_ok: match moves {
            true => inplace_median_s <= INPLACE_TIME_TARGET * median_s && inplace_mem_ok,
            false => inplace_median_s < 1e-3,
        },
        memory_ok,
        repeat,
    }
}

fn json_line(r: &Row) -> String {
    let mut s = String::from("{");
    let mut kv = |k: &str, v: String| {
        if s.len() > 1 {
            s.push_str(", ");
        }
        let _ = write!(s, "\"{k}\": {v}");
    };
    kv("case", format!("\"{}\"", r.case));
    kv("procs", r.procs.to_string());
    kv("elements", r.elements.to_string());
    kv("dtype", "\"float64\"".into());
    kv("path", format!("\"{}\"", r.path));
    kv("bytes_sent", r.bytes_sent.to_string());
    kv("bytes_copied_locally", r.bytes_copied.to_string());
    kv("max_peers", r.max_peers.to_string());
    kv("median_s", json_num(r.median_s));
    kv("min_s", json_num(r.min_s));
    kv("first_s", json_num(r.first_s));
    kv("first_ratio", json_num(r.first_ratio));
    kv("plan_s", json_num(r.plan_s));
    kv("memcpy_s", json_num(r.memcpy_s));
    kv("memcpy_stay_s", json_num(r.memcpy_stay_s));
    kv("alltoallv_s", json_num(r.alltoallv_s));
    kv("baseline_s", json_num(r.baseline_s));
    kv("ratio_vs_baseline", json_num(r.ratio_vs_baseline));
    kv("ratio_vs_memcpy", json_num(r.ratio_vs_memcpy));
    kv("ratio_vs_alltoallv", json_num(r.ratio_vs_alltoallv));
    kv("inplace_median_s", json_num(r.inplace_median_s));
    kv("extra_peak_mib", json_num(r.extra_peak_mib));
    kv("extra_peak_fraction", json_num(r.extra_peak_fraction));
    kv("inplace_extra_peak_mib", json_num(r.inplace_extra_peak_mib));
    kv(
        "inplace_extra_peak_fraction",
        json_num(r.inplace_extra_peak_fraction),
    );
    kv("local_data_mib", json_num(r.local_data_mib));
    kv("peak_reset", r.peak_reset.to_string());
    kv("correct", (r.correct && r.inplace_correct).to_string());
    kv("outofplace_correct", r.correct.to_string());
    kv("inplace_correct", r.inplace_correct.to_string());
    kv("time_target", json_num(r.time_target));
    kv("time_target_met", r.time_ok.to_string());
    kv("inplace_target_met", r.inplace_ok.to_string());
    kv("memory_target_met", r.memory_ok.to_string());
    kv("repeat", r.repeat.to_string());
    s.push('}');
    s
}

fn ms(x: f64) -> String {
    if x < 0.01 {
        format!("{:.4}", x * 1e3)
    } else {
        format!("{:.1}", x * 1e3)
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialization");
    let world = universe.world();
    let rank = world.rank();
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            if rank == 0 {
                eprintln!("{e}");
            }
            std::process::exit(2);
        }
    };
    if o.list {
        if rank == 0 {
            for c in CASES {
                println!(
                    "{}: {:?} split {:?} -> {:?} split {:?}{}",
                    c.name,
                    c.gshape,
                    c.split,
                    c.new_shape,
                    c.new_split,
                    if c.unbalanced {
                        " (rank 0 holds half the rows)"
                    } else {
                        ""
                    }
                );
            }
        }
        return;
    }
    let mut json = o
        .json
        .as_ref()
        .filter(|_| rank == 0)
        .map(|f| std::fs::File::create(f).unwrap_or_else(|e| panic!("cannot create {f}: {e}")));
    if rank == 0 {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        println!(
            "# distreshape bench: {} ranks, host {} ({} cpus), {}; float64; median of {} repeats after {} warm-up",
            world.size(),
            host.trim(),
            cpus,
            library_version(),
            o.repeat,
            o.warmup
        );
        println!(
            "{:<22} {:>2} {:>9} {:>8} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6} {:>9} {:>8} {:>6} {:>8} {:>3}  targets",
            "case",
            "P",
            "elements",
            "path",
            "sent MiB",
            "plan ms",
            "exec ms",
            "1st ms",
            "memcpy",
            "stay cpy",
            "a2av ms",
            "ratio",
            "/mcpy",
            "/a2av",
            "inplc ms",
            "xtra MiB",
            "frac",
            "ip MiB",
            "ok"
        );
    }
    // MPI's one-time costs (first communicator duplication, connection setup) are
    // paid by a throwaway plan, not by the first case (unless --cold).
    if !o.cold {
        let n = world.size() as i64;
        let args = ReshapeArgs::new(8, &[n, 2], Some(0), 1, &[2 * n], Some(0));
        let plan = Plan::new(&world, &args).expect("warm-up plan");
        let input = [0.0f64; 2];
        let mut output = [0.0f64; 2];
        plan.execute(&input, &mut output).expect("warm-up execute");
    }
    for case in CASES {
        if !o.cases.is_empty() && !o.cases.iter().any(|c| c == case.name) {
            continue;
        }
        let r = run_case(&world, case, &o);
        if rank == 0 {
            let mut targets = vec![format!(
                "time {} ({:.2} <= {})",
                if r.time_ok { "ok" } else { "MISSED" },
                r.ratio_vs_baseline,
                r.time_target
            )];
            let verdict = if r.inplace_ok { "ok" } else { "MISSED" };
            targets.push(match r.moves {
                true => format!(
                    "in-place {verdict} ({:.2} <= {INPLACE_TIME_TARGET}, {:.1} <= {:.1} MiB)",
                    r.inplace_median_s / r.median_s,
                    r.inplace_extra_peak_mib,
                    (0.1 * r.local_data_mib).max(64.0)
                ),
                false => format!("in-place {verdict}"),
            });
            targets.push(format!("mem {}", if r.memory_ok { "ok" } else { "MISSED" }));
            println!(
                "{:<22} {:>2} {:>9.3e} {:>8} {:>9.1} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6.2} {:>6.2} {:>6.2} {:>9} {:>8.2} {:>6.3} {:>8.1} {:>3}  {}",
                r.case,
                r.procs,
                r.elements as f64,
                r.path,
                r.bytes_sent as f64 / MIB,
                ms(r.plan_s),
                ms(r.median_s),
                ms(r.first_s),
                ms(r.memcpy_s),
                ms(r.memcpy_stay_s),
                ms(r.alltoallv_s),
                r.ratio_vs_baseline,
                r.ratio_vs_memcpy,
                r.ratio_vs_alltoallv,
                ms(r.inplace_median_s),
                r.extra_peak_mib,
                r.extra_peak_fraction,
                r.inplace_extra_peak_mib,
                if r.correct && r.inplace_correct {
                    "yes"
                } else {
                    "NO"
                },
                targets.join(", ")
            );
            let _ = std::io::stdout().flush();
            if let Some(f) = json.as_mut() {
                writeln!(f, "{}", json_line(&r)).expect("write the JSON line");
            }
        }
    }
    if rank == 0 && std::fs::write("/proc/self/clear_refs", "5").is_err() {
        println!(
            "# note: /proc/self/clear_refs is not writable; memory growth is bracketed by the previous peak"
        );
    }
}
