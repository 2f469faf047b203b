//! Plans on strided local storage over MPI: every grid case of
//! tests/mpi/grids.rs with each rank's input inside a halo of two elements on
//! every axis and its output stored with the first axis fastest and a padding
//! of one on every axis; sentinels in every halo and padding element, every
//! output element checked against its global index, the gaps and the input
//! checked untouched, blocking and not. Also: ndarray views (a halo interior
//! in, a permuted view out) executed directly, refused strides agreed on every
//! rank, in place refused, too small an output refused.

use distreshape::{Error, Layout, Plan};
use ndarray::{Array, CowArray, IxDyn, SliceInfoElem};

use super::World;
use super::grids::{
    DIRECT_READS_VARIABLE, GridCase, cases_for_storage, kernel_allows_sibling_reads, long_runs_case,
};

/// What no execution may write, nor leave in an output element.
const SENTINEL: u64 = 0xEEEE_EEEE_EEEE_EEEE;

/// One side's storage: a buffer of sentinels holding the box at `strides`
/// from element `first`.
struct Stored {
    buffer: Vec<u64>,
    first: usize,
    strides: Vec<i64>,
    /// Buffer position of each box element, in the box's C order.
    positions: Vec<usize>,
}

impl Stored {
    /// A box of `extents` inside a halo of `halo` on every axis, C order.
    fn halo(extents: &[u64], halo: u64) -> Stored {
        let padded: Vec<u64> = extents.iter().map(|e| e + 2 * halo).collect();
        let mut strides = vec![0i64; extents.len()];
        let mut weight = 1i64;
        for k in (0..extents.len()).rev() {
            strides[k] = weight;
            weight *= padded[k] as i64;
        }
        let first: i64 = strides.iter().map(|s| s * halo as i64).sum();
        Stored::at(extents, strides, first as usize, weight as usize)
    }

    /// A box of `extents` in C order without gaps, with a sentinel after it.
    fn dense(extents: &[u64]) -> Stored {
        Stored::halo(extents, 0)
    }

    /// A box of `extents` in C order with a step of 2 along the last axis (the
    /// real parts of a complex array).
    fn stepped(extents: &[u64]) -> Stored {
        let mut strides = vec![0i64; extents.len()];
        let mut weight = 2i64;
        for k in (0..extents.len()).rev() {
            strides[k] = weight;
            weight *= extents[k] as i64;
        }
        Stored::at(extents, strides, 0, weight as usize)
    }

    /// A box of `extents` with the first axis fastest and the last slowest,
    /// every axis padded by one.
    fn reversed_padded(extents: &[u64]) -> Stored {
        let mut strides = vec![0i64; extents.len()];
        let mut weight = 1i64;
        for k in 0..extents.len() {
            strides[k] = weight;
            weight *= extents[k] as i64 + 1;
        }
        Stored::at(extents, strides, 0, weight as usize)
    }

    fn at(extents: &[u64], strides: Vec<i64>, first: usize, len: usize) -> Stored {
        let total: u64 = extents.iter().product();
        let positions = (0..total)
            .map(|flat| {
                let (mut rest, mut at) = (flat, first as i64);
                for k in (0..extents.len()).rev() {
                    at += (rest % extents[k]) as i64 * strides[k];
                    rest /= extents[k];
                }
                at as usize
            })
            .collect();
        Stored {
            buffer: vec![SENTINEL; len.max(first + 1)],
            first,
            strides,
            positions,
        }
    }

    fn fill(mut self, values: &[u64]) -> Stored {
        for (&at, &v) in self.positions.iter().zip(values) {
            self.buffer[at] = v;
        }
        self
    }

    /// The box elements, or the first gap written.
    fn read(&self) -> Result<Vec<u64>, String> {
        let mut gap = vec![true; self.buffer.len()];
        self.positions.iter().for_each(|&at| gap[at] = false);
        match (0..gap.len()).find(|&i| gap[i] && self.buffer[i] != SENTINEL) {
            Some(i) => Err(format!("gap element {i} was written")),
            None => Ok(self.positions.iter().map(|&at| self.buffer[at]).collect()),
        }
    }
}

/// Every grid case on strided storage, then the views and the refusals.
pub fn run(w: &World) {
    for c in cases_for_storage(w.size) {
        for nonblocking in [false, true] {
            check_case(w, &c, nonblocking);
        }
    }
    w.passed("grid layouts on strided storage");
    strided_output_reads_directly(w);
    views(w);
    shared_output_arrays(w);
    interleaved_views(w);
    refusals_are_agreed(w);
    w.passed("strided views and refusals");
}

/// The case's layouts and this rank's boxes.
fn layouts(c: &GridCase, rank: usize) -> (Layout, Layout, Vec<u64>, Vec<u64>) {
    let shape: Vec<i64> = c.input.shape.iter().map(|&n| n as i64).collect();
    let (input, output) = (c.input.layout(&shape), c.output.layout(&c.written_shape));
    let extents = |spec: &super::grids::Spec| -> Vec<u64> {
        (0..spec.shape.len())
            .map(|a| spec.block(rank, a).1)
            .collect()
    };
    let (in_box, out_box) = (extents(&c.input), extents(&c.output));
    (input, output, in_box, out_box)
}

/// Long runs from dense inputs, from inputs inside a halo and from inputs with
/// a step, into outputs stored first axis fastest and padded: every element
/// and gap checked, blocking and not. Such a plan reads directly by default
/// where the kernel allows it (from a strided input, each stream's box by the
/// sender's strides), unless [`DIRECT_READS_VARIABLE`] is `0`.
fn strided_output_reads_directly(w: &World) {
    let c = long_runs_case(w.size);
    let inputs: [fn(&[u64]) -> Stored; 3] = [
        Stored::dense,
        |extents| Stored::halo(extents, 2),
        Stored::stepped,
    ];
    for (input_storage, nonblocking) in inputs.into_iter().flat_map(|i| [(i, false), (i, true)]) {
        let plan = check_case_stored(w, &c, nonblocking, input_storage);
        let reads = plan.to_string().contains("direct reads");
        let refused = std::env::var(DIRECT_READS_VARIABLE).ok().as_deref() == Some("0");
        let expected =
            w.size > 1 && cfg!(direct_reads) && kernel_allows_sibling_reads() && !refused;
        if reads != expected {
            w.fail(
                &c.name,
                format!(
                    "into a strided output: expected direct reads {expected}, the plan says: {plan}"
                ),
            );
        }
    }
    w.passed("long runs between strided storages (direct reads by default)");
}

fn check_case(w: &World, c: &GridCase, nonblocking: bool) {
    check_case_stored(w, c, nonblocking, |extents| Stored::halo(extents, 2));
}

/// Executes case `c` from inputs stored by `input_storage` into outputs stored
/// first axis fastest and padded, checks every element and gap, and returns
/// the plan.
fn check_case_stored(
    w: &World,
    c: &GridCase,
    nonblocking: bool,
    input_storage: fn(&[u64]) -> Stored,
) -> Plan {
    let (input, output, in_box, out_box) = layouts(c, w.rank);
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let source = input_storage(&in_box).fill(&have);
    let mut target = Stored::reversed_padded(&out_box);
    let plan = Plan::from_layouts_strided::<u64, _>(
        &w.comm,
        &input,
        Some(&source.strides),
        &output,
        Some(&target.strides),
    )
    .unwrap_or_else(|e| w.fail(&c.name, format!("planning on strided storage: {e}")));
    let src = source.buffer[source.first..].as_ptr().cast::<u8>();
    let capacity = (target.buffer.len() - target.first) * 8;
    let dst = target.buffer[target.first..].as_mut_ptr().cast::<u8>();
    let in_len = (source.buffer.len() - source.first) * 8;
    // SAFETY: each pointer is its box's first element, with the span after it
    // in the buffer; the buffers are distinct and outlive the execution.
    let result = unsafe {
        match nonblocking {
            false => plan.execute_raw(src, dst, capacity),
            true => plan
                .begin_raw(src, in_len, dst, capacity)
                .and_then(|mut done| {
                    while !done {
                        done = plan.progress(false)?;
                    }
                    Ok(())
                }),
        }
    };
    let how = if nonblocking {
        "non-blocking"
    } else {
        "blocking"
    };
    result.unwrap_or_else(|e| w.fail(&c.name, format!("strided {how}: {e}")));
    let got = target.read().unwrap_or_else(|e| w.fail(&c.name, e));
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        let what = format!("strided {how}: element {i} is {} not {}", got[i], want[i]);
        w.fail(&c.name, what);
    }
    if source.read().ok() != Some(have.clone()) {
        w.fail(&c.name, "the input or its halo changed");
    }
    plan
}

/// x-pencils to y-pencils on ndarray views: the interior of a halo'd array in,
/// a view with permuted axes out, executed with no copy; a view whose strides
/// differ from the plan's is refused on every rank.
fn views(w: &World) {
    let p = w.size;
    let shape = [7u64, 6, 5];
    let c = super::grids::pencil_case(p, &shape);
    let (input, output, in_box, out_box) = layouts(&c, w.rank);
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let halo: Vec<usize> = in_box.iter().map(|&e| e as usize + 4).collect();
    let mut padded = Array::from_elem(IxDyn(&halo), SENTINEL);
    let interior: Vec<SliceInfoElem> = in_box
        .iter()
        .map(|&e| SliceInfoElem::from(2..2 + e as isize))
        .collect();
    let mut local = padded.slice_mut(interior.as_slice());
    local.iter_mut().zip(&have).for_each(|(x, &v)| *x = v);
    let base_shape = [
        out_box[1] as usize,
        out_box[0] as usize,
        out_box[2] as usize,
    ];
    let mut base = Array::from_elem(IxDyn(&base_shape), SENTINEL);
    let mut out = base.view_mut().permuted_axes(IxDyn(&[1, 0, 2]));
    let strides = |s: &[isize]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let (in_strides, out_strides) = (strides(local.strides()), strides(out.strides()));
    let plan = Plan::from_layouts_strided::<u64, _>(
        &w.comm,
        &input,
        Some(&in_strides),
        &output,
        Some(&out_strides),
    )
    .unwrap_or_else(|e| w.fail("views", format!("planning: {e}")));
    plan.execute_views(&local.view(), &mut out)
        .unwrap_or_else(|e| w.fail("views", format!("execute_views: {e}")));
    let got: Vec<u64> = out.iter().copied().collect();
    if got != want {
        w.fail("views", format!("got {got:?}, want {want:?}"));
    }
    let mut contiguous = Array::from_elem(
        IxDyn(&out_box.iter().map(|&e| e as usize).collect::<Vec<_>>()),
        0u64,
    );
    let refused = plan.execute_views(&local.view(), &mut contiguous);
    // A plan that moves nothing between ranks reports a buffer error on its
    // rank only; any other agrees it on every rank.
    let permuted = out_box[0] > 1 && out_box[1] > 1 && out_box[2] > 0;
    let refused_here = match plan.is_collective() {
        true => all_agree(w, permuted),
        false => permuted,
    };
    match refused {
        Err(Error::InvalidStrides(_)) if refused_here => {}
        Ok(()) if !refused_here => {}
        other => w.fail("views", format!("a view with other strides: {other:?}")),
    }
}

/// x-pencils into the interior of a halo'd `ArcArray` output whose data is
/// shared (a clone alive) and into a `CowArray` of a view: writing makes such
/// an array unique first, possibly by a compact copy at other strides, so the
/// execution either fills the array it writes, right, or refuses its strides
/// (on every rank where it agrees), and never writes past the memory it took,
/// nor into the clone; the input stays unchanged.
fn shared_output_arrays(w: &World) {
    let c = super::grids::pencil_case(w.size, &[7u64, 6, 5]);
    let (input, output, in_box, out_box) = layouts(&c, w.rank);
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let dims = |b: &[u64]| b.iter().map(|&e| e as usize).collect::<Vec<_>>();
    let local = Array::from_shape_vec(IxDyn(&dims(&in_box)), have.clone())
        .unwrap_or_else(|e| w.fail("shared outputs", format!("input: {e}")));
    let padded: Vec<usize> = out_box.iter().map(|&e| e as usize + 4).collect();
    let interior: Vec<SliceInfoElem> = out_box
        .iter()
        .map(|&e| SliceInfoElem::from(2..2 + e as isize))
        .collect();
    let shared = Array::from_elem(IxDyn(&padded), SENTINEL).into_shared();
    let clone = shared.clone();
    let mut arc = shared.slice_move(interior.as_slice());
    let viewed = Array::from_elem(IxDyn(&padded), SENTINEL);
    let mut cow = CowArray::from(viewed.slice(interior.as_slice()));
    let out_strides: Vec<i64> = arc.strides().iter().map(|&x| x as i64).collect();
    let plan =
        Plan::from_layouts_strided::<u64, _>(&w.comm, &input, None, &output, Some(&out_strides))
            .unwrap_or_else(|e| w.fail("shared outputs", format!("planning: {e}")));
    for (name, result, got) in [
        (
            "ArcArray",
            plan.execute_views(&local.view(), &mut arc),
            arc.iter().copied().collect::<Vec<_>>(),
        ),
        (
            "CowArray",
            plan.execute_views(&local.view(), &mut cow),
            cow.iter().copied().collect(),
        ),
    ] {
        match result {
            Ok(()) if got == want => {}
            Err(Error::InvalidStrides(_)) => {}
            other => w.fail("shared outputs", format!("{name}: {other:?}, got {got:?}")),
        }
    }
    if clone.iter().any(|&x| x != SENTINEL) || viewed.iter().any(|&x| x != SENTINEL) {
        w.fail(
            "shared outputs",
            "the clone or the viewed array was written",
        );
    }
    if local.iter().copied().collect::<Vec<_>>() != have {
        w.fail("shared outputs", "the input changed");
    }
}

/// Row slabs to column slabs of a (4p, 4p) array, the input in the even rows
/// and the output in the odd rows of one array (ndarray's `multi_slice_mut`):
/// their spans interleave but they share no element, so the execution runs;
/// every element is checked, and the rows neither holds untouched. An output
/// moved two rows down onto the input's rows is refused on every rank.
fn interleaved_views(w: &World) {
    use super::grids::Spec;
    use ndarray::s;
    let name = "interleaved views";
    let n = 4 * w.size as u64;
    let c = GridCase {
        name: name.into(),
        input: Spec::new(&[n, n], &[w.size], &[Some(0), None]),
        output: Spec::new(&[n, n], &[w.size], &[None, Some(0)]),
        written_shape: vec![n as i64, n as i64],
    };
    let (input, output, in_box, out_box) = layouts(&c, w.rank);
    let (have, want) = (c.input.indices(w.rank), c.output.indices(w.rank));
    let (in_rows, out_rows, cols) = (in_box[0] as usize, out_box[0] as usize, out_box[1] as usize);
    // Two rows more, for the output shifted below.
    let mut array = Array::from_elem((2 * in_rows.max(out_rows) + 2, n as usize), SENTINEL);
    let (mut evens, mut odds) =
        array.multi_slice_mut((s![0..2 * in_rows;2, ..], s![1..2 * out_rows;2, 0..cols]));
    evens.iter_mut().zip(&have).for_each(|(x, &v)| *x = v);
    let strides = |s: &[isize]| s.iter().map(|&x| x as i64).collect::<Vec<_>>();
    let (in_strides, out_strides) = (strides(evens.strides()), strides(odds.strides()));
    let plan = Plan::from_layouts_strided::<u64, _>(
        &w.comm,
        &input,
        Some(&in_strides),
        &output,
        Some(&out_strides),
    )
    .unwrap_or_else(|e| w.fail(name, format!("planning: {e}")));
    plan.execute_views(&evens.view(), &mut odds)
        .unwrap_or_else(|e| w.fail(name, format!("execute_views: {e}")));
    if odds.iter().copied().ne(want.iter().copied()) {
        w.fail(name, "wrong output elements");
    }
    if evens.iter().copied().ne(have.iter().copied()) {
        w.fail(name, "the input changed");
    }
    let beside =
        |(r, c): (usize, usize)| !(r % 2 == 0 && r < 2 * in_rows || r % 2 == 1 && c < cols);
    let touched = array
        .indexed_iter()
        .any(|(at, &x)| beside(at) && x != SENTINEL);
    if touched {
        w.fail(name, "an element of neither box was written");
    }
    let shares = in_rows >= 2 && out_rows >= 1 && cols >= 1;
    shifted_onto_the_input(w, &plan, &mut array, shares);
}

/// The output two rows down, in the even rows with the input: refused on
/// every rank where it agrees (`shares` on this rank: the output's first row
/// is the input's second), nothing written.
fn shifted_onto_the_input(
    w: &World,
    plan: &Plan,
    array: &mut Array<u64, ndarray::Ix2>,
    shares: bool,
) {
    let name = "interleaved views";
    let before = array.clone();
    let row = array.ncols();
    let capacity = (array.len() - 2 * row) * 8;
    let base = array.as_mut_ptr();
    // SAFETY: two rows into the array.
    let output = unsafe { base.add(2 * row) };
    // SAFETY: the input's span starts at the array's first element and the
    // output's span two rows further, both inside the array, which outlives
    // the execution.
    let result = unsafe { plan.execute_raw(base.cast_const().cast(), output.cast(), capacity) };
    let refused_here = match plan.is_collective() {
        true => all_agree(w, shares),
        false => shares,
    };
    match result {
        Err(Error::Aliasing(_)) if refused_here => {}
        Ok(()) if !refused_here => return,
        other => w.fail(
            name,
            format!("the output shifted onto the input: {other:?}"),
        ),
    }
    if *array != before {
        w.fail(name, "a refused execution wrote");
    }
}

/// True on every rank when `local` holds on some rank.
fn all_agree(w: &World, local: bool) -> bool {
    use mpi::collective::{CommunicatorCollectives, SystemOperation};
    let mut any = 0i32;
    w.comm
        .all_reduce_into(&i32::from(local), &mut any, SystemOperation::max());
    any != 0
}

/// Overlapping strides on the last rank only: every rank fails with
/// `DR_ERROR_INVALID_STRIDES`, the message naming the side, the axis, the
/// value and that rank. In place on a strided plan, and an output smaller than
/// its span, are refused.
fn refusals_are_agreed(w: &World) {
    let p = w.size as i64;
    let layout = Layout::new(&[4 * p, 6], &[p], &[Some(0), None]);
    let last = w.rank as i64 == p - 1;
    let strides: [i64; 2] = if last { [3, 1] } else { [6, 1] };
    let refused =
        Plan::from_layouts_strided::<u64, _>(&w.comm, &layout, Some(&strides), &layout, None);
    let name = "input_strides[0] = 3";
    match refused {
        Err(e @ Error::InvalidStrides(_))
            if e.to_string().contains(name)
                && e.to_string().contains(&format!("rank {}", p - 1)) => {}
        other => w.fail("refused strides", format!("{other:?}")),
    }
    let padded = [8i64, 1];
    let plan = Plan::from_layouts_strided::<u64, _>(&w.comm, &layout, None, &layout, Some(&padded))
        .unwrap_or_else(|e| w.fail("padded output", e));
    let mut buffer = vec![0u64; 64];
    match plan.execute_in_place(&mut buffer) {
        Err(Error::InvalidStrides(_)) => {}
        other => w.fail("in place on a strided plan", format!("{other:?}")),
    }
    let input = vec![0u64; 24];
    let mut small = vec![0u64; 24];
    match plan.execute(&input, &mut small) {
        Err(Error::BufferTooSmall(_)) => {}
        other => w.fail("an output smaller than its span", format!("{other:?}")),
    }
}
