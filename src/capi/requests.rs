//! Executions in flight through the C ABI: beginning one, testing and waiting
//! for it, and what becomes of its request when its plan is destroyed first.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

use crate::capi::boundary::{c_buffers, caller_error, guard};
use crate::capi::handles::{c_plan_ref, dr_plan, dr_request};
use crate::capi::plans::{CBatch, execute_c_batch};
use crate::core::abi::{StatusCode, dr_status};
use crate::core::error::{Error, Result};
use crate::mpi::buffers::Buffers;

/// Starts executing a plan without waiting for it (collective, like
/// `dr_plan_execute`): the same checks, the same agreement and the same status on
/// every rank, all reported here; on success the messages are in flight and
/// `*request` tracks them (NULL when the execution completed here). Until
/// `dr_request_test` reports completion or `dr_request_wait` returns, `in` must
/// not be changed nor `out` read or freed. Call `dr_request_test` between pieces
/// of computation, every few hundred microseconds: most MPI libraries move
/// messages only inside MPI calls, and each test posts the schedule's next round.
/// A plan runs one execution at a time: starting another (or `dr_plan_execute`)
/// before completion fails with `DR_ERROR_EXECUTION_IN_PROGRESS` on every rank.
/// In place on the local path (split-preserving) completes here: its receives may
/// only start after its sends; so do in place on the exchange path (its rounds),
/// and any execution while another rank runs those rounds. Allocates what
/// `dr_plan_execute` allocates: nothing out of place; an execution in place
/// completes here and allocates as `dr_plan_execute` says.
/// Destroying the plan completes an execution in flight (see `dr_plan_destroy`).
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
    // SAFETY: as documented.
    guard(|| unsafe { begin(plan, (r#in, None), (out, out_capacity), request) })
}

/// Starts executing a plan as `dr_plan_execute_begin` does, with the length of
/// the input: `in` holds `in_elems` elements, checked and agreed as in
/// `dr_plan_execute_sized`.
///
/// # Safety
/// As `dr_plan_execute_sized`; `request` writable; the buffers valid until
/// completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_begin_sized(
    plan: *const dr_plan,
    r#in: *const c_void,
    in_elems: i64,
    out: *mut c_void,
    out_capacity: i64,
    request: *mut *mut dr_request,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { begin(plan, (r#in, Some(in_elems)), (out, out_capacity), request) })
}

/// Starts executing a plan on a batch of `k` fields without waiting for it
/// (collective, like `dr_plan_execute_batch`): the same checks, the same
/// agreement and the same status on every rank, all reported here; on success
/// the messages of every field are in flight and `*request` tracks them (NULL
/// when the batch completed here), as `dr_plan_execute_begin` does. The arrays
/// `in` and `out` may be freed once this returns (the plan keeps the `k`
/// pointers); the fields' buffers must stay untouched until completion. A batch
/// with a field in place on any rank runs its fields one after another and
/// completes here.
///
/// # Safety
/// As `dr_plan_execute_batch`; `request` writable; the fields' buffers valid
/// until completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_batch_begin(
    plan: *const dr_plan,
    k: i64,
    r#in: *const *const c_void,
    out: *const *mut c_void,
    out_capacity: i64,
    request: *mut *mut dr_request,
) -> dr_status {
    guard(|| {
        let batch = CBatch::new(k, r#in, out, out_capacity);
        // SAFETY: as documented.
        unsafe { begin_batch(plan, &batch, None, request) }
    })
}

/// Starts executing a plan on a batch as `dr_plan_execute_batch_begin` does,
/// with the length of each field's input and a caller's error agreed first, as
/// `dr_plan_execute_batch_agreeing` does.
///
/// # Safety
/// As `dr_plan_execute_batch_agreeing`; `request` writable; the fields'
/// buffers valid until completion.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_execute_batch_begin_agreeing(
    plan: *const dr_plan,
    k: i64,
    r#in: *const *const c_void,
    in_elems: i64,
    out: *const *mut c_void,
    out_capacity: i64,
    caller_status: StatusCode,
    caller_message: *const c_char,
    request: *mut *mut dr_request,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let caller = unsafe { caller_error(caller_status, caller_message) };
        let batch = CBatch {
            in_elems: Some(in_elems),
            ..CBatch::new(k, r#in, out, out_capacity)
        };
        // SAFETY: as documented.
        unsafe { begin_batch(plan, &batch, caller, request) }
    })
}

/// Starts `batch` on `plan` and sets `*request` to track it (NULL when it
/// completed at once), agreeing `caller` (an error the caller found) and a
/// NULL `request` with the batch's checks.
///
/// # Safety
/// As `dr_plan_execute_batch_begin_agreeing`.
pub(crate) unsafe fn begin_batch(
    plan: *const dr_plan,
    batch: &CBatch,
    caller: Option<Error>,
    request: *mut *mut dr_request,
) -> Result<()> {
    // SAFETY: as documented.
    let p = unsafe { c_plan_ref(plan) }?;
    let missing = request
        .is_null()
        .then(|| Error::NullPointer("request is NULL".into()));
    // SAFETY: as documented.
    let done = unsafe { execute_c_batch(&p.plan, batch, caller.or(missing), false) }?;
    // SAFETY: request is writable (checked and agreed above).
    unsafe { *request = tracked(p, done) };
    Ok(())
}

/// The request of `plan`'s execution begun, `done` or not: NULL when it
/// completed at once, else the one the plan lent it under its lock.
fn tracked(plan: &dr_plan, done: bool) -> *mut dr_request {
    match done {
        true => std::ptr::null_mut(),
        false => plan.request.as_ptr(),
    }
}

/// Starts `plan`'s execution (the input's length `None` for the plan's own).
///
/// # Safety
/// As `dr_plan_execute_begin_sized`.
unsafe fn begin(
    plan: *const dr_plan,
    input: (*const c_void, Option<i64>),
    output: (*mut c_void, i64),
    request: *mut *mut dr_request,
) -> Result<()> {
    // SAFETY: as documented.
    let p = unsafe { c_plan_ref(plan) }?;
    let (buffers, pre) = c_buffers(&p.plan, input, output);
    // SAFETY: as documented.
    unsafe { begin_request(p, buffers, pre, request) }
}

/// Starts `plan`'s execution from `buffers` and sets `*request` to track it
/// (NULL when it completed at once). A NULL `request` is agreed like `pre`, any
/// argument error found before.
///
/// # Safety
/// As `dr_plan_execute_begin_sized`, with the buffers' lengths in bytes.
pub(crate) unsafe fn begin_request(
    plan: &dr_plan,
    buffers: Buffers,
    pre: Option<Error>,
    request: *mut *mut dr_request,
) -> Result<()> {
    let missing = request
        .is_null()
        .then(|| Error::NullPointer("request is NULL".into()));
    let Buffers {
        input,
        input_len,
        output,
        capacity,
    } = buffers;
    // SAFETY: buffers as documented; sizes are checked against the plan.
    let done = unsafe {
        plan.plan
            .begin_checked(input, input_len, output, capacity, missing.or(pre))
    }?;
    // The plan lent its request under its lock when the execution began.
    // SAFETY: request is writable (checked and agreed above).
    unsafe { *request = tracked(plan, done) };
    Ok(())
}

/// Moves the execution of `*request` on as far as it goes without waiting and
/// sets `*done` to 1 when it has completed (then `*request` is set to NULL, as
/// `MPI_Test` does), else 0, carrying the other executions in flight in this
/// process on as well. A NULL `*request` is complete
/// (`dr_plan_execute_begin` returns one when the execution completed at once). A
/// failure while messages flow (`DR_ERROR_MPI`) is this rank's; the request is
/// then over too (NULL, `*done` 1), its messages cancelled and completed. The
/// request of a destroyed plan is complete: this returns its execution's
/// outcome, sets `*done` to 1 and frees it. A call from a thread that may not
/// call MPI for the plan (any but the main one under `MPI_THREAD_SINGLE` or
/// `MPI_THREAD_FUNNELED`) is `DR_ERROR_MPI` and does nothing: `*done` 0, the
/// request still in flight, to be tested or waited for from a thread that may.
///
/// # Safety
/// `request` points to NULL or to a request from `dr_plan_execute_begin` not yet
/// completed; `done` writable.
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
        let completed = unsafe { progress_request(request, false) };
        // Over once its slot is NULL (a refused call leaves it as it was).
        // SAFETY: request is NULL or readable (documented).
        let over = unsafe { request.as_ref() }.is_none_or(|slot| slot.is_null());
        // SAFETY: done is writable (checked above).
        unsafe { *done = c_int::from(over) };
        completed.map(drop)
    })
}

/// Waits for the execution of `*request` to complete and sets `*request` to NULL
/// (a NULL `*request` returns at once). A failure while messages flow is this
/// rank's (`DR_ERROR_MPI`, messages cancelled and completed). The request of a
/// destroyed plan returns its execution's outcome at once and is freed. As in
/// `dr_request_test`, a call from a thread that may not call MPI for the plan
/// is `DR_ERROR_MPI` and does nothing (`*request` unchanged). While
/// it waits, the wait carries the other executions in flight in this process
/// on, so ranks may complete several in different orders.
///
/// # Safety
/// As `dr_request_test`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_request_wait(request: *mut *mut dr_request) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { progress_request(request, true) }.map(drop))
}

/// Progresses the request behind `request`; sets it to NULL when it is over
/// (completed or failed), handing it back to its plan or, when the plan is gone,
/// freeing it. Returns whether it completed.
///
/// # Safety
/// As `dr_request_test`.
unsafe fn progress_request(request: *mut *mut dr_request, blocking: bool) -> Result<bool> {
    // SAFETY: request is NULL or writable (documented).
    let slot =
        unsafe { request.as_mut() }.ok_or_else(|| Error::NullPointer("request is NULL".into()))?;
    let Some(live) = NonNull::new(*slot) else {
        return Ok(true);
    };
    // SAFETY: a request not yet completed is valid: its plan's, or orphaned.
    let plan = unsafe { live.as_ref() }.plan;
    if plan.is_null() {
        *slot = std::ptr::null_mut();
        // SAFETY: orphaned by its plan's destruction, the caller's only: freed once.
        return unsafe { Box::from_raw(live.as_ptr()) }.ended.map(|()| true);
    }
    // SAFETY: a lent request's plan is alive (its destruction nulls `plan`).
    let plan = unsafe { &*plan };
    // Refused on this thread, the call does nothing: the request stays.
    plan.plan.check_thread()?;
    // Reporting the end hands the request back to the plan, under its lock.
    let outcome = plan.plan.progress(blocking);
    if !matches!(outcome, Ok(false)) {
        *slot = std::ptr::null_mut();
    }
    outcome
}
