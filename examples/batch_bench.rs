//! Benchmark of batches and fused plans (issue 36): three float64 fields of
//! `n`³ moved from x-pencils to y-pencils (on the pencil grid of
//! `examples/grid_bench.rs`), as one batch (`Plan::execute_batch`), as three
//! executions of the same plan, as one array of shape (n, n, n, 3) with the
//! trailing axis unsplit (the fields interleaved in one allocation,
//! PencilArrays' `extra_dims`) and as the same plan fused three times
//! (`Fused`); then the three fields with a float32 scalar moved the other way
//! (y- to x-pencils, other boxes) fused into one round, against the batch and
//! the scalar's execution one after the other. All measured in the same run.
//!
//! ```text
//! MPICC=mpicc.mpich cargo build --release --example batch_bench
//! mpiexec.mpich -n P target/release/examples/batch_bench [--n N[,N...]]
//!     [--repeat R] [--warmup W]
//! ```
//!
//! The three ways run interleaved, `warmup` + `repeat` times each, every run
//! between barriers; a time is the median over the repeats of the max over the
//! ranks. Every output element of every field is verified after the timed runs.
//! Rank 0 prints one line per size with the times and the ratios to three
//! executions.

use std::time::Instant;

use distreshape::{Fused, FusedField, GridBox, Layout, Plan};
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::topology::{Communicator, SimpleCommunicator};

/// Fields per batch.
const FIELDS: usize = 3;

/// What the scalar holds beyond the global index.
const SCALAR_OFFSET: f64 = 3.0 * FIELD_OFFSET;

/// What field `f` holds beyond the global index: `f` times this.
const FIELD_OFFSET: f64 = (1u64 << 32) as f64;

/// The command line.
struct Options {
    sizes: Vec<u64>,
    repeat: usize,
    warmup: usize,
}

fn parse_args() -> Options {
    let mut o = Options {
        sizes: vec![64, 256],
        repeat: 20,
        warmup: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().expect("a value after every flag");
        match flag.as_str() {
            "--n" => {
                o.sizes = value
                    .split(',')
                    .map(|v| v.parse().expect("a size"))
                    .collect()
            }
            "--repeat" => o.repeat = value.parse().expect("a count"),
            "--warmup" => o.warmup = value.parse().expect("a count"),
            other => panic!("unknown flag {other}"),
        }
    }
    o
}

/// The pencil grid of `p` ranks: `[p / pc, pc]`, `pc` the largest divisor of
/// `p` whose square is at most `p`.
fn pencil_grid(p: i64) -> [i64; 2] {
    let pc = (1..=p)
        .filter(|d| p % d == 0 && d * d <= p)
        .max()
        .unwrap_or(1);
    [p / pc, pc]
}

/// x- and y-pencils of `shape` (a trailing axis beyond the third unsplit).
fn pencils(shape: &[i64], p: i64) -> (Layout, Layout) {
    let grid = pencil_grid(p);
    let extra = vec![None; shape.len() - 3];
    let x = [&[None, Some(0), Some(1)][..], &extra].concat();
    let y = [&[Some(0), None, Some(1)][..], &extra].concat();
    (Layout::new(shape, &grid, &x), Layout::new(shape, &grid, &y))
}

/// Calls `f` with the C-order position in the box and the global index of
/// every element of `b` within the array of extents `full` (the first three
/// axes; a fourth, when there, gives the field).
fn for_each(full: &[u64], b: &GridBox, mut f: impl FnMut(usize, u64, usize)) {
    let total = b.len() as usize;
    let n = b.extents.len();
    for at in 0..total {
        let (mut rest, mut index) = (at as u64, vec![0u64; n]);
        for a in (0..n).rev() {
            index[a] = b.offsets[a] + rest % b.extents[a];
            rest /= b.extents[a];
        }
        let flat = (0..3).fold(0, |g, a| g * full[a] + index[a]);
        let field = if n > 3 { index[3] as usize } else { 0 };
        f(at, flat, field);
    }
}

/// The value field `f` holds at global index `flat`.
fn value(flat: u64, f: usize) -> f64 {
    flat as f64 + f as f64 * FIELD_OFFSET
}

/// Field `f` of the box `b` of the `full` array, filled.
fn filled(full: &[u64], b: &GridBox, f: usize) -> Vec<f64> {
    let mut buffer = vec![0.0; b.len() as usize];
    for_each(full, b, |at, flat, field| {
        buffer[at] = value(flat, f + field)
    });
    buffer
}

/// True when `buffer` holds field `f` of the box `b`.
fn holds(full: &[u64], b: &GridBox, f: usize, buffer: &[f64]) -> bool {
    let mut right = true;
    for_each(full, b, |at, flat, field| {
        right &= buffer[at] == value(flat, f + field)
    });
    right
}

/// The max over the ranks.
fn max(world: &SimpleCommunicator, x: f64) -> f64 {
    let mut out = 0.0;
    world.all_reduce_into(&x, &mut out, SystemOperation::max());
    out
}

/// The median.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `f` once between barriers: the max over the ranks, in seconds.
fn timed(world: &SimpleCommunicator, f: impl FnOnce()) -> f64 {
    world.barrier();
    let t = Instant::now();
    f();
    max(world, t.elapsed().as_secs_f64())
}

/// The plans and buffers of one size.
struct Case {
    full: [u64; 4],
    plan: Plan,
    plan4: Plan,
    scalar: Plan,
    inputs: Vec<Vec<f64>>,
    input4: Vec<f64>,
    scalar_input: Vec<f32>,
}

impl Case {
    fn new(world: &SimpleCommunicator, n: u64) -> Case {
        let p = world.size() as i64;
        let (x, y) = pencils(&[n as i64; 3], p);
        let plan = Plan::from_layouts::<f64, _>(world, &x, &y).expect("plan");
        let (x4, y4) = pencils(&[n as i64, n as i64, n as i64, FIELDS as i64], p);
        let plan4 = Plan::from_layouts::<f64, _>(world, &x4, &y4).expect("plan, trailing axis");
        let scalar = Plan::from_layouts::<f32, _>(world, &y, &x).expect("scalar plan");
        let full = [n, n, n, FIELDS as u64];
        let in_box = plan.input_box();
        let scalar_input = filled(&full, &scalar.input_box(), 0)
            .iter()
            .map(|&v| (v + SCALAR_OFFSET) as f32)
            .collect();
        Case {
            inputs: (0..FIELDS).map(|f| filled(&full, &in_box, f)).collect(),
            input4: filled(&full, &plan4.input_box(), 0),
            scalar_input,
            full,
            plan,
            plan4,
            scalar,
        }
    }

    /// True when `output` holds the scalar's output box.
    fn holds_scalar(&self, output: &[f32]) -> bool {
        let mut right = true;
        for_each(&self.full, &self.scalar.output_box(), |at, flat, _| {
            right &= output[at] == (value(flat, 0) + SCALAR_OFFSET) as f32
        });
        right
    }
}

/// The ways of moving the fields of `n`³, timed interleaved; prints the lines
/// of rank 0.
fn run(world: &SimpleCommunicator, n: u64, o: &Options) {
    let p = world.size();
    let c = Case::new(world, n);
    let plan = &c.plan;
    let fused = Fused::new(vec![plan; FIELDS]).expect("fused");
    let mixed = Fused::new(vec![plan, plan, plan, &c.scalar]).expect("fused with the scalar");
    let fresh = || vec![vec![f64::NAN; plan.output_elems()]; FIELDS];
    let (mut outputs, mut separate, mut fused_out) = (fresh(), fresh(), fresh());
    let mut output4 = vec![f64::NAN; c.plan4.output_elems()];
    let mut scalar_out = vec![f32::NAN; c.scalar.output_elems()];
    let ins: Vec<&[f64]> = c.inputs.iter().map(|v| &v[..]).collect();
    let mut times = vec![Vec::new(); 6];
    for run in 0..o.warmup + o.repeat {
        let mut outs: Vec<&mut [f64]> = outputs.iter_mut().map(|v| &mut v[..]).collect();
        let batch = timed(world, || {
            plan.execute_batch(&ins, &mut outs).expect("batch")
        });
        let three = timed(world, || {
            for (input, output) in c.inputs.iter().zip(&mut separate) {
                plan.execute(input, output).expect("execute");
            }
        });
        let trailing = timed(world, || {
            c.plan4.execute(&c.input4, &mut output4).expect("execute")
        });
        let fused_three = timed(world, || {
            let mut fields: Vec<FusedField<'_>> = (c.inputs.iter().zip(&mut fused_out))
                .map(|(input, output)| FusedField::new(input, output))
                .collect();
            fused.execute(&mut fields).expect("fused")
        });
        let apart = timed(world, || {
            plan.execute_batch(&ins, &mut outs).expect("batch");
            c.scalar
                .execute(&c.scalar_input, &mut scalar_out)
                .expect("scalar");
        });
        let together = timed(world, || {
            let mut fields: Vec<FusedField<'_>> = (c.inputs.iter().zip(&mut fused_out))
                .map(|(input, output)| FusedField::new(input, output))
                .collect();
            fields.push(FusedField::new(&c.scalar_input, &mut scalar_out));
            mixed.execute(&mut fields).expect("fused with the scalar")
        });
        if run >= o.warmup {
            for (t, s) in
                times
                    .iter_mut()
                    .zip([batch, three, trailing, fused_three, apart, together])
            {
                t.push(s);
            }
        }
    }
    let out_box = plan.output_box();
    let right = (0..FIELDS).all(|f| {
        [&outputs[f], &separate[f], &fused_out[f]]
            .iter()
            .all(|b| holds(&c.full, &out_box, f, b))
    }) && holds(&c.full, &c.plan4.output_box(), 0, &output4)
        && c.holds_scalar(&scalar_out);
    let wrong = max(world, f64::from(u8::from(!right)));
    assert_eq!(wrong, 0.0, "a wrong output element");
    let [batch, three, trailing, fused_three, apart, together] =
        times.into_iter().map(median).collect::<Vec<_>>()[..]
    else {
        unreachable!("six ways")
    };
    if world.rank() == 0 {
        println!(
            "n = {n} P = {p} fields = {FIELDS}: batch {:.3} ms, three executions {:.3} ms, trailing axis {:.3} ms, fused (one plan 3 times) {:.3} ms; batch / three = {:.2}, trailing / three = {:.2}, batch / trailing = {:.2}, fused / three = {:.2}",
            batch * 1e3,
            three * 1e3,
            trailing * 1e3,
            fused_three * 1e3,
            batch / three,
            trailing / three,
            batch / trailing,
            fused_three / three,
        );
        println!(
            "n = {n} P = {p} three fields and a float32 scalar the other way: batch then scalar {:.3} ms, fused {:.3} ms; fused / apart = {:.2}",
            apart * 1e3,
            together * 1e3,
            together / apart,
        );
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    let o = parse_args();
    for &n in &o.sizes {
        run(&world, n, &o);
    }
}
