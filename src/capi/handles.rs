//! The C ABI's opaque handles: a plan (shared with the fused objects made from
//! it), and the request it lends to its execution in flight, with what becomes
//! of that request when the plan is destroyed first;
//! storing a new plan behind the caller's pointer, borrowing one from a pointer,
//! and the NULL checks of both.

use std::ptr::NonNull;
use std::sync::Arc;

use crate::api::options::PlanOptions;
use crate::api::plan::Plan;
use crate::core::error::{Error, Result};

/// A reshape planned on every rank of a communicator (opaque).
pub struct dr_plan {
    /// The plan, shared with the fused objects made from it (`dr_fused`): a
    /// plan destroyed before them lives on, without its handle, until the last
    /// of them is destroyed.
    pub(crate) plan: Arc<Plan>,
    /// The handle of this plan's executions in flight, allocated with the plan so
    /// that beginning one allocates nothing. It outlives the plan when the plan is
    /// destroyed while it is lent (see `dr_plan_destroy`). It is lent exactly
    /// while [`Plan::execution_lent`] says so, which the plan's lock guards.
    pub(crate) request: NonNull<dr_request>,
}

/// An execution in flight, started by `dr_plan_execute_begin` (opaque). Each plan
/// has one, made with it and lent to its execution in flight (a plan runs one at
/// a time), so beginning an execution allocates nothing. A request outlives its
/// plan when the plan is destroyed while it is lent (see `dr_plan_destroy`).
pub struct dr_request {
    /// The plan whose request this is, set once the plan is stored; NULL once
    /// that plan was destroyed. Never written while another thread may use the
    /// plan, so lending the request writes nothing.
    pub(crate) plan: *const dr_plan,
    /// How the execution ended when its plan was destroyed before it completed.
    pub(crate) ended: Result<()>,
}

impl dr_request {
    /// A request of no plan yet, not lent to any execution.
    pub(crate) fn idle() -> dr_request {
        dr_request {
            plan: std::ptr::null(),
            ended: Ok(()),
        }
    }
}

/// The request of a plan being destroyed: freed with the plan unless `lent`; a
/// lent request keeps the outcome of its execution (completed by the plan's
/// destruction) and is freed by `dr_request_test` or `dr_request_wait`.
///
/// # Safety
/// `request` is the plan's, allocated by `create_plan` and not freed.
pub(crate) unsafe fn orphan(request: NonNull<dr_request>, lent: bool, ended: Result<()>) {
    let request = request.as_ptr();
    match lent {
        // SAFETY: the request is valid (allocated with its plan, not yet freed);
        // the caller holds it, and only test or wait free it.
        true => unsafe {
            (*request).plan = std::ptr::null();
            (*request).ended = ended;
        },
        // SAFETY: not lent, so the plan is its only owner.
        false => drop(unsafe { Box::from_raw(request) }),
    }
}

/// `args`, unless `options` or a NULL `plan` is an error: the first error, to
/// agree like any argument error.
pub(crate) fn checked_args<A>(
    args: Result<A>,
    options: &Result<PlanOptions>,
    plan: *mut *mut dr_plan,
) -> Result<A> {
    args.and_then(|a| match (missing_plan(plan), options) {
        (Some(e), _) => Err(e),
        (None, Err(e)) => Err(e.clone()),
        (None, Ok(_)) => Ok(a),
    })
}

/// The error of a NULL `plan` output pointer, to agree like any argument error.
pub(crate) fn missing_plan(plan: *mut *mut dr_plan) -> Option<Error> {
    plan.is_null()
        .then(|| Error::NullPointer("plan (the output pointer) is NULL".into()))
}

/// Stores `created` in `*plan` as a C plan, with the request its executions borrow.
///
/// # Safety
/// `plan` non-null and writable.
pub(crate) unsafe fn store_plan(created: Plan, plan: *mut *mut dr_plan) {
    let request = NonNull::from(Box::leak(Box::new(dr_request::idle())));
    // An `Arc` although `Plan` is not `Sync`: C callers may destroy a plan on
    // one thread and a fused object sharing it on another (the thread level
    // allowing), so the count must be atomic; the plan itself is still used
    // from one thread at a time, behind its lock.
    #[allow(clippy::arc_with_non_send_sync)]
    let shared = Arc::new(created);
    let owned = Box::into_raw(Box::new(dr_plan {
        plan: shared,
        request,
    }));
    // SAFETY: the request was just allocated, and nothing else refers to it yet;
    // `plan` as documented.
    unsafe {
        (*request.as_ptr()).plan = owned;
        *plan = owned;
    }
}

/// Borrows the C plan behind a pointer.
///
/// # Safety
/// `plan` must be NULL or come from `dr_plan_create` and not be destroyed.
pub(crate) unsafe fn c_plan_ref<'a>(plan: *const dr_plan) -> Result<&'a dr_plan> {
    // SAFETY: as documented.
    unsafe { plan.as_ref() }.ok_or_else(|| Error::NullPointer("plan is NULL".into()))
}

/// Borrows the plan behind a C pointer.
///
/// # Safety
/// As [`c_plan_ref`].
pub(crate) unsafe fn plan_ref<'a>(plan: *const dr_plan) -> Result<&'a Plan> {
    // SAFETY: as documented.
    unsafe { c_plan_ref(plan) }.map(|p| &*p.plan)
}
