//! Grid-layout planning cost (no MPI): for every rank, its receive list, its send
//! list and its local copy (peers found by binary search on the block offsets, each
//! peer's shared elements counted analytically), as a rank computes them from the two
//! layouts alone. Prints the mean and worst time per rank (best of 3 runs each) and
//! the most peers of a rank.
//!
//! ```text
//! cargo run --release --example grid_plan_scaling
//! ```
//!
//! Cases (global shape (512, 512, 512) unless said):
//! - `pencils x->y`: 64x64 grid, x-pencils (axes 1, 2 split) to y-pencils (axes 0, 2), P = 4096
//! - `bricks->pencils`: 8x8x8 bricks to 16x32 x-pencils, P = 512
//! - `pencils->rows`: 64x64 x-pencils to (262144, 512) split on axis 0 (a merge
//!   group: the peers come from a bounding range, tested exactly), P = 4096

use std::time::Instant;

use distreshape::testing::GridLayout;
use distreshape::testing::Redistribution;

/// Timed runs per rank; the best counts.
const REPEATS: usize = 3;

struct Case {
    name: &'static str,
    input: GridLayout,
    output: GridLayout,
}

fn cases() -> Vec<Case> {
    let cube = [512u64, 512, 512];
    let layout = |shape: &[u64], grid: &[i64], axes: &[Option<usize>]| {
        let p = grid.iter().product::<i64>() as usize;
        GridLayout::balanced(shape, grid, axes, p).expect("a valid layout")
    };
    vec![
        Case {
            name: "pencils x->y",
            input: layout(&cube, &[64, 64], &[None, Some(0), Some(1)]),
            output: layout(&cube, &[64, 64], &[Some(0), None, Some(1)]),
        },
        Case {
            name: "bricks->pencils",
            input: layout(&cube, &[8, 8, 8], &[Some(0), Some(1), Some(2)]),
            output: layout(&cube, &[16, 32], &[None, Some(0), Some(1)]),
        },
        Case {
            name: "pencils->rows",
            input: layout(&cube, &[64, 64], &[None, Some(0), Some(1)]),
            output: layout(&[262_144, 512], &[4096], &[Some(0), None]),
        },
    ]
}

fn main() {
    println!(
        "{:<16} {:>5} {:>12} {:>12} {:>14} {:>14}",
        "case", "P", "us/rank", "max us", "peers recv", "peers sent"
    );
    for case in cases() {
        let p = case.input.nranks();
        let plan = Redistribution::new(case.input, case.output).expect("same ranks");
        let (mut total, mut worst, mut recv, mut sent) = (0.0f64, 0.0f64, 0, 0);
        let mut checksum = 0u64;
        for rank in 0..p {
            // Best of a few runs: the machine may be shared.
            let mut best = f64::INFINITY;
            let mut lists = (Vec::new(), Vec::new(), 0);
            for _ in 0..REPEATS {
                let start = Instant::now();
                lists = (
                    plan.receives(rank),
                    plan.sends(rank),
                    plan.local_elements(rank),
                );
                best = best.min(start.elapsed().as_secs_f64() * 1e6);
            }
            let (receives, sends, local) = lists;
            checksum += local + receives.iter().map(|t| t.elems).sum::<u64>();
            (total, worst) = (total + best, worst.max(best));
            (recv, sent) = (recv.max(receives.len()), sent.max(sends.len()));
        }
        assert_eq!(checksum, 512 * 512 * 512, "every element is planned once");
        println!(
            "{:<16} {:>5} {:>12.1} {:>12.1} {:>14} {:>14}",
            case.name,
            p,
            total / p as f64,
            worst,
            recv,
            sent
        );
    }
}
