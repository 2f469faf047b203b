//! MPI integration test of distributed reshapes (`harness = false`).
//!
//! Run without `DISTRESHAPE_MPI_WORKER`, this binary is the launcher: it starts itself
//! under `mpiexec` on 1 to 5 ranks, and with the grid-layout cases only
//! (tests/mpi/grids.rs) on 6 to 8 ranks (oversubscribed on small machines), and
//! the long-run grid case with direct reads asked for on 2 to 4 ranks (and turned
//! off on 2), and reports one test per run. Run with it, it is an MPI worker that executes every
//! case below and exits with code 1 on the first wrong value, so that mpiexec
//! aborts the other ranks.
//!
//! Every case fills the input with the global C-order flat index of each element and
//! checks every output element against indices computed here, independently of the
//! crate's layout code, by plain nested loops over each slab. The plan statistics are
//! checked the same way: the path must be [`Route::Local`] exactly when the split axis
//! survives, and the bytes sent and received must be exactly the elements that change
//! owner.
//!
//! Every out-of-place execution is also checked to allocate nothing through Rust's
//! allocator (everything it needs is allocated when the plan is created).
//!
//! Environment of the launcher: `DISTRESHAPE_MPIEXEC` (default `mpiexec`),
//! `DISTRESHAPE_MPIEXEC_PREFLAGS` (flags before `-n`, split on whitespace; by
//! default `--oversubscribe` for Open MPI's mpiexec) and `DISTRESHAPE_MPI_TIMEOUT`
//! (seconds per run, default 300). Its arguments select runs as libtest's do:
//! `cargo test --test mpi -- grids` runs those whose names contain `grids`
//! (`--exact`, `--skip NAME` and `--list` too).

mod common;

use std::fmt::Debug;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

#[path = "mpi/batch.rs"]
mod batch;
#[path = "mpi/fused.rs"]
mod fused;
#[path = "mpi/grids.rs"]
mod grids;
#[path = "mpi/strided.rs"]
mod strided;

use distreshape::testing::{Bytes, Comm, Envelope, Side as MessageSide, Transport};
use distreshape::{Element, Plan, PlanOptions, ReshapeArgs, Route, reshape, reshape_array};
use mpi::Threading;
use mpi::collective::CommunicatorCollectives;
use mpi::raw::AsRaw;
use mpi::topology::{Communicator, SimpleCommunicator};
use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use num_complex::Complex;

use common::alloc::{Counting, measure};
use common::oracle::{slab_indices, split_survives};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Rank counts the launcher runs the workers with.
const RANK_COUNTS: [usize; 5] = [1, 2, 3, 4, 5];

/// Rank counts the launcher also runs the thread test with at
/// `MPI_THREAD_MULTIPLE` (every other run asks for `MPI_THREAD_FUNNELED`).
const MULTIPLE_RANK_COUNTS: [usize; 2] = [1, 3];

/// Rank counts the launcher runs the grid-layout cases only with: grids of 2x3,
/// 3x2, a prime, 2x2x2, replication and more ranks than rows, without the slab
/// cases' minutes of oversubscribed collectives.
const GRID_RANK_COUNTS: [usize; 3] = [6, 7, 8];

/// Rank counts the launcher runs the long-run case with direct reads asked for
/// (`DISTRESHAPE_DIRECT_READS=1`), and at the first of them with them turned off.
const DIRECT_READS_RANK_COUNTS: [usize; 3] = [2, 3, 4];

/// The environment variable that tells a worker which cases to run
/// ([`Cases::var_value`]); every case when unset.
const CASES_VAR: &str = "DISTRESHAPE_MPI_CASES";

/// What one worker run executes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cases {
    /// Every case, at `MPI_THREAD_FUNNELED`.
    All,
    /// The thread test only, at `MPI_THREAD_MULTIPLE`.
    ThreadMultiple,
    /// The grid-layout cases only, at `MPI_THREAD_FUNNELED`.
    Grids,
    /// The long-run grid case only, at `MPI_THREAD_FUNNELED`.
    LongRuns,
}

impl Cases {
    /// The value of [`CASES_VAR`] that selects these cases.
    fn var_value(self) -> &'static str {
        match self {
            Cases::All => "all",
            Cases::ThreadMultiple => "thread-multiple",
            Cases::Grids => "grids",
            Cases::LongRuns => "long-runs",
        }
    }

    /// The cases [`CASES_VAR`] selects in this process.
    fn from_env() -> Cases {
        let value = std::env::var(CASES_VAR).unwrap_or_default();
        [Cases::ThreadMultiple, Cases::Grids, Cases::LongRuns]
            .into_iter()
            .find(|c| c.var_value() == value)
            .unwrap_or(Cases::All)
    }
}

/// One launch of the workers: its test name, rank count, cases and the setting
/// of direct reads (`DISTRESHAPE_DIRECT_READS`, unset when `None`).
struct Run {
    name: String,
    ranks: usize,
    cases: Cases,
    direct_reads: Option<&'static str>,
}

fn main() -> ExitCode {
    if std::env::var_os("DISTRESHAPE_MPI_WORKER").is_some() {
        worker();
        ExitCode::SUCCESS
    } else {
        launcher()
    }
}

// ---------------------------------------------------------------------------------
// Launcher
// ---------------------------------------------------------------------------------

/// Runs the workers once per rank count (the runs the command line selects) and
/// prints a libtest-like summary.
fn launcher() -> ExitCode {
    let selection = Selection::from_args(std::env::args().skip(1));
    let runs: Vec<Run> = all_runs()
        .into_iter()
        .filter(|run| selection.selects(&run.name))
        .collect();
    let filtered_out = all_runs().len() - runs.len();
    if selection.list {
        runs.iter().for_each(|run| println!("{}: test", run.name));
        return ExitCode::SUCCESS;
    }
    let launch = Launch::from_env();
    println!("\nrunning {} tests", runs.len());
    let mut failed = 0;
    for run in &runs {
        let name = &run.name;
        match run_with_timeout(launch.command(run), launch.timeout, name) {
            Ok(()) => println!("test {name} ... ok"),
            Err(output) => {
                failed += 1;
                println!("test {name} ... FAILED\n---- {name} output ----\n{output}");
            }
        }
    }
    if filtered_out > 0 {
        println!("{filtered_out} filtered out");
    }
    println!("{} passed, {failed} failed", runs.len() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every launch of the workers, in the order they run.
fn all_runs() -> Vec<Run> {
    let runs_of = |counts: &[usize], prefix: &str, cases: Cases| -> Vec<Run> {
        counts
            .iter()
            .map(|&ranks| Run {
                name: format!("{prefix}_{ranks}"),
                ranks,
                cases,
                direct_reads: None,
            })
            .collect()
    };
    let direct_reads = |ranks: usize, setting: &'static str| Run {
        name: format!("mpi_direct_reads_{setting}_ranks_{ranks}"),
        ranks,
        cases: Cases::LongRuns,
        direct_reads: Some(setting),
    };
    [
        runs_of(&RANK_COUNTS, "mpi_ranks", Cases::All),
        runs_of(
            &MULTIPLE_RANK_COUNTS,
            "mpi_thread_multiple_ranks",
            Cases::ThreadMultiple,
        ),
        runs_of(&GRID_RANK_COUNTS, "mpi_grids_ranks", Cases::Grids),
        DIRECT_READS_RANK_COUNTS
            .iter()
            .map(|&ranks| direct_reads(ranks, "1"))
            .chain([direct_reads(DIRECT_READS_RANK_COUNTS[0], "0")])
            .collect(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The runs the command line selects, as libtest reads it (`cargo test --test mpi
/// -- NAME`): a run is selected when its name contains a filter (equals one with
/// `--exact`), or there is none, and it contains no `--skip` value. `--list`
/// lists them instead, and `--ignored` selects none (no run is ignored). libtest's
/// other options are accepted and ignored.
#[derive(Default)]
struct Selection {
    filters: Vec<String>,
    skips: Vec<String>,
    exact: bool,
    list: bool,
    ignored_only: bool,
}

/// libtest's options that take a value (as the next argument unless given with
/// `=`), which must not be read as filters.
const VALUE_OPTIONS: [&str; 7] = [
    "--skip",
    "--test-threads",
    "--color",
    "--format",
    "--logfile",
    "--shuffle-seed",
    "-Z",
];

impl Selection {
    fn from_args(mut args: impl Iterator<Item = String>) -> Selection {
        let mut selection = Selection::default();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--exact" => selection.exact = true,
                "--list" => selection.list = true,
                "--ignored" => selection.ignored_only = true,
                option if VALUE_OPTIONS.contains(&option) => {
                    let value = args.next().unwrap_or_default();
                    if option == "--skip" {
                        selection.skips.push(value);
                    }
                }
                option if option.starts_with("--skip=") => {
                    selection.skips.push(option["--skip=".len()..].to_owned());
                }
                option if option.starts_with('-') => {}
                filter => selection.filters.push(filter.to_owned()),
            }
        }
        selection
    }

    fn selects(&self, name: &str) -> bool {
        let matches = |filter: &String| match self.exact {
            true => name == filter,
            false => name.contains(filter.as_str()),
        };
        !self.ignored_only
            && (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skips.iter().any(|skip| name.contains(skip.as_str()))
    }
}

/// How the launcher starts the workers: `DISTRESHAPE_MPIEXEC` (default `mpiexec`),
/// `DISTRESHAPE_MPIEXEC_PREFLAGS` (default `--oversubscribe` for Open MPI's
/// mpiexec, which otherwise refuses more ranks than cores, none for others) and
/// `DISTRESHAPE_MPI_TIMEOUT`.
struct Launch {
    mpiexec: String,
    preflags: Vec<String>,
    timeout: Duration,
}

impl Launch {
    fn from_env() -> Launch {
        let mpiexec = std::env::var("DISTRESHAPE_MPIEXEC").unwrap_or_else(|_| "mpiexec".into());
        let preflags = std::env::var("DISTRESHAPE_MPIEXEC_PREFLAGS")
            .unwrap_or_else(|_| default_preflags(&mpiexec).into());
        let timeout = std::env::var("DISTRESHAPE_MPI_TIMEOUT")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .map_or(Duration::from_secs(300), Duration::from_secs);
        Launch {
            mpiexec,
            preflags: preflags.split_whitespace().map(str::to_owned).collect(),
            timeout,
        }
    }

    /// The command that launches `run`.
    fn command(&self, run: &Run) -> Command {
        let exe = std::env::current_exe().expect("the path of this test binary");
        let mut cmd = Command::new(&self.mpiexec);
        cmd.args(&self.preflags)
            .arg("-n")
            .arg(run.ranks.to_string())
            .arg(exe)
            .env("DISTRESHAPE_MPI_WORKER", run.ranks.to_string())
            .env(CASES_VAR, run.cases.var_value());
        match run.direct_reads {
            Some(setting) => cmd.env(grids::DIRECT_READS_VARIABLE, setting),
            None => cmd.env_remove(grids::DIRECT_READS_VARIABLE),
        };
        cmd
    }
}

/// `--oversubscribe` when `mpiexec` is Open MPI's: its `--version` names Open
/// MPI's runtime (`OpenRTE` in 4.x, `Open MPI` or PRRTE's `prterun` later).
fn default_preflags(mpiexec: &str) -> &'static str {
    let Ok(out) = Command::new(mpiexec).arg("--version").output() else {
        return "";
    };
    let version = String::from_utf8_lossy(&out.stdout);
    match ["OpenRTE", "Open MPI", "open-mpi", "prterun"]
        .iter()
        .any(|name| version.contains(name))
    {
        true => "--oversubscribe",
        false => "",
    }
}

/// Runs `cmd` in its own process group with stdout and stderr captured in a file,
/// killing the whole group (mpiexec and its ranks) after `timeout`. Returns the
/// captured output as the error when the run could not start, timed out or failed.
fn run_with_timeout(mut cmd: Command, timeout: Duration, name: &str) -> Result<(), String> {
    let log_path =
        std::env::temp_dir().join(format!("distreshape-{}-{name}.log", std::process::id()));
    let log = File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("cannot duplicate the log file: {e}"))?;
    let mut child = cmd
        .stdout(log)
        .stderr(log_err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let start = Instant::now();
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Ok(()),
            Ok(Some(status)) => break Err(format!("{cmd:?} exited with {status}")),
            Ok(None) if start.elapsed() > timeout => {
                // SAFETY: signals the process group we created for this child only.
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                break Err(format!(
                    "{cmd:?} timed out after {timeout:?} and was killed"
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => break Err(format!("waiting for {cmd:?} failed: {e}")),
        }
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    outcome.map_err(|why| format!("{output}\n{why}"))
}

// ---------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------

/// The communicator and this process's place in it.
struct World {
    comm: SimpleCommunicator,
    rank: usize,
    size: usize,
}

impl World {
    /// Reports a failure of `case` on this rank and exits, which makes mpiexec abort
    /// the other ranks.
    fn fail(&self, case: &str, msg: impl std::fmt::Display) -> ! {
        eprintln!(
            "FAILED case {case} on rank {} of {}: {msg}",
            self.rank, self.size
        );
        std::process::exit(1)
    }

    /// Prints a progress line from rank 0.
    fn passed(&self, case: &str) {
        if self.rank == 0 {
            println!("  ok {case} (P = {})", self.size);
        }
    }
}

/// Runs the cases the launcher asked for on this rank: every case, or the grid
/// cases only, with MPI initialized at `MPI_THREAD_FUNNELED`, or only the thread
/// test at `MPI_THREAD_MULTIPLE`.
fn worker() {
    let cases_asked = Cases::from_env();
    let asked = if cases_asked == Cases::ThreadMultiple {
        Threading::Multiple
    } else {
        Threading::Funneled
    };
    let (universe, provided) =
        mpi::initialize_with_threading(asked).expect("MPI is initialized once, by this test");
    let comm = universe.world();
    let (rank, size) = (comm.rank() as usize, comm.size() as usize);
    let launched = std::env::var("DISTRESHAPE_MPI_WORKER").unwrap_or_default();
    // A test binary built against another MPI than the launcher's runs as
    // singletons, each of which would pass on its own.
    assert_eq!(
        launched,
        size.to_string(),
        "rank {rank} sees {size} ranks but was launched on {launched}: the test binary and DISTRESHAPE_MPIEXEC use different MPIs (build with MPICC naming the launcher's MPI)"
    );
    let w = World { comm, rank, size };
    if cases_asked == Cases::Grids {
        grids::run(&w, grids::Breadth::NoOneByP);
        strided::run(&w);
        batch::run(&w);
        fused::run(&w);
        return;
    }
    if cases_asked == Cases::LongRuns {
        grids::long_runs(&w);
        batch::long_runs(&w);
        fused::long_runs(&w);
        return;
    }
    plan_on_another_thread(&w, provided);
    progress_on_another_thread(&w, provided);
    if cases_asked == Cases::ThreadMultiple {
        return;
    }
    for case in cases() {
        case.run(&w);
        w.passed(case.name);
    }
    chained(&w);
    ignored_new_local_len(&w);
    empty_output_at_the_input(&w);
    moved_during_execution(&w);
    limits_on_one_rank(&w);
    completion_errors_return(&w);
    ndarray_api(&w);
    error_agreement(&w);
    grids::run(&w, grids::Breadth::EveryGrid);
    strided::run(&w);
    batch::run(&w);
    fused::run(&w);
}

// ---------------------------------------------------------------------------------
// The oracle: distributions and global indices, computed with plain loops
// ---------------------------------------------------------------------------------

/// How the rows of a split axis are spread over the ranks.
#[derive(Clone, Copy, Debug)]
enum Rows {
    /// `n/p + (r < n%p)` rows on rank `r` (Heat's formula).
    Balanced,
    /// Every row on rank 0.
    First,
    /// Every row on the last rank.
    Last,
    /// Proportional to the weights 3, 1, 0, 2, 3, ..., with the rounding left-over on
    /// the last rank: rank 2 holds no rows unless it is the last.
    Uneven,
    /// `n/(4p)` rows on every rank but the first, which holds the rest: rank 0 sends
    /// to every rank and the middle ranks pass rows on to later ones too.
    FrontHeavy,
}

impl Rows {
    /// The row count of every rank for `n` rows over `p` ranks.
    fn lens(self, n: u64, p: usize) -> Vec<u64> {
        let last = p - 1;
        match self {
            Rows::Balanced => (0..p as u64)
                .map(|r| n / p as u64 + u64::from(r < n % p as u64))
                .collect(),
            Rows::First => (0..p).map(|r| if r == 0 { n } else { 0 }).collect(),
            Rows::Last => (0..p).map(|r| if r == last { n } else { 0 }).collect(),
            Rows::Uneven => {
                let weight = |r: usize| [3u64, 1, 0, 2][r % 4];
                let total: u64 = (0..p).map(weight).sum();
                let mut lens: Vec<u64> = (0..p).map(|r| n * weight(r) / total).collect();
                lens[last] = n - lens[..last].iter().sum::<u64>();
                lens
            }
            Rows::FrontHeavy => {
                let mut lens = vec![n / (4 * p as u64); p];
                lens[0] = n - lens[1..].iter().sum::<u64>();
                lens
            }
        }
    }
}

/// One side (input or output) of a reshape: global shape, split axis, and the row
/// count of every rank along it (empty when not split).
#[derive(Clone, Debug)]
struct Side {
    shape: Vec<u64>,
    split: Option<usize>,
    lens: Vec<u64>,
    nranks: usize,
}

impl Side {
    fn new(shape: Vec<u64>, split: Option<usize>, rows: Rows, p: usize) -> Side {
        let lens = split.map_or_else(Vec::new, |axis| rows.lens(shape[axis], p));
        Side {
            shape,
            split,
            lens,
            nranks: p,
        }
    }

    fn total(&self) -> u64 {
        self.shape.iter().product()
    }

    /// `(outer, extent, inner)`: the array viewed around the split axis.
    fn dims(&self, axis: usize) -> (u64, u64, u64) {
        let outer = self.shape[..axis].iter().product();
        let inner = self.shape[axis + 1..].iter().product();
        (outer, self.shape[axis], inner)
    }

    /// Rows `(offset, len)` of `rank` along the split axis.
    fn rows(&self, rank: usize) -> (u64, u64) {
        (self.lens[..rank].iter().sum(), self.lens[rank])
    }

    /// The global flat indices `rank` holds, in C order (its local order).
    fn indices(&self, rank: usize) -> Vec<u64> {
        let (off, len) = self.split.map_or((0, 0), |_| self.rows(rank));
        slab_indices(&self.shape, self.split, off, len)
    }

    /// The shape of `rank`'s local part.
    fn local_shape(&self, rank: usize) -> Vec<u64> {
        let mut shape = self.shape.clone();
        if let Some(axis) = self.split {
            shape[axis] = self.lens[rank];
        }
        shape
    }

    /// True when `rank` holds global index `g`.
    fn holds(&self, rank: usize, g: u64) -> bool {
        let Some(axis) = self.split else { return true };
        let (_, extent, inner) = self.dims(axis);
        let row = g / inner % extent;
        let (off, len) = self.rows(rank);
        (off..off + len).contains(&row)
    }

    /// The number of ranks other than `rank` that hold global index `g`.
    fn other_holders(&self, rank: usize, g: u64) -> u64 {
        (0..self.nranks)
            .filter(|&r| r != rank && self.holds(r, g))
            .count() as u64
    }
}

/// The resolved NumPy-style shape (one `-1` inferred) for `total` elements.
fn resolve(new_shape: &[i64], total: u64) -> Vec<u64> {
    let known: u64 = new_shape
        .iter()
        .filter(|&&n| n >= 0)
        .map(|&n| n as u64)
        .product();
    new_shape
        .iter()
        .map(|&n| if n < 0 { total / known } else { n as u64 })
        .collect()
}

/// What one rank's plan must report, derived from the two sides.
struct ExpectedStats {
    /// The split axis survives: both sides split, the same product of extents before
    /// the split axes, and every input slab a whole number of output rows.
    local: bool,
    /// Every input slab is exactly its rank's output slab (so nothing may move).
    aligned: bool,
    /// Elements this rank sends: each element it holds, once per other rank that
    /// holds it on output (nothing when every rank holds the whole input).
    sent: u64,
    /// Elements of this rank's output it does not hold on input.
    received: u64,
    /// Elements of this rank's output it holds on input.
    copied: u64,
}

impl ExpectedStats {
    fn new(inp: &Side, out: &Side, rank: usize) -> ExpectedStats {
        let local = split_survives(&inp.shape, inp.split, &inp.lens, &out.shape, out.split);
        let aligned = match (inp.split, out.split) {
            (Some(s), Some(t)) => {
                let ((_, _, in_inner), (_, _, out_inner)) = (inp.dims(s), out.dims(t));
                let same = inp
                    .lens
                    .iter()
                    .zip(&out.lens)
                    .all(|(a, b)| a * in_inner == b * out_inner);
                local && same
            }
            _ => false,
        };
        let out_indices = out.indices(rank);
        let copied = out_indices.iter().filter(|&&g| inp.holds(rank, g)).count() as u64;
        let (sent, received) = match inp.split {
            None => (0, 0),
            Some(_) => (
                inp.indices(rank)
                    .iter()
                    .map(|&g| out.other_holders(rank, g))
                    .sum(),
                out_indices.len() as u64 - copied,
            ),
        };
        ExpectedStats {
            local,
            aligned,
            sent,
            received,
            copied,
        }
    }
}

// ---------------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------------

/// Element types the cases run with.
#[derive(Clone, Copy, Debug)]
enum Ty {
    Bool,
    U8,
    U16,
    U32,
    F32,
    U64,
    F64,
    C64,
}

/// An element type whose value encodes a global flat index.
trait Value: Element + PartialEq + Debug + Default {
    /// The value stored at global flat index `g` (wrapping for narrow types, so `u8`
    /// compares indices modulo 256 and `u16` modulo 65536).
    fn at(g: u64) -> Self;
}

impl Value for bool {
    fn at(g: u64) -> bool {
        g % 2 == 1
    }
}
/// Numeric values are the index itself, cast (wrapping for the narrow types).
macro_rules! value_by_cast {
    ($($t:ty),*) => { $(
        impl Value for $t {
            fn at(g: u64) -> $t {
                g as $t
            }
        }
    )* };
}
value_by_cast!(u8, u16, u32, f32, u64, f64);
impl Value for Complex<f64> {
    fn at(g: u64) -> Complex<f64> {
        Complex::new(g as f64, -(g as f64))
    }
}

/// The values of the given global indices.
fn fill<T: Value>(indices: &[u64]) -> Vec<T> {
    indices.iter().map(|&g| T::at(g)).collect()
}

/// Checks that `got` holds exactly the values of the global indices `want`.
fn check_values<T: Value>(w: &World, case: &str, how: &str, got: &[T], want: &[u64]) {
    if got.len() != want.len() {
        w.fail(
            case,
            format!(
                "{how}: {} output elements, expected {}",
                got.len(),
                want.len()
            ),
        );
    }
    if let Some(i) = (0..want.len()).find(|&i| got[i] != T::at(want[i])) {
        w.fail(
            case,
            format!(
                "{how}: output position {i} holds {:?}, expected {:?} (global index {})",
                got[i],
                T::at(want[i]),
                want[i]
            ),
        );
    }
}

// ---------------------------------------------------------------------------------
// Reshape cases
// ---------------------------------------------------------------------------------

/// One reshape, run on every rank count.
#[derive(Clone, Debug)]
struct Case {
    name: &'static str,
    ty: Ty,
    gshape: &'static [u64],
    split: Option<usize>,
    /// Input rows per rank along `split`.
    input: Rows,
    new_shape: &'static [i64],
    new_split: Option<usize>,
    /// `None`: the library's balanced default; `Some`: explicit `with_target_len`.
    target: Option<Rows>,
    /// Lowered message limits (through [`Plan::create`]); `None` for the defaults.
    limits: Option<PlanOptions>,
}

/// A balanced-to-balanced case with the default limits.
fn case(
    name: &'static str,
    ty: Ty,
    gshape: &'static [u64],
    split: Option<usize>,
    new_shape: &'static [i64],
    new_split: Option<usize>,
) -> Case {
    Case {
        name,
        ty,
        gshape,
        split,
        input: Rows::Balanced,
        new_shape,
        new_split,
        target: None,
        limits: None,
    }
}

impl Case {
    fn input(self, input: Rows) -> Case {
        Case { input, ..self }
    }

    fn target(self, target: Rows) -> Case {
        Case {
            target: Some(target),
            ..self
        }
    }

    /// Small message limits and one pairwise distance per window, so that small
    /// arrays exercise chunked messages, several rounds and several windows.
    fn limits(self, max_message_bytes: usize, run_budget: usize) -> Case {
        Case {
            limits: Some(PlanOptions {
                max_message_bytes,
                run_budget,
                window: 1,
                ..PlanOptions::default()
            }),
            ..self
        }
    }

    /// A staging budget of `bytes` for in place on the exchange path: small arrays
    /// then move in many rounds of tiny pieces, breaking cycles with tiny staging.
    fn in_place_budget(self, bytes: usize) -> Case {
        Case {
            limits: Some(PlanOptions {
                in_place_budget: Some(bytes),
                ..self.limits.unwrap_or_default()
            }),
            ..self
        }
    }

    /// The input and output sides over `p` ranks.
    fn sides(&self, p: usize) -> (Side, Side) {
        let inp = Side::new(self.gshape.to_vec(), self.split, self.input, p);
        let total = inp.total();
        let out = Side::new(
            resolve(self.new_shape, total),
            self.new_split,
            self.target.unwrap_or(Rows::Balanced),
            p,
        );
        (inp, out)
    }

    /// Fills this rank's input with its global indices and checks the reshape.
    fn run(&self, w: &World) {
        match self.ty {
            Ty::Bool => self.run_typed::<bool>(w),
            Ty::U8 => self.run_typed::<u8>(w),
            Ty::U16 => self.run_typed::<u16>(w),
            Ty::U32 => self.run_typed::<u32>(w),
            Ty::F32 => self.run_typed::<f32>(w),
            Ty::U64 => self.run_typed::<u64>(w),
            Ty::F64 => self.run_typed::<f64>(w),
            Ty::C64 => self.run_typed::<Complex<f64>>(w),
        }
    }

    fn run_typed<T: Value>(&self, w: &World) {
        let (inp, out) = self.sides(w.size);
        self.check::<T>(w, &inp, &out, &fill(&inp.indices(w.rank)));
    }

    /// This rank's arguments.
    fn args<T: Value>(&self, w: &World, inp: &Side, out: &Side) -> ReshapeArgs {
        let local_len = inp.split.map_or(0, |_| inp.lens[w.rank]) as i64;
        let gshape: Vec<i64> = self.gshape.iter().map(|&n| n as i64).collect();
        let args = ReshapeArgs::new(
            size_of::<T>(),
            &gshape,
            self.split,
            local_len,
            self.new_shape,
            self.new_split,
        )
        .with_element::<T>();
        match (self.target, out.split) {
            (Some(_), Some(_)) => args.with_target_len(out.lens[w.rank] as i64),
            _ => args,
        }
    }

    /// Plans the reshape of `input` (this rank's part of `inp`) into `out`, checks the
    /// plan, then checks the output of `Plan::execute`, `Plan::execute_in_place` and
    /// (with the default limits) `reshape`. Returns this rank's output.
    fn check<T: Value>(&self, w: &World, inp: &Side, out: &Side, input: &[T]) -> Vec<T> {
        let args = self.args::<T>(w, inp, out);
        let planned = match self.limits {
            None => Plan::new(&w.comm, &args),
            Some(options) => Plan::create(w.comm.as_raw(), Ok(args.clone()), options),
        };
        let plan = planned.unwrap_or_else(|e| w.fail(self.name, format!("planning failed: {e}")));
        self.check_plan::<T>(w, &plan, inp, out);
        let want = out.indices(w.rank);

        let mut output = vec![T::default(); plan.output_elems()];
        let (result, usage) = measure(|| plan.execute(input, &mut output));
        let allocated = usage.calls;
        if let Err(e) = result {
            w.fail(self.name, format!("execute failed: {e}"));
        }
        if allocated > 0 {
            w.fail(self.name, format!("execute made {allocated} allocations"));
        }
        check_values(w, self.name, "execute", &output, &want);

        let mut buffer = input.to_vec();
        buffer.resize(input.len().max(want.len()), T::default());
        if let Err(e) = plan.execute_in_place(&mut buffer) {
            w.fail(self.name, format!("execute_in_place failed: {e}"));
        }
        check_values(
            w,
            self.name,
            "execute_in_place",
            &buffer[..want.len()],
            &want,
        );
        let budgeted = self.limits.and_then(|l| l.in_place_budget).is_some();
        let scheduled =
            plan.path() == Route::Exchange && plan.is_collective() && self.split.is_some();
        let in_rounds = plan.to_string().contains("; in place in ");
        if budgeted && scheduled && !in_rounds {
            w.fail(
                self.name,
                format!("in place did not take bounded rounds: {plan}"),
            );
        }
        if in_rounds {
            // The schedule and its staging are kept: a repeated execution in
            // place allocates nothing.
            let mut again = input.to_vec();
            again.resize(buffer.len(), T::default());
            let (result, usage) = measure(|| plan.execute_in_place(&mut again));
            if result.is_err() || usage.calls > 0 {
                let calls = usage.calls;
                w.fail(
                    self.name,
                    format!("repeated execute_in_place: {result:?}, {calls} allocations"),
                );
            }
            check_values(
                w,
                self.name,
                "repeated execute_in_place",
                &again[..want.len()],
                &want,
            );
        }

        // In place is each rank's own choice: here odd ranks take it, even ranks not.
        let mut mixed = input.to_vec();
        mixed.resize(input.len().max(want.len()), T::default());
        let result = if w.rank % 2 == 1 {
            plan.execute_in_place(&mut mixed)
        } else {
            plan.execute(input, &mut mixed[..want.len()])
        };
        if let Err(e) = result {
            w.fail(self.name, format!("mixed in-place execute failed: {e}"));
        }
        check_values(w, self.name, "mixed in place", &mixed[..want.len()], &want);

        let mut overlapped = vec![T::default(); want.len()];
        let tests = plan.execute_overlapped(input, &mut overlapped, |execution| {
            let mut tests = 0;
            while !execution.test().unwrap_or(true) {
                tests += 1;
            }
            tests
        });
        match tests {
            Ok(_) => check_values(w, self.name, "overlapped", &overlapped, &want),
            Err(e) => w.fail(self.name, format!("overlapped execute failed: {e}")),
        }
        // A closure that unwinds: the execution still completes before the
        // buffers are released.
        overlapped.fill(T::default());
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            plan.execute_overlapped(input, &mut overlapped, |_| -> () {
                std::panic::resume_unwind(Box::new(()))
            })
        }));
        if unwound.is_ok() {
            w.fail(self.name, "the unwinding closure returned");
        }
        check_values(w, self.name, "overlapped, unwound", &overlapped, &want);

        if self.limits.is_none() {
            let got = reshape(&w.comm, &args, input)
                .unwrap_or_else(|e| w.fail(self.name, format!("reshape failed: {e}")));
            check_values(w, self.name, "reshape", &got, &want);
        }
        output
    }

    /// Checks the plan's shapes, sizes, path and volumes against the oracle.
    fn check_plan<T: Value>(&self, w: &World, plan: &Plan, inp: &Side, out: &Side) {
        let fail = |what: &str, got: &dyn Debug, want: &dyn Debug| {
            w.fail(
                self.name,
                format!("{what} is {got:?}, expected {want:?}; plan: {plan}"),
            )
        };
        let size = size_of::<T>() as u64;
        let local_elems = |side: &Side| side.local_shape(w.rank).iter().product::<u64>() as usize;
        let output_rows = out.split.map(|_| out.lens[w.rank]);
        if plan.new_shape() != out.shape {
            fail("new_shape", &plan.new_shape(), &out.shape);
        }
        if plan.input_elems() != local_elems(inp) {
            fail("input_elems", &plan.input_elems(), &local_elems(inp));
        }
        if plan.output_elems() != local_elems(out) {
            fail("output_elems", &plan.output_elems(), &local_elems(out));
        }
        if plan.output_rows() != output_rows {
            fail("output_rows", &plan.output_rows(), &output_rows);
        }
        let slab = |side: &Side| {
            let offset = || side.lens[..w.rank].iter().sum::<u64>();
            side.split.map(|_| distreshape::Slab {
                offset: offset(),
                len: side.lens[w.rank],
            })
        };
        for (what, got, side) in [
            ("input_slab", plan.input_slab(), inp),
            ("output_slab", plan.output_slab(), out),
        ] {
            if got != slab(side) {
                fail(what, &got, &slab(side));
            }
        }
        let shapes = [plan.local_input_shape(), plan.local_output_shape()];
        if shapes != [inp.local_shape(w.rank), out.local_shape(w.rank)] {
            fail(
                "local shapes",
                &shapes,
                &[inp.local_shape(w.rank), out.local_shape(w.rank)],
            );
        }
        if plan.elem_size() != size as usize {
            fail("elem_size", &plan.elem_size(), &size);
        }
        let stats = plan.stats();
        let want = ExpectedStats::new(inp, out, w.rank);
        let path = if want.local {
            Route::Local
        } else {
            Route::Exchange
        };
        if stats.path != path || plan.path() != path {
            fail("path", &(stats.path, plan.path()), &path);
        }
        if stats.bytes_sent != want.sent * size {
            fail("bytes_sent", &stats.bytes_sent, &(want.sent * size));
        }
        if stats.bytes_received != want.received * size {
            fail(
                "bytes_received",
                &stats.bytes_received,
                &(want.received * size),
            );
        }
        if stats.bytes_copied_locally != want.copied * size {
            fail(
                "bytes_copied_locally",
                &stats.bytes_copied_locally,
                &(want.copied * size),
            );
        }
        if want.aligned && (stats.bytes_sent, stats.bytes_received) != (0, 0) {
            fail(
                "traffic of an aligned local reshape",
                &(stats.bytes_sent, stats.bytes_received),
                &(0, 0),
            );
        }
        if let Some(limits) = self.limits {
            self.check_chunked(w, plan, limits);
        }
    }

    /// With lowered limits on the exchange path, some pair of ranks must exchange
    /// more than one message's worth of bytes, so the cutter must split it.
    fn check_chunked(&self, w: &World, plan: &Plan, limits: PlanOptions) {
        let size = plan.elem_size() as u64;
        let largest = plan
            .rank_plan()
            .sends
            .iter()
            .map(|t| t.elems * size)
            .max()
            .unwrap_or(0);
        let mut all = vec![0u64; w.size];
        w.comm.all_gather_into(&largest, &mut all[..]);
        let most = all.iter().copied().max().unwrap_or(0);
        let lowered = limits.max_message_bytes < PlanOptions::default().max_message_bytes;
        if lowered
            && plan.path() == Route::Exchange
            && w.size > 1
            && most <= limits.max_message_bytes as u64
        {
            w.fail(
                self.name,
                format!("the largest transfer has {most} bytes, which fits in one message"),
            );
        }
    }
}

/// The table of reshapes.
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    use Rows::{First, FrontHeavy, Last, Uneven};
    use Ty::*;
    vec![
        // Heat's reshape tests.
        case("heat_345_s1_to_453_s1", F64, &[3, 4, 5], Some(1), &[4, 5, 3], Some(1)),
        case("heat_648_s2_to_4124_s2", F64, &[6, 4, 8], Some(2), &[4, 12, 4], Some(2)),
        case("heat_345_s2_to_453_s1", F64, &[3, 4, 5], Some(2), &[4, 5, 3], Some(1)),
        case("heat_345_s1_to_203_s0", F64, &[3, 4, 5], Some(1), &[20, 3], Some(0)),
        case("heat_345_s0_to_415_s1", F64, &[3, 4, 5], Some(0), &[4, 15], Some(1)),
        case("heat_444_to_flat_s0", F64, &[4, 4, 4], Some(0), &[-1], Some(0)),
        case("heat_444_to_4x_s0", F64, &[4, 4, 4], Some(0), &[4, -1], Some(0)),
        case("heat_444_to_4x_s1", F64, &[4, 4, 4], Some(0), &[4, -1], Some(1)),
        case("heat_444_to_2x8_s0", F64, &[4, 4, 4], Some(0), &[2, -1, 8], Some(0)),
        case("heat_444_to_2x8_s1", F64, &[4, 4, 4], Some(0), &[2, -1, 8], Some(1)),
        case("heat_444_to_2x8_s2", F64, &[4, 4, 4], Some(0), &[2, -1, 8], Some(2)),
        case("heat_444_to_x242_s0", F64, &[4, 4, 4], Some(0), &[-1, 2, 4, 2], Some(0)),
        case("heat_444_to_x242_s1", F64, &[4, 4, 4], Some(0), &[-1, 2, 4, 2], Some(1)),
        case("heat_444_to_x242_s2", F64, &[4, 4, 4], Some(0), &[-1, 2, 4, 2], Some(2)),
        case("heat_444_to_x242_s3", F64, &[4, 4, 4], Some(0), &[-1, 2, 4, 2], Some(3)),
        case("heat_444_to_x242_none", F64, &[4, 4, 4], Some(0), &[-1, 2, 4, 2], None),
        case("bool_4_to_22_s0", Bool, &[4], Some(0), &[2, 2], Some(0)),
        case("bool_4_to_22_s1", Bool, &[4], Some(0), &[2, 2], Some(1)),
        // The split axis survives (local path); balanced inputs move nothing when aligned.
        case("seed_10x10000x10_s1", F64, &[10, 10_000, 10], Some(1), &[10, -1], Some(1)),
        case("seed_uneven", F64, &[10, 1000, 10], Some(1), &[10, -1], Some(1)).input(Uneven),
        case("seed_all_on_rank0", U32, &[10, 100, 10], Some(1), &[10, -1], Some(1)).input(First),
        case("local_all_on_rank0_halved_inner", U64, &[4, 6, 4], Some(1), &[4, 12, 2], Some(1)).input(First),
        case("local_or_exchange_uneven", U64, &[4, 6, 4], Some(1), &[4, 8, 3], Some(1)).input(Uneven),
        // The general exchange from unbalanced inputs.
        case("exchange_uneven", U64, &[6, 5], Some(0), &[5, 6], Some(1)).input(Uneven),
        case("exchange_all_on_last", U64, &[6, 5], Some(0), &[3, 10], Some(0)).input(Last),
        // Empty arrays, size-1 axes, more ranks than rows, 0-d arrays.
        case("empty_05_s0_to_50_s1", F64, &[0, 5], Some(0), &[5, 0], Some(1)),
        case("empty_05_s0_to_flat", F64, &[0, 5], Some(0), &[-1], Some(0)),
        case("empty_302_s0_to_06_s1", F64, &[3, 0, 2], Some(0), &[0, 6], Some(1)),
        case("empty_302_s1_to_06_s0", F64, &[3, 0, 2], Some(1), &[0, 6], Some(0)),
        case("empty_inner_340_s1_to_3220_s1", F64, &[3, 4, 0], Some(1), &[3, 2, 2, 0], Some(1)).input(Uneven),
        case("size1_171_s1_to_7_s0", U32, &[1, 7, 1], Some(1), &[7], Some(0)),
        case("size1_7_s0_to_171_s1", U32, &[7], Some(0), &[1, 7, 1], Some(1)),
        case("few_rows_23_s0_to_32_s0", U32, &[2, 3], Some(0), &[3, 2], Some(0)),
        case("zero_d_from_1", F64, &[1], Some(0), &[], None),
        case("zero_d_to_1", F64, &[], None, &[1], Some(0)),
        // Replicated input and/or output.
        case("replicated_in_46_to_64_s0", F32, &[4, 6], None, &[6, 4], Some(0)),
        case("replicated_in_46_to_38_s1", F32, &[4, 6], None, &[3, 8], Some(1)),
        case("replicated_out_46_s0_to_212", F32, &[4, 6], Some(0), &[2, 12], None),
        case("replicated_out_uneven_46_s1_to_flat", F32, &[4, 6], Some(1), &[24], None).input(Uneven),
        case("replicated_both_46_to_83", F32, &[4, 6], None, &[8, 3], None),
        // Explicit target lengths (uneven, with zeros).
        case("target_uneven_345_s1_to_203_s0", F64, &[3, 4, 5], Some(1), &[20, 3], Some(0)).target(Uneven),
        case("target_last_444_s0_to_416_s0", F64, &[4, 4, 4], Some(0), &[4, 16], Some(0)).target(Last),
        case("target_redistribute_64_s0", U64, &[6, 4], Some(0), &[6, 4], Some(0)).input(First).target(Uneven),
        // Element sizes 1, 2, 4, 8 and 16 bytes.
        case("u8_2030_s0_to_flat", U8, &[20, 30], Some(0), &[600], Some(0)).input(Uneven),
        case("u16_300x300_s1_to_900x100_s0", U16, &[300, 300], Some(1), &[900, 100], Some(0)),
        case("u32_648_s2_to_4124_s1", U32, &[6, 4, 8], Some(2), &[4, 12, 4], Some(1)),
        case("complex_648_s2_to_4124_s2", C64, &[6, 4, 8], Some(2), &[4, 12, 4], Some(2)),
        case("complex_345_s0_to_415_s1", C64, &[3, 4, 5], Some(0), &[4, 15], Some(1)).input(Uneven),
        // Chunked messages: tiny limits force many messages and many rounds.
        case("chunked_exchange_complex", C64, &[6, 10, 7], Some(1), &[7, 60], Some(0)).input(Uneven).limits(64, 8),
        case("chunked_exchange_u64", U64, &[40, 30], Some(0), &[30, 40], Some(1)).limits(64, 8),
        case("chunked_local_from_rank0", U64, &[8, 9, 4], Some(1), &[8, 36], Some(1)).input(First).limits(64, 8),
        case("chunked_local_front_heavy_u8", U8, &[6, 60, 2], Some(1), &[6, 120], Some(1)).input(FrontHeavy).limits(64, 8),
        // Several rounds of rendezvous-size packed messages along flows 0->1, 0->2,
        // 1->2: deadlocked in place when rounds were completed in lockstep.
        case("rendezvous_rounds_front_heavy_u8", U8, &[262_144, 30, 1], Some(1), &[262_144, 30], Some(1)).input(FrontHeavy).limits(128 << 10, 1 << 18),
        case("chunked_odd_limit_u16", U16, &[30, 7], Some(0), &[7, 30], Some(1)).input(Uneven).limits(7, 3),
        case("chunked_replicated_out", U32, &[20, 30], Some(1), &[600], None).limits(64, 8),
        // In place within tiny staging budgets: many rounds, cycles broken.
        case("budget_split_change_f64", F64, &[12, 10, 3], Some(0), &[12, 30], Some(1)).in_place_budget(8),
        case("budget_flatten_u16", U16, &[9, 14, 2], Some(1), &[252], Some(0)).input(Uneven).in_place_budget(6),
        case("budget_transpose_c64", C64, &[7, 11], Some(0), &[11, 7], Some(1)).target(Uneven).in_place_budget(48),
        case("budget_replicated_out_u8", U8, &[6, 10], Some(0), &[60], None).in_place_budget(3),
    ]
}

// ---------------------------------------------------------------------------------
// Special cases: chained reshapes, the ndarray API, error agreement
// ---------------------------------------------------------------------------------

/// arange(16) -> (4, 4) -> (2, 8), all split along axis 0: the output of the first
/// reshape is the input of the second.
fn chained(w: &World) {
    let first = case(
        "chained_16_to_44",
        Ty::U64,
        &[16],
        Some(0),
        &[4, 4],
        Some(0),
    );
    let second = case(
        "chained_44_to_28",
        Ty::U64,
        &[4, 4],
        Some(0),
        &[2, 8],
        Some(0),
    );
    let (inp, mid) = first.sides(w.size);
    let halfway = first.check::<u64>(w, &inp, &mid, &fill(&inp.indices(w.rank)));
    let (mid, out) = second.sides(w.size);
    second.check::<u64>(w, &mid, &out, &halfway);
    w.passed("chained_16_to_44_to_28");
}

/// With the output not split, `new_local_len` is ignored: ranks passing different
/// values (none, negative, huge) plan and reshape as if they passed -1.
fn ignored_new_local_len(w: &World) {
    let name = "ignored_new_local_len";
    let p = w.size as u64;
    let distreshape::Slab { offset: off, len } = distreshape::balanced_slab(4, p, w.rank as u64);
    let input: Vec<u64> = (off * 6..(off + len) * 6).collect();
    let args = ReshapeArgs::new(8, &[4, 6], Some(0), len as i64, &[24], None);
    // Even ranks leave it balanced (-1 in C), odd ranks pass different values.
    let args = match w.rank % 4 {
        1 => args.with_target_len(-7),
        3 => args.with_target_len(i64::MAX),
        _ => args,
    };
    let got = reshape(&w.comm, &args, &input)
        .unwrap_or_else(|e| w.fail(name, format!("reshape failed: {e}")));
    check_values(w, name, "reshape", &got, &(0..24).collect::<Vec<u64>>());
    w.passed(name);
}

/// An empty output slice that starts where the input does (split off the
/// input's front, as safe Rust allows) is an output, not in place: the ranks
/// whose output is empty pass one, rank 0 receives every element.
fn empty_output_at_the_input(w: &World) {
    let name = "empty_output_at_the_input";
    let distreshape::Slab { offset, len } =
        distreshape::balanced_slab(4, w.size as u64, w.rank as u64);
    let target = if w.rank == 0 { 24 } else { 0 };
    let args =
        ReshapeArgs::new(8, &[4, 6], Some(0), len as i64, &[24], Some(0)).with_target_len(target);
    let plan =
        Plan::new(&w.comm, &args).unwrap_or_else(|e| w.fail(name, format!("planning failed: {e}")));
    let mut buffer: Vec<u64> = (offset * 6..(offset + len) * 6).collect();
    let mut received = vec![u64::MAX; 24];
    let executed = if w.rank == 0 {
        plan.execute(&buffer, &mut received)
    } else {
        let (empty, input) = buffer.split_at_mut(0);
        plan.execute(input, empty)
    };
    executed.unwrap_or_else(|e| w.fail(name, format!("execute failed: {e}")));
    if w.rank == 0 {
        check_values(
            w,
            name,
            "execute",
            &received,
            &(0..24).collect::<Vec<u64>>(),
        );
    }
    let unchanged = buffer.iter().copied().eq(offset * 6..(offset + len) * 6);
    if !unchanged {
        w.fail(name, "the input changed");
    }
    w.passed(name);
}

/// A plan moved while its execution, begun on raw buffers, is in flight, and
/// another plan made in its place: the waits of each execution carry the other
/// on, with ranks waiting for the two in opposite orders.
fn moved_during_execution(w: &World) {
    let name = "moved_during_execution";
    let case = Transpose::new(w, 3001, 16);
    let mut slot = case.plan(w, name, Transpose::many_rounds());
    let mut outputs = [case.output(), case.output()];
    let [first_out, second_out] = &mut outputs;
    case.begin(w, name, &slot, first_out);
    let moved = Box::new(std::mem::replace(
        &mut slot,
        case.plan(w, name, Transpose::many_rounds()),
    ));
    case.begin(w, name, &slot, second_out);
    let order = match w.rank % 2 {
        0 => [&*moved, &slot],
        _ => [&slot, &*moved],
    };
    for plan in order {
        if let Err(e) = plan.progress(true) {
            w.fail(name, format!("wait failed: {e}"));
        }
    }
    for output in &outputs {
        case.check(w, name, "moved", output);
    }
    w.passed(name);
}

/// An MPI error found when one of a plan's messages completes comes back as
/// an error from each of the transport's completion calls, blocking or not,
/// and `MPI_COMM_WORLD` keeps its fatal handler: MPICH 4.0 hands such errors
/// to that handler whatever the request's communicator's, so the plan's calls
/// swap it for their duration. The error is a receive too short for its
/// message (`MPI_ERR_TRUNCATE`), from rank 1 to rank 0.
fn completion_errors_return(w: &World) {
    let name = "completion_errors_return";
    if w.size < 2 {
        return;
    }
    let comm = Comm::for_plan(w.comm.as_raw(), false).expect("the plan's communicator");
    let tag = comm.tag(0);
    for (some, blocking) in [(false, true), (false, false), (true, true), (true, false)] {
        let mut request = [<Comm as Transport>::null_request()];
        // The message's bytes: 16 sent, room for 8 received.
        let mut bytes = [7u8; 16];
        let (side, peer, len) = match w.rank {
            0 => (MessageSide::Receive, 1, 8),
            _ => (MessageSide::Send, 0, 16),
        };
        let start = |request: &mut [_; 1], bytes: &mut [u8; 16]| {
            let envelope = Envelope { side, peer, tag };
            // SAFETY: `bytes` outlives the message, completed (or failed)
            // before this iteration ends.
            unsafe {
                comm.start(
                    envelope,
                    Bytes::contiguous(bytes.as_mut_ptr(), len),
                    &mut request[0],
                )
            }
            .expect("the message starts");
        };
        if w.rank == 1 {
            start(&mut request, &mut bytes);
            comm.complete_all(&mut request, true)
                .expect("the send completes");
        }
        w.comm.barrier();
        if w.rank == 0 {
            start(&mut request, &mut bytes);
            let mut indices = [0];
            let failure = loop {
                let completed = match some {
                    true => comm
                        .complete_some(&mut request, &mut indices, blocking)
                        .map(|n| n > 0),
                    false => comm.complete_all(&mut request, blocking),
                };
                match completed {
                    Ok(false) if !blocking => continue,
                    Ok(_) => w.fail(name, "a truncated receive completed without an error"),
                    Err(e) => break e.to_string(),
                }
            };
            let reason = failure.to_lowercase();
            if !reason.contains("truncat") && !reason.contains("status") {
                w.fail(name, format!("not the truncation: {failure}"));
            }
            if bytes[8..].iter().any(|&b| b != 7) {
                w.fail(name, "the truncated receive wrote past its 8 bytes");
            }
            comm.cancel_all(&mut request);
        }
        w.comm.barrier();
    }
    if !world_handler_is_fatal() {
        w.fail(
            name,
            "MPI_COMM_WORLD's handler is no longer MPI_ERRORS_ARE_FATAL",
        );
    }
    w.passed(name);
}

/// Whether `MPI_COMM_WORLD`'s error handler is `MPI_ERRORS_ARE_FATAL`.
fn world_handler_is_fatal() -> bool {
    use mpi::ffi;
    // SAFETY: an uninitialized handle that MPI_Comm_get_errhandler sets, then
    // freed; reading MPI constant handles.
    unsafe {
        let mut handler = std::mem::zeroed();
        ffi::MPI_Comm_get_errhandler(ffi::RSMPI_COMM_WORLD, &mut handler);
        let fatal = handler == ffi::RSMPI_ERRORS_ARE_FATAL;
        ffi::MPI_Errhandler_free(&mut handler);
        fatal
    }
}

/// Message limits set on the last rank only (the others keep the defaults):
/// the ranks agree on the smallest, so that both ends of every message cut it
/// alike.
fn limits_on_one_rank(w: &World) {
    let name = "limits_on_one_rank";
    let case = Transpose::new(w, 3001, 16);
    let last = w.rank + 1 == w.size;
    let small = [
        PlanOptions {
            max_message_bytes: 100,
            ..PlanOptions::default()
        },
        PlanOptions {
            run_budget: 4,
            ..PlanOptions::default()
        },
        PlanOptions {
            slot_bytes: 1,
            ..PlanOptions::default()
        },
    ];
    for options in small {
        let options = if last {
            options
        } else {
            PlanOptions::default()
        };
        let plan = case.plan(w, name, options);
        let mut output = case.output();
        let input = &case.input[..];
        if let Err(e) = plan.execute(input, &mut output) {
            w.fail(name, format!("execute failed: {e}"));
        }
        case.check(w, name, "limits on one rank", &output);
    }
    w.passed(name);
}

/// (rows, cols) split 0 -> (cols, rows) split 1, balanced: this rank's
/// arguments, its input (global indices from `first`) and the output it
/// should give.
struct Transpose {
    args: ReshapeArgs,
    first: u64,
    input: Vec<u64>,
    want: Vec<u64>,
}

impl Transpose {
    /// 64-byte messages, one peer per window, no direct reads: an execution
    /// takes many rounds, each posted only when this rank moves it on.
    fn many_rounds() -> PlanOptions {
        PlanOptions {
            max_message_bytes: 64,
            window: 1,
            direct_reads: Some(false),
            ..PlanOptions::default()
        }
    }

    fn new(w: &World, rows: u64, cols: u64) -> Transpose {
        let (p, r) = (w.size as u64, w.rank as u64);
        let distreshape::Slab { offset, len } = distreshape::balanced_slab(rows, p, r);
        let args = ReshapeArgs::new(
            8,
            &[rows as i64, cols as i64],
            Some(0),
            len as i64,
            &[cols as i64, rows as i64],
            Some(1),
        );
        let want = (0..cols)
            .flat_map(|row| (offset..offset + len).map(move |c| row * rows + c))
            .collect();
        Transpose {
            args,
            first: offset * cols,
            input: (offset * cols..(offset + len) * cols).collect(),
            want,
        }
    }

    /// Checks every element of `output` and that the input is unchanged.
    fn check(&self, w: &World, name: &str, how: &str, output: &[u64]) {
        check_values(w, name, how, output, &self.want);
        let end = self.first + self.input.len() as u64;
        if !self.input.iter().copied().eq(self.first..end) {
            w.fail(name, format!("{how}: the input changed"));
        }
    }

    /// The plan with `options`.
    fn plan(&self, w: &World, name: &str, options: PlanOptions) -> Plan {
        Plan::create(w.comm.as_raw(), Ok(self.args.clone()), options)
            .unwrap_or_else(|e| w.fail(name, format!("planning failed: {e}")))
    }

    /// An output of the right length, every element `u64::MAX`.
    fn output(&self) -> Vec<u64> {
        vec![u64::MAX; self.want.len()]
    }

    /// Begins an execution of `plan` into `output`, which must stay until it
    /// completes.
    fn begin(&self, w: &World, name: &str, plan: &Plan, output: &mut [u64]) {
        // SAFETY: the input and the output are distinct, and the caller keeps
        // the output until the execution completes.
        let begun = unsafe {
            plan.begin_raw(
                self.input.as_ptr().cast(),
                size_of_val(&self.input[..]),
                output.as_mut_ptr().cast(),
                size_of_val(output),
            )
        };
        begun.unwrap_or_else(|e| w.fail(name, format!("begin failed: {e}")));
    }
}

/// `reshape_array` from a split Fortran-ordered local array and from a replicated one.
fn ndarray_api(w: &World) {
    ndarray_case(
        w,
        "ndarray_654_s1_fortran_to_5x_s1",
        &[6, 5, 4],
        Some(1),
        &[5, -1],
        Some(1),
    );
    ndarray_case(
        w,
        "ndarray_46_replicated_to_3x_s0",
        &[4, 6],
        None,
        &[3, -1],
        Some(0),
    );
}

/// Reshapes with `reshape_array`, the input rows spread [`Rows::Uneven`] and the local
/// array stored in Fortran order, and checks the local output shape and values.
fn ndarray_case(
    w: &World,
    name: &str,
    gshape: &[u64],
    split: Option<usize>,
    new_shape: &[isize],
    new_split: Option<usize>,
) {
    let inp = Side::new(gshape.to_vec(), split, Rows::Uneven, w.size);
    let wide: Vec<i64> = new_shape.iter().map(|&n| n as i64).collect();
    let out = Side::new(
        resolve(&wide, inp.total()),
        new_split,
        Rows::Balanced,
        w.size,
    );
    let usizes = |s: &[u64]| s.iter().map(|&n| n as usize).collect::<Vec<_>>();
    let local_shape = usizes(&inp.local_shape(w.rank));
    let c_order = ArrayD::from_shape_vec(IxDyn(&local_shape), fill::<f64>(&inp.indices(w.rank)))
        .unwrap_or_else(|e| w.fail(name, e));
    let mut local = ArrayD::zeros(IxDyn(&local_shape).f());
    local.assign(&c_order);
    let got = reshape_array(
        &w.comm,
        local.view(),
        &usizes(gshape),
        split,
        new_shape,
        new_split,
    )
    .unwrap_or_else(|e| w.fail(name, format!("reshape_array failed: {e}")));
    let want_shape = usizes(&out.local_shape(w.rank));
    if got.shape() != want_shape {
        w.fail(
            name,
            format!(
                "local output shape {:?}, expected {want_shape:?}",
                got.shape()
            ),
        );
    }
    let values = got
        .as_slice()
        .unwrap_or_else(|| w.fail(name, "the output is not in C order"));
    check_values(w, name, "reshape_array", values, &out.indices(w.rank));
    w.passed(name);
}

/// An argument that is wrong on the last rank only: every rank must return the same
/// error code, and the communicator must stay usable.
struct BadArgs {
    name: &'static str,
    /// Fewest ranks for which the arguments are wrong (a difference needs two ranks).
    min_ranks: usize,
    /// The `Error::code` every rank must return.
    code: i32,
    /// Changes the valid arguments of the last rank.
    spoil: fn(ReshapeArgs) -> ReshapeArgs,
}

/// The arguments the error cases start from: (4, 4) split 0 -> (16,) split 0, u32.
fn valid_case() -> Case {
    case(
        "valid_after_error",
        Ty::U32,
        &[4, 4],
        Some(0),
        &[16],
        Some(0),
    )
}

/// Bad arguments on one rank, at planning and at execution.
fn error_agreement(w: &World) {
    let bad = [
        BadArgs {
            name: "error_local_len_negative",
            min_ranks: 1,
            code: 5,
            spoil: |a| ReshapeArgs { local_len: -1, ..a },
        },
        BadArgs {
            name: "error_local_lens_sum",
            min_ranks: 1,
            code: 5,
            spoil: |a| ReshapeArgs {
                local_len: a.local_len + 1,
                ..a
            },
        },
        BadArgs {
            name: "error_split_out_of_range",
            min_ranks: 1,
            code: 4,
            spoil: |a| ReshapeArgs {
                split: Some(2),
                ..a
            },
        },
        BadArgs {
            name: "error_new_shape_invalid",
            min_ranks: 1,
            code: 3,
            spoil: |a| ReshapeArgs {
                new_shape: vec![3, -1],
                ..a
            },
        },
        BadArgs {
            name: "error_target_too_long",
            min_ranks: 1,
            code: 5,
            spoil: |a| a.with_target_len(17),
        },
        BadArgs {
            name: "error_new_shape_differs",
            min_ranks: 2,
            code: 6,
            spoil: |a| ReshapeArgs {
                new_shape: vec![2, 8],
                ..a
            },
        },
        BadArgs {
            name: "error_new_split_differs",
            min_ranks: 2,
            code: 6,
            spoil: |a| ReshapeArgs {
                new_split: None,
                ..a
            },
        },
        BadArgs {
            name: "error_target_on_one_rank",
            min_ranks: 2,
            code: 6,
            spoil: |a| a.with_target_len(0),
        },
    ];
    let valid = valid_case();
    let (inp, out) = valid.sides(w.size);
    let last = w.rank == w.size - 1;
    for b in bad.iter().filter(|b| w.size >= b.min_ranks) {
        let args = valid.args::<u32>(w, &inp, &out);
        let args = if last { (b.spoil)(args) } else { args };
        // The last rank's arguments are wrong, or differ from the others': the
        // message names it either way (a difference by the lowest rank that
        // passed other values than the largest, and the lowest that passed it).
        let planned = Plan::new(&w.comm, &args).map(|_| ());
        expect_agreed_error(w, b.name, planned, b.code, w.size - 1);
        valid.run(w);
        w.passed(b.name);
    }

    let plan = Plan::new(&w.comm, &valid.args::<u32>(w, &inp, &out))
        .unwrap_or_else(|e| w.fail("error_execute", format!("planning failed: {e}")));
    let input: Vec<u32> = fill(&inp.indices(w.rank));
    let mut output = vec![0u32; plan.output_elems()];
    let short = if last { output.len() - 1 } else { output.len() };
    let result = plan.execute(&input, &mut output[..short]);
    expect_execute_error(w, &plan, "error_output_too_small", result, 7, last);
    w.passed("error_output_too_small");
    let result = if last {
        plan.execute(&[0u16; 16], &mut [0u16; 16])
    } else {
        plan.execute(&input, &mut output)
    };
    expect_execute_error(w, &plan, "error_element_size_differs", result, 2, last);
    w.passed("error_element_size_differs");
    if let Err(e) = plan.execute(&input, &mut output) {
        w.fail("valid_execute_after_error", e);
    }
    check_values(
        w,
        "valid_execute_after_error",
        "execute",
        &output,
        &out.indices(w.rank),
    );
    w.passed("valid_execute_after_error");
    argument_errors_before_buffer_errors(w);
    element_types_are_compared(w);
}

/// `reshape::<u8>` on some ranks and `reshape::<bool>` on others (same size) is
/// inconsistent on every rank; executing a plan made without a dtype as `bool` is
/// refused on every rank (no rank can then receive bytes that are no `bool`).
fn element_types_are_compared(w: &World) {
    let name = "element_types_differ";
    let len = distreshape::balanced_slab(4, w.size as u64, w.rank as u64).len;
    let args = ReshapeArgs::new(1, &[4, 6], Some(0), len as i64, &[6, 4], Some(0));
    let input = vec![1u8; (len * 6) as usize];
    if w.size > 1 {
        let result = if w.rank.is_multiple_of(2) {
            reshape::<u8, _>(&w.comm, &args, &input).map(drop)
        } else {
            let flags: Vec<bool> = input.iter().map(|&b| b == 1).collect();
            reshape::<bool, _>(&w.comm, &args, &flags).map(drop)
        };
        expect_agreed_error(w, name, result, 6, w.rank);
        w.passed(name);
    }
    let name = "bool_needs_a_bool_plan";
    let plan =
        Plan::new(&w.comm, &args).unwrap_or_else(|e| w.fail(name, format!("planning failed: {e}")));
    let flags = vec![true; (len * 6) as usize];
    let mut out = vec![false; plan.output_elems()];
    let result = plan.execute(&flags, &mut out);
    if w.size > 1 {
        let named = if plan.is_collective() { 0 } else { w.rank };
        expect_agreed_error(w, name, result, 2, named);
    } else if !matches!(result, Err(distreshape::Error::InvalidDtype(_))) {
        w.fail(name, format!("{result:?}"));
    }
    w.passed(name);
}

/// `DR_DTYPE_UINT32` of the C header.
const DR_DTYPE_UINT32: i32 = 6;

// The two C entry points the test below calls, as a C program declares them
// (`include/distreshape.h`); the library's rlib defines them.
unsafe extern "C" {
    fn dr_reshape(
        buf: *const std::ffi::c_void,
        dtype: i32,
        ndims: i32,
        gshape: *const i64,
        split: i32,
        comm: distreshape::RawComm,
        local_len: i64,
        new_ndims: i32,
        new_gshape: *const i64,
        new_split: i32,
        out: *mut std::ffi::c_void,
        out_capacity: i64,
        new_local_elems: *mut i64,
    ) -> i32;
    fn dr_last_error_message() -> *const std::ffi::c_char;
}

/// `dr_reshape` with rank 1's output one element short (a buffer error) and rank 2's
/// `local_len` -1 (an argument error): argument errors are agreed first, so every
/// rank returns rank 2's status and message, not rank 1's.
fn argument_errors_before_buffer_errors(w: &World) {
    let name = "argument_errors_before_buffer_errors";
    if w.size < 3 {
        return;
    }
    let p = w.size as i64;
    let (gshape, new_gshape) = ([2 * p, 3], [3, 2 * p]);
    let input = [0u32; 6];
    let mut output = vec![0u32; 2 * w.size];
    let capacity = if w.rank == 1 { 2 * p - 1 } else { 2 * p };
    let local_len = if w.rank == 2 { -1 } else { 2 };
    let mut written = -1;
    // SAFETY: the buffers hold what the shapes and capacity say.
    let status = unsafe {
        dr_reshape(
            input.as_ptr().cast(),
            DR_DTYPE_UINT32,
            2,
            gshape.as_ptr(),
            0,
            w.comm.as_raw(),
            local_len,
            2,
            new_gshape.as_ptr(),
            0,
            output.as_mut_ptr().cast(),
            capacity,
            &mut written,
        )
    };
    // SAFETY: the message is a NUL-terminated string owned by this thread.
    let message = unsafe { std::ffi::CStr::from_ptr(dr_last_error_message()) };
    let message = message.to_string_lossy();
    let invalid_distribution = distreshape::Error::InvalidDistribution(String::new()).code();
    if status != invalid_distribution || !message.contains("rank 2") {
        w.fail(name, format!("status {status:?}, message {message:?}"));
    }
    w.passed(name);
}

/// Checks an execution error made on the rank where `bad` holds: every rank reports it
/// when the plan is collective; otherwise execution is local and only that rank does.
fn expect_execute_error(
    w: &World,
    plan: &Plan,
    name: &str,
    result: distreshape::Result<()>,
    code: i32,
    bad: bool,
) {
    if plan.is_collective() {
        return expect_agreed_error(w, name, result, code, w.size - 1);
    }
    let got = result.as_ref().err().map_or(0, distreshape::Error::code);
    if got != if bad { code } else { 0 } {
        w.fail(
            name,
            format!(
                "local plan: code {got} on rank {} (bad here: {bad})",
                w.rank
            ),
        );
    }
}

/// Checks that every rank got an error with code `code` whose message names rank
/// `named` (the rank that found it).
fn expect_agreed_error(
    w: &World,
    name: &str,
    result: distreshape::Result<()>,
    code: i32,
    named: usize,
) {
    let mine = result.as_ref().err().map_or(0, distreshape::Error::code);
    let mut codes = vec![0i32; w.size];
    w.comm.all_gather_into(&mine, &mut codes[..]);
    if codes.iter().any(|&c| c != code) {
        w.fail(
            name,
            format!("error codes by rank {codes:?}, expected {code} everywhere (here: {result:?})"),
        );
    }
    let message = result.as_ref().err().map_or("", distreshape::Error::detail);
    if !names_rank(message, named) {
        w.fail(
            name,
            format!("the message does not name rank {named}: {message:?}"),
        );
    }
}

/// True when `message` says "rank N" with N exactly `rank` (not a longer number).
fn names_rank(message: &str, rank: usize) -> bool {
    let wanted = format!("rank {rank}");
    message.match_indices(&wanted).any(|(at, _)| {
        let after = message[at + wanted.len()..].chars().next();
        !after.is_some_and(|c| c.is_ascii_digit())
    })
}

// ---------------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------------

/// An execution begun on the main thread and carried on from another: at
/// `MPI_THREAD_SINGLE` or `FUNNELED` each call there is refused on this rank and
/// does nothing, the execution still in flight until the main thread's wait
/// completes it; at `MULTIPLE` the other thread's wait completes it.
fn progress_on_another_thread(w: &World, provided: Threading) {
    let name = "progress_on_another_thread";
    let case = Transpose::new(w, 3001, 16);
    let plan = case.plan(w, name, Transpose::many_rounds());
    let mut output = case.output();
    case.begin(w, name, &plan, &mut output);
    let (plan, outcomes) = std::thread::spawn(move || {
        let outcomes = [plan.progress(false), plan.progress(true)];
        (plan, outcomes)
    })
    .join()
    .unwrap_or_else(|_| w.fail(name, "the other thread panicked"));
    let level = format!("{provided:?}").to_uppercase();
    let refused = |outcome: &distreshape::Result<bool>| match outcome {
        Err(distreshape::Error::Mpi(message)) => {
            message.contains(&format!("MPI_THREAD_{level}")) && names_rank(message, w.rank)
        }
        _ => false,
    };
    match provided {
        Threading::Single | Threading::Funneled if outcomes.iter().all(refused) => {}
        Threading::Serialized | Threading::Multiple if matches!(outcomes[1], Ok(true)) => {}
        _ => w.fail(
            name,
            format!("at {provided:?} on another thread: {outcomes:?}"),
        ),
    }
    match plan.progress(true) {
        Ok(true) => {}
        other => w.fail(name, format!("the main thread's wait: {other:?}")),
    }
    case.check(w, name, "after the other thread's calls", &output);
    w.passed(&format!("{name} ({provided:?})"));
}

/// A plan moved to another thread and executed there. Below
/// `MPI_THREAD_SERIALIZED` only the main thread may call MPI: every rank's call is
/// refused there, without calling MPI, with an error naming the level and the rank,
/// and nothing hangs (the refused call did nothing, so the same execution on the
/// main thread, by every rank, then completes). At `MPI_THREAD_SERIALIZED` and
/// above the execution on the other thread works. Dropping a plan on the other
/// thread returns either way (below `MPI_THREAD_SERIALIZED` without calling MPI).
fn plan_on_another_thread(w: &World, provided: Threading) {
    let name = "plan_on_another_thread";
    let case = case(
        "threads_44_s0_to_44_s1",
        Ty::U32,
        &[4, 4],
        Some(0),
        &[4, 4],
        Some(1),
    );
    let (inp, out) = case.sides(w.size);
    let args = case.args::<u32>(w, &inp, &out);
    let plan =
        Plan::new(&w.comm, &args).unwrap_or_else(|e| w.fail(name, format!("planning failed: {e}")));
    let (input, want) = (fill::<u32>(&inp.indices(w.rank)), out.indices(w.rank));
    let mut output = vec![0u32; want.len()];
    let (plan, result, output) = std::thread::spawn(move || {
        let result = plan.execute(&input, &mut output);
        (plan, result, output)
    })
    .join()
    .unwrap_or_else(|_| w.fail(name, "the other thread panicked"));
    let main_only = matches!(provided, Threading::Single | Threading::Funneled);
    let level = format!("{provided:?}").to_uppercase();
    match (&result, main_only) {
        (Ok(()), false) => check_values(w, name, "on another thread", &output, &want),
        (Err(distreshape::Error::Mpi(message)), true)
            if message.contains(&format!("MPI_THREAD_{level}")) && names_rank(message, w.rank) =>
        {
            let input = fill::<u32>(&inp.indices(w.rank));
            let mut output = vec![0u32; want.len()];
            if let Err(e) = plan.execute(&input, &mut output) {
                w.fail(name, format!("execute on the main thread failed: {e}"));
            }
            check_values(
                w,
                name,
                "on the main thread after a refusal",
                &output,
                &want,
            );
        }
        _ => w.fail(
            name,
            format!("at {provided:?} on another thread: {result:?}"),
        ),
    }
    let dropped = std::thread::spawn(move || drop(plan)).join();
    if dropped.is_err() {
        w.fail(name, "dropping the plan on another thread panicked");
    }
    w.passed(&format!("{name} ({provided:?})"));
}
