//! The C ABI: argument conversion, the panic boundary and status codes over the
//! Rust API. No logic of its own. The header `include/distreshape.h` is generated
//! by cbindgen from the crate: these functions and the tables of
//! [`crate::core::abi`] (see `tests/header.rs`).
#![allow(non_camel_case_types)]

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::api::options::PlanOptions;
use crate::api::plan::Plan;
use crate::core::abi::{DR_SPLIT_NONE, DtypeCode, StatusCode, dr_dtype, dr_path, dr_status};
use crate::core::error::{Error, Result};
use crate::core::fallible::contain_panic;
use crate::planning::args::{MAX_DIMS, Notation, ReshapeArgs, Target};
use crate::planning::planner::Route;

/// The MPI communicator type of the `mpi.h` DistReshape was built with: the C
/// spelling of [`RawComm`](crate::mpi::comm::RawComm).
pub type MPI_Comm = crate::mpi::comm::RawComm;

/// A reshape planned on every rank of a communicator (opaque).
pub struct dr_plan {
    plan: Plan,
}

/// An execution in flight, started by `dr_plan_execute_begin` (opaque). A plan
/// runs one execution at a time, so a request is its plan seen as a request: it
/// needs no memory of its own.
pub struct dr_request {
    _opaque: [u8; 0],
}

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

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs `body`, turning errors and panics into a status and this thread's message.
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> dr_status {
    let outcome = contain_panic(body);
    match outcome {
        Ok(()) => dr_status::DR_SUCCESS,
        Err(error) => {
            let text = CString::new(error.to_string().replace('\0', " ")).unwrap_or_default();
            // try_with: never panic (thread teardown) outside the panic guard.
            let _ = LAST_ERROR.try_with(|last| last.replace(text));
            error.status()
        }
    }
}

/// Bytes per element of a dtype code.
pub(crate) fn elem_size(dtype: DtypeCode) -> Result<usize> {
    dr_dtype::from_code(dtype)
        .map(dr_dtype::size)
        .ok_or_else(|| Error::InvalidDtype(format!("dtype = {dtype} is not a dr_dtype value")))
}

/// Reads a C shape array.
///
/// # Safety
/// `shape` must point to `ndims` values when `ndims > 0`.
pub(crate) unsafe fn shape_arg(name: &str, ndims: i32, shape: *const i64) -> Result<Vec<i64>> {
    match usize::try_from(ndims) {
        Ok(0) => Ok(Vec::new()),
        Ok(n) if n <= MAX_DIMS && !shape.is_null() => {
            // SAFETY: the caller passes n values.
            Ok(unsafe { std::slice::from_raw_parts(shape, n) }.to_vec())
        }
        Ok(n) if n <= MAX_DIMS => Err(Error::NullPointer(format!(
            "{name} is NULL with {n} dimensions"
        ))),
        _ => Err(Error::InvalidShape(format!(
            "{name}: ndims = {ndims} is outside [0, {MAX_DIMS}]"
        ))),
    }
}

fn split_arg(name: &str, split: i32) -> Result<Option<usize>> {
    match split {
        DR_SPLIT_NONE => Ok(None),
        s if s >= 0 => Ok(Some(s as usize)),
        s => Err(Error::InvalidSplit(format!(
            "{name} = {s} is negative and not DR_SPLIT_NONE"
        ))),
    }
}

/// The arguments shared by `dr_reshape` and `dr_plan_create`, decoded.
///
/// # Safety
/// Shape pointers must be valid for their dimension counts.
#[allow(clippy::too_many_arguments)]
unsafe fn decode_args(
    dtype: DtypeCode,
    ndims: i32,
    gshape: *const i64,
    split: i32,
    local_len: i64,
    new_ndims: i32,
    new_gshape: *const i64,
    new_split: i32,
    new_local_len: i64,
) -> Result<ReshapeArgs> {
    let target = match new_local_len {
        -1 => Target::Balanced,
        n => Target::Len(n),
    };
    Ok(ReshapeArgs {
        elem_size: elem_size(dtype)?,
        // SAFETY: forwarded from the caller.
        gshape: unsafe { shape_arg("gshape", ndims, gshape) }?,
        split: split_arg("split", split)?,
        local_len,
        // SAFETY: forwarded from the caller.
        new_shape: unsafe { shape_arg("new_gshape", new_ndims, new_gshape) }?,
        new_split: split_arg("new_split", new_split)?,
        target,
        dtype: Some(dtype),
        notation: Notation::C,
    })
}

/// The output capacity in bytes, or the error to agree on.
fn capacity_bytes(plan: &Plan, out_capacity: i64) -> Result<usize> {
    usize::try_from(out_capacity)
        .map(|n| n.saturating_mul(plan.elem_size()))
        .map_err(|_| Error::BufferTooSmall(format!("out_capacity = {out_capacity} is negative")))
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
    guard(|| {
        // SAFETY: shape pointers as documented.
        let args = unsafe {
            decode_args(
                dtype, ndims, gshape, split, local_len, new_ndims, new_gshape, new_split, -1,
            )
        };
        let plan = Plan::create(comm, args, PlanOptions::default())?.agreeing_always();
        let missing = new_local_elems
            .is_null()
            .then(|| Error::NullPointer("new_local_elems is NULL".into()));
        let capacity = capacity_bytes(&plan, out_capacity);
        let pre = missing.or(capacity.as_ref().err().cloned());
        let in_bytes = plan.input_elems() * plan.elem_size();
        // SAFETY: buffers as documented; sizes are checked against the plan.
        unsafe {
            plan.execute_checked(buf.cast(), in_bytes, out.cast(), capacity.unwrap_or(0), pre)?;
            *new_local_elems = plan.output_elems() as i64;
        }
        Ok(())
    })
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
/// never from two threads at once. Everything an execution needs (the message
/// list within the plan's budget, MPI requests, staging) is allocated here, so an
/// allocation failure is agreed here.
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
    guard(|| {
        // SAFETY: shape pointers as documented.
        let args = unsafe {
            decode_args(
                dtype,
                ndims,
                gshape,
                split,
                local_len,
                new_ndims,
                new_gshape,
                new_split,
                new_local_len,
            )
        };
        // SAFETY: plan as documented.
        unsafe { create_plan(comm, args, plan) }
    })
}

/// Plans `args` (agreeing a NULL `plan` like any argument error) and stores the
/// plan in `*plan`.
///
/// # Safety
/// `plan` NULL or writable.
pub(crate) unsafe fn create_plan(
    comm: MPI_Comm,
    args: Result<ReshapeArgs>,
    plan: *mut *mut dr_plan,
) -> Result<()> {
    let args = args.and_then(|a| match plan.is_null() {
        true => Err(Error::NullPointer(
            "plan (the output pointer) is NULL".into(),
        )),
        false => Ok(a),
    });
    let created = Plan::create(comm, args, PlanOptions::default())?;
    // SAFETY: plan is non-null (checked and agreed above).
    unsafe { *plan = Box::into_raw(Box::new(dr_plan { plan: created })) };
    Ok(())
}

/// Borrows the plan behind a C pointer.
///
/// # Safety
/// `plan` must be NULL or come from `dr_plan_create` and not be destroyed.
pub(crate) unsafe fn plan_ref<'a>(plan: *const dr_plan) -> Result<&'a Plan> {
    // SAFETY: as documented.
    unsafe { plan.as_ref() }
        .map(|p| &p.plan)
        .ok_or_else(|| Error::NullPointer("plan is NULL".into()))
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
        let slab = plan.input_slab().map(|s| (s.offset, s.len));
        // SAFETY: non-null outputs are writable.
        unsafe { write_slab(slab, elems, (local_len, offset, local_elems)) };
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
        let outputs = (new_local_len, new_offset, new_local_elems);
        let slab = plan.output_slab().map(|s| (s.offset, s.len));
        // SAFETY: non-null outputs are writable.
        unsafe { write_slab(slab, elems, outputs) };
        Ok(())
    })
}

/// Writes a slab's `(offset, rows)` (-1 each when not split) and element count to
/// the non-NULL pointers of `(len, offset, elems)`.
///
/// # Safety
/// Non-NULL pointers writable.
unsafe fn write_slab(
    slab: Option<(u64, u64)>,
    elems: u64,
    (len, offset, count): (*mut i64, *mut i64, *mut i64),
) {
    let (first, rows) = slab.map_or((-1, -1), |(o, l)| (o as i64, l as i64));
    for (out, value) in [(len, rows), (offset, first), (count, elems as i64)] {
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
/// moves, then exchange in pairwise windows. Out of place nothing is allocated. In
/// place on the exchange path the data moves in rounds that stage at most the
/// larger of 64 MiB and a tenth of the rank's buffer: the first such execution
/// makes the schedule and its staging, which the plan keeps (one more
/// `MPI_Allreduce`); `dr_plan_describe` then tells the rounds and the staging, or
/// that the bytes that leave the rank are staged at each execution instead (when
/// every rank sends at most 1 MiB, or no bounded schedule applies). While any rank
/// executes in place there, every rank follows the rounds.
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
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let capacity = capacity_bytes(plan, out_capacity);
        let in_bytes = plan.input_elems() * plan.elem_size();
        let pre = capacity.as_ref().err().cloned();
        // SAFETY: buffers as documented; sizes are checked against the plan.
        unsafe {
            plan.execute_checked(
                r#in.cast(),
                in_bytes,
                out.cast(),
                capacity.unwrap_or(0),
                pre,
            )
        }
    })
}

/// Starts executing a plan without waiting for it (collective, like
/// `dr_plan_execute`): the same checks, the same agreement and the same status on
/// every rank, all reported here; on success the messages are in flight and
/// `*request` tracks them. Until `dr_request_test` reports completion or
/// `dr_request_wait` returns, `in` must not be changed nor `out` read or freed.
/// Call `dr_request_test` between pieces of computation, every few hundred
/// microseconds: most MPI libraries move messages only inside MPI calls, and each
/// test posts the schedule's next round. A plan runs one execution at a time:
/// starting another (or `dr_plan_execute`) before completion fails with
/// `DR_ERROR_EXECUTION_IN_PROGRESS` on every rank. In place on the local path
/// (split-preserving) completes here: its receives may only start after its
/// sends; so do in place on the exchange path (its rounds), and any execution
/// while another rank runs those rounds. Allocates nothing. Destroying the plan
/// cancels an execution in flight (an error on the other ranks' side: complete it
/// first).
///
/// # Safety
/// As `dr_plan_execute`; `request` writable; the buffers valid until completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_begin(
    plan: *const dr_plan,
    r#in: *const c_void,
    out: *mut c_void,
    out_capacity: i64,
    request: *mut *mut dr_request,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let p = unsafe { plan_ref(plan) }?;
        let capacity = capacity_bytes(p, out_capacity);
        let pre = capacity.as_ref().err().cloned();
        // SAFETY: as documented.
        unsafe { begin_request(plan, (r#in, out, capacity.unwrap_or(0)), pre, request) }
    })
}

/// Starts `plan`'s execution from `input` into `output` (`capacity` bytes) and
/// sets `*request` to track it (NULL when it completed at once). A NULL `request`
/// is agreed like `pre`, any argument error found before.
///
/// # Safety
/// As `dr_plan_execute_begin`, with `output` writable for `capacity` bytes.
pub(crate) unsafe fn begin_request(
    plan: *const dr_plan,
    (input, output, capacity): (*const c_void, *mut c_void, usize),
    pre: Option<Error>,
    request: *mut *mut dr_request,
) -> Result<()> {
    // SAFETY: as documented.
    let p = unsafe { plan_ref(plan) }?;
    let missing = request
        .is_null()
        .then(|| Error::NullPointer("request is NULL".into()));
    let in_bytes = p.input_elems() * p.elem_size();
    // SAFETY: buffers as documented; sizes are checked against the plan.
    let done = unsafe {
        p.begin_checked(
            input.cast(),
            in_bytes,
            output.cast(),
            capacity,
            missing.or(pre),
        )
    }?;
    let tracked = match done {
        true => std::ptr::null_mut(),
        false => plan.cast_mut().cast(),
    };
    // SAFETY: request is writable (checked and agreed above).
    unsafe { *request = tracked };
    Ok(())
}

/// Moves the execution of `*request` on as far as it goes without waiting and
/// sets `*done` to 1 when it has completed (then the request is freed and
/// `*request` set to NULL, as `MPI_Test` does), else 0. A NULL `*request` is
/// complete (`dr_plan_execute_begin` returns one when the execution completed
/// at once). A failure while messages flow (`DR_ERROR_MPI`) is this rank's; the
/// request is then over too (NULL), its messages cancelled and completed.
///
/// # Safety
/// `request` points to NULL or to a request from `dr_plan_execute_begin` whose
/// plan still exists; `done` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_request_test(
    request: *mut *mut dr_request,
    done: *mut c_int,
) -> dr_status {
    guard(|| {
        if done.is_null() {
            return Err(Error::NullPointer("done is NULL".into()));
        }
        // SAFETY: as documented.
        let completed = unsafe { progress_request(request, false) }?;
        // SAFETY: done is writable (checked above).
        unsafe { *done = c_int::from(completed) };
        Ok(())
    })
}

/// Waits for the execution of `*request` to complete and sets `*request` to NULL (a NULL `*request` returns at once). A failure while
/// messages flow is this rank's (`DR_ERROR_MPI`, messages cancelled and completed).
///
/// # Safety
/// As `dr_request_test`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_request_wait(request: *mut *mut dr_request) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { progress_request(request, true) }.map(drop))
}

/// Progresses the request behind `request`; sets it to NULL when it is over
/// (completed or failed). Returns whether it completed.
///
/// # Safety
/// As `dr_request_test`.
unsafe fn progress_request(request: *mut *mut dr_request, blocking: bool) -> Result<bool> {
    if request.is_null() {
        return Err(Error::NullPointer("request is NULL".into()));
    }
    // SAFETY: as documented: *request is NULL or a request, i.e. a live plan.
    let live = unsafe { *request };
    if live.is_null() {
        return Ok(true);
    }
    // SAFETY: a request is its plan (see dr_request), which still exists.
    let plan = unsafe { plan_ref(live.cast::<dr_plan>()) }?;
    let outcome = plan.progress(blocking);
    if !matches!(outcome, Ok(false)) {
        // SAFETY: request is writable (documented).
        unsafe { *request = std::ptr::null_mut() };
    }
    outcome
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
/// library's duplicate of it, which is collective in MPI.
///
/// # Safety
/// `plan` from `dr_plan_create`, destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_destroy(plan: *mut dr_plan) {
    if !plan.is_null() {
        // SAFETY: plan came from Box::into_raw in dr_plan_create and is freed once.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(plan) })));
    }
}

/// The balanced slab of `extent` rows for `rank` of `nranks` (pure, no MPI):
/// `len = extent/nranks + (rank < extent%nranks)`, `offset = rank*(extent/nranks) +
/// min(rank, extent%nranks)`.
///
/// # Safety
/// `len` and `offset` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_balanced_slab(
    extent: i64,
    nranks: i32,
    rank: i32,
    len: *mut i64,
    offset: *mut i64,
) -> dr_status {
    guard(|| {
        if len.is_null() || offset.is_null() {
            return Err(Error::NullPointer("len or offset is NULL".into()));
        }
        if extent < 0 {
            return Err(Error::InvalidShape(format!(
                "extent = {extent} is negative"
            )));
        }
        if nranks < 1 || rank < 0 || rank >= nranks {
            return Err(Error::InvalidDistribution(format!(
                "rank = {rank} is not in [0, nranks = {nranks})"
            )));
        }
        let crate::distribution::layout::Slab { offset: o, len: l } =
            crate::distribution::layout::balanced_slab(extent as u64, nranks as u64, rank as u64);
        // SAFETY: both pointers are non-null and writable.
        unsafe {
            *len = l as i64;
            *offset = o as i64;
        }
        Ok(())
    })
}

/// A static description of a status (never NULL).
#[unsafe(no_mangle)]
pub extern "C" fn dr_status_string(status: StatusCode) -> *const c_char {
    dr_status::from_code(status)
        .map_or(c"unknown status", dr_status::text)
        .as_ptr()
}

/// The message of this thread's last failed call, naming the argument, its value
/// and the rank (empty if no call failed). Valid until the next failing call on
/// this thread.
#[unsafe(no_mangle)]
pub extern "C" fn dr_last_error_message() -> *const c_char {
    // try_with and try_borrow: this runs outside the panic guard, so it must not panic.
    LAST_ERROR
        .try_with(|last| last.try_borrow().map(|m| m.as_ptr()).ok())
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}

/// The library version, e.g. "0.2.0".
#[unsafe(no_mangle)]
pub extern "C" fn dr_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// makes every allocation of the library larger than `bytes` fail as if memory were
/// exhausted, on this process (a negative value removes the limit).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_allocation_limit(bytes: i64) {
    crate::core::faults::set_allocation_limit(u64::try_from(bytes).ok());
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// when `enabled` is non-zero, plan creation panics inside the library on this
/// process (the panic is caught and reported as DR_ERROR_INTERNAL everywhere).
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_panic(enabled: i32) {
    crate::core::faults::set_panic_in_planning(enabled != 0);
}

/// Test hook (only in the `test-hooks` build, declared in `tests/c/test_hooks.h`):
/// when `enabled` is non-zero, the next exchange on this process fails with
/// DR_ERROR_MPI once all its first messages are posted.
#[cfg(feature = "test-hooks")]
#[unsafe(no_mangle)]
pub extern "C" fn dr_test_set_exchange_failure(enabled: i32) {
    crate::core::faults::set_exchange_failure(enabled != 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::abi::DR_MAX_DIMS;

    #[test]
    fn constants_match_the_engine() {
        assert_eq!(DR_MAX_DIMS as usize, MAX_DIMS);
        assert_eq!(DR_SPLIT_NONE, -1);
    }

    #[test]
    fn status_strings_come_from_the_table() {
        // SAFETY: dr_status_string returns a static NUL-terminated string.
        let text = |code| unsafe { std::ffi::CStr::from_ptr(dr_status_string(code)) };
        assert_eq!(text(3), c"invalid shape");
        assert_eq!(text(99), c"unknown status");
        assert_eq!(text(-1), c"unknown status");
    }
}
