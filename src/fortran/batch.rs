//! The Fortran module's batches: `dr_plan_execute_batch` and
//! `dr_plan_execute_batch_begin` take two arrays of one more dimension than
//! the plan's boxes, the last one indexing the fields (what a Fortran code
//! holds: `u(nx, ny, nz, k)`, or a section of it). Each field, the section
//! `a(..., i)`, must be this rank's box at the plan's strides, checked as
//! one array of an execution is; the arrays are never copied.

use std::ffi::c_void;

use super::dtype_error;
use super::strided::{ArrayDescriptor, check_array, descriptor, read};
use crate::api::plan::Plan;
use crate::capi::{CBatch, begin_batch, dr_plan, dr_request, execute_c_batch, guard, plan_ref};
use crate::core::abi::{DtypeCode, dr_status};
use crate::core::error::{Error, Result};

/// `dr_plan_execute_batch` for the Fortran module: `a` and `b` hold one field
/// per index of their last dimension (as many in both), each field of element
/// type `dtype` and this rank's box on its side at the plan's strides, else
/// `DR_ERROR_INVALID_DTYPE`, `DR_ERROR_INVALID_SHAPE` or
/// `DR_ERROR_INVALID_STRIDES`, agreed with the batch's checks on every rank,
/// with nothing moved.
///
/// # Safety
/// As `dr_plan_execute_batch`; each descriptor NULL or readable, and its
/// array's memory holding what it says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_batch_typed(
    plan: *const dr_plan,
    dtype: DtypeCode,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute_batch(plan, Some(dtype), a, b) })
}

/// [`dr_fortran_plan_execute_batch_typed`] without the element type's check,
/// as the module of 0.3.0 calls it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_batch_typed`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_batch(
    plan: *const dr_plan,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute_batch(plan, None, a, b) })
}

/// `dr_plan_execute_batch_begin` for the Fortran module, checking the arrays
/// as [`dr_fortran_plan_execute_batch_typed`] does.
///
/// # Safety
/// As [`dr_fortran_plan_execute_batch_typed`], and the arrays stay valid until
/// the batch completes (as `dr_plan_execute_batch_begin`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_batch_begin_typed(
    plan: *const dr_plan,
    dtype: DtypeCode,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
    request: *mut *mut dr_request,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { begin_batch_fields(plan, Some(dtype), (a, b), request) })
}

/// [`dr_fortran_plan_execute_batch_begin_typed`] without the element type's
/// check, as the module of 0.3.0 calls it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_batch_begin_typed`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_batch_begin(
    plan: *const dr_plan,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
    request: *mut *mut dr_request,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { begin_batch_fields(plan, None, (a, b), request) })
}

/// Executes `plan` on the batch arrays `a` and `b`, checked against it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_batch_typed`].
unsafe fn execute_batch(
    plan: *const dr_plan,
    dtype: Option<DtypeCode>,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
) -> Result<()> {
    // SAFETY: as documented.
    let plan = unsafe { plan_ref(plan) }?;
    // SAFETY: as documented.
    let fields = unsafe { Fields::of(plan, dtype, descriptor("a", a)?, descriptor("b", b)?) };
    // SAFETY: once the checks pass, each field covers its side's span.
    unsafe { execute_c_batch(plan, &fields.batch(plan), fields.error, true) }.map(drop)
}

/// Starts `plan`'s execution on the batch arrays `a` and `b`, checked against
/// it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_batch_begin_typed`].
unsafe fn begin_batch_fields(
    plan: *const dr_plan,
    dtype: Option<DtypeCode>,
    (a, b): (*const ArrayDescriptor, *const ArrayDescriptor),
    request: *mut *mut dr_request,
) -> Result<()> {
    // SAFETY: as documented.
    let p = unsafe { plan_ref(plan) }?;
    // SAFETY: as documented.
    let fields = unsafe { Fields::of(p, dtype, descriptor("a", a)?, descriptor("b", b)?) };
    // SAFETY: once the checks pass, each field covers its side's span, and
    // stays valid until completion (documented).
    unsafe { begin_batch(plan, &fields.batch(p), fields.error, request) }
}

/// The fields of two batch arrays: each one's first element on each side,
/// and the error to agree when the arrays are not the plan's fields.
struct Fields {
    /// The fields as `a` holds them (its last extent).
    count: i64,
    /// Each field's first input element.
    inputs: Vec<*const c_void>,
    /// Each field's first output element.
    outputs: Vec<*mut c_void>,
    /// Why the arrays are not a batch of this plan's fields, if they are not.
    error: Option<Error>,
}

impl Fields {
    /// The fields of `a` and `b` for `plan`, of element type `dtype` when
    /// given.
    ///
    /// # Safety
    /// Each descriptor's array holding what it says.
    unsafe fn of(
        plan: &Plan,
        dtype: Option<DtypeCode>,
        a: &ArrayDescriptor,
        b: &ArrayDescriptor,
    ) -> Fields {
        let count = last_extent(a);
        let checked = match dtype_error(plan, dtype) {
            Some(error) => Err(error),
            None => check_sides(plan, a, b),
        };
        let (inputs, outputs) = match checked {
            Ok(()) => (
                firsts(a, count).map(<*mut c_void>::cast_const).collect(),
                firsts(b, count).collect(),
            ),
            Err(_) => (Vec::new(), Vec::new()),
        };
        Fields {
            count,
            inputs,
            outputs,
            error: checked.err(),
        }
    }

    /// The batch as the C ABI runs it: each field's input its side's span,
    /// each output's capacity the output span.
    fn batch(&self, plan: &Plan) -> CBatch {
        CBatch::new(
            self.count,
            self.inputs.as_ptr(),
            self.outputs.as_ptr(),
            plan.output_span() as i64,
        )
    }
}

/// The extent of the last (Fortran) dimension of `desc`, the fields; 0 for a
/// scalar.
fn last_extent(desc: &ArrayDescriptor) -> i64 {
    usize::try_from(desc.rank - 1)
        .ok()
        .and_then(|last| desc.extents.get(last).copied())
        .unwrap_or(0)
}

/// The first elements of the `count` fields of `desc`, one step of its last
/// dimension apart.
fn firsts(desc: &ArrayDescriptor, count: i64) -> impl Iterator<Item = *mut c_void> + '_ {
    let step = desc.strides[(desc.rank - 1) as usize] as isize;
    (0..count as isize).map(move |i| desc.base.cast::<u8>().wrapping_offset(i * step).cast())
}

/// Checks that `a` and `b` hold as many fields, each this rank's box on its
/// side at the plan's strides.
fn check_sides(plan: &Plan, a: &ArrayDescriptor, b: &ArrayDescriptor) -> Result<()> {
    let rank = plan.rank();
    let sides = [
        ("a", a, plan.local_input_shape(), plan.input_strides()),
        ("b", b, plan.local_output_shape(), plan.output_strides()),
    ];
    for (name, desc, extents, strides) in sides {
        let (shape, _) = read(name, desc)?;
        if shape.len() != extents.len() + 1 {
            return Err(Error::InvalidShape(format!(
                "{name} has rank {} but a batch of this plan's fields has rank {}: the box's dimensions, then the fields (rank {rank})",
                shape.len(),
                extents.len() + 1
            )));
        }
        let field = ArrayDescriptor {
            rank: desc.rank - 1,
            ..*desc
        };
        let name = format!("each field of {name}");
        let elements = (plan.elem_size(), plan.is_strided());
        check_array(&name, &field, (&extents, strides), elements, rank)?;
    }
    let (ka, kb) = (last_extent(a), last_extent(b));
    if ka != kb {
        return Err(Error::InvalidShape(format!(
            "a holds {ka} fields but b holds {kb} (rank {rank})"
        )));
    }
    Ok(())
}
