//! Fused plans over MPI ([`Fused`]): the x -> y pencil transpose of a velocity
//! field (f64, one plan fused three times) with the y -> x transpose of a
//! scalar (f32) of other extents; the same plan three times; a plan on strided
//! storage (a halo of sentinels around its input) with dense ones and a plan
//! that sends nothing (i64, a layout to itself); every grid case of
//! tests/mpi/grids.rs fused with the scalar; in place on the last rank and on
//! every rank; fused objects owning their plans. Field `f` holds the global
//! indices plus `f` times [`FIELD_OFFSET`]; every element of every field is
//! checked, the inputs and halos unchanged, and a repeated execution allocates
//! nothing. Refusals fail on every rank with one status: a count of fields that
//! is not the plans', a field of another element type, a short output, fields
//! sharing memory, another order, plans of two communicators.

use std::rc::Rc;

use distreshape::{Element, Error, Fused, FusedField, Layout, Plan, RawBatch};
use mpi::topology::Communicator;

use super::World;
use super::common::alloc::measure;
use super::grids::{GridCase, cases_for_storage, long_runs_case, pencil_case};

/// What field `f`'s elements hold beyond the global index: `f` times this
/// (exact in f32 for the small arrays here).
const FIELD_OFFSET: u64 = 1000;

/// An element type whose values are global indices, with a sentinel no
/// global index is: what no execution may write (every halo element, the
/// element past every output).
trait Value: Element + Copy + PartialEq + std::fmt::Debug {
    fn of(index: u64) -> Self;
    const SENTINEL: Self;
}

impl Value for f64 {
    fn of(index: u64) -> f64 {
        index as f64
    }
    const SENTINEL: f64 = -7.0;
}

impl Value for f32 {
    fn of(index: u64) -> f32 {
        index as f32
    }
    const SENTINEL: f32 = -7.0;
}

impl Value for i64 {
    fn of(index: u64) -> i64 {
        index as i64
    }
    const SENTINEL: i64 = -7;
}

impl Value for u64 {
    fn of(index: u64) -> u64 {
        index
    }
    const SENTINEL: u64 = u64::MAX;
}

/// The case with its sides swapped: y -> x where the case is x -> y.
fn swapped(c: GridCase) -> GridCase {
    GridCase {
        name: format!("{} swapped", c.name),
        written_shape: c.input.shape.iter().map(|&n| n as i64).collect(),
        input: c.output,
        output: c.input,
    }
}

/// The case's two layouts.
fn layouts(c: &GridCase) -> (Layout, Layout) {
    let shape: Vec<i64> = c.input.shape.iter().map(|&n| n as i64).collect();
    (c.input.layout(&shape), c.output.layout(&c.written_shape))
}

/// One field of a case: its input (inside `halo` sentinels when strided) and
/// its output (its box, then a sentinel), and what the output must hold.
struct Field<T: Value> {
    input: Vec<T>,
    /// The input's first element in `input`.
    first: usize,
    output: Vec<T>,
    want: Vec<T>,
    /// The input as it was made.
    made: Vec<T>,
}

impl<T: Value> Field<T> {
    /// Field `f` of `c` on this rank, dense.
    fn dense(w: &World, c: &GridCase, f: usize) -> Field<T> {
        let shift = f as u64 * FIELD_OFFSET;
        let input: Vec<T> = c
            .input
            .indices(w.rank)
            .iter()
            .map(|&g| T::of(g + shift))
            .collect();
        let want: Vec<T> = c
            .output
            .indices(w.rank)
            .iter()
            .map(|&g| T::of(g + shift))
            .collect();
        let output = vec![T::SENTINEL; want.len() + 1];
        Field {
            made: input.clone(),
            input,
            first: 0,
            output,
            want,
        }
    }

    /// The field's input and output as a fused execution takes them.
    fn as_fused(&mut self) -> FusedField<'_> {
        let n = self.want.len();
        FusedField::new(&self.input[self.first..], &mut self.output[..n])
    }

    /// Fails unless the output holds what it must (and the sentinel after it)
    /// and the input is unchanged.
    fn check(&self, w: &World, what: &str) {
        let n = self.want.len();
        if let Some(i) = (0..n).find(|&i| self.output[i] != self.want[i]) {
            let got = format!("element {i} is {:?} not {:?}", self.output[i], self.want[i]);
            w.fail(what, got);
        }
        if self.output[n] != T::SENTINEL {
            w.fail(what, "the sentinel after the output was written");
        }
        if self.input != self.made {
            w.fail(what, "the input (or its halo) changed");
        }
    }

    /// Refills the output with sentinels.
    fn clear(&mut self) {
        self.output.fill(T::SENTINEL);
    }
}

/// The plan of `c` for elements of `T`.
fn plan<T: Value>(w: &World, c: &GridCase) -> Plan {
    let (input, output) = layouts(c);
    Plan::from_layouts::<T, _>(&w.comm, &input, &output)
        .unwrap_or_else(|e| w.fail(&c.name, format!("planning: {e}")))
}

/// The velocity and the scalar cases, and every other one.
pub fn run(w: &World) {
    let velocity_case = pencil_case(w.size, &[7, 6, 5]);
    let scalar_case = swapped(pencil_case(w.size, &[9, 4, 3]));
    let velocity = plan::<f64>(w, &velocity_case);
    let scalar = plan::<f32>(w, &scalar_case);
    velocity_and_scalar(w, (&velocity_case, &velocity), (&scalar_case, &scalar));
    w.passed("fused: a velocity field and a scalar");
    strided_and_still(w, (&velocity_case, &velocity), (&scalar_case, &scalar));
    w.passed("fused: strided, dense and nothing to send");
    for c in cases_for_storage(w.size) {
        let p = plan::<u64>(w, &c);
        let fused = Fused::new(vec![&p, &scalar, &p])
            .unwrap_or_else(|e| w.fail(&c.name, format!("fusing with the scalar: {e}")));
        let (mut a, mut b) = (Field::<u64>::dense(w, &c, 0), Field::<u64>::dense(w, &c, 2));
        let mut t = Field::<f32>::dense(w, &scalar_case, 1);
        let fields = &mut [a.as_fused(), t.as_fused(), b.as_fused()];
        fused
            .execute(fields)
            .unwrap_or_else(|e| w.fail(&c.name, format!("fused with the scalar: {e}")));
        a.check(w, &c.name);
        t.check(w, &c.name);
        b.check(w, &c.name);
    }
    w.passed("fused: every grid case with the scalar");
    in_place(w, (&velocity_case, &velocity), (&scalar_case, &scalar));
    w.passed("fused: in place");
    owned(w, &velocity_case, &scalar_case);
    w.passed("fused: owned and shared plans");
    refusals(w, (&velocity_case, &velocity), (&scalar_case, &scalar));
    w.passed("fused: refusals");
}

/// The long-runs case (its streams read directly where the environment asks
/// for it, never framed) fused twice with a small scalar.
pub fn long_runs(w: &World) {
    let c = long_runs_case(w.size);
    let scalar_case = swapped(pencil_case(w.size, &[9, 4, 3]));
    let (long, scalar) = (plan::<u64>(w, &c), plan::<f32>(w, &scalar_case));
    let fused = Fused::new(vec![&long, &scalar, &long])
        .unwrap_or_else(|e| w.fail(&c.name, format!("fusing: {e}")));
    let (mut a, mut b) = (Field::<u64>::dense(w, &c, 0), Field::<u64>::dense(w, &c, 2));
    let mut t = Field::<f32>::dense(w, &scalar_case, 1);
    for pass in 0..2 {
        a.clear();
        b.clear();
        t.clear();
        let fields = &mut [a.as_fused(), t.as_fused(), b.as_fused()];
        let (result, usage) = measure(|| fused.execute(fields));
        result.unwrap_or_else(|e| w.fail(&c.name, format!("fused long runs: {e}")));
        if pass == 1 && usage.calls > 0 {
            w.fail(
                &c.name,
                format!("a repeated fused execution allocated {usage:?}"),
            );
        }
        a.check(w, "fused long runs");
        t.check(w, "fused long runs: the scalar");
        b.check(w, "fused long runs");
    }
    w.passed("fused: long runs with a scalar");
}

type Case<'a> = (&'a GridCase, &'a Plan);

/// [velocity x3, scalar] twice (the second allocating nothing), then the
/// velocity alone three times.
fn velocity_and_scalar(w: &World, (vc, v): Case<'_>, (sc, s): Case<'_>) {
    let fused = Fused::new(vec![v, v, v, s])
        .unwrap_or_else(|e| w.fail("velocity and scalar", format!("fusing: {e}")));
    if fused.plans().len() != 4 {
        w.fail("velocity and scalar", "plans() lists four plans");
    }
    let mut u: Vec<Field<f64>> = (0..3).map(|f| Field::dense(w, vc, f)).collect();
    let mut t = Field::<f32>::dense(w, sc, 3);
    for pass in 0..2 {
        u.iter_mut().for_each(Field::clear);
        t.clear();
        let [a, b, c] = &mut u[..] else {
            unreachable!()
        };
        let fields = &mut [a.as_fused(), b.as_fused(), c.as_fused(), t.as_fused()];
        let (result, usage) = measure(|| fused.execute(fields));
        result.unwrap_or_else(|e| w.fail("velocity and scalar", format!("pass {pass}: {e}")));
        if pass == 1 && usage.calls > 0 {
            let what = format!("a repeated fused execution allocated {usage:?}");
            w.fail("velocity and scalar", what);
        }
        u.iter()
            .for_each(|f| f.check(w, "velocity and scalar: a component"));
        t.check(w, "velocity and scalar: the scalar");
    }
    // Nothing travels framed on one rank; on two, the pair travels framed both
    // ways when both plans send and receive there (a few hundred bytes).
    let (vs, ss) = (v.stats(), s.stats());
    let both = [vs, ss]
        .iter()
        .all(|st| st.bytes_sent > 0 && st.bytes_received > 0);
    let expected = match w.size {
        1 => Some(0),
        2 if both => Some(2),
        _ => None,
    };
    let (pairs, bytes) = (fused.framed_pairs(), fused.framed_bytes());
    if expected.is_some_and(|n| n != pairs) || (pairs > 0) != (bytes > 0) {
        let what = format!("framed pairs {pairs} ({bytes} B), expected {expected:?}");
        w.fail("velocity and scalar", what);
    }
    let three = Fused::new(vec![v, v, v])
        .unwrap_or_else(|e| w.fail("the same plan three times", format!("fusing: {e}")));
    u.iter_mut().for_each(Field::clear);
    let [a, b, c] = &mut u[..] else {
        unreachable!()
    };
    three
        .execute(&mut [c.as_fused(), a.as_fused(), b.as_fused()])
        .unwrap_or_else(|e| w.fail("the same plan three times", e.to_string()));
    u.iter()
        .for_each(|f| f.check(w, "the same plan three times"));
}

/// The velocity's input inside a halo (a strided plan), the scalar, a plan
/// that sends nothing and the dense velocity.
fn strided_and_still(w: &World, (vc, v): Case<'_>, (sc, s): Case<'_>) {
    let ext: Vec<u64> = (0..3).map(|a| vc.input.block(w.rank, a).1).collect();
    let mut strides = [0i64; 3];
    let mut step = 1i64;
    let mut first = 0i64;
    for k in (0..3).rev() {
        strides[k] = step;
        first += step;
        step *= ext[k] as i64 + 2;
    }
    let (x, y) = layouts(vc);
    let halo = Plan::from_layouts_strided::<f64, _>(&w.comm, &x, Some(&strides), &y, None)
        .unwrap_or_else(|e| w.fail("strided", format!("planning: {e}")));
    let mut h = Field::<f64>::dense(w, vc, 0);
    let mut padded = vec![f64::SENTINEL; step as usize];
    for (flat, &value) in h.input.iter().enumerate() {
        let (mut rest, mut at) = (flat as u64, first);
        for k in (0..3).rev() {
            at += (rest % ext[k]) as i64 * strides[k];
            rest /= ext[k];
        }
        padded[at as usize] = value;
    }
    h.input = padded.clone();
    h.made = padded;
    h.first = first as usize;
    let still_case = pencil_case(w.size, &[5, 8, 3]);
    let still_case = GridCase {
        output: still_case.input.clone(),
        written_shape: vec![5, 8, 3],
        ..still_case
    };
    let still = plan::<i64>(w, &still_case);
    let stats = still.stats();
    if stats.bytes_sent + stats.bytes_received > 0 {
        w.fail(
            "nothing to send",
            format!("the identity plan moves bytes: {stats:?}"),
        );
    }
    let fused = Fused::new(vec![&halo, s, &still, v])
        .unwrap_or_else(|e| w.fail("strided", format!("fusing: {e}")));
    let mut t = Field::<f32>::dense(w, sc, 1);
    let mut n = Field::<i64>::dense(w, &still_case, 2);
    let mut u = Field::<f64>::dense(w, vc, 3);
    for _ in 0..2 {
        h.clear();
        t.clear();
        n.clear();
        u.clear();
        let fields = &mut [h.as_fused(), t.as_fused(), n.as_fused(), u.as_fused()];
        fused
            .execute(fields)
            .unwrap_or_else(|e| w.fail("strided", format!("executing: {e}")));
        h.check(w, "strided: the velocity in its halo");
        t.check(w, "strided: the scalar");
        n.check(w, "strided: nothing to send");
        u.check(w, "strided: the dense velocity");
    }
}

/// Field 0 in place on the last rank only, then on every rank: one buffer
/// as both sides, through the raw entry point (as a binding's in-place field);
/// the plans then run one after another.
fn in_place(w: &World, (vc, v): Case<'_>, (sc, s): Case<'_>) {
    for everywhere in [false, true] {
        let name = if everywhere {
            "in place everywhere"
        } else {
            "in place on one rank"
        };
        let here = everywhere || w.rank == w.size - 1;
        let fused = Fused::new(vec![v, s]).unwrap_or_else(|e| w.fail(name, e.to_string()));
        let mut u = Field::<f64>::dense(w, vc, 0);
        let mut t = Field::<f32>::dense(w, sc, 1);
        let mut buffer = u.input.clone();
        buffer.resize(u.input.len().max(u.want.len()), f64::SENTINEL);
        let result = if here {
            let at = buffer.as_mut_ptr().cast::<u8>();
            let bytes = std::mem::size_of_val(&buffer[..]);
            let t_out = &mut t.output[..t.want.len()];
            let raw = RawBatch {
                inputs: &[at.cast_const(), t.input.as_ptr().cast()],
                input_lens: &[bytes, std::mem::size_of_val(&t.input[..])],
                outputs: &[at, t_out.as_mut_ptr().cast()],
                capacities: &[bytes, std::mem::size_of_val(&t_out[..])],
            };
            // SAFETY: each buffer is valid for the lengths given, the first one
            // both sides of its field; nothing else uses them meanwhile.
            unsafe { fused.execute_raw_agreeing(&raw, None) }
        } else {
            fused.execute(&mut [u.as_fused(), t.as_fused()])
        };
        result.unwrap_or_else(|e| w.fail(name, e.to_string()));
        match here {
            true if buffer[..u.want.len()] != u.want[..] => w.fail(name, "the in-place field"),
            true => {}
            false => u.check(w, name),
        }
        t.check(w, name);
    }
}

/// Fused objects owning their plans (`Fused<Plan>`, `Fused<Rc<Plan>>` with
/// the caller's `Rc` let go first).
fn owned(w: &World, vc: &GridCase, sc: &GridCase) {
    let fused = Fused::new(vec![plan::<f64>(w, vc), plan::<f32>(w, sc)])
        .unwrap_or_else(|e| w.fail("owned plans", e.to_string()));
    let (mut u, mut t) = (Field::<f64>::dense(w, vc, 0), Field::<f32>::dense(w, sc, 1));
    fused
        .execute(&mut [u.as_fused(), t.as_fused()])
        .unwrap_or_else(|e| w.fail("owned plans", e.to_string()));
    u.check(w, "owned plans");
    t.check(w, "owned plans");
    let shared = Rc::new(plan::<f64>(w, vc));
    let fused = Fused::new(vec![Rc::clone(&shared), Rc::clone(&shared)])
        .unwrap_or_else(|e| w.fail("shared plans", e.to_string()));
    drop(shared);
    let (mut a, mut b) = (Field::<f64>::dense(w, vc, 0), Field::<f64>::dense(w, vc, 1));
    fused
        .execute(&mut [a.as_fused(), b.as_fused()])
        .unwrap_or_else(|e| w.fail("shared plans", e.to_string()));
    a.check(w, "shared plans");
    b.check(w, "shared plans");
}

/// Refusals with one status everywhere, nothing written; after them it works.
fn refusals(w: &World, (vc, v): Case<'_>, (sc, s): Case<'_>) {
    let fused = Fused::new(vec![v, v, s]).unwrap_or_else(|e| w.fail("refusals", e.to_string()));
    let (mut a, mut b) = (Field::<f64>::dense(w, vc, 0), Field::<f64>::dense(w, vc, 1));
    let mut t = Field::<f32>::dense(w, sc, 2);
    let result = fused.execute(&mut [a.as_fused(), t.as_fused()]);
    expect_everywhere(
        w,
        "two fields for three plans",
        &result,
        3,
        "2 fields for 3 fused plans",
    );
    let result = if w.rank == 0 {
        let mut other = Field::<f32>::dense(w, sc, 2);
        fused.execute(&mut [a.as_fused(), other.as_fused(), t.as_fused()])
    } else {
        fused.execute(&mut [a.as_fused(), b.as_fused(), t.as_fused()])
    };
    expect_everywhere(w, "an f32 field for an f64 plan", &result, 2, "field 1");
    let last = w.rank == w.size - 1;
    let short_here = last && !b.want.is_empty();
    if any(w, short_here) {
        let n = b.want.len() - usize::from(short_here);
        let result = fused.execute(&mut [
            a.as_fused(),
            FusedField::new(&b.input, &mut b.output[..n]),
            t.as_fused(),
        ]);
        expect_everywhere(w, "a short output", &result, 7, "field 1");
    }
    if any(w, !a.want.is_empty()) {
        let out = a.output.as_mut_ptr().cast::<u8>();
        let (in_bytes, out_bytes) = (
            std::mem::size_of_val(&a.input[..]),
            std::mem::size_of_val(&a.want[..]),
        );
        let t_out = &mut t.output[..t.want.len()];
        let raw = RawBatch {
            inputs: &[
                a.input.as_ptr().cast(),
                b.input.as_ptr().cast(),
                t.input.as_ptr().cast(),
            ],
            input_lens: &[in_bytes, in_bytes, std::mem::size_of_val(&t.input[..])],
            outputs: &[out, out, t_out.as_mut_ptr().cast()],
            capacities: &[out_bytes, out_bytes, std::mem::size_of_val(&t_out[..])],
        };
        // SAFETY: every buffer is valid for its length; two fields share one
        // output, which the library refuses before writing anything.
        let result = unsafe { fused.execute_raw_agreeing(&raw, None) };
        expect_everywhere(
            w,
            "two fields sharing an output",
            &result,
            8,
            "fields 0 and 1",
        );
    }
    if a.output
        .iter()
        .chain(&b.output)
        .any(|&x| x != f64::SENTINEL)
        || t.output.iter().any(|&x| x != f32::SENTINEL)
    {
        w.fail("refusals", "a refused execution wrote an output");
    }
    if w.size > 1 {
        let plans = if w.rank == 0 { vec![s, v] } else { vec![v, s] };
        let result = Fused::new(plans).map(drop);
        expect_everywhere(w, "another order on rank 0", &result, 6, "another order");
        names_one_rank_everywhere(w, &result);
    }
    let dup = w.comm.duplicate();
    let (x, y) = layouts(sc);
    let other = Plan::from_layouts::<f32, _>(&dup, &x, &y)
        .unwrap_or_else(|e| w.fail("two communicators", e.to_string()));
    let result = Fused::new(vec![v, &other]).map(drop);
    expect_everywhere(w, "plans of two communicators", &result, 12, "plans[1]");
    drop(other);
    drop(dup);
    let result = Fused::<&Plan>::new(Vec::new()).map(drop);
    expect_everywhere(w, "no plans", &result, 3, "nplans = 0");
    fused
        .execute(&mut [a.as_fused(), b.as_fused(), t.as_fused()])
        .unwrap_or_else(|e| w.fail("after the refusals", e.to_string()));
    a.check(w, "after the refusals");
    b.check(w, "after the refusals");
    t.check(w, "after the refusals");
}

/// True on every rank when `local` holds on some rank.
fn any(w: &World, local: bool) -> bool {
    use mpi::collective::{CommunicatorCollectives, SystemOperation};
    let mut any = 0i32;
    w.comm
        .all_reduce_into(&i32::from(local), &mut any, SystemOperation::max());
    any != 0
}

/// Checks that every rank failed with `code` and that the message of the rank
/// that holds the fault says `says`.
/// Checks that every rank's message names the same rank that fuses other
/// plans: rank 0, or the lowest of the others (whichever fingerprint is lower).
fn names_one_rank_everywhere(w: &World, result: &distreshape::Result<()>) {
    use mpi::collective::CommunicatorCollectives;
    let message = result.as_ref().err().map_or("", Error::detail);
    let named = ["rank 0 fuses", "rank 1 fuses"]
        .iter()
        .position(|says| message.contains(says))
        .map_or(-1, |at| at as i32);
    let mut everywhere = vec![0i32; w.size];
    w.comm.all_gather_into(&named, &mut everywhere[..]);
    if named < 0 || everywhere.iter().any(|&n| n != named) {
        w.fail(
            "another order on rank 0",
            format!("ranks named by rank {everywhere:?} (-1: none): {message:?}"),
        );
    }
}

fn expect_everywhere(
    w: &World,
    name: &str,
    result: &distreshape::Result<()>,
    code: i32,
    says: &str,
) {
    use mpi::collective::CommunicatorCollectives;
    let mine = result.as_ref().err().map_or(0, Error::code);
    let mut codes = vec![0i32; w.size];
    w.comm.all_gather_into(&mine, &mut codes[..]);
    if codes.iter().any(|&c| c != code) {
        w.fail(
            name,
            format!("codes by rank {codes:?}, expected {code} everywhere ({result:?})"),
        );
    }
    let message = result.as_ref().err().map_or("", Error::detail);
    if !message.contains(says) {
        w.fail(
            name,
            format!("the message does not say {says:?}: {message:?}"),
        );
    }
}
