//! Planner-only simulation (no MPI): builds one rank's plan, as `Plan::create` does
//! after its allgather of the slab lengths, for p = 64 ... 65536 ranks, and prints the
//! planning time, the peers and the bytes of that rank.
//!
//! ```text
//! cargo run --release --example plan_scaling
//! ```
//!
//! Shapes (the benchmark's, with the split extents scaled with p so every rank keeps
//! the rows it has at p = 4):
//! - `seed`:                 (10, 2500p, 10) split 1 -> (10, 25000p) split 1
//! - `same_split_rebalance`: (250p, 1000, 100) split 0 -> (1000p, 250, 100) split 0
//! - `split_change`:         (250p, 1000, 100) split 0 -> (250p, 100000) split 1
//!
//! Input distributions: `balanced`; `nearly` (balanced, then every even rank gives one
//! row to the next rank: slabs of base +- 1 rows); `skewed` (every slab boundary
//! shifted by a fifth of a slab: rank 0 holds 0.8 slab, the last about 1.2); `half` (rank 0
//! holds half of the rows, the others share the rest, as the benchmark's
//! `unbalanced_rebalance`).
//!
//! Columns: the planning time (median of a few runs of `RankPlan::new`, which is all a
//! rank computes after the allgather), that time per rank of the communicator, peers
//! sent to / received from, bytes sent / received / copied locally, and the bytes the
//! plan keeps (its layouts, O(p), and its peer lists) plus the gathered lengths.

use std::time::Instant;

use distreshape::balanced_slab;
use distreshape::testing::{RankPlan, Route};
use distreshape::testing::{ReshapeArgs, check_local};

struct Shape {
    name: &'static str,
    gshape: fn(u64) -> Vec<i64>,
    split: usize,
    new_shape: fn(u64) -> Vec<i64>,
    new_split: usize,
}

const SHAPES: &[Shape] = &[
    Shape {
        name: "seed",
        gshape: |p| vec![10, 2500 * p as i64, 10],
        split: 1,
        new_shape: |p| vec![10, 25_000 * p as i64],
        new_split: 1,
    },
    Shape {
        name: "same_split_rebalance",
        gshape: |p| vec![250 * p as i64, 1000, 100],
        split: 0,
        new_shape: |p| vec![1000 * p as i64, 250, 100],
        new_split: 0,
    },
    Shape {
        name: "split_change",
        gshape: |p| vec![250 * p as i64, 1000, 100],
        split: 0,
        new_shape: |p| vec![250 * p as i64, 100_000],
        new_split: 1,
    },
];

/// `RankPlan::new` returns the plan, or (when allocation failures are reported) a
/// `Result` of it; both are accepted.
trait IntoPlan {
    fn into_plan(self) -> RankPlan;
}

impl IntoPlan for RankPlan {
    fn into_plan(self) -> RankPlan {
        self
    }
}

impl<E: std::fmt::Debug> IntoPlan for Result<RankPlan, E> {
    fn into_plan(self) -> RankPlan {
        self.expect("planning")
    }
}

const PS: [u64; 6] = [64, 256, 1024, 4096, 16384, 65536];

fn lens(dist: &str, extent: u64, p: u64) -> Vec<u64> {
    let balanced: Vec<u64> = (0..p).map(|r| balanced_slab(extent, p, r).len).collect();
    match dist {
        "balanced" => balanced,
        "nearly" => {
            let mut l = balanced;
            for r in (0..p as usize - 1).step_by(2) {
                if l[r] > 0 {
                    l[r] -= 1;
                    l[r + 1] += 1;
                }
            }
            l
        }
        "skewed" => {
            let base = extent / p;
            // Boundary r at r*base - base/5: rank 0 is short, the last rank long.
            let offs: Vec<u64> = (0..=p)
                .map(|r| match r {
                    0 => 0,
                    r if r == p => extent,
                    r => r * base - base / 5,
                })
                .collect();
            offs.windows(2).map(|w| w[1] - w[0]).collect()
        }
        "half" => {
            let first = extent / 2;
            let rest = extent - first;
            std::iter::once(first)
                .chain((0..p - 1).map(|r| balanced_slab(rest, p - 1, r).len))
                .collect()
        }
        _ => unreachable!(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    println!(
        "{:<21} {:>6} {:<8} {:>6} {:>9} {:>7} {:>6} {:>6} {:>11} {:>11} {:>11} {:>10}  path",
        "shape",
        "p",
        "input",
        "rank",
        "plan us",
        "ns/p",
        "peer>",
        "peer<",
        "sent B",
        "recv B",
        "copied B",
        "plan B"
    );
    for shape in SHAPES {
        for &p in &PS {
            for dist in ["balanced", "nearly", "skewed", "half"] {
                if dist == "skewed" && shape.name == "split_change" {
                    continue;
                }
                let gshape = (shape.gshape)(p);
                let new_shape = (shape.new_shape)(p);
                let lens = lens(dist, gshape[shape.split] as u64, p);
                assert_eq!(lens.iter().sum::<u64>(), gshape[shape.split] as u64);
                for rank in [0, p as usize / 2] {
                    let args = ReshapeArgs::new(
                        8,
                        &gshape,
                        Some(shape.split),
                        lens[rank] as i64,
                        &new_shape,
                        Some(shape.new_split),
                    );
                    let checked = check_local(&args, rank).expect("valid arguments");
                    let runs = if p >= 16384 { 3 } else { 7 };
                    let mut times = Vec::new();
                    let mut plan = None;
                    for _ in 0..runs {
                        let t = Instant::now();
                        let made = RankPlan::new(&checked, &lens, None, rank).into_plan();
                        times.push(t.elapsed().as_secs_f64());
                        plan = Some(made);
                    }
                    let plan = plan.expect("at least one run");
                    let t = median(times);
                    let s = plan.stats();
                    // The block offsets of both slab layouts and the new shape.
                    let plan_bytes = (2 * (p as usize + 1) + plan.new_shape().len()) * 8
                        + (plan.sends.capacity() + plan.recvs.capacity())
                            * size_of::<distreshape::testing::PeerVolume>()
                        + 2 * 8 * p as usize; // the allgathered lengths and targets
                    println!(
                        "{:<21} {:>6} {:<8} {:>6} {:>9.1} {:>7.1} {:>6} {:>6} {:>11} {:>11} {:>11} {:>10}  {}",
                        shape.name,
                        p,
                        dist,
                        rank,
                        t * 1e6,
                        t * 1e9 / p as f64,
                        s.peers_sent,
                        s.peers_received,
                        s.bytes_sent,
                        s.bytes_received,
                        s.bytes_copied_locally,
                        plan_bytes,
                        match s.path {
                            Route::Local => "local",
                            Route::Exchange => "exchange",
                        }
                    );
                }
            }
        }
    }
}
