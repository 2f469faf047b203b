//! Benchmark of plans on strided local storage, with the baselines measured in
//! the same run.
//!
//! ```text
//! MPICC=mpicc.mpich cargo build --release --features testing --example strided_bench
//! mpiexec.mpich -n P target/release/examples/strided_bench [--n N] [--repeat R] [--halo H]
//! ```
//!
//! An (N, N, N) float64 array (default N = 256) in x-pencils (axis 0 whole) to
//! y-pencils (axis 1 whole) on the squarest two-axis grid of P. Each time is the
//! median over `repeat` rounds of the max over ranks, each run between
//! barriers; a round runs every case once, in turn, so that the cases compared
//! share the machine's state of the moment:
//! - `contiguous`: the library's transpose of C-order boxes;
//! - `permuted`: the transpose into y-pencils stored y-fastest (then z, then x),
//!   the FFT axis contiguous, against `contiguous + permute` (the contiguous
//!   transpose followed by a local permutation pass into the y-fastest buffer
//!   with the library's blocked copy kernel: what users do today);
//! - `halo`: both sides inside a halo of H (default 2) on every axis, the output
//!   y-fastest, against `copy out + contiguous + copy in` (the interior copied
//!   out to a contiguous buffer, the contiguous transpose, the result copied
//!   back into the y-fastest halo'd buffer).
//!
//! Each case writes buffers of its own (one more output or two for each
//! baseline), and every output is checked element by element against the
//! global indices after the rounds.

use distreshape::testing::{BoxCopy, copy_box};
use distreshape::{Layout, Plan};
use mpi::topology::{Communicator, SimpleCommunicator};

// The benchmarks' shared support, of which this one uses the timing only.
#[allow(dead_code)]
#[path = "common/bench_support.rs"]
mod support;

use support::{Runs, median, timed_rounds};

/// One side's storage: strides in elements, the first element's position, the
/// buffer length.
struct Storage {
    strides: Vec<i64>,
    first: usize,
    len: usize,
}

impl Storage {
    /// A box of `extents` in the memory order `order` (slowest axis first),
    /// inside a halo of `halo` on every axis.
    fn new(extents: &[usize], order: &[usize], halo: usize) -> Storage {
        let mut strides = vec![0i64; extents.len()];
        let mut weight = 1usize;
        for &k in order.iter().rev() {
            strides[k] = weight as i64;
            weight *= extents[k] + 2 * halo;
        }
        let first = strides.iter().map(|&s| s as usize * halo).sum();
        Storage {
            strides,
            first,
            len: weight,
        }
    }

    fn strides_usize(&self) -> Vec<usize> {
        self.strides.iter().map(|&s| s as usize).collect()
    }
}

/// The command line.
struct Args {
    n: i64,
    repeat: usize,
    halo: usize,
}

fn args() -> Args {
    let mut args = Args {
        n: 256,
        repeat: 7,
        halo: 2,
    };
    let argv: Vec<String> = std::env::args().collect();
    for pair in argv[1..].chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse().ok());
        match (pair[0].as_str(), value) {
            ("--n", Some(v)) => args.n = v,
            ("--repeat", Some(v)) => args.repeat = v as usize,
            ("--halo", Some(v)) => args.halo = v as usize,
            _ => panic!("usage: strided_bench [--n N] [--repeat R] [--halo H]"),
        }
    }
    args
}

/// The global C-order flat index of every element of `b` (offsets, extents), in
/// the box's C order.
fn indices(n: i64, offsets: &[u64], extents: &[u64]) -> Vec<f64> {
    let n = n as u64;
    let total: u64 = extents.iter().product();
    (0..total)
        .map(|flat| {
            let (i, j, k) = (
                flat / (extents[1] * extents[2]),
                flat / extents[2] % extents[1],
                flat % extents[2],
            );
            (((offsets[0] + i) * n + offsets[1] + j) * n + offsets[2] + k) as f64
        })
        .collect()
}

/// Copies a box of `extents` between two storages with the library's kernel.
fn copy(extents: &[usize], src: (&[f64], &[usize]), dst: (&mut [f64], &[usize])) {
    let copy = BoxCopy {
        extents,
        src_strides: src.1,
        dst_strides: dst.1,
    };
    // SAFETY: both storages hold the box within their slices, which are distinct.
    unsafe { copy_box(8, copy, src.0.as_ptr().cast(), dst.0.as_mut_ptr().cast()) };
}

/// Checks that `buffer` holds `want` (the box in C order) at `storage`.
fn check(
    world: &SimpleCommunicator,
    what: &str,
    buffer: &[f64],
    s: &Storage,
    ext: &[usize],
    want: &[f64],
) {
    let mut got = vec![0.0; want.len()];
    let dense = [ext[1] * ext[2], ext[2], 1];
    copy(
        ext,
        (&buffer[s.first..], &s.strides_usize()),
        (&mut got, &dense),
    );
    assert!(got == want, "rank {}: {what}: wrong output", world.rank());
}

fn main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    let Args { n, repeat, halo } = args();
    let p = world.size() as i64;
    let b = (1..=p)
        .filter(|d| p % d == 0 && d * d <= p)
        .max()
        .unwrap_or(1);
    let grid = [p / b, b];
    let x = Layout::new(&[n, n, n], &grid, &[None, Some(0), Some(1)]);
    let y = Layout::new(&[n, n, n], &grid, &[Some(0), None, Some(1)]);
    let rank = world.rank() as usize;
    let (ib, ob) = (
        x.rank_box(p as usize, rank).unwrap(),
        y.rank_box(p as usize, rank).unwrap(),
    );
    let ie: Vec<usize> = ib.extents.iter().map(|&e| e as usize).collect();
    let oe: Vec<usize> = ob.extents.iter().map(|&e| e as usize).collect();
    let input = indices(n, &ib.offsets, &ib.extents);
    let want = indices(n, &ob.offsets, &ob.extents);
    let y_fastest = [0, 2, 1];
    let dense_out = [oe[1] * oe[2], oe[2], 1];

    let contiguous = Plan::from_layouts::<f64, _>(&world, &x, &y).expect("plan");
    let mut out = vec![0.0; want.len()];

    let permuted_storage = Storage::new(&oe, &y_fastest, 0);
    let permuted =
        Plan::from_layouts_strided::<f64, _>(&world, &x, None, &y, Some(&permuted_storage.strides))
            .expect("plan");
    let mut permuted_out = vec![0.0; permuted_storage.len];
    let mut then_permuted_out = vec![0.0; permuted_storage.len];
    let mut before_permute = vec![0.0; want.len()];
    if std::env::var_os("STRIDED_BENCH_DESCRIBE").is_some() {
        println!("{permuted}\n{contiguous}");
    }
    let strides = permuted_storage.strides_usize();

    let in_halo = Storage::new(&ie, &[0, 1, 2], halo);
    let out_halo = Storage::new(&oe, &y_fastest, halo);
    let mut halo_in = vec![-1.0; in_halo.len];
    let dense_in = [ie[1] * ie[2], ie[2], 1];
    copy(
        &ie,
        (&input, &dense_in),
        (&mut halo_in[in_halo.first..], &in_halo.strides_usize()),
    );
    let halo_plan = Plan::from_layouts_strided::<f64, _>(
        &world,
        &x,
        Some(&in_halo.strides),
        &y,
        Some(&out_halo.strides),
    )
    .expect("plan");
    let mut halo_out = vec![-1.0; out_halo.len];
    let mut copied_out = vec![-1.0; out_halo.len];
    let mut interior = vec![0.0; input.len()];
    let mut before_copy_in = vec![0.0; want.len()];
    let (si, so) = (in_halo.strides_usize(), out_halo.strides_usize());

    let times = timed_rounds(
        &world,
        Runs { warmup: 2, repeat },
        &mut [
            &mut || contiguous.execute(&input, &mut out).unwrap(),
            &mut || permuted.execute(&input, &mut permuted_out).unwrap(),
            &mut || {
                contiguous.execute(&input, &mut before_permute).unwrap();
                copy(
                    &oe,
                    (&before_permute, &dense_out),
                    (&mut then_permuted_out, &strides),
                );
            },
            // SAFETY: each pointer is its box's first element with its span after it.
            &mut || unsafe {
                let src = halo_in[in_halo.first..].as_ptr().cast();
                let dst = halo_out[out_halo.first..].as_mut_ptr().cast();
                halo_plan
                    .execute_raw(src, dst, (out_halo.len - out_halo.first) * 8)
                    .unwrap();
            },
            &mut || {
                copy(
                    &ie,
                    (&halo_in[in_halo.first..], &si),
                    (&mut interior, &dense_in),
                );
                contiguous.execute(&interior, &mut before_copy_in).unwrap();
                copy(
                    &oe,
                    (&before_copy_in, &dense_out),
                    (&mut copied_out[out_halo.first..], &so),
                );
            },
        ],
    );
    assert!(out == want, "contiguous output");
    let outputs = [
        ("permuted", &permuted_out, &permuted_storage),
        (
            "contiguous + permute",
            &then_permuted_out,
            &permuted_storage,
        ),
        ("halo", &halo_out, &out_halo),
        ("copy out + contiguous + copy in", &copied_out, &out_halo),
    ];
    for (what, buffer, storage) in outputs {
        check(&world, what, buffer, storage, &oe, &want);
    }
    let [t_contiguous, t_permuted, t_then_permute, t_halo, t_copies] = &times[..] else {
        unreachable!("five cases timed")
    };

    if rank == 0 {
        let ms = |t: &[f64]| median(t) * 1e3;
        let (c, pm, tp, h, cp) = (
            ms(t_contiguous),
            ms(t_permuted),
            ms(t_then_permute),
            ms(t_halo),
            ms(t_copies),
        );
        println!(
            "strided_bench: {n}^3 float64, P = {p}, grid {}x{}, halo {halo}, median of {repeat}",
            grid[0], grid[1]
        );
        println!("contiguous transpose                 {c:9.2} ms");
        println!(
            "permuted out (y fastest)             {pm:9.2} ms   {:.2}x contiguous+permute ({tp:.2} ms), {:.2}x contiguous",
            pm / tp,
            pm / c
        );
        println!(
            "halo {halo} both sides, y fastest out     {h:9.2} ms   {:.2}x copy out+contiguous+copy in ({cp:.2} ms), {:.2}x contiguous",
            h / cp,
            h / c
        );
    }
}
