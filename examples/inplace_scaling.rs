//! In-place schedule simulation (no MPI): builds the global in-place schedule every
//! rank computes at a plan's first execution in place on the exchange path, for
//! p = 2 ... 512 ranks, and prints its time, pieces, rounds and the share of the
//! moved bytes it stages, or why no bounded schedule applies.
//!
//! ```text
//! cargo run --release --example inplace_scaling
//! ```
//!
//! Shapes (float64, balanced input, each rank keeping about 381 MiB / p):
//! - `split_change`: (1000, 1000, 100) split 0 -> (1000, 100000) split 1
//! - `flatten`:      (1000, 1000, 100) split 1 -> (10^8) split 0
//!
//! Budget: the default, max(64 MiB, 10 % of the rank's buffer).

use std::time::Instant;

use distreshape::balanced_slab;
use distreshape::testing::RankPlan;
use distreshape::testing::{Problem, Schedule};
use distreshape::testing::{ReshapeArgs, check_local};

/// The default `PlanOptions::run_budget`: the most pieces a schedule may have.
const RUN_BUDGET: usize = 1 << 18;

fn main() {
    let shapes: [(&str, usize, &[i64], usize); 2] = [
        ("split_change", 0, &[1000, 100_000], 1),
        ("flatten", 1, &[100_000_000], 0),
    ];
    println!("shape          p   schedule ms   pieces   rounds  staged %  staging MiB (rank 0)");
    for (name, split, new_shape, new_split) in shapes {
        for p in [2u64, 4, 8, 16, 32, 64, 128, 256, 512] {
            let gshape = [1000u64, 1000, 100];
            let lens: Vec<u64> = (0..p)
                .map(|r| balanced_slab(gshape[split], p, r).len)
                .collect();
            let args = ReshapeArgs::new(
                8,
                &[1000, 1000, 100],
                Some(split),
                lens[0] as i64,
                new_shape,
                Some(new_split),
            );
            let checked = check_local(&args, 0).expect("valid arguments");
            let plan = RankPlan::new(&checked, &lens, None, 0).expect("plan");
            let budgets: Vec<usize> = (0..p as usize)
                .map(|r| {
                    let elems = plan
                        .input_layout()
                        .elements(r)
                        .max(plan.output_layout().elements(r));
                    (64 << 20).max(elems as usize * 8 / 10)
                })
                .collect();
            let problem = Problem {
                layouts: &plan.layouts,
                elem_size: 8,
                budgets: &budgets,
            };
            let start = Instant::now();
            let schedule = Schedule::new(&problem, RUN_BUDGET);
            let ms = start.elapsed().as_secs_f64() * 1e3;
            match schedule {
                Ok(s) => {
                    let (mut moved, mut staged, mut pieces) = (0, 0, 0);
                    for m in s.moves() {
                        pieces += 1;
                        moved += m.piece.len;
                        staged += m.staged.map_or(0, |_| m.piece.len);
                    }
                    let staging = s.for_rank(0).staging_bytes as f64 / (1 << 20) as f64;
                    println!(
                        "{name:<13} {p:>4} {ms:>12.1} {pieces:>8} {:>8} {:>8.1}  {staging:>10.1}",
                        s.rounds(),
                        100.0 * staged as f64 / moved.max(1) as f64
                    );
                }
                Err(why) => println!("{name:<13} {p:>4} {ms:>12.1}   {why}"),
            }
        }
    }
}
