//! In-place schedule simulation (no MPI): builds the global in-place schedule every
//! rank computes at a plan's first execution in place on the exchange path, for
//! p = 2 ... 512 ranks, and prints its time, pieces (and how many are strided),
//! rounds, the share of the moved bytes it stages and rank 0's staging, or why no
//! bounded schedule applies.
//!
//! ```text
//! cargo run --release --features testing --example inplace_scaling
//! ```
//!
//! Slab shapes (float64, balanced input, 10^8 elements: about 763 MiB / p per rank),
//! the cases of `examples/bench.rs`:
//! - `split_change`:    (1000, 1000, 100) split 0 -> (1000, 100000) split 1
//! - `flatten`:         (1000, 1000, 100) split 1 -> (10^8) split 0
//! - `scattered_split`: (1000, 100, 1000) split 0 -> split 2
//! - `infeasible_same`: (100, 1000, 1000) split 1 -> (1000, 100, 1000) split 1
//!
//! Grid cases: those of `examples/grid_bench.rs` at p = 4 and 8.
//!
//! Budget: the default, max(64 MiB, 10 % of the rank's buffer), less the
//! scheduling state, as the library counts it.

use std::time::Instant;

use distreshape::balanced_slab;
use distreshape::testing::{
    GridLayout, Problem, RankPlan, Redistribution, SCHEDULING_BYTES_PER_PIECE, Schedule,
};
use distreshape::testing::{ReshapeArgs, check_local};

/// The default `PlanOptions::run_budget`: the most pieces a schedule may have.
const RUN_BUDGET: usize = 1 << 18;

fn main() {
    println!(
        "shape                p   schedule ms   pieces  strided   rounds  staged %  staging MiB (rank 0)"
    );
    slab_cases();
    grid_cases();
}

/// A slab reshape: `gshape` split on `split` to `new_shape` split on `new_split`.
struct SlabCase {
    name: &'static str,
    gshape: [u64; 3],
    split: usize,
    new_shape: &'static [i64],
    new_split: usize,
}

/// The slab reshapes at p = 2 ... 512.
fn slab_cases() {
    let cases = [
        SlabCase {
            name: "split_change",
            gshape: [1000, 1000, 100],
            split: 0,
            new_shape: &[1000, 100_000],
            new_split: 1,
        },
        SlabCase {
            name: "flatten",
            gshape: [1000, 1000, 100],
            split: 1,
            new_shape: &[100_000_000],
            new_split: 0,
        },
        SlabCase {
            name: "scattered_split",
            gshape: [1000, 100, 1000],
            split: 0,
            new_shape: &[1000, 100, 1000],
            new_split: 2,
        },
        SlabCase {
            name: "infeasible_same",
            gshape: [100, 1000, 1000],
            split: 1,
            new_shape: &[1000, 100, 1000],
            new_split: 1,
        },
    ];
    for case in cases {
        for p in [2u64, 4, 8, 16, 32, 64, 128, 256, 512] {
            let lens: Vec<u64> = (0..p)
                .map(|r| balanced_slab(case.gshape[case.split], p, r).len)
                .collect();
            let args = ReshapeArgs::new(
                8,
                &case.gshape.map(|n| n as i64),
                Some(case.split),
                lens[0] as i64,
                case.new_shape,
                Some(case.new_split),
            );
            let checked = check_local(&args, 0).expect("valid arguments");
            let plan = RankPlan::new(&checked, &lens, None, 0).expect("plan");
            report(case.name, &plan.layouts);
        }
    }
}

/// The grid_bench cases at p = 4 (2x2 pencils, 2x2x1 bricks, (512, 512, 256)) and
/// p = 8 (4x2 pencils, 2x2x2 bricks, (512, 512, 128)).
fn grid_cases() {
    for (p, pencils, bricks, n2) in [(4, [2, 2], [2, 2, 1], 256), (8, [4, 2], [2, 2, 2], 128)] {
        let shape = [512, 512, n2];
        let grid = |dims: &[i64], axes: &[Option<usize>], shape: &[u64]| {
            GridLayout::balanced(shape, dims, axes, p).expect("layout")
        };
        let x = grid(&pencils, &[None, Some(0), Some(1)], &shape);
        let y = grid(&pencils, &[Some(0), None, Some(1)], &shape);
        let b = grid(&bricks, &[Some(0), Some(1), Some(2)], &shape);
        let rows = grid(&[p as i64], &[Some(0), None], &[512 * 512, n2]);
        for (name, input, output) in [
            ("x_to_y_pencils", &x, &y),
            ("bricks_to_x_pencils", &b, &x),
            ("pencils_reshape", &x, &rows),
        ] {
            let layouts = Redistribution::new(input.clone(), output.clone()).expect("plan");
            report(name, &layouts);
        }
    }
}

/// Builds the schedule of `layouts` with the default budgets and prints a line.
fn report(name: &str, layouts: &Redistribution) {
    let p = layouts.input().nranks();
    let budgets: Vec<usize> = (0..p)
        .map(|r| {
            let elems = layouts
                .input()
                .elements(r)
                .max(layouts.output().elements(r));
            (64 << 20).max(elems as usize * 8 / 10)
        })
        .collect();
    let problem = Problem {
        layouts,
        elem_size: 8,
        budgets: &budgets,
        scheduling_bytes_per_piece: SCHEDULING_BYTES_PER_PIECE,
    };
    let start = Instant::now();
    let schedule = Schedule::new(&problem, RUN_BUDGET);
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let s = match schedule {
        Ok(s) => s,
        Err(why) => return println!("{name:<19} {p:>4} {ms:>12.1}   {why}"),
    };
    let (mut moved, mut staged, mut pieces, mut strided) = (0, 0, 0, 0);
    for m in s.moves() {
        let bytes = m.piece.shape.bytes();
        pieces += 1;
        strided += usize::from(m.piece.shape.count > 1);
        moved += bytes;
        staged += m.staged.map_or(0, |_| bytes);
    }
    let staging = s.for_rank(0).staging_bytes as f64 / (1 << 20) as f64;
    println!(
        "{name:<19} {p:>4} {ms:>12.1} {pieces:>8} {strided:>8} {:>8} {:>8.1}  {staging:>10.1}",
        s.rounds(),
        100.0 * staged as f64 / moved.max(1) as f64
    );
}
