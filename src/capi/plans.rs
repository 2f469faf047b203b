//! Plans through the C ABI: the one-shot reshapes, creating (with or without
//! options), querying, executing and destroying plans. Thin: decoding, the panic
//! boundary and the statuses over [`Plan`].

use std::ffi::{c_char, c_void};

use crate::api::options::PlanOptions;
use crate::api::plan::{BatchBuffers, Plan};
use crate::capi::boundary::{c_buffers, caller_error, guard, guard_without_status};
use crate::capi::handles::{checked_args, dr_plan, orphan, plan_ref, store_plan};
use crate::capi::options::{configured, dr_options, dr_plan_options, options_arg};
use crate::capi::slab_args::{SlabArgs, SlabSide};
use crate::core::abi::{DtypeCode, StatusCode, dr_path, dr_status};
use crate::core::error::{Error, Result};
use crate::distribution::layout::Slab;
use crate::mpi::status::require_mpi;
use crate::planning::args::{Notation, ReshapeArgs};
use crate::planning::planner::Route;

/// The MPI communicator type of the `mpi.h` DistReshape was built with: the C
/// spelling of [`RawComm`](crate::mpi::comm::RawComm).
pub type MPI_Comm = crate::mpi::comm::RawComm;

/// What a plan does on this rank.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dr_plan_stats {
    /// The path taken (the same on every rank).
    pub path: dr_path,
    /// Bytes this rank sends.
    pub bytes_sent: i64,
    /// Bytes this rank receives.
    pub bytes_received: i64,
    /// Bytes this rank copies from input to output without MPI.
    pub bytes_copied_locally: i64,
    /// Number of ranks this rank sends to.
    pub peers_sent: i32,
    /// Number of ranks this rank receives from.
    pub peers_received: i32,
}

/// Reshapes in one call (collective over `comm`).
///
/// `buf` holds this rank's slab of the array of global shape `gshape` (`ndims`
/// extents, C order) split along `split` (or the whole array with
/// `DR_SPLIT_NONE`); `local_len` is this rank's slab length along `split` (ignored
/// when not split). `new_gshape` may hold one -1. The result, balanced along
/// `new_split`, is written to `out`, which holds `out_capacity` elements and may
/// equal `buf` (in place; the buffer must then hold both). On success
/// `*new_local_elems` is the number of elements written. Pointers to zero elements
/// may be NULL.
///
/// # Safety
/// `buf` readable for this rank's input, `out` writable for `out_capacity` elements,
/// shapes readable for their dimension counts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_reshape(
    buf: *const c_void,
    dtype: DtypeCode,
    ndims: i32,
    gshape: *const i64,
    split: i32,
    comm: MPI_Comm,
    local_len: i64,
    new_ndims: i32,
    new_gshape: *const i64,
    new_split: i32,
    out: *mut c_void,
    out_capacity: i64,
    new_local_elems: *mut i64,
) -> dr_status {
    // SAFETY: the same contract; -1 is the balanced output.
    unsafe {
        dr_reshape_to(
            buf,
            dtype,
            ndims,
            gshape,
            split,
            comm,
            local_len,
            new_ndims,
            new_gshape,
            new_split,
            -1,
            out,
            out_capacity,
            new_local_elems,
        )
    }
}

/// Reshapes in one call (collective over `comm`) into the output distribution of
/// `new_local_len`: -1 for the balanced one (as `dr_reshape`), else this rank's
/// number of rows along `new_split` (the values of all ranks must add up; ignored
/// when the output is not split). Otherwise as `dr_reshape`: every outcome is
/// agreed, the same status on every rank.
///
/// # Safety
/// As `dr_reshape`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_reshape_to(
    buf: *const c_void,
    dtype: DtypeCode,
    ndims: i32,
    gshape: *const i64,
    split: i32,
    comm: MPI_Comm,
    local_len: i64,
    new_ndims: i32,
    new_gshape: *const i64,
    new_split: i32,
    new_local_len: i64,
    out: *mut c_void,
    out_capacity: i64,
    new_local_elems: *mut i64,
) -> dr_status {
    let input = SlabSide::new(ndims, gshape, split);
    let output = SlabSide::new(new_ndims, new_gshape, new_split);
    let args = SlabArgs::new(dtype, input, output, local_len, new_local_len);
    // SAFETY: as documented.
    guard(|| unsafe { one_shot(comm, args, (buf, out, out_capacity), new_local_elems) })
}

/// Plans `args` (in C notation) and executes the plan once, every outcome agreed;
/// writes the output's element count to `*new_local_elems`.
///
/// # Safety
/// As `dr_reshape`.
unsafe fn one_shot(
    comm: MPI_Comm,
    args: SlabArgs,
    (buf, out, out_capacity): (*const c_void, *mut c_void, i64),
    new_local_elems: *mut i64,
) -> Result<()> {
    // SAFETY: the shapes are readable (documented).
    let decoded = unsafe { args.decode(Notation::C) };
    let plan = Plan::create(comm, decoded, PlanOptions::default())?.agreeing_always();
    let missing = new_local_elems
        .is_null()
        .then(|| Error::NullPointer("new_local_elems is NULL".into()));
    let (b, pre) = c_buffers(&plan, (buf, None), (out, out_capacity));
    // SAFETY: buffers as documented; sizes are checked against the plan.
    unsafe {
        plan.execute_checked(b.input, b.input_len, b.output, b.capacity, missing.or(pre))?;
        *new_local_elems = plan.output_elems() as i64;
    }
    Ok(())
}

/// Plans a reshape (collective over `comm`); arguments as in `dr_reshape`, plus
/// `new_local_len`: -1 for the balanced distribution, else this rank's number of
/// rows along `new_split` (the values of all ranks must add up). When the output is
/// not split (`new_split` is `DR_SPLIT_NONE`), `new_local_len` is ignored, whatever
/// its value on each rank. On success `*plan`
/// holds a plan to execute any number of times and to free with `dr_plan_destroy`.
/// The first plan on `comm` duplicates it (collectively) and caches the duplicate
/// on it as an attribute; later plans share that duplicate, each with its own
/// tags, so any number of plans may be alive. `comm` itself is never freed, and
/// MPI calls on it run with MPI_ERRORS_RETURN (its handler is restored). Plans on
/// one communicator are created and executed in the same order on every rank and
/// never from two threads at once. Everything an execution out of place, or in
/// place on the local path, needs (the message list within the plan's budget, the
/// MPI requests, the message slots) is allocated here, so an allocation failure is
/// agreed here and those executions allocate nothing; in place on the exchange
/// path see `dr_plan_execute`. Below `MPI_THREAD_SERIALIZED` the plan must be
/// created, executed and destroyed on the main thread.
///
/// # Safety
/// Shapes readable for their dimension counts; `plan` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_create(
    dtype: DtypeCode,
    ndims: i32,
    gshape: *const i64,
    split: i32,
    comm: MPI_Comm,
    local_len: i64,
    new_ndims: i32,
    new_gshape: *const i64,
    new_split: i32,
    new_local_len: i64,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: the same contract; NULL options are the defaults.
    unsafe {
        dr_plan_create_with_options(
            dtype,
            ndims,
            gshape,
            split,
            comm,
            local_len,
            new_ndims,
            new_gshape,
            new_split,
            new_local_len,
            std::ptr::null(),
            plan,
        )
    }
}

/// Plans a reshape as `dr_plan_create` does, with the tuning knobs of `*options`
/// (from `dr_plan_options_default`, then changed; NULL for the defaults). A field
/// out of its range is `DR_ERROR_INVALID_OPTION` on every rank, agreed like any
/// argument error, the message naming the field, its value and the rank. The
/// options may differ between ranks: the message limits (`max_message_bytes`,
/// `slot_bytes`, `run_budget`) are then the smallest any rank sets, on every
/// rank (both ends of a message cut it alike), the window the narrowest any
/// rank's makes, and `in_place_budget` each rank's own.
///
/// # Safety
/// As `dr_plan_create`; `options` NULL or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_create_with_options(
    dtype: DtypeCode,
    ndims: i32,
    gshape: *const i64,
    split: i32,
    comm: MPI_Comm,
    local_len: i64,
    new_ndims: i32,
    new_gshape: *const i64,
    new_split: i32,
    new_local_len: i64,
    options: *const dr_plan_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    let input = SlabSide::new(ndims, gshape, split);
    let output = SlabSide::new(new_ndims, new_gshape, new_split);
    let args = SlabArgs::new(dtype, input, output, local_len, new_local_len);
    // SAFETY: as documented.
    guard(|| unsafe { create_plan(comm, args.decode(Notation::C), options_arg(options), plan) })
}

/// `dr_plan_create` with every option of `*options` (NULL for the defaults),
/// made with `dr_options_create` and set with `dr_options_set`: a value it
/// refused on any rank is `DR_ERROR_INVALID_OPTION` on every rank, the message
/// naming the option, its value and the rank. The options may differ between
/// ranks, as for `dr_plan_create_with_options`.
///
/// # Safety
/// As `dr_plan_create`; `options` NULL or from `dr_options_create` and not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_create_configured(
    dtype: DtypeCode,
    ndims: i32,
    gshape: *const i64,
    split: i32,
    comm: MPI_Comm,
    local_len: i64,
    new_ndims: i32,
    new_gshape: *const i64,
    new_split: i32,
    new_local_len: i64,
    options: *const dr_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    let input = SlabSide::new(ndims, gshape, split);
    let output = SlabSide::new(new_ndims, new_gshape, new_split);
    let args = SlabArgs::new(dtype, input, output, local_len, new_local_len);
    // SAFETY: as documented.
    guard(|| unsafe { create_plan(comm, args.decode(Notation::C), configured(options), plan) })
}

/// Plans `args` with `options` (agreeing an error in either, or a NULL `plan`,
/// like any argument error) and stores the plan in `*plan`.
///
/// # Safety
/// `plan` NULL or writable.
pub(crate) unsafe fn create_plan(
    comm: MPI_Comm,
    args: Result<ReshapeArgs>,
    options: Result<PlanOptions>,
    plan: *mut *mut dr_plan,
) -> Result<()> {
    let checked = checked_args(args, &options, plan);
    let created = Plan::create(comm, checked, options.unwrap_or_default())?;
    // SAFETY: plan is non-null (checked and agreed above).
    unsafe { store_plan(created, plan) };
    Ok(())
}

/// The plan's output (local, not collective): the resolved new global shape
/// (`new_ndims` values), this rank's rows along `new_split` (-1 when the output is
/// not split) and this rank's number of output elements. Any output pointer may be
/// NULL to skip it.
///
/// # Safety
/// `plan` from `dr_plan_create`; non-NULL outputs writable (`new_gshape` for
/// `new_ndims` values).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_output(
    plan: *const dr_plan,
    new_gshape: *mut i64,
    new_local_len: *mut i64,
    new_local_elems: *mut i64,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let shape = plan.new_shape();
        // SAFETY: non-null outputs are writable (new_gshape for new_ndims values).
        unsafe {
            if !new_gshape.is_null() {
                for (i, &n) in shape.iter().enumerate() {
                    *new_gshape.add(i) = n as i64;
                }
            }
            if !new_local_len.is_null() {
                *new_local_len = plan.output_rows().map_or(-1, |r| r as i64);
            }
            if !new_local_elems.is_null() {
                *new_local_elems = plan.output_elems() as i64;
            }
        }
        Ok(())
    })
}

/// This rank's input slab (local): its rows along `split` (`*local_len`), the
/// global index of its first row (`*offset`, 0-based), both -1 when the input is
/// not split, and its number of elements. Any output pointer may be NULL.
///
/// # Safety
/// `plan` from `dr_plan_create`; non-NULL outputs writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_input_slab(
    plan: *const dr_plan,
    local_len: *mut i64,
    offset: *mut i64,
    local_elems: *mut i64,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let elems = plan.input_elems() as u64;
        // SAFETY: non-null outputs are writable.
        let outputs = SlabOutputs {
            len: local_len,
            offset,
            elems: local_elems,
        };
        // SAFETY: non-null outputs are writable (documented).
        unsafe { write_slab(plan.input_slab(), elems, outputs) };
        Ok(())
    })
}

/// This rank's output slab (local): its rows along `new_split`
/// (`*new_local_len`), the global index of its first row (`*new_offset`,
/// 0-based; with explicit target lengths, the sum of the lower ranks' lengths),
/// both -1 when the output is not split, and its number of elements (what `out`
/// must hold). Any output pointer may be NULL.
///
/// # Safety
/// `plan` from `dr_plan_create`; non-NULL outputs writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_output_slab(
    plan: *const dr_plan,
    new_local_len: *mut i64,
    new_offset: *mut i64,
    new_local_elems: *mut i64,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let elems = plan.output_elems() as u64;
        let outputs = SlabOutputs {
            len: new_local_len,
            offset: new_offset,
            elems: new_local_elems,
        };
        // SAFETY: non-null outputs are writable (documented).
        unsafe { write_slab(plan.output_slab(), elems, outputs) };
        Ok(())
    })
}

/// Where a slab query writes: any of the pointers may be NULL.
struct SlabOutputs {
    len: *mut i64,
    offset: *mut i64,
    elems: *mut i64,
}

/// Writes a slab's rows and first row (-1 each when not a slab) and the element
/// count to the non-NULL pointers of `outputs`.
///
/// # Safety
/// Non-NULL pointers writable.
unsafe fn write_slab(slab: Option<Slab>, elems: u64, outputs: SlabOutputs) {
    let (first, rows) = slab.map_or((-1, -1), |s| (s.offset as i64, s.len as i64));
    let pairs = [
        (outputs.len, rows),
        (outputs.offset, first),
        (outputs.elems, elems as i64),
    ];
    for (out, value) in pairs {
        if !out.is_null() {
            // SAFETY: non-null outputs are writable (documented).
            unsafe { *out = value };
        }
    }
}

/// Executes a plan (collective over the plan's ranks): reads this rank's input from
/// `in` and writes its output to `out` (`out_capacity` elements). `out` may equal
/// `in` (in place: the buffer must hold both); when nothing moves on this rank, in
/// place touches nothing. A plan that moves nothing between ranks (bytes_sent and
/// bytes_received 0 on every rank, e.g. the seed case with balanced input) executes
/// without communicating: it is then local, and a buffer error is reported only on
/// the rank that made it. A NULL plan is reported locally only. After
/// `MPI_Finalize` every plan returns `DR_ERROR_MPI_NOT_INITIALIZED` without
/// calling MPI (on every rank alike). Otherwise the ranks
/// agree on the outcome with one `MPI_Allreduce` of one int64 before any data
/// moves, then exchange in pairwise windows. Out of place, and in place on the
/// local path, nothing is allocated. In place on the exchange path the data moves
/// in rounds that stage at most the larger of 64 MiB and a tenth of the rank's
/// buffer: the first such execution makes the schedule and allocates its staging,
/// which the plan keeps (one more `MPI_Allreduce`), so later ones allocate
/// nothing; `dr_plan_describe` then tells the rounds and the staging, or that
/// every execution in place instead allocates a pack buffer of exactly the bytes
/// that leave the rank, freed when it completes (when every rank sends at most
/// 1 MiB, or no bounded schedule applies); its allocation failure is agreed like
/// any other. While any rank executes in place there, every rank follows the
/// rounds. A call from a thread MPI's thread level does not allow (below
/// `MPI_THREAD_SERIALIZED`, any but the main thread) returns `DR_ERROR_MPI` on that
/// rank only, without calling MPI: call again from the main thread.
///
/// # Safety
/// `plan` from `dr_plan_create`; `in` readable for this rank's input, `out`
/// writable for `out_capacity` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute(
    plan: *const dr_plan,
    r#in: *const c_void,
    out: *mut c_void,
    out_capacity: i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute(plan, (r#in, None), (out, out_capacity)) })
}

/// Executes a plan on a batch of `k` fields (collective, every rank with the
/// same `k`): field `i` reads `in[i]` and writes `out[i]` (`out_capacity`
/// elements each), each as `dr_plan_execute` would, every field with the plan's
/// layouts, element type and storages. Out of place on every rank the fields
/// move in one exchange: a message whose part of one field is under 32 KiB
/// carries every field's part (no more messages per peer than one array's while
/// the fields' parts of a message fit the plan's message caps; beyond, each
/// field's part is cut within the caps divided by `k`), a longer one travels as
/// one message per field, straight between the fields' buffers. With `in[i] == out[i]` for some field on some rank, the
/// fields run one after another, each as `dr_plan_execute` runs it (in place
/// within the plan's in-place bounds). `k = 1` behaves as `dr_plan_execute`.
/// The checks of every field's buffers, `k` (below 1: `DR_ERROR_INVALID_SHAPE`;
/// another rank's `k`: `DR_ERROR_INCONSISTENT_ARGUMENTS`), NULL arrays
/// (`DR_ERROR_NULL_POINTER`) and fields sharing memory (`DR_ERROR_ALIASING`)
/// are agreed in the execution's one `MPI_Allreduce` (a second one only when
/// the ranks' `k` differ): every rank returns the same status, the message
/// naming the argument, its value and the rank. Out of place this allocates
/// nothing once a batch of as many fields has run: the first batch of `k`
/// fields grows the plan's message slots to hold `k` fields' parts of a packed
/// message (within the plan's slot budget, `DR_OPTION_SLOT_BYTES`), and more
/// than 8 fields' pointers are listed once, kept for later batches. The
/// arrays `in` and `out` are read before this returns.
///
/// # Safety
/// `plan` from `dr_plan_create`; `in` and `out` NULL or holding `k` pointers;
/// each `in[i]` readable for this rank's input, each `out[i]` writable for
/// `out_capacity` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_batch(
    plan: *const dr_plan,
    k: i64,
    r#in: *const *const c_void,
    out: *const *mut c_void,
    out_capacity: i64,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        // SAFETY: as documented.
        let batch = CBatch::new(k, r#in, out, out_capacity);
        // SAFETY: as documented.
        unsafe { execute_c_batch(plan, &batch, None, true) }.map(drop)
    })
}

/// Executes a plan on a batch as `dr_plan_execute_batch` does, with the length
/// of each field's input (`in_elems` elements, checked as in
/// `dr_plan_execute_sized`), first agreeing with every rank on an error the
/// caller found on this rank before calling, as `dr_plan_execute_agreeing`
/// does: `caller_status` (`DR_SUCCESS` when it found none) with
/// `caller_message` (NULL for the status's text), agreed with the batch's
/// checks in its one `MPI_Allreduce`. With a caller's error on any rank
/// nothing is read or written, and this rank's `in` and `out` may be NULL. The
/// C++ and Fortran batches run on it, reporting the containers or arrays they
/// check.
///
/// # Safety
/// As `dr_plan_execute_batch`, each `in[i]` readable for `in_elems` elements;
/// `caller_message` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_batch_agreeing(
    plan: *const dr_plan,
    k: i64,
    r#in: *const *const c_void,
    in_elems: i64,
    out: *const *mut c_void,
    out_capacity: i64,
    caller_status: StatusCode,
    caller_message: *const c_char,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let caller = unsafe { caller_error(caller_status, caller_message) };
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let batch = CBatch {
            in_elems: Some(in_elems),
            ..CBatch::new(k, r#in, out, out_capacity)
        };
        // SAFETY: as documented.
        unsafe { execute_c_batch(plan, &batch, caller, true) }.map(drop)
    })
}

/// A batch as the C ABI passes it: `k` fields, the arrays of their inputs
/// and outputs, each input's length (`None`: the plan's own) and each
/// output's capacity, in elements.
#[derive(Clone, Copy)]
pub(crate) struct CBatch {
    /// The number of fields, as the caller gave it.
    pub(crate) k: i64,
    /// The array of the fields' inputs (NULL, or `k` pointers).
    pub(crate) inputs: *const *const c_void,
    /// Each field's input length, or `None` for the plan's input span.
    pub(crate) in_elems: Option<i64>,
    /// The array of the fields' outputs (NULL, or `k` pointers).
    pub(crate) outputs: *const *mut c_void,
    /// Each field's output capacity.
    pub(crate) out_capacity: i64,
}

impl CBatch {
    /// A batch whose inputs are taken on trust (the plan's input span).
    pub(crate) fn new(
        k: i64,
        inputs: *const *const c_void,
        outputs: *const *mut c_void,
        out_capacity: i64,
    ) -> CBatch {
        CBatch {
            k,
            inputs,
            in_elems: None,
            outputs,
            out_capacity,
        }
    }
}

/// Runs (`blocking`) or starts `batch` on `plan`, agreeing `pre` (an argument
/// error found first) with the checks; returns whether it completed.
///
/// # Safety
/// As `dr_plan_execute_batch_agreeing`.
pub(crate) unsafe fn execute_c_batch(
    plan: &Plan,
    batch: &CBatch,
    pre: Option<Error>,
    blocking: bool,
) -> Result<bool> {
    let CBatch {
        k,
        inputs: r#in,
        in_elems,
        outputs: out,
        out_capacity,
    } = *batch;
    let (lens, first) = c_buffers(
        plan,
        (std::ptr::null(), in_elems),
        (std::ptr::null_mut(), out_capacity),
    );
    let fields = usize::try_from(k).unwrap_or(0);
    let missing = |name: &str, array: bool| {
        (array && fields > 0)
            .then(|| Error::NullPointer(format!("{name} is NULL with k = {k} fields")))
    };
    let pre = (pre.or(first))
        .or_else(|| missing("in", r#in.is_null()))
        .or_else(|| missing("out", out.is_null()));
    let fields = if pre.is_some() { 0 } else { fields };
    // SAFETY: without an error found, both arrays hold `k` pointers (documented);
    // a `*const c_void` has the layout of a `*const u8`.
    let (inputs, outputs) = unsafe {
        (
            slice_or_empty(r#in.cast::<*const u8>(), fields),
            slice_or_empty(out.cast::<*mut u8>(), fields),
        )
    };
    let batch = BatchBuffers {
        inputs,
        outputs,
        lens: &|_| (lens.input_len, lens.capacity),
    };
    // SAFETY: buffers as documented; sizes are checked against the plan.
    unsafe { plan.launch_batch(k, &batch, pre, blocking) }
}

/// The `len` items at `items`, or none when `len` is 0.
///
/// # Safety
/// `items` readable for `len` items when `len` > 0.
pub(crate) unsafe fn slice_or_empty<'a, P>(items: *const P, len: usize) -> &'a [P] {
    match len {
        0 => &[],
        // SAFETY: as documented.
        _ => unsafe { std::slice::from_raw_parts(items, len) },
    }
}

/// Executes a plan as `dr_plan_execute` does, with the length of the input: `in`
/// holds `in_elems` elements. An input shorter than this rank's
/// (`dr_plan_input_slab`), or a negative `in_elems`, is `DR_ERROR_BUFFER_TOO_SMALL`,
/// agreed like a short output: on every rank unless the plan moves nothing
/// between ranks, and nothing is read.
///
/// # Safety
/// `plan` from `dr_plan_create`; `in` readable for `in_elems` elements, `out`
/// writable for `out_capacity` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_sized(
    plan: *const dr_plan,
    r#in: *const c_void,
    in_elems: i64,
    out: *mut c_void,
    out_capacity: i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute(plan, (r#in, Some(in_elems)), (out, out_capacity)) })
}

/// Executes `plan` (the input's length `None` for the plan's own).
///
/// # Safety
/// As `dr_plan_execute_sized`.
unsafe fn execute(
    plan: *const dr_plan,
    input: (*const c_void, Option<i64>),
    output: (*mut c_void, i64),
) -> Result<()> {
    // SAFETY: as documented.
    let plan = unsafe { plan_ref(plan) }?;
    let (b, pre) = c_buffers(plan, input, output);
    // SAFETY: buffers as documented; sizes are checked against the plan.
    unsafe { plan.execute_checked(b.input, b.input_len, b.output, b.capacity, pre) }
}

/// Executes a plan as `dr_plan_execute_sized` does, first agreeing with every
/// rank on an error the caller found on this rank before calling (its own checks,
/// an allocation that failed): `caller_status` (`DR_SUCCESS` when it found none)
/// with `caller_message` (NULL for the status's text). Collective on every plan,
/// even one that moves nothing between ranks: every rank returns the same status,
/// with the message of the lowest failing rank (naming that rank), the caller's
/// error and the library's checks agreed in the one `MPI_Allreduce` the execution
/// pays. With a caller's error on any rank nothing is read or written, and this
/// rank's buffers may be NULL. A `caller_status` that is not a `dr_status` is
/// agreed as `DR_ERROR_INTERNAL`. The C++ one-shot `reshape` runs on it.
///
/// # Safety
/// As `dr_plan_execute_sized`; `caller_message` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_agreeing(
    plan: *const dr_plan,
    r#in: *const c_void,
    in_elems: i64,
    out: *mut c_void,
    out_capacity: i64,
    caller_status: StatusCode,
    caller_message: *const c_char,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let caller = unsafe { caller_error(caller_status, caller_message) };
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let (b, pre) = c_buffers(plan, (r#in, Some(in_elems)), (out, out_capacity));
        // SAFETY: buffers as documented; sizes are checked against the plan.
        unsafe {
            plan.execute_raw_agreeing(b.input, b.input_len, b.output, b.capacity, caller.or(pre))
        }
    })
}

/// What the plan does on this rank (local).
///
/// # Safety
/// `plan` from `dr_plan_create`; `stats` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_stats_get(
    plan: *const dr_plan,
    stats: *mut dr_plan_stats,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let s = plan.stats();
        let out = dr_plan_stats {
            path: match s.path {
                Route::Local => dr_path::DR_PATH_LOCAL,
                Route::Exchange => dr_path::DR_PATH_EXCHANGE,
            },
            bytes_sent: s.bytes_sent as i64,
            bytes_received: s.bytes_received as i64,
            bytes_copied_locally: s.bytes_copied_locally as i64,
            peers_sent: s.peers_sent as i32,
            peers_received: s.peers_received as i32,
        };
        // SAFETY: stats is writable when non-null.
        unsafe { stats.as_mut() }
            .map(|slot| *slot = out)
            .ok_or_else(|| Error::NullPointer("stats is NULL".into()))
    })
}

/// A human-readable description of what the plan does on this rank (local), written
/// NUL-terminated into `buf` of `len` bytes and cut (on a UTF-8 character boundary)
/// if it does not fit. Like `snprintf`, `*needed` (when not NULL) receives the
/// length of the whole description without its NUL, so a caller can ask with
/// `buf = NULL, len = 0` first and then allocate `needed + 1` bytes.
///
/// # Safety
/// `plan` from `dr_plan_create`; `buf` writable for `len` bytes (or NULL when `len`
/// is 0); `needed` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_describe(
    plan: *const dr_plan,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        if buf.is_null() && len > 0 {
            return Err(Error::NullPointer(format!("buf is NULL but len = {len}")));
        }
        let text = plan.to_string();
        if len > 0 {
            let cut = crate::mpi::agree::truncate(&text, len - 1);
            // SAFETY: buf is writable for len bytes, and cut holds at most len - 1.
            unsafe {
                std::ptr::copy_nonoverlapping(cut.as_ptr(), buf.cast::<u8>(), cut.len());
                *buf.add(cut.len()) = 0;
            }
        }
        if !needed.is_null() {
            // SAFETY: needed is writable (documented).
            unsafe { *needed = text.len() };
        }
        Ok(())
    })
}

/// Frees a plan. NULL is a no-op. Call it on every rank of the plan: freeing the
/// last plan of a communicator the caller has already freed also frees the
/// library's duplicate of it, which is collective in MPI. A fused object made
/// from the plan (`dr_fused_create`) keeps it: the plan then lives on, without
/// its handle, until the last such object is destroyed (`dr_fused_destroy`).
///
/// An execution in flight (`dr_plan_execute_begin` without its completion) is
/// completed first: this rank waits for it as `dr_request_wait` would, so its
/// buffers are written and may be released once this returns; the other ranks'
/// executions complete as they test, wait for or destroy theirs (every rank
/// destroying its plan with the execution in flight completes it, without a
/// hang). Its request is then over, and no longer refers to the plan:
/// `dr_request_test` or `dr_request_wait` on it returns at once with the
/// execution's outcome, sets it to NULL and frees it (call one of them, or the
/// request's few bytes are lost). `dr_plan_free` does the same, returns that
/// outcome and sets the caller's pointer to NULL. On a thread the thread level
/// does not allow, it calls no MPI function and leaks the plan's reference to the
/// private communicator (and, with an execution in flight, its memory).
///
/// # Safety
/// `plan` from `dr_plan_create`, destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_destroy(plan: *mut dr_plan) {
    // SAFETY: as documented.
    guard_without_status(|| drop(unsafe { destroy(plan) }));
}

/// Frees the plan `*plan` as `dr_plan_destroy` does and sets `*plan` to NULL, so
/// that the handle cannot be used again (a NULL `*plan` is a no-op). Returns the
/// outcome of the execution in flight it completed: `DR_SUCCESS`, or the failure
/// `dr_request_wait` would have reported (on this rank only, as there); the plan
/// is freed either way. A NULL `plan` is `DR_ERROR_NULL_POINTER` (locally).
///
/// # Safety
/// `plan` NULL or pointing to NULL or to a plan from `dr_plan_create`, not
/// destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_free(plan: *mut *mut dr_plan) -> dr_status {
    guard(|| {
        // SAFETY: plan is NULL or writable (documented).
        let slot = unsafe { plan.as_mut() }
            .ok_or_else(|| Error::NullPointer("plan (the pointer to the plan) is NULL".into()))?;
        let owned = std::mem::replace(slot, std::ptr::null_mut());
        // SAFETY: *plan came from dr_plan_create and is freed once (nulled above).
        unsafe { destroy(owned) }
    })
}

/// Completes the execution in flight, if any, hands its request the outcome (when
/// lent, the request outlives the plan) and frees the plan. Returns the outcome.
///
/// # Safety
/// `plan` NULL or from `dr_plan_create`, freed once.
unsafe fn destroy(plan: *mut dr_plan) -> Result<()> {
    if plan.is_null() {
        return Ok(());
    }
    // SAFETY: plan came from Box::into_raw in create_plan and is freed once.
    let owned = unsafe { Box::from_raw(plan) };
    let lent = owned.plan.execution_lent();
    let outcome = match lent {
        true => require_mpi().and_then(|()| owned.plan.progress(true).map(drop)),
        false => Ok(()),
    };
    // SAFETY: the request was allocated by create_plan with the plan; the user
    // holds it only while lent, and then frees it (dr_request_test / wait).
    unsafe { orphan(owned.request, lent, outcome.clone()) };
    drop(owned);
    outcome
}
