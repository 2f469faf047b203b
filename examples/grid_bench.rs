//! Benchmark of the process-grid layouts (pencils, bricks), with the baselines
//! measured in the same run, following the conventions of `examples/bench.rs`.
//!
//! ```text
//! MPICC=mpicc.mpich cargo build --release --features testing --example grid_bench
//! mpiexec.mpich -n P target/release/examples/grid_bench [--case NAME[,NAME...]]
//!     [--repeat N] [--warmup N] [--json FILE] [--small]
//! ```
//!
//! Cases (float64, input value = global C-order flat index, filled box by box), on
//! the global shape (512, 512, 256) at P = 4 (512 MiB) and (512, 512, 128) otherwise
//! (256 MiB), every axis divided by 8 with `--small`; pencils on a `pr x pc` grid
//! (`pc` the largest divisor of P not above its square root: 2x2 at P = 4, 4x2 at
//! P = 8, Px1 for a prime P), bricks on the three factors of P in descending order
//! (2x2x1 at P = 4, 2x2x2 at P = 8):
//! - `x_to_y_pencils`: x-pencils (axis 0 whole, axes 1, 2 over grid axes 0, 1) to
//!   y-pencils (axis 1 whole, axes 0, 2 over grid axes 0, 1);
//! - `bricks_to_x_pencils`: bricks (every axis split) to x-pencils;
//! - `pencils_reshape`: x-pencils of (n0, n1, n2) to rows of (-1, n2) = (n0 * n1, n2)
//!   split on axis 0 over a 1-D grid of P ranks, the layout an FFT code hands to a
//!   row-wise solver: a reshape that merges the whole axis 0 with the split axis 1,
//!   so every rank sends to every rank.
//!
//! For every case:
//! - plan creation is timed once (max over ranks), after a throwaway warm-up plan;
//! - `execute` and the baselines run interleaved `warmup` + `repeat` times, each run
//!   between barriers; a time is the median over the repeats of the max over ranks;
//! - baseline 1: `memcpy` of the elements that stay on the rank + `MPI_Alltoallv` on
//!   MPI_COMM_WORLD of exactly the per-peer volumes the plan moves, from and into
//!   contiguous buffers (the contiguous lower bound);
//! - baseline 2 (pencil transposes): the 2DECOMP&FFT transpose written by hand:
//!   `MPI_Comm_split` into the sub-communicator of the grid axis that changes, pack
//!   the local box into per-destination contiguous chunks, `MPI_Alltoallv` on the
//!   sub-communicator, unpack into the output box; its output must equal the
//!   library's, element for element;
//! - baseline 3 (cases that keep the shape): pack + `MPI_Alltoallv` on
//!   MPI_COMM_WORLD + unpack written by hand, as heFFTe's `reshape3d_alltoallv`
//!   does: every rank's boxes gathered, the intersection with each peer's box
//!   packed in C order into one contiguous chunk per peer, the part the rank keeps
//!   copied box to box; its output must equal the library's, element for element;
//! - baseline 4 (cases that keep the shape): one `MPI_Alltoallw` on MPI_COMM_WORLD
//!   with an `MPI_Type_create_subarray` per peer and side (the rank's own part
//!   included, copied by MPI), the datatypes made once: MPI packs, moves and
//!   unpacks; its output must equal the library's, element for element;
//! - the growth of the peak resident set (VmHWM, reset through /proc/self/clear_refs
//!   when the kernel allows) during one execute, as MiB and as a fraction of the
//!   local data (max(input, output) bytes of the rank), max over ranks;
//! - the same plan in place (one buffer sized for both): its median time over the
//!   out-of-place one, and its extra memory (peak growth plus the staging the plan
//!   keeps, `in_place_staging_bytes`);
//! - every output element is verified, out of place and in place.
//!
//! Target (issue 18, reported, not asserted): execute within 1.25x baseline 1 where
//! the runs are long (at least 64 KiB). Rank 0 prints a table and one JSON object per
//! case and line (also written to `--json FILE`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::mem::MaybeUninit;
use std::os::raw::{c_int, c_void};
use std::time::Instant;

use distreshape::testing::PeerVolume;
use distreshape::{GridBox, Layout, Plan, balanced_slab};
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};

#[path = "common/bench_support.rs"]
mod support;

use support::{
    Runs, all_true, barrier_timed, in_place_cost, json_num, max_f64, max_u64, median, peak_growth,
};

/// Bytes per MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// Issue 18's target ratio of `execute` to baseline 1.
const RATIO_TARGET: f64 = 1.25;

/// The case names, in the order they run.
const CASE_NAMES: [&str; 3] = ["x_to_y_pencils", "bricks_to_x_pencils", "pencils_reshape"];

/// Command-line options.
struct Options {
    /// Cases to run (all when empty).
    cases: Vec<String>,
    /// Timed runs per measurement.
    repeat: usize,
    /// Untimed runs before them.
    warmup: usize,
    /// Where to write the JSON lines too.
    json: Option<String>,
    /// Every axis divided by 8, for quick checks.
    small: bool,
}

/// The command line.
const USAGE: &str = "usage: mpiexec.mpich -n P grid_bench [--case NAME[,NAME]] [--repeat N] [--warmup N] [--json FILE] [--small]";

/// The options from the command line, or the message to print.
fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        cases: Vec::new(),
        repeat: 5,
        warmup: 1,
        json: None,
        small: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let count = |name: &str, v: String| v.parse().map_err(|e| format!("{name}: {e}"));
        match a.as_str() {
            "--case" => o
                .cases
                .extend(value("--case")?.split(',').map(str::to_string)),
            "--repeat" => o.repeat = count("--repeat", value("--repeat")?)?,
            "--warmup" => o.warmup = count("--warmup", value("--warmup")?)?,
            "--json" => o.json = Some(value("--json")?),
            "--small" => o.small = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    o.repeat = o.repeat.max(1);
    if let Some(c) = o.cases.iter().find(|c| !CASE_NAMES.contains(&c.as_str())) {
        return Err(format!(
            "unknown case {c:?}; cases: {}",
            CASE_NAMES.join(", ")
        ));
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------

/// A pencil transpose as 2DECOMP&FFT does it: within the sub-communicator of one
/// grid axis, one array axis goes from whole to split and another from split to whole.
struct Transpose {
    /// The process grid of both layouts.
    grid: Vec<u64>,
    /// The grid axis whose sub-communicator exchanges.
    grid_axis: usize,
    /// The array axis whole in the input and split over `grid_axis` in the output.
    splits_in_output: usize,
    /// The array axis split over `grid_axis` in the input and whole in the output.
    splits_in_input: usize,
}

/// One benchmark case.
struct Case {
    name: &'static str,
    /// The input's global shape.
    gshape: Vec<u64>,
    input: Layout,
    output: Layout,
    /// The hand-written baseline, for pencil transposes.
    transpose: Option<Transpose>,
}

/// The largest divisor of `p` whose `power`-th power is at most `p`.
fn root_divisor(p: u64, power: u32) -> u64 {
    (1..=p)
        .filter(|d| p.is_multiple_of(*d) && d.pow(power) <= p)
        .max()
        .unwrap_or(1)
}

/// The pencil grid of `p` ranks: `[pr, pc]`, `pc` the largest divisor up to sqrt(p)
/// (so that a prime `p` gives `p x 1`, whose x-to-y transpose still moves data).
fn pencil_grid(p: u64) -> Vec<u64> {
    let pc = root_divisor(p, 2);
    vec![p / pc, pc]
}

/// The brick grid of `p` ranks: three factors in descending order.
fn brick_grid(p: u64) -> Vec<u64> {
    let a = root_divisor(p, 3);
    let mut grid = pencil_grid(p / a);
    grid.push(a);
    grid.sort_unstable_by(|x, y| y.cmp(x));
    grid
}

/// The same extents as the `i64` the layouts take.
fn signed(v: &[u64]) -> Vec<i64> {
    v.iter().map(|&x| x as i64).collect()
}

/// The cases for `p` ranks (see the module documentation).
fn cases(p: u64, small: bool) -> Vec<Case> {
    let div = if small { 8 } else { 1 };
    let n2 = if p == 4 { 256 } else { 128 };
    let gshape = vec![512 / div, 512 / div, n2 / div];
    let s = signed(&gshape);
    let pencils = pencil_grid(p);
    let x = Layout::new(&s, &signed(&pencils), &[None, Some(0), Some(1)]);
    let y = Layout::new(&s, &signed(&pencils), &[Some(0), None, Some(1)]);
    let bricks = Layout::new(&s, &signed(&brick_grid(p)), &[Some(0), Some(1), Some(2)]);
    let rows = Layout::new(&[-1, s[2]], &[p as i64], &[Some(0), None]);
    vec![
        Case {
            name: CASE_NAMES[0],
            gshape: gshape.clone(),
            input: x.clone(),
            output: y,
            transpose: Some(Transpose {
                grid: pencils,
                grid_axis: 0,
                splits_in_output: 0,
                splits_in_input: 1,
            }),
        },
        Case {
            name: CASE_NAMES[1],
            gshape: gshape.clone(),
            input: bricks,
            output: x.clone(),
            transpose: None,
        },
        Case {
            name: CASE_NAMES[2],
            gshape,
            input: x,
            output: rows,
            transpose: None,
        },
    ]
}

// ---------------------------------------------------------------------------------
// Boxes and data
// ---------------------------------------------------------------------------------

/// Row-major strides of an array of extents `full`.
fn strides(full: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; full.len()];
    for a in (0..full.len().saturating_sub(1)).rev() {
        s[a] = s[a + 1] * full[a + 1];
    }
    s
}

/// The sub-box `ext` at `lo` of a C-order array of extents `full`, as contiguous
/// runs `f(index in the array, index in the sub-box's own C order, length)`.
fn for_each_run(full: &[u64], lo: &[u64], ext: &[u64], mut f: impl FnMut(usize, usize, usize)) {
    let d = full.len();
    if d == 0 || ext.contains(&0) {
        return;
    }
    let st = strides(full);
    let run = ext[d - 1] as usize;
    let outer: u64 = ext[..d - 1].iter().product();
    let mut idx = vec![0u64; d - 1];
    for k in 0..outer as usize {
        let start = lo[d - 1] + (0..d - 1).map(|a| (lo[a] + idx[a]) * st[a]).sum::<u64>();
        f(start as usize, k * run, run);
        for a in (0..d - 1).rev() {
            idx[a] += 1;
            if idx[a] < ext[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

/// Fills the buffer of box `b` of an array of shape `gshape` with the global C-order
/// flat indices of its elements.
fn fill(buf: &mut [f64], gshape: &[u64], b: &GridBox) {
    for_each_run(gshape, &b.offsets, &b.extents, |g, l, n| {
        for (j, x) in buf[l..l + n].iter_mut().enumerate() {
            *x = (g + j) as f64;
        }
    });
}

/// True when the buffer of box `b` holds the global C-order flat indices.
fn verify(buf: &[f64], gshape: &[u64], b: &GridBox) -> bool {
    if buf.len() < b.len() as usize {
        return false;
    }
    let mut ok = true;
    for_each_run(gshape, &b.offsets, &b.extents, |g, l, n| {
        ok = ok
            && buf[l..l + n]
                .iter()
                .enumerate()
                .all(|(j, &x)| x == (g + j) as f64);
    });
    ok
}

// ---------------------------------------------------------------------------------
// MPI: counts, Alltoallv, sub-communicators
// ---------------------------------------------------------------------------------

/// Per-peer counts and displacements of an `MPI_Alltoallv` side, in elements.
struct Counts {
    counts: Vec<c_int>,
    displs: Vec<c_int>,
    total: usize,
}

impl Counts {
    /// Counts in peer order, displacements packed.
    fn new(sizes: impl IntoIterator<Item = u64>) -> Counts {
        let counts: Vec<c_int> = sizes
            .into_iter()
            .map(|n| c_int::try_from(n).expect("per-peer count fits in an MPI int"))
            .collect();
        let mut displs = Vec::with_capacity(counts.len());
        let mut total = 0usize;
        for &c in &counts {
            displs.push(c_int::try_from(total).expect("displacement fits in an MPI int"));
            total += c as usize;
        }
        Counts {
            counts,
            displs,
            total,
        }
    }

    /// The counts of `p` ranks from a plan's per-peer volumes.
    fn from_volumes(p: usize, volumes: &[PeerVolume]) -> Counts {
        let mut sizes = vec![0u64; p];
        for v in volumes {
            sizes[v.peer] = v.elems;
        }
        Counts::new(sizes)
    }
}

/// Raw `MPI_Alltoallv` of float64 on `comm`, contiguous buffers.
fn alltoallv(comm: ffi::MPI_Comm, send: &[f64], sc: &Counts, recv: &mut [f64], rc: &Counts) {
    assert!(send.len() >= sc.total && recv.len() >= rc.total);
    // SAFETY: the counts and displacements lie within the buffers (checked above,
    // the displacements packed from the counts); every rank of `comm` calls it with
    // matching counts, built from the same plan or the same chunk arithmetic.
    let code = unsafe {
        ffi::MPI_Alltoallv(
            send.as_ptr().cast::<c_void>(),
            sc.counts.as_ptr(),
            sc.displs.as_ptr(),
            ffi::RSMPI_DOUBLE,
            recv.as_mut_ptr().cast::<c_void>(),
            rc.counts.as_ptr(),
            rc.displs.as_ptr(),
            ffi::RSMPI_DOUBLE,
            comm,
        )
    };
    assert_eq!(code, 0, "MPI_Alltoallv failed");
}

/// A sub-communicator of the world made by `MPI_Comm_split`, freed on drop.
struct SubComm {
    raw: ffi::MPI_Comm,
}

impl SubComm {
    /// Collective: the ranks of `world` with the same `color`, ordered by `key`.
    fn split(world: &SimpleCommunicator, color: c_int, key: c_int) -> SubComm {
        let mut raw = MaybeUninit::<ffi::MPI_Comm>::uninit();
        // SAFETY: `raw` is a valid place for the new handle; every rank of the world
        // calls it (the cases run in the same order on every rank).
        let code = unsafe { ffi::MPI_Comm_split(world.as_raw(), color, key, raw.as_mut_ptr()) };
        assert_eq!(code, 0, "MPI_Comm_split failed");
        // SAFETY: MPI_Comm_split succeeded, so it wrote the handle.
        SubComm {
            raw: unsafe { raw.assume_init() },
        }
    }
}

impl Drop for SubComm {
    fn drop(&mut self) {
        // SAFETY: the handle came from MPI_Comm_split and is freed once, here, by
        // every member (dropped at the same point of the same case on every rank).
        unsafe { ffi::MPI_Comm_free(&mut self.raw) };
    }
}

// ---------------------------------------------------------------------------------
// Baseline 2: the 2DECOMP&FFT transpose by hand
// ---------------------------------------------------------------------------------

/// A sub-box of a local box, exchanged with one member of the sub-communicator.
struct Chunk {
    lo: Vec<u64>,
    ext: Vec<u64>,
}

/// The chunks of box extents `extents` cut along `axis` into the balanced blocks of
/// `extent` over `members` (the box holds the whole axis).
fn chunks(extents: &[u64], axis: usize, extent: u64, members: u64) -> Vec<Chunk> {
    assert_eq!(extents[axis], extent, "the box holds the whole axis {axis}");
    (0..members)
        .map(|m| {
            let distreshape::Slab { len, offset: off } = balanced_slab(extent, members, m);
            let mut lo = vec![0; extents.len()];
            let mut ext = extents.to_vec();
            (lo[axis], ext[axis]) = (off, len);
            Chunk { lo, ext }
        })
        .collect()
}

/// A pencil transpose written as 2DECOMP&FFT does: pack, Alltoallv on the
/// sub-communicator of the grid axis that changes, unpack.
struct HandTranspose {
    comm: SubComm,
    in_extents: Vec<u64>,
    out_extents: Vec<u64>,
    pack: Vec<Chunk>,
    unpack: Vec<Chunk>,
    sends: Counts,
    recvs: Counts,
    send: Vec<f64>,
    recv: Vec<f64>,
    /// The output box, compared with the library's after the timed runs.
    output: Vec<f64>,
}

impl HandTranspose {
    /// Collective: splits the world and lays out the chunks of this rank's boxes.
    fn new(
        world: &SimpleCommunicator,
        t: &Transpose,
        gshape: &[u64],
        input: &GridBox,
        output: &GridBox,
    ) -> HandTranspose {
        let rank = world.rank() as u64;
        let st = strides(&t.grid);
        let coords: Vec<u64> = (0..t.grid.len())
            .map(|a| rank / st[a] % t.grid[a])
            .collect();
        let key = coords[t.grid_axis];
        let color = rank - key * st[t.grid_axis];
        let comm = SubComm::split(world, color as c_int, key as c_int);
        let members = t.grid[t.grid_axis];
        let a_out = t.splits_in_output;
        let a_in = t.splits_in_input;
        let pack = chunks(&input.extents, a_out, gshape[a_out], members);
        let unpack = chunks(&output.extents, a_in, gshape[a_in], members);
        let sends = Counts::new(pack.iter().map(|c| c.ext.iter().product()));
        let recvs = Counts::new(unpack.iter().map(|c| c.ext.iter().product()));
        HandTranspose {
            comm,
            in_extents: input.extents.clone(),
            out_extents: output.extents.clone(),
            send: vec![0.0; sends.total],
            recv: vec![0.0; recvs.total],
            output: vec![f64::NAN; output.len() as usize],
            pack,
            unpack,
            sends,
            recvs,
        }
    }

    /// One transpose of `input` (the input box) into its output box.
    fn run(&mut self, input: &[f64]) {
        for (c, &d) in self.pack.iter().zip(&self.sends.displs) {
            let send = &mut self.send[d as usize..];
            for_each_run(&self.in_extents, &c.lo, &c.ext, |src, k, n| {
                send[k..k + n].copy_from_slice(&input[src..src + n]);
            });
        }
        alltoallv(
            self.comm.raw,
            &self.send,
            &self.sends,
            &mut self.recv,
            &self.recvs,
        );
        for (c, &d) in self.unpack.iter().zip(&self.recvs.displs) {
            let recv = &self.recv[d as usize..];
            for_each_run(&self.out_extents, &c.lo, &c.ext, |dst, k, n| {
                self.output[dst..dst + n].copy_from_slice(&recv[k..k + n]);
            });
        }
    }
}

// ---------------------------------------------------------------------------------
// Baseline 3: pack + Alltoallv + unpack by hand, as heFFTe's reshape3d_alltoallv
// ---------------------------------------------------------------------------------

/// `len` elements copied from index `from` of one buffer to index `to` of another.
struct BlockCopy {
    from: usize,
    to: usize,
    len: usize,
}

/// Runs every block copy of `copies` from `src` into `dst`.
fn copy_blocks(src: &[f64], dst: &mut [f64], copies: &[BlockCopy]) {
    for c in copies {
        dst[c.to..c.to + c.len].copy_from_slice(&src[c.from..c.from + c.len]);
    }
}

/// A redistribution between two layouts of one shape written by hand: the part of
/// the input box each peer's output box holds packed into one chunk per peer (C
/// order of the intersection), `MPI_Alltoallv` on the world, the chunks unpacked,
/// and the part this rank keeps copied box to box. The block copies are listed
/// once, as a tuned code would.
struct HandAlltoallv {
    comm: ffi::MPI_Comm,
    sends: Counts,
    recvs: Counts,
    pack: Vec<BlockCopy>,
    unpack: Vec<BlockCopy>,
    kept: Vec<BlockCopy>,
    send: Vec<f64>,
    recv: Vec<f64>,
    /// The output box, compared with the library's after the timed runs.
    output: Vec<f64>,
}

/// Every rank's input and output boxes, in rank order, for the baselines that
/// redistribute between any two layouts.
struct EveryBox {
    inputs: Vec<GridBox>,
    outputs: Vec<GridBox>,
}

impl EveryBox {
    /// Collective: gathers this rank's `input` and `output` boxes from every rank.
    fn gather(world: &SimpleCommunicator, input: &GridBox, output: &GridBox) -> EveryBox {
        EveryBox {
            inputs: all_boxes(world, input),
            outputs: all_boxes(world, output),
        }
    }
}

impl HandAlltoallv {
    /// Lists the block copies between this rank's boxes and `every` rank's.
    fn new(
        world: &SimpleCommunicator,
        every: &EveryBox,
        input: &GridBox,
        output: &GridBox,
    ) -> HandAlltoallv {
        let rank = world.rank() as usize;
        let EveryBox { inputs, outputs } = every;
        let shared_with = |boxes: &[GridBox], mine: &GridBox| -> Vec<Option<GridBox>> {
            let peers = boxes.iter().enumerate();
            peers
                .map(|(peer, other)| intersection(mine, other).filter(|_| peer != rank))
                .collect()
        };
        let (to_peers, from_peers) = (shared_with(outputs, input), shared_with(inputs, output));
        let volume = |shared: &Option<GridBox>| shared.as_ref().map_or(0, GridBox::len);
        let sends = Counts::new(to_peers.iter().map(volume));
        let recvs = Counts::new(from_peers.iter().map(volume));
        let (mut pack, mut unpack) = (Vec::new(), Vec::new());
        for (shared, &at) in to_peers.iter().zip(&sends.displs) {
            let Some(shared) = shared else { continue };
            runs_within(input, shared, |from, k, len| {
                pack.push(BlockCopy {
                    from,
                    to: at as usize + k,
                    len,
                });
            });
        }
        for (shared, &at) in from_peers.iter().zip(&recvs.displs) {
            let Some(shared) = shared else { continue };
            runs_within(output, shared, |to, k, len| {
                unpack.push(BlockCopy {
                    from: at as usize + k,
                    to,
                    len,
                });
            });
        }
        HandAlltoallv {
            comm: world.as_raw(),
            send: vec![0.0; sends.total],
            recv: vec![0.0; recvs.total],
            output: vec![f64::NAN; output.len() as usize],
            kept: kept_copies(input, output),
            sends,
            recvs,
            pack,
            unpack,
        }
    }

    /// One redistribution of `input` (the input box) into the output box.
    fn run(&mut self, input: &[f64]) {
        copy_blocks(input, &mut self.send, &self.pack);
        alltoallv(
            self.comm,
            &self.send,
            &self.sends,
            &mut self.recv,
            &self.recvs,
        );
        copy_blocks(&self.recv, &mut self.output, &self.unpack);
        copy_blocks(input, &mut self.output, &self.kept);
    }
}

/// The block copies of the elements that boxes `input` and `output` share, from the
/// input's buffer into the output's.
fn kept_copies(input: &GridBox, output: &GridBox) -> Vec<BlockCopy> {
    let Some(shared) = intersection(input, output) else {
        return Vec::new();
    };
    let (mut from, mut copies) = (Vec::new(), Vec::new());
    runs_within(input, &shared, |at, _, _| from.push(at));
    runs_within(output, &shared, |to, k, len| {
        copies.push(BlockCopy {
            from: from[k / len],
            to,
            len,
        });
    });
    copies
}

// ---------------------------------------------------------------------------------
// Baseline 4: MPI_Alltoallw with subarray datatypes
// ---------------------------------------------------------------------------------

/// One side of an `MPI_Alltoallw`: per peer a count (1, or 0 when nothing is
/// shared) and a committed subarray datatype of the local box (a predefined one
/// with a count of 0), every displacement 0.
struct SubarraySide {
    counts: Vec<c_int>,
    displs: Vec<c_int>,
    types: Vec<ffi::MPI_Datatype>,
}

impl SubarraySide {
    /// The subarrays of `mine` shared with each box of `boxes` (in rank order).
    fn new(mine: &GridBox, boxes: &[GridBox]) -> SubarraySide {
        let shared = boxes.iter().map(|other| intersection(mine, other));
        let (counts, types) = shared
            .map(|s| s.map_or((0, double()), |s| (1, subarray(mine, &s))))
            .unzip();
        SubarraySide {
            counts,
            displs: vec![0; boxes.len()],
            types,
        }
    }
}

impl Drop for SubarraySide {
    fn drop(&mut self) {
        for (t, &n) in self.types.iter_mut().zip(&self.counts) {
            if n > 0 {
                // SAFETY: a datatype `subarray` committed, freed once, here.
                unsafe { ffi::MPI_Type_free(t) };
            }
        }
    }
}

/// `MPI_DOUBLE`.
fn double() -> ffi::MPI_Datatype {
    // SAFETY: reading an MPI constant handle.
    unsafe { ffi::RSMPI_DOUBLE }
}

/// A committed C-order subarray datatype of doubles: `part` within box `whole`.
fn subarray(whole: &GridBox, part: &GridBox) -> ffi::MPI_Datatype {
    let int = |v: u64| c_int::try_from(v).expect("extent fits an int");
    let sizes: Vec<c_int> = whole.extents.iter().map(|&e| int(e)).collect();
    let subsizes: Vec<c_int> = part.extents.iter().map(|&e| int(e)).collect();
    let starts: Vec<c_int> = (part.offsets.iter().zip(&whole.offsets))
        .map(|(&p, &w)| int(p - w))
        .collect();
    let ndims = sizes.len() as c_int;
    // SAFETY: the three arrays hold `ndims` entries; the part lies in the box
    // (an intersection with it), so MPI accepts the subarray.
    unsafe {
        let mut t = ffi::RSMPI_DATATYPE_NULL;
        let code = ffi::MPI_Type_create_subarray(
            ndims,
            sizes.as_ptr(),
            subsizes.as_ptr(),
            starts.as_ptr(),
            ffi::MPI_ORDER_C as c_int,
            ffi::RSMPI_DOUBLE,
            &mut t,
        );
        assert_eq!(code, 0, "MPI_Type_create_subarray failed");
        assert_eq!(ffi::MPI_Type_commit(&mut t), 0, "MPI_Type_commit failed");
        t
    }
}

/// A redistribution written as one `MPI_Alltoallw` of subarrays.
struct HandAlltoallw {
    comm: ffi::MPI_Comm,
    sends: SubarraySide,
    recvs: SubarraySide,
    /// The output box, compared with the library's after the timed runs.
    output: Vec<f64>,
}

impl HandAlltoallw {
    /// Makes the datatypes between this rank's boxes and `every` rank's.
    fn new(
        world: &SimpleCommunicator,
        every: &EveryBox,
        input: &GridBox,
        output: &GridBox,
    ) -> HandAlltoallw {
        HandAlltoallw {
            comm: world.as_raw(),
            sends: SubarraySide::new(input, &every.outputs),
            recvs: SubarraySide::new(output, &every.inputs),
            output: vec![f64::NAN; output.len() as usize],
        }
    }

    /// One redistribution of `input` (the input box) into the output box.
    fn run(&mut self, input: &[f64]) {
        let (s, r) = (&self.sends, &self.recvs);
        // SAFETY: each datatype lies within its box's buffer (input of the input
        // box, output of the output box); every rank calls it with the matching
        // subarrays of the same boxes.
        let code = unsafe {
            ffi::MPI_Alltoallw(
                input.as_ptr().cast::<c_void>(),
                s.counts.as_ptr(),
                s.displs.as_ptr(),
                s.types.as_ptr(),
                self.output.as_mut_ptr().cast::<c_void>(),
                r.counts.as_ptr(),
                r.displs.as_ptr(),
                r.types.as_ptr(),
                self.comm,
            )
        };
        assert_eq!(code, 0, "MPI_Alltoallw failed");
    }
}

// ---------------------------------------------------------------------------------
// Measurement helpers
// ---------------------------------------------------------------------------------

/// Min over the ranks.
fn min_u64(world: &SimpleCommunicator, x: u64) -> u64 {
    let mut out = 0u64;
    world.all_reduce_into(&x, &mut out, SystemOperation::min());
    out
}

// ---------------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------------

/// This rank's buffers and boxes for one plan.
struct Buffers {
    gshape: Vec<u64>,
    new_shape: Vec<u64>,
    in_box: GridBox,
    out_box: GridBox,
    input: Vec<f64>,
    output: Vec<f64>,
}

/// Elements of the longest run of the intersection `shared` of two boxes that is
/// contiguous in both (C order): its trailing axes extend the run while both boxes
/// hold them whole within it.
fn contiguous_run(shared: &[u64], a: &[u64], b: &[u64]) -> u64 {
    let d = shared.len();
    let mut run = shared[d - 1];
    for k in (1..d).rev() {
        if shared[k] != a[k] || shared[k] != b[k] {
            break;
        }
        run *= shared[k - 1];
    }
    run
}

/// The intersection of boxes `a` and `b`, `None` when empty.
fn intersection(a: &GridBox, b: &GridBox) -> Option<GridBox> {
    let (offsets, extents) = (0..a.offsets.len())
        .map(|i| {
            let start = a.offsets[i].max(b.offsets[i]);
            let end = (a.offsets[i] + a.extents[i]).min(b.offsets[i] + b.extents[i]);
            (start, end.saturating_sub(start))
        })
        .unzip();
    let shared = GridBox { offsets, extents };
    (!shared.is_empty()).then_some(shared)
}

/// Collective: every rank's `mine`, in rank order.
fn all_boxes(world: &SimpleCommunicator, mine: &GridBox) -> Vec<GridBox> {
    let d = mine.offsets.len();
    let flat = [mine.offsets.clone(), mine.extents.clone()].concat();
    let mut all = vec![0u64; 2 * d * world.size() as usize];
    world.all_gather_into(&flat[..], &mut all[..]);
    all.chunks(2 * d)
        .map(|b| GridBox {
            offsets: b[..d].to_vec(),
            extents: b[d..].to_vec(),
        })
        .collect()
}

/// The runs of the sub-box `shared` of the buffer of box `full`, in the sub-box's
/// C order: `f(index in the buffer, index in the sub-box, length)`.
fn runs_within(full: &GridBox, shared: &GridBox, f: impl FnMut(usize, usize, usize)) {
    let lo: Vec<u64> = (0..full.offsets.len())
        .map(|a| shared.offsets[a] - full.offsets[a])
        .collect();
    for_each_run(&full.extents, &lo, &shared.extents, f);
}

/// Collective: the shortest run (bytes) any rank sends to another, when the output
/// has the input's shape (`None` otherwise, or when nothing moves); issue 18's
/// target holds for runs of at least 64 KiB.
fn min_run_bytes(world: &SimpleCommunicator, b: &Buffers) -> Option<u64> {
    if b.gshape != b.new_shape {
        return None;
    }
    let shortest = all_boxes(world, &b.out_box)
        .iter()
        .enumerate()
        .filter(|&(peer, _)| peer != world.rank() as usize)
        .filter_map(|(_, out)| {
            let shared = intersection(out, &b.in_box)?;
            Some(contiguous_run(
                &shared.extents,
                &b.in_box.extents,
                &out.extents,
            ))
        })
        .min()
        .map_or(u64::MAX, |n| n * 8);
    Some(min_u64(world, shortest)).filter(|&n| n != u64::MAX)
}

/// Baseline 1's buffers: the plan's per-peer volumes, contiguous.
struct Contiguous {
    stay: usize,
    sends: Counts,
    recvs: Counts,
    send: Vec<f64>,
    recv: Vec<f64>,
}

impl Contiguous {
    /// The buffers for `plan`'s per-peer volumes, the send side filled.
    fn new(world: &SimpleCommunicator, plan: &Plan) -> Contiguous {
        let p = world.size() as usize;
        let rp = plan.rank_plan();
        let sends = Counts::from_volumes(p, &rp.sends);
        let recvs = Counts::from_volumes(p, &rp.recvs);
        Contiguous {
            stay: rp.local_elems as usize,
            send: (0..sends.total).map(|i| i as f64).collect(),
            recv: vec![f64::NAN; recvs.total],
            sends,
            recvs,
        }
    }
}

/// Median times (max over ranks) of the interleaved out-of-place runs.
struct Times {
    execute: f64,
    stay_memcpy: f64,
    alltoallv: f64,
    /// Baseline 2, for pencil transposes.
    hand_transpose: Option<f64>,
    /// Baseline 3, for cases that keep the shape.
    hand_alltoallv: Option<f64>,
    /// Baseline 4, for cases that keep the shape.
    hand_alltoallw: Option<f64>,
}

/// Series timed per run: the kept memcpy, execute, Alltoallv, baselines 2, 3, 4.
const TIMED: usize = 6;

/// The hand-written baselines a case has.
struct ByHand {
    transpose: Option<HandTranspose>,
    alltoallv: Option<HandAlltoallv>,
    alltoallw: Option<HandAlltoallw>,
}

impl ByHand {
    /// True when every hand-written baseline gave `output`.
    fn matches(&self, output: &[f64]) -> bool {
        self.transpose.as_ref().is_none_or(|h| h.output == output)
            && self.alltoallv.as_ref().is_none_or(|h| h.output == output)
            && self.alltoallw.as_ref().is_none_or(|h| h.output == output)
    }
}

/// Runs the plan and the baselines interleaved (so that a drifting machine load
/// affects them alike), each between barriers.
fn time_out_of_place(
    world: &SimpleCommunicator,
    o: &Options,
    plan: &Plan,
    b: &mut Buffers,
    c: &mut Contiguous,
    hand: &mut ByHand,
) -> Times {
    let mut local = Vec::with_capacity(TIMED * o.repeat);
    for i in 0..o.warmup + o.repeat {
        let mut t = [0.0f64; TIMED];
        t[0] = barrier_timed(world, || {
            b.output[..c.stay].copy_from_slice(&b.input[..c.stay]);
            std::hint::black_box(&mut b.output);
        });
        t[1] = barrier_timed(world, || {
            plan.execute(&b.input, &mut b.output).expect("execute")
        });
        t[2] = barrier_timed(world, || {
            alltoallv(world.as_raw(), &c.send, &c.sends, &mut c.recv, &c.recvs)
        });
        if let Some(h) = hand.transpose.as_mut() {
            t[3] = barrier_timed(world, || h.run(&b.input));
        }
        if let Some(h) = hand.alltoallv.as_mut() {
            t[4] = barrier_timed(world, || h.run(&b.input));
        }
        if let Some(h) = hand.alltoallw.as_mut() {
            t[5] = barrier_timed(world, || h.run(&b.input));
        }
        world.barrier();
        if i >= o.warmup {
            local.extend_from_slice(&t);
        }
    }
    let all = max_f64(world, &local);
    let series = |k: usize| {
        median(
            &all.iter()
                .skip(k)
                .step_by(TIMED)
                .copied()
                .collect::<Vec<_>>(),
        )
    };
    Times {
        stay_memcpy: series(0),
        execute: series(1),
        alltoallv: series(2),
        hand_transpose: hand.transpose.as_ref().map(|_| series(3)),
        hand_alltoallv: hand.alltoallv.as_ref().map(|_| series(4)),
        hand_alltoallw: hand.alltoallw.as_ref().map(|_| series(5)),
    }
}

/// The in-place measurements of a plan.
struct InPlace {
    median_s: f64,
    extra_bytes: u64,
    correct: bool,
}

/// Runs the plan in place on one buffer sized for both boxes: times it (the input
/// refilled, untimed, before each run) and measures its extra memory.
fn in_place(world: &SimpleCommunicator, o: &Options, plan: &Plan, b: &Buffers) -> InPlace {
    let mut buffer = vec![f64::NAN; b.input.len().max(b.output.len())];
    let refill = |buf: &mut Vec<f64>| fill(buf, &b.gshape, &b.in_box);
    refill(&mut buffer);
    let runs = Runs {
        warmup: o.warmup,
        repeat: o.repeat,
    };
    let cost = in_place_cost(world, plan, &mut buffer, runs, refill);
    InPlace {
        median_s: median(&cost.times),
        extra_bytes: cost.extra_bytes,
        correct: verify(&buffer, &b.new_shape, &b.out_box),
    }
}

/// One case's results, reduced over the ranks.
struct Row {
    case: &'static str,
    procs: usize,
    gshape: Vec<u64>,
    new_shape: Vec<u64>,
    in_grid: Vec<i64>,
    out_grid: Vec<i64>,
    plan_s: f64,
    execute_s: f64,
    baseline1_s: f64,
    baseline2_s: Option<f64>,
    baseline3_s: Option<f64>,
    baseline4_s: Option<f64>,
    /// Most bytes a rank sends or receives.
    moved_mib: f64,
    /// Most peers a rank sends to or receives from.
    max_peers: u64,
    extra_mib: f64,
    extra_fraction: f64,
    inplace_s: f64,
    inplace_extra_mib: f64,
    inplace_extra_fraction: f64,
    local_data_mib: f64,
    correct: bool,
    inplace_correct: bool,
    /// The hand-written baselines gave the library's output (true without one).
    baselines_match: bool,
    /// The shortest run sent between ranks, for same-shape cases that move data.
    min_run_bytes: Option<u64>,
}

impl Row {
    /// The execute time over `baseline_s`, when the case has that baseline.
    fn ratio_to(&self, baseline_s: Option<f64>) -> Option<f64> {
        baseline_s.map(|b| self.execute_s / b)
    }

    /// The in-place time over the out-of-place one.
    fn inplace_ratio(&self) -> f64 {
        self.inplace_s / self.execute_s
    }
}

/// A case's plan, how long it took to make (max over ranks) and this rank's buffers.
struct Planned {
    plan: Plan,
    plan_s: f64,
    buffers: Buffers,
}

/// Makes the plan (timed) and this rank's buffers, the input filled.
fn make_plan(world: &SimpleCommunicator, case: &Case) -> Planned {
    world.barrier();
    let t = Instant::now();
    let plan = Plan::from_layouts::<f64, _>(world, &case.input, &case.output).expect("plan");
    let plan_s = max_f64(world, &[t.elapsed().as_secs_f64()])[0];
    let in_box = plan.input_box();
    let out_box = plan.output_box();
    assert_eq!(plan.input_elems() as u64, in_box.len(), "input box size");
    assert_eq!(plan.output_elems() as u64, out_box.len(), "output box size");
    let mut input = vec![0.0f64; plan.input_elems()];
    fill(&mut input, &case.gshape, &in_box);
    let buffers = Buffers {
        gshape: case.gshape.clone(),
        new_shape: plan.new_shape().to_vec(),
        output: vec![f64::NAN; plan.output_elems()],
        in_box,
        out_box,
        input,
    };
    Planned {
        plan,
        plan_s,
        buffers,
    }
}

/// Runs one case on every rank and reduces its results over the ranks.
fn run_case(world: &SimpleCommunicator, case: &Case, o: &Options) -> Row {
    let Planned {
        plan,
        plan_s,
        buffers: mut b,
    } = make_plan(world, case);
    let mut contiguous = Contiguous::new(world, &plan);
    let every = (b.gshape == b.new_shape).then(|| EveryBox::gather(world, &b.in_box, &b.out_box));
    let mut hand = ByHand {
        transpose: case
            .transpose
            .as_ref()
            .map(|t| HandTranspose::new(world, t, &case.gshape, &b.in_box, &b.out_box)),
        alltoallv: (every.as_ref()).map(|e| HandAlltoallv::new(world, e, &b.in_box, &b.out_box)),
        alltoallw: (every.as_ref()).map(|e| HandAlltoallw::new(world, e, &b.in_box, &b.out_box)),
    };
    let times = time_out_of_place(world, o, &plan, &mut b, &mut contiguous, &mut hand);
    drop(contiguous);
    b.output.fill(f64::NAN);
    world.barrier();
    let extra = peak_growth(|| plan.execute(&b.input, &mut b.output).expect("execute")).bytes;
    let correct = verify(&b.output, &b.new_shape, &b.out_box);
    let matches = hand.matches(&b.output);
    drop(hand);
    let ip = in_place(world, o, &plan, &b);
    let stats = plan.stats();
    let min_run = min_run_bytes(world, &b);
    let local_data = (b.input.len().max(b.output.len()) * 8) as f64;
    let m = max_f64(
        world,
        &[
            extra as f64 / MIB,
            extra as f64 / local_data.max(1.0),
            ip.extra_bytes as f64 / MIB,
            ip.extra_bytes as f64 / local_data.max(1.0),
            local_data / MIB,
            stats.bytes_sent.max(stats.bytes_received) as f64 / MIB,
        ],
    );
    Row {
        case: case.name,
        procs: world.size() as usize,
        gshape: case.gshape.clone(),
        new_shape: b.new_shape.clone(),
        in_grid: case.input.grid_dims().to_vec(),
        out_grid: case.output.grid_dims().to_vec(),
        plan_s,
        execute_s: times.execute,
        baseline1_s: times.stay_memcpy + times.alltoallv,
        baseline2_s: times.hand_transpose,
        baseline3_s: times.hand_alltoallv,
        baseline4_s: times.hand_alltoallw,
        moved_mib: m[5],
        max_peers: max_u64(world, stats.peers_sent.max(stats.peers_received) as u64),
        extra_mib: m[0],
        extra_fraction: m[1],
        inplace_s: ip.median_s,
        inplace_extra_mib: m[2],
        inplace_extra_fraction: m[3],
        local_data_mib: m[4],
        correct: all_true(world, correct),
        inplace_correct: all_true(world, ip.correct),
        baselines_match: all_true(world, matches),
        min_run_bytes: min_run,
    }
}

// ---------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------

/// A JSON number, `null` when absent.
fn json_opt(x: Option<f64>) -> String {
    x.map_or("null".into(), json_num)
}

/// Extents as `AxBxC`.
fn dims<T: ToString>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join("x")
}

/// One case as a JSON object on one line.
fn json_line(r: &Row) -> String {
    let mut s = String::from("{");
    let mut kv = |k: &str, v: String| {
        if s.len() > 1 {
            s.push_str(", ");
        }
        let _ = write!(s, "\"{k}\": {v}");
    };
    let list = |v: &[u64]| format!("{v:?}");
    kv("case", format!("\"{}\"", r.case));
    kv("procs", r.procs.to_string());
    kv("dtype", "\"float64\"".into());
    kv("shape", list(&r.gshape));
    kv("new_shape", list(&r.new_shape));
    kv("input_grid", format!("{:?}", r.in_grid));
    kv("output_grid", format!("{:?}", r.out_grid));
    kv("plan_s", json_num(r.plan_s));
    kv("median_s", json_num(r.execute_s));
    kv("baseline1_s", json_num(r.baseline1_s));
    kv(
        "ratio_vs_baseline1",
        json_opt(r.ratio_to(Some(r.baseline1_s))),
    );
    kv("baseline2_s", json_opt(r.baseline2_s));
    kv("ratio_vs_baseline2", json_opt(r.ratio_to(r.baseline2_s)));
    kv("baseline3_s", json_opt(r.baseline3_s));
    kv("ratio_vs_baseline3", json_opt(r.ratio_to(r.baseline3_s)));
    kv("baseline4_s", json_opt(r.baseline4_s));
    kv("ratio_vs_baseline4", json_opt(r.ratio_to(r.baseline4_s)));
    kv("ratio_target", json_num(RATIO_TARGET));
    kv("max_moved_mib_per_rank", json_num(r.moved_mib));
    kv("max_peers", r.max_peers.to_string());
    kv("extra_peak_mib", json_num(r.extra_mib));
    kv("extra_peak_fraction", json_num(r.extra_fraction));
    kv("inplace_median_s", json_num(r.inplace_s));
    kv("inplace_ratio", json_num(r.inplace_ratio()));
    kv("inplace_extra_mib", json_num(r.inplace_extra_mib));
    kv("inplace_extra_fraction", json_num(r.inplace_extra_fraction));
    kv("local_data_mib", json_num(r.local_data_mib));
    kv("outofplace_correct", r.correct.to_string());
    kv("inplace_correct", r.inplace_correct.to_string());
    kv("baselines_match", r.baselines_match.to_string());
    kv(
        "min_run_bytes",
        r.min_run_bytes.map_or("null".into(), |n| n.to_string()),
    );
    s.push('}');
    s
}

/// Seconds as milliseconds for the table (`-` when not finite).
fn ms(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x < 0.01 {
        format!("{:.4}", x * 1e3)
    } else {
        format!("{:.1}", x * 1e3)
    }
}

/// The table's columns: heading and width (the first left-aligned).
const COLUMNS: [(&str, usize); 23] = [
    ("case", 20),
    ("P", 2),
    ("shape", 26),
    ("grids", 11),
    ("plan ms", 8),
    ("exec ms", 8),
    ("base1 ms", 8),
    ("/base1", 6),
    ("base2 ms", 8),
    ("/base2", 6),
    ("base3 ms", 8),
    ("/base3", 6),
    ("base4 ms", 8),
    ("/base4", 6),
    ("MiB/rank", 8),
    ("peers", 5),
    ("xtra MiB", 8),
    ("frac", 6),
    ("inpl ms", 8),
    ("ip/exec", 7),
    ("ip MiB", 7),
    ("run KiB", 8),
    ("ok", 3),
];

/// Prints one table line, the cells sized by [`COLUMNS`].
fn print_cells(cells: &[String]) {
    let mut line = String::new();
    for (i, (cell, (_, w))) in cells.iter().zip(COLUMNS).enumerate() {
        let _ = match i {
            0 => write!(line, "{cell:<w$}"),
            _ => write!(line, " {cell:>w$}"),
        };
    }
    println!("{line}");
    let _ = std::io::stdout().flush();
}

/// Prints the table heading.
fn print_header() {
    print_cells(&COLUMNS.map(|(h, _)| h.to_string()));
}

/// A ratio to two decimals, or "-" without its baseline.
fn ratio_cell(ratio: Option<f64>) -> String {
    ratio.map_or("-".into(), |x| format!("{x:.2}"))
}

/// Prints one case's line of the table.
fn print_row(r: &Row) {
    let ok = r.correct && r.inplace_correct && r.baselines_match;
    print_cells(&[
        r.case.to_string(),
        r.procs.to_string(),
        format!("{}->{}", dims(&r.gshape), dims(&r.new_shape)),
        format!("{}->{}", dims(&r.in_grid), dims(&r.out_grid)),
        ms(r.plan_s),
        ms(r.execute_s),
        ms(r.baseline1_s),
        ratio_cell(r.ratio_to(Some(r.baseline1_s))),
        ms(r.baseline2_s.unwrap_or(f64::NAN)),
        ratio_cell(r.ratio_to(r.baseline2_s)),
        ms(r.baseline3_s.unwrap_or(f64::NAN)),
        ratio_cell(r.ratio_to(r.baseline3_s)),
        ms(r.baseline4_s.unwrap_or(f64::NAN)),
        ratio_cell(r.ratio_to(r.baseline4_s)),
        format!("{:.1}", r.moved_mib),
        r.max_peers.to_string(),
        format!("{:.1}", r.extra_mib),
        format!("{:.3}", r.extra_fraction),
        ms(r.inplace_s),
        format!("{:.2}", r.inplace_ratio()),
        format!("{:.1}", r.inplace_extra_mib),
        r.min_run_bytes
            .map_or("-".into(), |n| format!("{:.1}", n as f64 / 1024.0)),
        (if ok { "yes" } else { "NO" }).to_string(),
    ]);
}

/// MPI's one-time costs (first communicator duplication, connections) are paid by a
/// throwaway plan, not by the first case's plan creation.
fn warm_up(world: &SimpleCommunicator) {
    let p = world.size() as i64;
    let x = Layout::new(&[2, 2 * p, 2], &[p, 1], &[None, Some(0), Some(1)]);
    let y = Layout::new(&[2 * p, 2, 2], &[p, 1], &[Some(0), None, Some(1)]);
    let plan = Plan::from_layouts::<f64, _>(world, &x, &y).expect("warm-up plan");
    let input = vec![0.0f64; plan.input_elems()];
    let mut output = vec![0.0f64; plan.output_elems()];
    plan.execute(&input, &mut output).expect("warm-up execute");
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialization");
    let world = universe.world();
    let rank = world.rank();
    let o = parse_args().unwrap_or_else(|e| {
        if rank == 0 {
            eprintln!("{e}");
        }
        std::process::exit(2);
    });
    let mut json = o
        .json
        .as_ref()
        .filter(|_| rank == 0)
        .map(|f| std::fs::File::create(f).unwrap_or_else(|e| panic!("cannot create {f}: {e}")));
    if rank == 0 {
        println!(
            "# distreshape grid_bench: {} ranks, {} cpus; float64; median of {} repeats after {} warm-up{}",
            world.size(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            o.repeat,
            o.warmup,
            if o.small { "; --small" } else { "" }
        );
        print_header();
    }
    warm_up(&world);
    let mut lines = Vec::new();
    for case in cases(world.size() as u64, o.small) {
        if !o.cases.is_empty() && !o.cases.iter().any(|c| c == case.name) {
            continue;
        }
        let r = run_case(&world, &case, &o);
        if rank == 0 {
            print_row(&r);
            lines.push(json_line(&r));
        }
    }
    if rank == 0 {
        for line in &lines {
            println!("{line}");
            if let Some(f) = json.as_mut() {
                writeln!(f, "{line}").expect("write the JSON line");
            }
        }
    }
}
