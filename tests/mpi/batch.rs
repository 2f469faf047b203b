//! Batches over MPI: every grid case of tests/mpi/grids.rs moving 1 and 3
//! fields through one plan, field `f` holding the global indices plus `f` times
//! [`FIELD_OFFSET`]: out of place, overlapped (non-blocking), in place, and on
//! strided storage (a halo around every input, sentinels in it), every element
//! of every field checked, the inputs checked unchanged; a repeated batch
//! allocates nothing; a batch whose `k` differs between ranks, and an empty
//! one, fail on every rank with one status.

use distreshape::{Error, Layout, Plan};

use super::World;
use super::common::alloc::measure;
use super::grids::{GridCase, cases_for_storage, long_runs_case, pencil_case};

/// What field `f`'s elements hold beyond the global index: `f` times this.
const FIELD_OFFSET: u64 = 1 << 40;

/// What no execution may write: every halo element.
const SENTINEL: u64 = 0xEEEE_EEEE_EEEE_EEEE;

/// Every grid case and a pencil transpose as batches, then the refusals.
pub fn run(w: &World) {
    let mut cases = cases_for_storage(w.size);
    cases.push(pencil_case(w.size, &[6, 5, 4]));
    for c in &cases {
        for fields in [1, 3] {
            check_case(w, c, fields);
        }
        check_strided(w, c);
    }
    w.passed("batches of grid layouts");
    refusals_are_agreed(w, &cases[0]);
    w.passed("batch refusals");
}

/// The case's two layouts.
fn layouts(c: &GridCase) -> (Layout, Layout) {
    let shape: Vec<i64> = c.input.shape.iter().map(|&n| n as i64).collect();
    (c.input.layout(&shape), c.output.layout(&c.written_shape))
}

/// `indices` plus field `f`'s offset.
fn field(indices: &[u64], f: usize) -> Vec<u64> {
    indices
        .iter()
        .map(|g| g + f as u64 * FIELD_OFFSET)
        .collect()
}

/// Checks every field of `got` (one buffer each, the output first) against
/// this rank's output indices.
fn check_fields(w: &World, c: &GridCase, how: &str, got: &[Vec<u64>], want: &[u64]) {
    for (f, values) in got.iter().enumerate() {
        let expected = field(want, f);
        if let Some(i) = (0..want.len()).find(|&i| values[i] != expected[i]) {
            let what = format!(
                "{how}, field {f}: element {i} is {} not {}",
                values[i], expected[i]
            );
            w.fail(&c.name, what);
        }
    }
}

/// Batches of 1 and 3 fields of the long-runs case, whose streams move by
/// direct reads where the environment asks for them (every field read
/// directly, the repeated batch allocating nothing).
pub fn long_runs(w: &World) {
    let c = long_runs_case(w.size);
    for fields in [1, 3] {
        check_case(w, &c, fields);
    }
    w.passed("batches of long runs");
}

/// A batch of `fields` fields out of place (twice, the second allocating
/// nothing), overlapped and in place.
fn check_case(w: &World, c: &GridCase, fields: usize) {
    let (input, output) = layouts(c);
    let plan = Plan::from_layouts::<u64, _>(&w.comm, &input, &output)
        .unwrap_or_else(|e| w.fail(&c.name, format!("planning: {e}")));
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let inputs: Vec<Vec<u64>> = (0..fields).map(|f| field(&have, f)).collect();
    let ins: Vec<&[u64]> = inputs.iter().map(|v| &v[..]).collect();
    let mut outputs = vec![vec![u64::MAX; want.len()]; fields];
    for pass in 0..2 {
        let mut outs: Vec<&mut [u64]> = outputs.iter_mut().map(|v| &mut v[..]).collect();
        let (result, usage) = measure(|| plan.execute_batch(&ins, &mut outs));
        result.unwrap_or_else(|e| w.fail(&c.name, format!("batch of {fields}: {e}")));
        if pass == 1 && usage.calls > 0 {
            let what = format!("a repeated batch of {fields} allocated {usage:?}");
            w.fail(&c.name, what);
        }
        check_fields(w, c, "batch", &outputs, &want);
    }
    let mut overlapped = vec![vec![u64::MAX; want.len()]; fields];
    let mut outs: Vec<&mut [u64]> = overlapped.iter_mut().map(|v| &mut v[..]).collect();
    plan.execute_batch_overlapped(
        &ins,
        &mut outs,
        |execution| {
            while !execution.test().unwrap_or(true) {}
        },
    )
    .unwrap_or_else(|e| w.fail(&c.name, format!("overlapped batch of {fields}: {e}")));
    check_fields(w, c, "overlapped batch", &overlapped, &want);
    if inputs
        .iter()
        .enumerate()
        .any(|(f, v)| *v != field(&have, f))
    {
        w.fail(&c.name, "a batch changed its inputs");
    }
    let mut buffers: Vec<Vec<u64>> = (0..fields)
        .map(|f| {
            let mut buffer = field(&have, f);
            buffer.resize(have.len().max(want.len()), u64::MAX);
            buffer
        })
        .collect();
    let mut bufs: Vec<&mut [u64]> = buffers.iter_mut().map(|v| &mut v[..]).collect();
    plan.execute_batch_in_place(&mut bufs)
        .unwrap_or_else(|e| w.fail(&c.name, format!("batch of {fields} in place: {e}")));
    check_fields(w, c, "batch in place", &buffers, &want);
}

/// A batch of three fields on strided storage: each input inside a halo of
/// sentinels, blocking and overlapped.
fn check_strided(w: &World, c: &GridCase) {
    let (input, output) = layouts(c);
    let in_box: Vec<u64> = (0..c.input.shape.len())
        .map(|a| c.input.block(w.rank, a).1)
        .collect();
    let halo = Halo::new(&in_box);
    let plan =
        Plan::from_layouts_strided::<u64, _>(&w.comm, &input, Some(&halo.strides), &output, None)
            .unwrap_or_else(|e| w.fail(&c.name, format!("planning on strided storage: {e}")));
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let inputs: Vec<Vec<u64>> = (0..3).map(|f| halo.fill(&field(&have, f))).collect();
    let ins: Vec<&[u64]> = inputs.iter().map(|v| &v[halo.first..]).collect();
    for overlapped in [false, true] {
        let mut outputs = vec![vec![u64::MAX; want.len()]; 3];
        let mut outs: Vec<&mut [u64]> = outputs.iter_mut().map(|v| &mut v[..]).collect();
        let result = match overlapped {
            false => plan.execute_batch(&ins, &mut outs),
            true => plan.execute_batch_overlapped(&ins, &mut outs, |execution| {
                while !execution.test().unwrap_or(true) {}
            }),
        };
        result.unwrap_or_else(|e| w.fail(&c.name, format!("strided batch: {e}")));
        check_fields(w, c, "strided batch", &outputs, &want);
    }
    if (0..3).any(|f| inputs[f] != halo.fill(&field(&have, f))) {
        w.fail(&c.name, "a strided batch changed its inputs or their halos");
    }
}

/// A box inside a halo of one element on every axis, C order.
struct Halo {
    strides: Vec<i64>,
    first: usize,
    len: usize,
    extents: Vec<u64>,
}

impl Halo {
    fn new(extents: &[u64]) -> Halo {
        let mut strides = vec![0i64; extents.len()];
        let mut weight = 1i64;
        for k in (0..extents.len()).rev() {
            strides[k] = weight;
            weight *= extents[k] as i64 + 2;
        }
        let first = strides.iter().sum::<i64>() as usize;
        Halo {
            strides,
            first,
            len: weight as usize,
            extents: extents.to_vec(),
        }
    }

    /// A buffer of sentinels holding `values` (the box in C order) in the halo.
    fn fill(&self, values: &[u64]) -> Vec<u64> {
        let mut buffer = vec![SENTINEL; self.len.max(self.first + 1)];
        for (flat, &v) in values.iter().enumerate() {
            let (mut rest, mut at) = (flat as u64, self.first as i64);
            for k in (0..self.extents.len()).rev() {
                at += (rest % self.extents[k]) as i64 * self.strides[k];
                rest /= self.extents[k];
            }
            buffer[at as usize] = v;
        }
        buffer
    }
}

/// A batch whose `k` differs on rank 0 fails with
/// `DR_ERROR_INCONSISTENT_ARGUMENTS` on every rank, naming rank 0; an empty one
/// with `DR_ERROR_INVALID_SHAPE`; a short output in one field with
/// `DR_ERROR_BUFFER_TOO_SMALL`, naming the field; after each, a batch works.
fn refusals_are_agreed(w: &World, c: &GridCase) {
    let (input, output) = layouts(c);
    let plan = Plan::from_layouts::<u64, _>(&w.comm, &input, &output)
        .unwrap_or_else(|e| w.fail(&c.name, format!("planning: {e}")));
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let inputs: Vec<Vec<u64>> = (0..3).map(|f| field(&have, f)).collect();
    let mut outputs = vec![vec![u64::MAX; want.len()]; 3];
    let mut batch = |fields: usize, short: bool| {
        let ins: Vec<&[u64]> = inputs[..fields].iter().map(|v| &v[..]).collect();
        let mut outs: Vec<&mut [u64]> = outputs[..fields].iter_mut().map(|v| &mut v[..]).collect();
        if short && !want.is_empty() {
            let last = outs.len() - 1;
            let len = outs[last].len();
            outs[last] = &mut std::mem::take(&mut outs[last])[..len - 1];
        }
        plan.execute_batch(&ins, &mut outs)
    };
    if w.size > 1 {
        let fields = if w.rank == 0 { 2 } else { 3 };
        let result = batch(fields, false);
        expect_everywhere(w, "batch k differs", &result, 6, "k = 2 fields on rank 0");
    }
    let result = batch(0, false);
    expect_everywhere(w, "empty batch", &result, 3, "k = 0");
    let short = !want.is_empty();
    let result = batch(3, short);
    let any_short = all_or_any(w, short);
    if any_short {
        expect_everywhere(w, "short field", &result, 7, "field 2");
    }
    batch(3, false).unwrap_or_else(|e| w.fail(&c.name, format!("batch after refusals: {e}")));
    check_fields(w, c, "batch after refusals", &outputs, &want);
}

/// True when `local` holds on some rank.
fn all_or_any(w: &World, local: bool) -> bool {
    use mpi::collective::{CommunicatorCollectives, SystemOperation};
    let mut any = 0i32;
    w.comm
        .all_reduce_into(&i32::from(local), &mut any, SystemOperation::max());
    any != 0
}

/// Checks that every rank failed with `code` and that the message of the rank
/// that holds the fault says `says`.
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
