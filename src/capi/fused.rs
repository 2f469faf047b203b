//! Fused plans through the C ABI: several plans of one communicator executed
//! in one round (`dr_fused`), made from C plans, which it shares (a plan
//! destroyed first lives on until the fused object is destroyed). Thin:
//! decoding, the panic boundary and the statuses over [`Fused`].

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use crate::api::plan::{BatchBuffers, Fused, Plan};
use crate::capi::boundary::{caller_error, guard, guard_without_status};
use crate::capi::handles::dr_plan;
use crate::capi::plans::slice_or_empty;
use crate::core::abi::{StatusCode, dr_status};
use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;

/// Several plans of one communicator fused into one object that executes
/// them in one round (opaque; `dr_fused_create`).
pub struct dr_fused {
    /// The plans, shared with their C handles.
    pub(crate) fused: Fused<Arc<Plan>>,
}

/// Fuses `nplans` plans into one object that executes them together, in one
/// round (collective over their communicator): `plans[i]` is the plan of field
/// `i` of every execution. Every rank passes the same plans in the same order,
/// all made on one communicator; the same plan may come several times (the
/// three components of a velocity field and a scalar with other boxes: four
/// fields of two plans), and the plans may have different layouts, element
/// types and storages. Each plan keeps its own runs, local copy and messages;
/// what the fused object shares is the framing: where a pair of ranks
/// exchanges little over all the plans (below 32 KiB one way), its traffic of
/// every plan travels as one message, each plan's part packed in it back to
/// back, so that a velocity transpose and a scalar's cost one latency rather
/// than two. A plan fused several times moves its fields as one batch
/// (`dr_plan_execute_batch`). On success `*fused` holds the object, to execute
/// any number of times with `dr_fused_execute` and to free with
/// `dr_fused_destroy`. It allocates the frames' buffer (exactly the framed
/// bytes this rank sends and receives) and grows the message slots of a plan
/// fused several times, so that executions allocate nothing.
///
/// Plans made on different communicators fail with
/// `DR_ERROR_INVALID_COMMUNICATOR`, other plans or another order than some
/// rank's with `DR_ERROR_INCONSISTENT_ARGUMENTS`, a NULL `plans[i]` (`i` > 0),
/// a NULL `fused` or a plan with an execution in flight with their statuses:
/// every error is agreed over the communicator of `plans[0]`, the same status
/// on every rank. Where no communicator is known it fails at once, on the
/// ranks that made the error: `nplans` < 1 (`DR_ERROR_INVALID_SHAPE`), a NULL
/// `plans` or `plans[0]` (`DR_ERROR_NULL_POINTER`). The fused object shares
/// its plans: they may be destroyed before it (each then lives on, without its
/// handle, until the fused object is destroyed), but not executed while it
/// executes. Fused objects and plans on one communicator are created and
/// executed in the same order on every rank.
///
/// # Safety
/// `plans` NULL or holding `nplans` pointers, each NULL or from
/// `dr_plan_create` (or any plan creation) and not destroyed; `fused` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fused_create(
    nplans: i64,
    plans: *const *const dr_plan,
    fused: *mut *mut dr_fused,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { create(nplans, plans, fused) })
}

/// Fuses the plans as `dr_fused_create` documents.
///
/// # Safety
/// As `dr_fused_create`.
unsafe fn create(
    nplans: i64,
    plans: *const *const dr_plan,
    fused: *mut *mut dr_fused,
) -> Result<()> {
    let count = match usize::try_from(nplans) {
        Ok(n) if n >= 1 => n,
        _ => {
            return Err(Error::InvalidShape(format!(
                "nplans = {nplans}: a fused object holds one plan at least"
            )));
        }
    };
    if plans.is_null() {
        return Err(Error::NullPointer(format!(
            "plans is NULL with nplans = {nplans}"
        )));
    }
    // SAFETY: `plans` holds `nplans` pointers (documented).
    let given = unsafe { std::slice::from_raw_parts(plans, count) };
    // SAFETY: non-NULL plans come from a plan creation and are alive (documented).
    let handles: Vec<Option<&dr_plan>> = given.iter().map(|&p| unsafe { p.as_ref() }).collect();
    let Some(first) = handles[0] else {
        return Err(Error::NullPointer(
            "plans[0] is NULL: the fused plans' communicator is unknown".into(),
        ));
    };
    let rank = first.plan.rank();
    let mut shared = try_vec(count, "the fused plans", rank);
    if let Ok(list) = &mut shared {
        list.extend(handles.iter().flatten().map(|h| Arc::clone(&h.plan)));
    }
    let missing = handles
        .iter()
        .position(Option::is_none)
        .map(|i| Error::NullPointer(format!("plans[{i}] is NULL (of nplans = {nplans})")));
    let no_output = fused
        .is_null()
        .then(|| Error::NullPointer("fused (the output pointer) is NULL".into()));
    let (list, allocated) = match shared {
        Ok(list) => (list, None),
        Err(e) => (vec![Arc::clone(&first.plan)], Some(e)),
    };
    let local = allocated.or(missing).or(no_output);
    let made = Fused::new_agreeing(list, local)?;
    // SAFETY: `fused` is writable (non-NULL: checked and agreed above).
    unsafe { *fused = Box::into_raw(Box::new(dr_fused { fused: made })) };
    Ok(())
}

/// Executes the fused plans (collective over their communicator): field `i`
/// reads plan `i`'s input from `in[i]` and writes its output to `out[i]`, as
/// `dr_plan_execute` would, every field of every plan in one round. The
/// arrays `in` and `out` hold one pointer per fused plan (the `nplans` of
/// `dr_fused_create`, in its order); with no capacities in this signature,
/// each `in[i]` must hold plan `i`'s input span and each `out[i]` its output
/// span (`dr_plan_spans`; the element counts for a plan without strides,
/// `dr_plan_input_slab` and `dr_plan_output_slab`), taken on trust as
/// `dr_plan_execute` takes its input (use `dr_fused_execute_agreeing` to pass
/// them). `out[i] == in[i]` is that field in place: the buffer must then hold
/// the larger of the two spans, and with a field in place on any rank the
/// plans run one after another, each as `dr_plan_execute` runs it (in place
/// where its buffers are one).
///
/// Every check (NULL arrays or buffers, fields sharing memory, a plan with an
/// execution in flight) is agreed in the execution's one `MPI_Allreduce`:
/// every rank returns the same status, the message naming the field, the
/// argument, its value and the rank. Out of place this allocates nothing.
///
/// # Safety
/// `fused` from `dr_fused_create` and not destroyed; `in` and `out` NULL or
/// holding one pointer per fused plan, each `in[i]` readable for plan `i`'s
/// input span and each `out[i]` writable for its output span (the larger of
/// both in place).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fused_execute(
    fused: *const dr_fused,
    r#in: *const *const c_void,
    out: *const *mut c_void,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let fused = unsafe { fused_ref(fused) }?;
        let sized = Lengths {
            in_elems: std::ptr::null(),
            out_capacities: std::ptr::null(),
        };
        // SAFETY: as documented.
        unsafe { execute(fused, (r#in, out), sized, None) }
    })
}

/// Executes the fused plans as `dr_fused_execute` does, with each field's
/// lengths and a caller's error agreed first, as `dr_plan_execute_batch_agreeing`
/// does for a batch: `in_elems[i]` is the length of `in[i]` and
/// `out_capacities[i]` the capacity of `out[i]`, in plan `i`'s elements
/// (either array NULL for the spans, taken on trust as by `dr_fused_execute`),
/// checked as `dr_plan_execute_sized` checks one execution's
/// (`DR_ERROR_BUFFER_TOO_SMALL`, the message naming the field); `caller_status`
/// (`DR_SUCCESS` when the caller found no error) with `caller_message` (NULL
/// for the status's text) is agreed with the execution's checks in its one
/// `MPI_Allreduce`. With a caller's error on any rank nothing is read or
/// written, and this rank's `in` and `out` may be NULL. The C++ and Fortran
/// fused executions run on it, reporting the containers or arrays they check.
///
/// # Safety
/// As `dr_fused_execute`, each `in[i]` readable for `in_elems[i]` elements
/// and each `out[i]` writable for `out_capacities[i]` elements when given;
/// `in_elems` and `out_capacities` NULL or holding one value per fused plan;
/// `caller_message` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fused_execute_agreeing(
    fused: *const dr_fused,
    r#in: *const *const c_void,
    in_elems: *const i64,
    out: *const *mut c_void,
    out_capacities: *const i64,
    caller_status: StatusCode,
    caller_message: *const c_char,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let caller = unsafe { caller_error(caller_status, caller_message) };
        // SAFETY: as documented.
        let fused = unsafe { fused_ref(fused) }?;
        let sized = Lengths {
            in_elems,
            out_capacities,
        };
        // SAFETY: as documented.
        unsafe { execute(fused, (r#in, out), sized, caller) }
    })
}

/// Frees a fused object (NULL is a no-op). Call it on every rank: when a
/// fused plan was destroyed before, the fused object holds the plan's last
/// reference, and freeing the last plan of a communicator the caller has
/// already freed also frees the library's duplicate of it, which is
/// collective in MPI (as `dr_plan_destroy`). Its plans are left as they are.
///
/// # Safety
/// `fused` NULL or from `dr_fused_create`, destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fused_destroy(fused: *mut dr_fused) {
    if fused.is_null() {
        return;
    }
    // SAFETY: from Box::into_raw in dr_fused_create, freed once (documented).
    guard_without_status(|| drop(unsafe { Box::from_raw(fused) }));
}

/// Borrows the fused object behind a C pointer.
///
/// # Safety
/// `fused` NULL or from `dr_fused_create` and not destroyed.
pub(crate) unsafe fn fused_ref<'a>(fused: *const dr_fused) -> Result<&'a Fused<Arc<Plan>>> {
    // SAFETY: as documented.
    unsafe { fused.as_ref() }
        .map(|f| &f.fused)
        .ok_or_else(|| Error::NullPointer("fused is NULL".into()))
}

/// The fields' lengths a caller gives: NULL arrays for the plans' spans.
#[derive(Clone, Copy)]
pub(crate) struct Lengths {
    /// Each field's input length in its plan's elements, or NULL.
    pub(crate) in_elems: *const i64,
    /// Each field's output capacity in its plan's elements, or NULL.
    pub(crate) out_capacities: *const i64,
}

/// Executes `fused` from the arrays `in` and `out` (one pointer per plan),
/// field `i`'s lengths from `sized` (the spans where NULL), agreeing `caller`
/// (an error found before) and the arrays' own errors with the checks.
///
/// # Safety
/// As `dr_fused_execute_agreeing`.
pub(crate) unsafe fn execute(
    fused: &Fused<Arc<Plan>>,
    (r#in, out): (*const *const c_void, *const *mut c_void),
    sized: Lengths,
    caller: Option<Error>,
) -> Result<()> {
    let count = fused.plans().len();
    let missing = |name: &str, array: bool| {
        array.then(|| Error::NullPointer(format!("{name} is NULL with {count} fused plans")))
    };
    // SAFETY: non-NULL length arrays hold one value per plan (documented).
    let (in_elems, capacities) = unsafe {
        (
            slice_or_empty(
                sized.in_elems,
                count * usize::from(!sized.in_elems.is_null()),
            ),
            slice_or_empty(
                sized.out_capacities,
                count * usize::from(!sized.out_capacities.is_null()),
            ),
        )
    };
    let negative = |name: &str, values: &[i64]| {
        let i = values.iter().position(|&n| n < 0)?;
        Some(Error::BufferTooSmall(format!(
            "field {i}: {name}[{i}] = {} is negative",
            values[i]
        )))
    };
    let pre = caller
        .or_else(|| missing("in", r#in.is_null()))
        .or_else(|| missing("out", out.is_null()))
        .or_else(|| negative("in_elems", in_elems))
        .or_else(|| negative("out_capacities", capacities));
    let listed = if pre.is_some() { 0 } else { count };
    // SAFETY: without an error found, both arrays hold one pointer per plan
    // (documented); a `*const c_void` has the layout of a `*const u8`.
    let (inputs, outputs) = unsafe {
        (
            slice_or_empty(r#in.cast::<*const u8>(), listed),
            slice_or_empty(out.cast::<*mut u8>(), listed),
        )
    };
    let plans = fused.plans();
    let lens = |i: usize| {
        let plan = &plans[i];
        let size = plan.elem_size();
        let (in_span, out_span) = (plan.input_span() * size, plan.output_span() * size);
        let given = |values: &[i64], span: usize| {
            values
                .get(i)
                .map_or(span, |&n| (n as usize).saturating_mul(size))
        };
        let output = match std::ptr::eq(inputs[i], outputs[i]) {
            true => in_span.max(out_span),
            false => out_span,
        };
        (given(in_elems, in_span), given(capacities, output))
    };
    let fields = BatchBuffers {
        inputs,
        outputs,
        lens: &lens,
    };
    // SAFETY: each field's buffers hold the lengths `lens` gives (documented);
    // the library checks them against the plans.
    unsafe { fused.execute_listed(&fields, pre) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_refusals_need_no_mpi() {
        let mut fused = std::ptr::null_mut();
        // SAFETY: NULL arrays with counts the checks refuse before reading them.
        let (none, null) = unsafe {
            (
                dr_fused_create(0, std::ptr::null(), &mut fused),
                dr_fused_create(2, std::ptr::null(), &mut fused),
            )
        };
        assert_eq!(none, dr_status::DR_ERROR_INVALID_SHAPE);
        assert_eq!(null, dr_status::DR_ERROR_NULL_POINTER);
        let plans = [std::ptr::null::<dr_plan>(); 2];
        // SAFETY: two (NULL) plans.
        let first = unsafe { dr_fused_create(2, plans.as_ptr(), &mut fused) };
        assert_eq!(first, dr_status::DR_ERROR_NULL_POINTER);
        assert!(fused.is_null());
        // SAFETY: a NULL fused object is refused before anything is read.
        let execute =
            unsafe { dr_fused_execute(std::ptr::null(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(execute, dr_status::DR_ERROR_NULL_POINTER);
        // SAFETY: NULL is a no-op.
        unsafe { dr_fused_destroy(std::ptr::null_mut()) };
    }
}
