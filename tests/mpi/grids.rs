//! Plans between process-grid layouts over MPI: pencils, bricks, replicated grid
//! axes, explicit and empty blocks, more ranks than rows, shape changes with -1,
//! on the two- and three-axis grids the rank count factors into (2x3 and 3x2 at
//! 6 ranks, 7x1 at 7, 2x2x2 at 8). Every element is checked against its global index, computed
//! here from the layouts with plain loops (not by the library), out of place, in
//! place and overlapped; the volumes are checked against the oracle's (each element
//! reaches each rank that needs it once); bad layouts are agreed on every rank. In
//! place also runs with a small budget on short runs at a fixed stride, so that
//! the schedule's pieces join strided runs, sent as MPI vector messages; repeated,
//! it allocates nothing.

use distreshape::{Layout, LayoutArgs, Plan, PlanOptions, PlanStats};
use mpi::raw::AsRaw;
use mpi::topology::Communicator;

use super::{World, measure};

/// One layout as the oracle reads it.
#[derive(Clone, Debug)]
pub struct Spec {
    pub shape: Vec<u64>,
    grid: Vec<usize>,
    axis_grid: Vec<Option<usize>>,
    /// Explicit block lengths per array axis (`None`: balanced).
    lengths: Vec<Option<Vec<u64>>>,
}

impl Spec {
    pub fn new(shape: &[u64], grid: &[usize], axis_grid: &[Option<usize>]) -> Spec {
        Spec {
            shape: shape.to_vec(),
            grid: grid.to_vec(),
            axis_grid: axis_grid.to_vec(),
            lengths: vec![None; shape.len()],
        }
    }

    fn lengths(mut self, axis: usize, lengths: &[u64]) -> Spec {
        self.lengths[axis] = Some(lengths.to_vec());
        self
    }

    /// The library's layout, with the shape as the caller writes it.
    pub fn layout(&self, shape: &[i64]) -> Layout {
        let grid: Vec<i64> = self.grid.iter().map(|&d| d as i64).collect();
        let mut layout = Layout::new(shape, &grid, &self.axis_grid);
        for (axis, lengths) in self.lengths.iter().enumerate() {
            if let Some(l) = lengths {
                let l: Vec<i64> = l.iter().map(|&x| x as i64).collect();
                layout = layout.with_lengths(axis, &l);
            }
        }
        layout
    }

    /// Rank `rank`'s coordinate along grid axis `g` (row-major).
    fn coord(&self, rank: usize, g: usize) -> usize {
        let stride: usize = self.grid[g + 1..].iter().product();
        rank / stride % self.grid[g]
    }

    /// First index and extent of `rank`'s block of array axis `a`.
    pub fn block(&self, rank: usize, a: usize) -> (u64, u64) {
        let n = self.shape[a];
        let Some(g) = self.axis_grid[a] else {
            return (0, n);
        };
        let (c, q) = (self.coord(rank, g), self.grid[g] as u64);
        match &self.lengths[a] {
            Some(l) => (l[..c].iter().sum(), l[c]),
            None => {
                let c = c as u64;
                (c * (n / q) + c.min(n % q), n / q + u64::from(c < n % q))
            }
        }
    }

    /// The global C-order flat indices `rank` holds, in its buffer's order.
    pub fn indices(&self, rank: usize) -> Vec<u64> {
        let blocks: Vec<(u64, u64)> = (0..self.shape.len()).map(|a| self.block(rank, a)).collect();
        let count: u64 = blocks.iter().map(|b| b.1).product();
        (0..count)
            .map(|k| {
                let mut rest = k;
                let mut index = vec![0; blocks.len()];
                for a in (0..blocks.len()).rev() {
                    index[a] = blocks[a].0 + rest % blocks[a].1;
                    rest /= blocks[a].1;
                }
                (0..blocks.len()).fold(0, |flat, a| flat * self.shape[a] + index[a])
            })
            .collect()
    }
}

/// A plan to test: the two layouts, and the output shape as written (maybe a -1).
pub struct GridCase {
    pub name: String,
    pub input: Spec,
    pub output: Spec,
    pub written_shape: Vec<i64>,
}

fn case(name: &str, input: Spec, output: Spec) -> GridCase {
    let written_shape = output.shape.iter().map(|&n| n as i64).collect();
    GridCase {
        name: name.into(),
        input,
        output,
        written_shape,
    }
}

impl GridCase {
    /// The same case with output axis `axis` written as -1.
    fn inferred(mut self, axis: usize) -> GridCase {
        self.written_shape[axis] = -1;
        self.name += " (-1)";
        self
    }
}

/// Every ordered pair of factors of `p`.
fn factor_pairs(p: usize) -> Vec<[usize; 2]> {
    (1..=p)
        .filter(|d| p.is_multiple_of(*d))
        .map(|d| [d, p / d])
        .collect()
}

/// Which two-axis grids the cases run on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Breadth {
    /// Every factorization of the rank count.
    EveryGrid,
    /// Every factorization but 1 x p (p x 1 splits the same axes' lengths over
    /// p ranks), to keep the oversubscribed runs at 6-8 ranks short.
    NoOneByP,
}

/// The two-axis grids of `p` the cases run on.
fn grids_2d(p: usize, breadth: Breadth) -> Vec<[usize; 2]> {
    factor_pairs(p)
        .into_iter()
        .filter(|&[a, _]| breadth == Breadth::EveryGrid || a > 1 || p == 1)
        .collect()
}

/// The three-axis grids of `p` with at least two axes longer than 1 (2x2x2 at 8,
/// 1x2x3 and its orders at 6; none at a prime, whose grids are lines).
fn grids_3d(p: usize) -> Vec<[usize; 3]> {
    factor_pairs(p)
        .into_iter()
        .flat_map(|[a, rest]| factor_pairs(rest).into_iter().map(move |[b, c]| [a, b, c]))
        .filter(|grid| grid.iter().filter(|&&d| d > 1).count() >= 2)
        .collect()
}

/// Bricks on the three-axis grids to z-pencils, and to a layout replicated over
/// the middle grid axis.
fn brick_cases(p: usize) -> Vec<GridCase> {
    let cube = [7u64, 6, 5];
    let mut all = Vec::new();
    for [a, b, c] in grids_3d(p) {
        let bricks = Spec::new(&cube, &[a, b, c], &[Some(0), Some(1), Some(2)]);
        let z = Spec::new(&cube, &[a * b, c], &[Some(0), Some(1), None]);
        let replicated = Spec::new(&cube, &[a, b, c], &[Some(2), None, Some(0)]);
        let grid = format!("{a}x{b}x{c}");
        all.push(case(
            &format!("bricks {grid} -> z pencils {}x{c}", a * b),
            bricks.clone(),
            z,
        ));
        all.push(case(
            &format!("bricks {grid} -> replicated over grid axis 1"),
            bricks,
            replicated,
        ));
    }
    all
}

/// Rows of a (3, 2p + 1) array over `p` ranks (more ranks than rows from 4 on)
/// to columns, and to (-1, 3) rows: the ranks past the third hold no input.
fn few_rows_cases(p: usize) -> Vec<GridCase> {
    let width = 2 * p as u64 + 1;
    let rows = Spec::new(&[3, width], &[p], &[Some(0), None]);
    let columns = Spec::new(&[3, width], &[p], &[None, Some(0)]);
    let reshaped = Spec::new(&[width, 3], &[p], &[Some(0), None]);
    vec![
        case("3 rows over p ranks -> columns", rows.clone(), columns),
        case("3 rows over p ranks -> (-1, 3) rows", rows, reshaped).inferred(0),
    ]
}

/// Every case for `p` ranks, on the two-axis grids of `breadth`.
fn cases(p: usize, breadth: Breadth) -> Vec<GridCase> {
    let mut all = brick_cases(p);
    all.extend(few_rows_cases(p));
    let cube = [7u64, 6, 5];
    for [a, b] in grids_2d(p, breadth) {
        let x = Spec::new(&cube, &[a, b], &[None, Some(0), Some(1)]);
        let y = Spec::new(&cube, &[a, b], &[Some(0), None, Some(1)]);
        let z = Spec::new(&cube, &[a, b], &[Some(0), Some(1), None]);
        let slab = Spec::new(&cube, &[p], &[Some(0), None, None]);
        all.push(case(&format!("x->y pencils {a}x{b}"), x.clone(), y.clone()));
        all.push(case(&format!("y->z pencils {a}x{b}"), y.clone(), z.clone()));
        all.push(case(&format!("z->x pencils {a}x{b}"), z, x.clone()));
        all.push(case(
            &format!("x pencils {a}x{b} -> slabs"),
            x.clone(),
            slab.clone(),
        ));
        all.push(case(
            &format!("slabs -> y pencils {a}x{b}"),
            slab,
            y.clone(),
        ));
        let flat = Spec::new(&[42, 5], &[b, a], &[Some(1), Some(0)]);
        all.push(
            case(
                &format!("x pencils {a}x{b} -> (42, 5) on {b}x{a}"),
                x.clone(),
                flat,
            )
            .inferred(0),
        );
        let merged = Spec::new(&[7, 30], &[a, b], &[None, Some(0)]);
        all.push(case(
            &format!("x pencils {a}x{b} -> (7, 30), grid axis 1 replicating"),
            x,
            merged,
        ));
        let replicated_in = Spec::new(&cube, &[a, b], &[None, None, Some(1)]);
        all.push(case(
            &format!("replicated over grid axis 0 of {a}x{b} -> y pencils"),
            replicated_in,
            y,
        ));
    }
    if p.is_multiple_of(2) {
        let q = p / 2;
        let bricks = Spec::new(&[8, 6, 6], &[2, q, 1], &[Some(0), Some(1), Some(2)]);
        let x = Spec::new(&[8, 6, 6], &[q, 2], &[None, Some(0), Some(1)]);
        all.push(case(
            &format!("bricks 2x{q}x1 -> x pencils {q}x2"),
            bricks.clone(),
            x.clone(),
        ));
        all.push(case(
            &format!("x pencils {q}x2 -> bricks 2x{q}x1"),
            x,
            bricks,
        ));
    }
    let uneven = Spec::new(&[9, 4], &[p], &[Some(0), None]).lengths(0, &uneven_lengths(9, p));
    let grid = Spec::new(&[6, 6], &[1, p], &[Some(0), Some(1)]);
    all.push(case(
        "explicit and empty blocks -> 1 x p",
        uneven.clone(),
        grid.clone(),
    ));
    all.push(case("1 x p -> explicit and empty blocks", grid, uneven));
    // Nothing moves: unsplit trailing axes merged, the split kept.
    let rows = Spec::new(&[2 * p as u64, 3, 4], &[p], &[Some(0), None, None]);
    let merged = Spec::new(&[2 * p as u64, 12], &[p], &[Some(0), None]);
    all.push(case("trailing axes merged (nothing moves)", rows, merged).inferred(1));
    all
}

/// The cases strided storage runs on: every case on the two-axis grids but 1 x p.
pub fn cases_for_storage(p: usize) -> Vec<GridCase> {
    cases(p, Breadth::NoOneByP)
}

/// x- to y-pencils of `shape` on the squarest two-axis grid of `p`.
pub fn pencil_case(p: usize, shape: &[u64]) -> GridCase {
    let [a, b] = (factor_pairs(p).into_iter())
        .min_by_key(|&[a, b]| a.abs_diff(b))
        .expect("p has a factor pair");
    let x = Spec::new(shape, &[a, b], &[None, Some(0), Some(1)]);
    let y = Spec::new(shape, &[a, b], &[Some(0), None, Some(1)]);
    case(&format!("x->y pencils {a}x{b} on views"), x, y)
}

/// `n` rows over `p` ranks, unevenly, the first rank holding none.
fn uneven_lengths(n: u64, p: usize) -> Vec<u64> {
    let mut lengths = vec![0; p];
    if p == 1 {
        lengths[0] = n;
        return lengths;
    }
    lengths[p - 1] = n / 2;
    lengths[1] += n - n / 2;
    lengths
}

/// Runs every grid case, on the two-axis grids of `breadth`, and the error cases.
pub fn run(w: &World, breadth: Breadth) {
    for c in cases(w.size, breadth) {
        check_case(w, &c);
    }
    w.passed("grid layouts");
    long_runs(w);
    for c in strided_cases(w.size) {
        check_strided_in_place(w, &c);
    }
    w.passed("grid layouts in place in strided pieces");
    bad_layouts_are_agreed(w);
    cartesian_communicators(w);
}

fn check_case(w: &World, c: &GridCase) {
    let input_layout = c
        .input
        .layout(&c.input.shape.iter().map(|&n| n as i64).collect::<Vec<_>>());
    let output_layout = c.output.layout(&c.written_shape);
    let plan = Plan::from_layouts::<u64, _>(&w.comm, &input_layout, &output_layout)
        .unwrap_or_else(|e| w.fail(&c.name, format!("planning: {e}")));
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    check_boxes(w, c, &plan);
    check_volumes(w, c, plan.stats(), &have, &want);
    let mut out = vec![u64::MAX; want.len()];
    plan.execute(&have, &mut out)
        .unwrap_or_else(|e| w.fail(&c.name, format!("execute: {e}")));
    check_values(w, &c.name, "out of place", &out, &want);
    let mut buffer = have.clone();
    buffer.resize(have.len().max(want.len()), u64::MAX);
    plan.execute_in_place(&mut buffer)
        .unwrap_or_else(|e| w.fail(&c.name, format!("in place: {e}")));
    check_values(w, &c.name, "in place", &buffer[..want.len()], &want);
    let mut overlapped = vec![u64::MAX; want.len()];
    plan.execute_overlapped(&have, &mut overlapped, |execution| {
        while !execution.test().unwrap_or(true) {}
    })
    .unwrap_or_else(|e| w.fail(&c.name, format!("overlapped: {e}")));
    check_values(w, &c.name, "overlapped", &overlapped, &want);
}

/// The environment variable that turns direct reads on (`1`) or off (`0`).
pub const DIRECT_READS_VARIABLE: &str = "DISTRESHAPE_DIRECT_READS";

/// A transpose of long runs (planes of 128 KiB, contiguous in both buffers), out
/// of place, in place and overlapped, every element checked. Where direct reads
/// are asked for ([`DIRECT_READS_VARIABLE`] is `1`, the launcher's
/// `mpi_direct_reads` runs) and the kernel lets a rank read its sibling processes
/// (as root, or with Yama's ptrace scope 0), every rank with a peer must read its
/// peers directly, as the plan's description says; with them turned off, or in a
/// build without them (`--cfg distreshape_no_direct_reads`, as on every platform
/// but Linux and Android), none.
pub fn long_runs(w: &World) {
    let p = w.size as u64;
    let c = long_runs_case(w.size);
    check_case(w, &c);
    let layout = |s: &Spec| s.layout(&s.shape.iter().map(|&n| n as i64).collect::<Vec<_>>());
    let plan = Plan::from_layouts::<u64, _>(&w.comm, &layout(&c.input), &layout(&c.output))
        .unwrap_or_else(|e| w.fail(&c.name, format!("planning: {e}")));
    let reads = plan.to_string().contains("direct reads");
    let asked = std::env::var(DIRECT_READS_VARIABLE).ok();
    let expected = match asked.as_deref() {
        Some("1") => Some(p > 1 && cfg!(direct_reads) && kernel_allows_sibling_reads()),
        Some("0") => Some(false),
        _ => None,
    };
    if let Some(expected) = expected.filter(|&e| e != reads) {
        w.fail(
            &c.name,
            format!(
                "{DIRECT_READS_VARIABLE}={asked:?}: expected direct reads {expected}, the plan says: {plan} (a container's seccomp profile can forbid process_vm_readv)"
            ),
        );
    }
    w.passed(&format!("long runs (direct reads: {reads})"));
    forced_direct_reads(w, &layout(&c.input), &layout(&c.output));
}

/// The plan option `direct_reads` overrides the environment: forced off, a plan
/// reads nothing directly (even after an earlier plan on the communicator decided
/// direct reads); forced on, every rank with a peer reads where the kernel allows.
fn forced_direct_reads(w: &World, input: &Layout, output: &Layout) {
    let allowed = w.size > 1 && cfg!(direct_reads) && kernel_allows_sibling_reads();
    for (forced, expected) in [(false, false), (true, allowed), (false, false)] {
        let options = PlanOptions {
            direct_reads: Some(forced),
            ..PlanOptions::default()
        };
        let args = Ok(LayoutArgs::for_element::<u64>(input, output));
        let plan = Plan::create_from_layouts(w.comm.as_raw(), args, options)
            .unwrap_or_else(|e| w.fail("forced direct reads", format!("planning: {e}")));
        let reads = plan.to_string().contains("direct reads");
        if reads != expected {
            w.fail(
                "forced direct reads",
                format!("direct_reads: Some({forced}): expected direct reads {expected}, the plan says: {plan}"),
            );
        }
    }
    w.passed("the option direct_reads overrides the environment");
}

/// Planes of 128 KiB, contiguous in both buffers, from rows to columns of
/// `(2p, 2p, 8192)` over `p` ranks: joint runs long enough to be read directly.
pub fn long_runs_case(p: usize) -> GridCase {
    let shape = [2 * p as u64, 2 * p as u64, 8192];
    let rows = Spec::new(&shape, &[p], &[None, Some(0), None]);
    let columns = Spec::new(&shape, &[p], &[Some(0), None, None]);
    case(
        "long runs: axis 1 -> axis 0 of (2p, 2p, 8192)",
        rows,
        columns,
    )
}

/// True when the kernel lets this process read its sibling processes' memory:
/// as root, or with Yama's ptrace scope 0 (or no Yama).
pub fn kernel_allows_sibling_reads() -> bool {
    // SAFETY: geteuid only reads this process's effective user id.
    let root = unsafe { libc::geteuid() } == 0;
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .map_or(0, |s| s.trim().parse().unwrap_or(1));
    root || scope == 0
}

/// Short runs at a fixed stride: `(64 p, 6, 10)` from rows to columns over `p`
/// ranks (runs of 10 / p elements, 80 bytes apart), and back.
fn strided_cases(p: usize) -> Vec<GridCase> {
    let shape = [64 * p as u64, 6, 10];
    let rows = Spec::new(&shape, &[p], &[Some(0), None, None]);
    let columns = Spec::new(&shape, &[p], &[None, None, Some(0)]);
    vec![
        case("rows -> columns, strided", rows.clone(), columns.clone()),
        case("columns -> rows, strided", columns, rows),
    ]
}

/// In place with an 8 KiB budget (pieces spanning at most 1 KiB), which holds
/// the scheduling state of only a few pieces of one run: the runs join strided
/// pieces. Checks every element, that it took bounded rounds (with more than one
/// rank), and that a repeated execution allocates nothing.
fn check_strided_in_place(w: &World, c: &GridCase) {
    let shape: Vec<i64> = c.input.shape.iter().map(|&n| n as i64).collect();
    let (input, output) = (c.input.layout(&shape), c.output.layout(&c.written_shape));
    let options = PlanOptions {
        in_place_budget: Some(8192),
        ..PlanOptions::default()
    };
    let args = Ok(LayoutArgs::for_element::<u64>(&input, &output));
    let plan = Plan::create_from_layouts(w.comm.as_raw(), args, options)
        .unwrap_or_else(|e| w.fail(&c.name, format!("planning with a small budget: {e}")));
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let fresh = || {
        let mut buffer = have.clone();
        buffer.resize(have.len().max(want.len()), u64::MAX);
        buffer
    };
    let mut buffer = fresh();
    plan.execute_in_place(&mut buffer)
        .unwrap_or_else(|e| w.fail(&c.name, format!("in place, small budget: {e}")));
    check_values(
        w,
        &c.name,
        "in place, small budget",
        &buffer[..want.len()],
        &want,
    );
    let in_rounds = plan.to_string().contains("; in place in ");
    if in_rounds {
        let mut again = fresh();
        let (result, usage) = measure(|| plan.execute_in_place(&mut again));
        if result.is_err() || usage.calls > 0 {
            let calls = usage.calls;
            let what = format!("repeated in place: {result:?}, {calls} allocations");
            w.fail(&c.name, what);
        }
        check_values(w, &c.name, "repeated in place", &again[..want.len()], &want);
    }
    if w.size > 1 && !in_rounds {
        w.fail(
            &c.name,
            format!("in place did not take bounded rounds: {plan}"),
        );
    }
}

/// The plan's boxes are the oracle's.
fn check_boxes(w: &World, c: &GridCase, plan: &Plan) {
    let expect = |spec: &Spec| -> (Vec<u64>, Vec<u64>) {
        (0..spec.shape.len()).map(|a| spec.block(w.rank, a)).unzip()
    };
    let (b_in, b_out) = (plan.input_box(), plan.output_box());
    if (b_in.offsets.clone(), b_in.extents.clone()) != expect(&c.input)
        || (b_out.offsets.clone(), b_out.extents.clone()) != expect(&c.output)
        || plan.new_shape() != c.output.shape.as_slice()
    {
        w.fail(
            &c.name,
            format!(
                "boxes {b_in:?} -> {b_out:?}, new shape {:?}",
                plan.new_shape()
            ),
        );
    }
}

/// Each rank receives exactly the output elements it does not hold, and copies the
/// ones it does; sends and receives add up over the ranks.
fn check_volumes(w: &World, c: &GridCase, s: PlanStats, have: &[u64], want: &[u64]) {
    let held: std::collections::HashSet<u64> = have.iter().copied().collect();
    let kept = want.iter().filter(|g| held.contains(g)).count() as u64;
    let received = want.len() as u64 - kept;
    let mut totals = [s.bytes_sent as i64, s.bytes_received as i64];
    let mut sums = [0i64; 2];
    use mpi::collective::{CommunicatorCollectives, SystemOperation};
    w.comm
        .all_reduce_into(&totals[..], &mut sums[..], SystemOperation::sum());
    totals = sums;
    if s.bytes_copied_locally != kept * 8
        || s.bytes_received != received * 8
        || totals[0] != totals[1]
    {
        w.fail(&c.name, format!("stats {s:?}: expected {kept} kept and {received} received elements, totals {totals:?}"));
    }
}

fn check_values(w: &World, case: &str, how: &str, got: &[u64], want: &[u64]) {
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        w.fail(
            case,
            format!("{how}: element {i} is {} but should be {}", got[i], want[i]),
        );
    }
}

/// A grid of the wrong size, a layout that differs on one rank, lengths that do
/// not add up on one rank: every rank returns the same status, the message naming
/// the value and a rank.
fn bad_layouts_are_agreed(w: &World) {
    let p = w.size as i64;
    let shape = [6, 4];
    let good = Layout::new(&shape, &[p], &[Some(0), None]);
    let wrong_size = Layout::new(&shape, &[p + 1], &[Some(0), None]);
    expect_error(
        w,
        "grid of the wrong size",
        Plan::from_layouts::<f64, _>(&w.comm, &wrong_size, &good),
        5,
        &format!("grid_dims = [{}]", p + 1),
    );
    let mut lengths = vec![0; w.size];
    lengths[0] = 6;
    let too_many = vec![7; w.size];
    let odd = if w.rank == w.size - 1 {
        Layout::new(&shape, &[p], &[None, Some(0)])
    } else {
        good.clone()
    };
    let status = if w.size > 1 { 6 } else { 0 };
    if w.size > 1 {
        expect_error(
            w,
            "a layout that differs on one rank",
            Plan::from_layouts::<f64, _>(&w.comm, &good, &odd),
            status,
            "differ between ranks",
        );
    }
    let short = if w.rank == 0 {
        good.clone().with_lengths(0, &too_many)
    } else {
        good.clone().with_lengths(0, &lengths)
    };
    expect_error(
        w,
        "lengths that do not add up on rank 0",
        Plan::from_layouts::<f64, _>(&w.comm, &good, &short),
        5,
        "add up to",
    );
    w.passed("bad grid layouts agreed");
}

fn expect_error(w: &World, name: &str, result: distreshape::Result<Plan>, code: i32, text: &str) {
    match result {
        Err(e)
            if e.code() == code
                && e.to_string().contains(text)
                && e.to_string().contains("rank ") => {}
        Err(e) => w.fail(name, format!("wrong error {e} (code {})", e.code())),
        Ok(_) => w.fail(name, "planned"),
    }
}

/// A Cartesian communicator made without reordering numbers its ranks as the
/// layouts do; a layout of as many axes with other dimensions is refused.
fn cartesian_communicators(w: &World) {
    let dims = [w.size as i32, 1];
    let cart = w
        .comm
        .create_cartesian_communicator(&dims, &[false, false], false)
        .unwrap_or_else(|| w.fail("cartesian", "no Cartesian communicator"));
    let shape = [5, 3];
    let rows = Layout::new(&shape, &[w.size as i64, 1], &[Some(0), Some(1)]);
    let columns = Layout::new(&shape, &[w.size as i64], &[None, Some(0)]);
    let plan = Plan::from_layouts::<u64, _>(&cart, &rows, &columns)
        .unwrap_or_else(|e| w.fail("cartesian", e));
    let spec_in = Spec::new(&[5, 3], &[w.size, 1], &[Some(0), Some(1)]);
    let spec_out = Spec::new(&[5, 3], &[w.size], &[None, Some(0)]);
    let rank = cart.rank() as usize;
    let (have, want) = (spec_in.indices(rank), spec_out.indices(rank));
    let mut out = vec![0u64; want.len()];
    plan.execute(&have, &mut out)
        .unwrap_or_else(|e| w.fail("cartesian", e));
    check_values(w, "cartesian", "out of place", &out, &want);
    if w.size > 1 {
        let transposed = Layout::new(&shape, &[1, w.size as i64], &[Some(0), Some(1)]);
        let refused = Plan::from_layouts::<u64, _>(&cart, &transposed, &columns);
        expect_error(
            w,
            "cartesian dims differ",
            refused,
            5,
            "Cartesian communicator's dims",
        );
    }
    w.passed("cartesian communicators");
}
