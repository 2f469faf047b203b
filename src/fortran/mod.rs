//! The entry points behind the Fortran module (`fortran/distreshape.f90`, through
//! `fortran/distreshape_fshim.c` for the ones taking a communicator). They are not
//! in the C header: they take arguments as the Fortran caller wrote them (extents in
//! column-major order, 1-based dimensions, 0 for not split) plus the shapes of the
//! Fortran arrays, check those shapes against the plan on every rank alike, and
//! word every message in the caller's notation.

mod batch;
mod fused;
mod strided;

use std::ffi::c_void;

use crate::api::options::PlanOptions;
use crate::api::plan::Plan;
use crate::capi::{
    MPI_Comm, SlabArgs, SlabSide, begin_request, c_buffers, c_plan_ref, configured, create_plan,
    dr_options, dr_plan, dr_request, guard, plan_ref, shape_arg,
};
use crate::core::abi::{DtypeCode, dr_status};
use crate::core::error::{Error, Result};
use crate::distribution::layout::checked_product;
use crate::mpi::buffers::Buffers;
use crate::planning::args::Notation;

/// `dr_reshape_to` for the Fortran module: `a` of shape `a_shape` (`a_ndims`
/// extents) is this rank's slab, `b` of shape `b_shape` receives its part of the
/// result (`new_local_len` rows, -1 for balanced).
///
/// # Safety
/// As `dr_reshape`; `a` and `b` hold the elements their shapes say.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_fortran_reshape(
    a: *const c_void,
    a_ndims: i32,
    a_shape: *const i64,
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
    b: *mut c_void,
    b_ndims: i32,
    b_shape: *const i64,
    new_local_elems: *mut i64,
) -> dr_status {
    let input = SlabSide::new(ndims, gshape, split);
    let output = SlabSide::new(new_ndims, new_gshape, new_split);
    let args = SlabArgs::new(dtype, input, output, local_len, new_local_len);
    guard(|| {
        // SAFETY: shapes readable for their dimension counts (documented).
        let decoded = unsafe { args.decode(Notation::Fortran) };
        let plan = Plan::create(comm, decoded, PlanOptions::default())?.agreeing_always();
        // SAFETY: the arrays' shapes and data as documented.
        unsafe { execute(&plan, None, (a, a_ndims, a_shape), (b, b_ndims, b_shape)) }?;
        if !new_local_elems.is_null() {
            // SAFETY: the module passes a writable int64.
            unsafe { *new_local_elems = plan.output_elems() as i64 };
        }
        Ok(())
    })
}

/// `dr_plan_create_configured` for the Fortran module (arguments in Fortran
/// notation).
///
/// # Safety
/// As `dr_plan_create_configured`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_fortran_plan_create(
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
    // SAFETY: shapes readable for their dimension counts, options and plan as
    // documented.
    guard(|| unsafe {
        create_plan(
            comm,
            args.decode(Notation::Fortran),
            configured(options),
            plan,
        )
    })
}

/// `dr_plan_execute` for the Fortran module, with the arrays' shapes and
/// element type: `dtype` not the plan's is `DR_ERROR_INVALID_DTYPE`, and arrays
/// not this rank's slabs `DR_ERROR_INVALID_SHAPE` or
/// `DR_ERROR_BUFFER_TOO_SMALL`, agreed like a buffer error, with nothing moved.
///
/// # Safety
/// As `dr_plan_execute`; `a` and `b` hold the elements their shapes say.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_fortran_plan_execute_typed(
    plan: *const dr_plan,
    dtype: DtypeCode,
    a: *const c_void,
    a_ndims: i32,
    a_shape: *const i64,
    b: *mut c_void,
    b_ndims: i32,
    b_shape: *const i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        execute_plan(
            plan,
            Some(dtype),
            (a, a_ndims, a_shape),
            (b, b_ndims, b_shape),
        )
    })
}

/// [`dr_fortran_plan_execute_typed`] without the element type's check, as the
/// module of 0.3.0 calls it (kept so that its static library runs against this
/// shared library).
///
/// # Safety
/// As `dr_plan_execute`; `a` and `b` hold the elements their shapes say.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute(
    plan: *const dr_plan,
    a: *const c_void,
    a_ndims: i32,
    a_shape: *const i64,
    b: *mut c_void,
    b_ndims: i32,
    b_shape: *const i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute_plan(plan, None, (a, a_ndims, a_shape), (b, b_ndims, b_shape)) })
}

/// `dr_plan_execute_begin` for the Fortran module, with the arrays' shapes and
/// element type, checked as [`dr_fortran_plan_execute_typed`] checks them.
///
/// # Safety
/// As `dr_plan_execute_begin`; `a` and `b` hold the elements their shapes say.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_fortran_plan_execute_begin_typed(
    plan: *const dr_plan,
    dtype: DtypeCode,
    a: *const c_void,
    a_ndims: i32,
    a_shape: *const i64,
    b: *mut c_void,
    b_ndims: i32,
    b_shape: *const i64,
    request: *mut *mut dr_request,
) -> dr_status {
    let arrays = ((a, a_ndims, a_shape), (b, b_ndims, b_shape));
    // SAFETY: as documented.
    guard(|| unsafe { begin_plan(plan, Some(dtype), arrays, request) })
}

/// [`dr_fortran_plan_execute_begin_typed`] without the element type's check,
/// as the module of 0.3.0 calls it.
///
/// # Safety
/// As `dr_plan_execute_begin`; `a` and `b` hold the elements their shapes say.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_fortran_plan_execute_begin(
    plan: *const dr_plan,
    a: *const c_void,
    a_ndims: i32,
    a_shape: *const i64,
    b: *mut c_void,
    b_ndims: i32,
    b_shape: *const i64,
    request: *mut *mut dr_request,
) -> dr_status {
    let arrays = ((a, a_ndims, a_shape), (b, b_ndims, b_shape));
    // SAFETY: as documented.
    guard(|| unsafe { begin_plan(plan, None, arrays, request) })
}

/// `dr_plan_execute` in place for the Fortran module: `buf` holds `elems`
/// elements of type `dtype`, both sides of the plan. `dtype` not the plan's is
/// `DR_ERROR_INVALID_DTYPE`, agreed with the execution's checks, with nothing
/// moved.
///
/// # Safety
/// As `dr_plan_execute` with `buf` as input and output and `elems` as its
/// capacity.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_in_place(
    plan: *const dr_plan,
    dtype: DtypeCode,
    buf: *mut c_void,
    elems: i64,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let plan = unsafe { plan_ref(plan) }?;
        let (b, pre) = c_buffers(plan, (buf, None), (buf, elems));
        let pre = dtype_error(plan, Some(dtype)).or(pre);
        // SAFETY: buffers as documented; sizes are checked against the plan.
        unsafe { plan.execute_checked(b.input, b.input_len, b.output, b.capacity, pre) }
    })
}

/// The error to agree when the arrays' element type `dtype` is not the plan's
/// (`None`: not checked, for the module of 0.3.0, which stopped the program
/// itself).
pub(super) fn dtype_error(plan: &Plan, dtype: Option<DtypeCode>) -> Option<Error> {
    dtype.and_then(|code| plan.check_dtype(code).err())
}

/// Executes `plan` from `a` into `b`, checked against the plan.
///
/// # Safety
/// As `dr_plan_execute`; the arrays hold the elements their shapes say.
unsafe fn execute_plan(
    plan: *const dr_plan,
    dtype: Option<DtypeCode>,
    a: FortranArray<*const c_void>,
    b: FortranArray<*mut c_void>,
) -> Result<()> {
    // SAFETY: as documented.
    let plan = unsafe { plan_ref(plan) }?;
    // SAFETY: as documented.
    unsafe { execute(plan, dtype, a, b) }
}

/// Starts `plan`'s execution from `a` into `b`, checked against the plan.
///
/// # Safety
/// As `dr_plan_execute_begin`; the arrays hold the elements their shapes say.
unsafe fn begin_plan(
    plan: *const dr_plan,
    dtype: Option<DtypeCode>,
    ((a, a_ndims, a_shape), (b, b_ndims, b_shape)): (
        FortranArray<*const c_void>,
        FortranArray<*mut c_void>,
    ),
    request: *mut *mut dr_request,
) -> Result<()> {
    // SAFETY: as documented.
    let p = unsafe { c_plan_ref(plan) }?;
    // SAFETY: shapes readable for their dimension counts (documented).
    let (pre, capacity) =
        unsafe { checked_capacity(&p.plan, (a_ndims, a_shape), (b_ndims, b_shape)) };
    let buffers = Buffers::new(
        a.cast(),
        p.plan.input_elems() * p.plan.elem_size(),
        b.cast(),
        capacity,
    );
    let pre = dtype_error(&p.plan, dtype).or(pre);
    // SAFETY: the arrays hold what their shapes say, checked against the plan,
    // and stay valid until completion (documented).
    unsafe { begin_request(p, buffers, pre, request) }
}

/// A Fortran array: its address, rank and shape (column-major order).
type FortranArray<P> = (P, i32, *const i64);

/// Executes `plan` from `a` into `b` once their element type (`dtype`, when
/// given) and shapes are checked (an error agreed like a buffer error).
///
/// # Safety
/// The arrays' shapes readable, their data holding what the shapes say.
unsafe fn execute(
    plan: &Plan,
    dtype: Option<DtypeCode>,
    (a, a_ndims, a_shape): FortranArray<*const c_void>,
    (b, b_ndims, b_shape): FortranArray<*mut c_void>,
) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let (pre, capacity) = unsafe { checked_capacity(plan, (a_ndims, a_shape), (b_ndims, b_shape)) };
    let pre = dtype_error(plan, dtype).or(pre);
    let in_bytes = plan.input_elems() * plan.elem_size();
    // SAFETY: the arrays hold what their shapes say, checked against the plan.
    unsafe { plan.execute_checked(a.cast(), in_bytes, b.cast(), capacity, pre) }
}

fn reversed(mut shape: Vec<i64>) -> Vec<i64> {
    shape.reverse();
    shape
}

/// `b`'s capacity in bytes once the Fortran arrays are checked against this rank's
/// slabs, with the error to agree (like a buffer error) when they do not fit.
///
/// # Safety
/// Shape pointers valid for their dimension counts.
unsafe fn checked_capacity(
    plan: &Plan,
    a: (i32, *const i64),
    b: (i32, *const i64),
) -> (Option<Error>, usize) {
    // SAFETY: forwarded from the caller.
    let arrays = unsafe { array_shapes(plan, a, b) };
    let capacity = arrays
        .as_ref()
        .map_or(0, |b_elems| b_elems.saturating_mul(plan.elem_size()));
    (arrays.err(), capacity)
}

/// Checks the Fortran arrays against this rank's slabs and returns the number of
/// elements `b` holds.
///
/// # Safety
/// Shape pointers valid for their dimension counts.
unsafe fn array_shapes(
    plan: &Plan,
    (a_ndims, a_shape): (i32, *const i64),
    (b_ndims, b_shape): (i32, *const i64),
) -> Result<usize> {
    let rank = plan.rank();
    // SAFETY: forwarded from the caller.
    let a = reversed(unsafe { shape_arg("a", a_ndims, a_shape) }?);
    // SAFETY: forwarded from the caller.
    let b = reversed(unsafe { shape_arg("b", b_ndims, b_shape) }?);
    check_array("a", &a, &plan.local_input_shape(), rank)?;
    check_array("b", &b, &plan.local_output_shape(), rank)
}

/// A rank-1 array is a flat buffer with a capacity, whatever the slab's rank: it
/// must hold at least the slab's elements, like an array of any other rank than
/// the slab's. An array of the slab's rank, when that is 2 or more, must have the
/// slab's shape exactly. Returns the array's size.
fn check_array(name: &str, array: &[i64], slab: &[u64], rank: usize) -> Result<usize> {
    let fortran = Notation::Fortran;
    let extents: Vec<u64> = array.iter().map(|&n| n.max(0) as u64).collect();
    let (size, needed) = (
        checked_product(&extents),
        checked_product(slab).unwrap_or(0),
    );
    let shaped = array.len() >= 2 && array.len() == slab.len();
    if shaped && extents != slab {
        return Err(Error::InvalidShape(format!(
            "{name} has shape {} but this rank's slab has shape {} (rank {rank})",
            fortran.shape(array),
            fortran.shape(slab)
        )));
    }
    match size {
        Some(n) if n >= needed => Ok(n as usize),
        _ => Err(Error::BufferTooSmall(format!(
            "{name} has {} elements but this rank's slab of shape {} has {needed} (rank {rank})",
            size.unwrap_or(0),
            fortran.shape(slab)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_must_match_the_slab() {
        // The slab (4, 6) in C order is a Fortran array (6, 4).
        let slab = [4, 6];
        assert_eq!(check_array("a", &[4, 6], &slab, 0).unwrap(), 24);
        let short_row = check_array("a", &[4, 5], &slab, 1).unwrap_err();
        assert!(matches!(short_row, Error::InvalidShape(_)));
        assert!(
            short_row
                .to_string()
                .contains("a has shape (5, 4) but this rank's slab has shape (6, 4) (rank 1)")
        );
        assert_eq!(check_array("b", &[30], &slab, 0).unwrap(), 30);
        // A rank-1 array is a flat buffer even when the slab is 1-D too.
        assert_eq!(check_array("b", &[142], &[141], 0).unwrap(), 142);
        let short = check_array("b", &[140], &[141], 3).unwrap_err();
        assert!(matches!(short, Error::BufferTooSmall(_)));
        assert!(short.to_string().contains("b has 140 elements"));
        let flat = check_array("b", &[23], &slab, 2).unwrap_err();
        assert!(matches!(flat, Error::BufferTooSmall(_)));
        assert!(check_array("b", &[0, 0], &[0, 0], 0).is_ok());
    }
}
