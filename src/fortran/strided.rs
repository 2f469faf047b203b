//! The Fortran module's strided plans: `dr_plan_create_strided` takes its strides
//! from the descriptors of two mold arrays, and executions of such a plan take
//! the arrays' descriptors, whose shapes and strides must be the plan's (never
//! copied). The shim (`fortran/distreshape_fshim.c`) reads each
//! `CFI_cdesc_t` into an [`ArrayDescriptor`]: Fortran order (axis 1 first), in
//! bytes, as the descriptor holds it.

use std::ffi::c_void;

use super::dtype_error;
use crate::api::plan::Plan;
use crate::capi::{
    MPI_Comm, begin_request, c_plan_ref, configured, create_layouts_plan, dr_layout, dr_options,
    dr_plan, dr_request, guard, layout_args, plan_ref,
};
use crate::core::abi::{DtypeCode, dr_status};
use crate::core::error::{Error, Result};
use crate::mpi::buffers::Buffers;
use crate::planning::args::Notation;
use crate::planning::layouts::LayoutArgs;

/// A Fortran array as the shim reads its `CFI_cdesc_t` (C's `struct
/// dr_fortran_array` in `fortran/distreshape_fshim.c`, which must match): the
/// address of its first element, its rank, and the extent and the byte stride
/// (`sm`) of each axis, Fortran order.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArrayDescriptor {
    pub(super) base: *mut c_void,
    pub(super) rank: i32,
    pub(super) extents: [i64; MAX_RANK],
    pub(super) strides: [i64; MAX_RANK],
}

/// `CFI_MAX_RANK`: the most axes a descriptor has.
const MAX_RANK: usize = 15;

/// The shim's descriptor of an array, NULL an error.
///
/// # Safety
/// `desc` NULL or readable.
pub(super) unsafe fn descriptor<'a>(
    name: &str,
    desc: *const ArrayDescriptor,
) -> Result<&'a ArrayDescriptor> {
    // SAFETY: as documented.
    unsafe { desc.as_ref() }.ok_or_else(|| Error::NullPointer(format!("{name} is NULL")))
}

/// `dr_plan_create_strided_configured` for the Fortran module: each side's
/// strides are those of its mold array (the descriptor of `in_mold` for the
/// input, of `out_mold` for the output), which must have one axis per axis of
/// its layout. A mold of another rank is `DR_ERROR_INVALID_SHAPE`, a stride
/// that is no whole number of elements `DR_ERROR_INVALID_STRIDES`, both agreed
/// like every argument error.
///
/// # Safety
/// As `dr_plan_create_strided_configured`; each mold NULL or readable.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_fortran_plan_create_strided(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    in_mold: *const ArrayDescriptor,
    out_layout: *const dr_layout,
    out_mold: *const ArrayDescriptor,
    comm: MPI_Comm,
    options: *const dr_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let args = layout_args(dtype, in_layout, out_layout).and_then(|args| {
            let axes = (args.input.shape().len(), args.output.shape().len());
            let size = args.elem_size;
            let input = mold_strides("in_mold", descriptor("in_mold", in_mold)?, axes.0, size)?;
            let output = mold_strides("out_mold", descriptor("out_mold", out_mold)?, axes.1, size)?;
            let molded = args.with_strides(Some(&input), Some(&output));
            Ok(LayoutArgs {
                strides_from_molds: true,
                ..molded
            })
        });
        create_layouts_plan(comm, args, configured(options), plan)
    })
}

/// `dr_plan_execute` for the Fortran module on a strided plan: `a` and `b` are
/// arrays of element type `dtype` and this rank's box shapes at the plan's
/// strides (any on an axis of extent 1), else `DR_ERROR_INVALID_DTYPE`,
/// `DR_ERROR_INVALID_SHAPE` or `DR_ERROR_INVALID_STRIDES` on every rank, with
/// nothing moved.
///
/// # Safety
/// As `dr_plan_execute`; each descriptor NULL or readable, and its array's
/// memory holding what it says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_strided_typed(
    plan: *const dr_plan,
    dtype: DtypeCode,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute_strided(plan, Some(dtype), a, b) })
}

/// [`dr_fortran_plan_execute_strided_typed`] without the element type's
/// check, as the module of 0.3.0 calls it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_strided_typed`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_strided(
    plan: *const dr_plan,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { execute_strided(plan, None, a, b) })
}

/// `dr_plan_execute_begin` for the Fortran module on a strided plan, checking
/// the arrays as [`dr_fortran_plan_execute_strided_typed`] does.
///
/// # Safety
/// As [`dr_fortran_plan_execute_strided_typed`], and the arrays stay valid
/// until the execution completes (as `dr_plan_execute_begin`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_strided_begin_typed(
    plan: *const dr_plan,
    dtype: DtypeCode,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
    request: *mut *mut dr_request,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { begin_strided(plan, Some(dtype), (a, b), request) })
}

/// [`dr_fortran_plan_execute_strided_begin_typed`] without the element type's
/// check, as the module of 0.3.0 calls it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_strided_begin_typed`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_plan_execute_strided_begin(
    plan: *const dr_plan,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
    request: *mut *mut dr_request,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { begin_strided(plan, None, (a, b), request) })
}

/// Executes `plan` on the arrays `a` and `b`, checked against it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_strided_typed`].
unsafe fn execute_strided(
    plan: *const dr_plan,
    dtype: Option<DtypeCode>,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
) -> Result<()> {
    // SAFETY: as documented.
    let plan = unsafe { plan_ref(plan) }?;
    // SAFETY: as documented.
    let (a, b) = unsafe { (descriptor("a", a)?, descriptor("b", b)?) };
    let (buffers, pre) = checked_buffers(plan, dtype, a, b);
    let Buffers {
        input,
        input_len,
        output,
        capacity,
    } = buffers;
    // SAFETY: once the checks pass, each array covers its side's span.
    unsafe { plan.execute_checked(input, input_len, output, capacity, pre) }
}

/// Starts `plan`'s execution on the arrays `a` and `b`, checked against it.
///
/// # Safety
/// As [`dr_fortran_plan_execute_strided_begin_typed`].
unsafe fn begin_strided(
    plan: *const dr_plan,
    dtype: Option<DtypeCode>,
    (a, b): (*const ArrayDescriptor, *const ArrayDescriptor),
    request: *mut *mut dr_request,
) -> Result<()> {
    // SAFETY: as documented.
    let p = unsafe { c_plan_ref(plan) }?;
    // SAFETY: as documented.
    let (a, b) = unsafe { (descriptor("a", a)?, descriptor("b", b)?) };
    let (buffers, pre) = checked_buffers(&p.plan, dtype, a, b);
    // SAFETY: once the checks pass, each array covers its side's span, and
    // stays valid until completion (documented).
    unsafe { begin_request(p, buffers, pre, request) }
}

/// The buffers of an execution on the arrays `a` and `b` (the spans of the
/// plan's sides), with the error to agree when their element type (`dtype`,
/// when given) is not the plan's or they are not the plan's boxes at the
/// plan's strides.
fn checked_buffers(
    plan: &Plan,
    dtype: Option<DtypeCode>,
    a: &ArrayDescriptor,
    b: &ArrayDescriptor,
) -> (Buffers, Option<Error>) {
    let size = plan.elem_size();
    let buffers = Buffers::new(
        a.base.cast_const().cast(),
        plan.input_span() * size,
        b.base.cast(),
        plan.output_span() * size,
    );
    let boxes = [
        ("a", a, plan.local_input_shape(), plan.input_strides()),
        ("b", b, plan.local_output_shape(), plan.output_strides()),
    ];
    let pre = dtype_error(plan, dtype).or_else(|| {
        boxes
            .into_iter()
            .find_map(|(name, desc, extents, strides)| {
                let elements = (size, plan.is_strided());
                check_array(name, desc, (&extents, strides), elements, plan.rank()).err()
            })
    });
    (buffers, pre)
}

/// The descriptor's extents and byte strides, C order (reversed).
pub(super) fn read(name: &str, desc: &ArrayDescriptor) -> Result<(Vec<i64>, Vec<i64>)> {
    let rank = usize::try_from(desc.rank)
        .ok()
        .filter(|&r| r <= MAX_RANK)
        .ok_or_else(|| Error::InvalidShape(format!("{name} has rank {}", desc.rank)))?;
    let reversed = |values: &[i64]| values[..rank].iter().rev().copied().collect();
    Ok((reversed(&desc.extents), reversed(&desc.strides)))
}

/// The stride of `bytes` in elements of `size` bytes; on an axis of extent 0 or
/// 1, where the stride is never used, any.
fn elements(
    name: &str,
    axis: usize,
    ndims: usize,
    (bytes, extent): (i64, i64),
    size: usize,
) -> Result<i64> {
    let size = size as i64;
    if extent > 1 && bytes % size != 0 {
        return Err(Error::InvalidStrides(format!(
            "{name}'s stride along dimension {} is {bytes} bytes, not a whole number of {size}-byte elements",
            Notation::Fortran.axis(Some(axis), ndims)
        )));
    }
    Ok(bytes / size)
}

/// A mold's strides in elements, C order, for a side of `axes` axes.
fn mold_strides(name: &str, mold: &ArrayDescriptor, axes: usize, size: usize) -> Result<Vec<i64>> {
    let (extents, bytes) = read(name, mold)?;
    if extents.len() != axes {
        return Err(Error::InvalidShape(format!(
            "{name} has rank {} but its layout has {axes} axes",
            extents.len()
        )));
    }
    let pairs = bytes.iter().zip(&extents).enumerate();
    pairs
        .map(|(axis, (&b, &n))| elements(name, axis, axes, (b, n), size))
        .collect()
}

/// Checks an array against this rank's box on a side: its shape must be the
/// box's and, unless the box is empty, its stride on every axis longer than one
/// the plan's (made from molds when `molded`).
pub(super) fn check_array(
    name: &str,
    desc: &ArrayDescriptor,
    (extents, strides): (&[u64], &[u64]),
    (size, molded): (usize, bool),
    rank: usize,
) -> Result<()> {
    let fortran = Notation::Fortran;
    let (shape, bytes) = read(name, desc)?;
    let same_shape = shape.len() == extents.len()
        && shape
            .iter()
            .zip(extents)
            .all(|(&a, &b)| a.max(0) as u64 == b);
    if !same_shape {
        return Err(Error::InvalidShape(format!(
            "{name} has shape {} but this rank's box has shape {} (rank {rank})",
            fortran.shape(&shape),
            fortran.shape(extents)
        )));
    }
    if extents.contains(&0) {
        return Ok(());
    }
    let axes = bytes.iter().zip(&shape).zip(strides).enumerate();
    for (axis, ((&b, &n), &want)) in axes {
        let given = elements(name, axis, shape.len(), (b, n), size)?;
        if n > 1 && given != want as i64 {
            let advice = match molded {
                true => "pass arrays laid out as the molds the plan was made from",
                false => "the plan was made without molds: pass contiguous arrays",
            };
            return Err(Error::InvalidStrides(format!(
                "{name}'s stride along dimension {} is {given} elements but the plan's is {want}: {advice} (rank {rank})",
                fortran.axis(Some(axis), shape.len())
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A descriptor of `extents` and byte `strides`, Fortran order.
    fn desc(extents: &[i64], strides: &[i64]) -> ArrayDescriptor {
        let mut d = ArrayDescriptor {
            base: std::ptr::null_mut(),
            rank: extents.len() as i32,
            extents: [0; MAX_RANK],
            strides: [0; MAX_RANK],
        };
        d.extents[..extents.len()].copy_from_slice(extents);
        d.strides[..strides.len()].copy_from_slice(strides);
        d
    }

    #[test]
    fn molds_give_c_order_element_strides() {
        // The interior (4, 3) of a real64 array (6, 5): C strides [6, 1].
        let mold = desc(&[4, 3], &[8, 48]);
        assert_eq!(mold_strides("in_mold", &mold, 2, 8).unwrap(), [6, 1]);
        let rank = mold_strides("in_mold", &mold, 3, 8).unwrap_err();
        assert!(matches!(rank, Error::InvalidShape(_)));
        assert!(
            rank.to_string()
                .contains("in_mold has rank 2 but its layout has 3 axes")
        );
        let part = mold_strides("out_mold", &desc(&[4, 3], &[12, 48]), 2, 8).unwrap_err();
        assert!(matches!(part, Error::InvalidStrides(_)));
        assert!(part.to_string().contains("along dimension 1 is 12 bytes"));
        // An axis of extent 1 may have any stride.
        assert_eq!(
            mold_strides("in_mold", &desc(&[1, 3], &[3, 48]), 2, 8).unwrap(),
            [6, 0]
        );
    }

    #[test]
    fn arrays_must_be_the_box_at_the_plan_strides() {
        let (extents, strides): ([u64; 2], [u64; 2]) = ([3, 4], [6, 1]);
        let check = |e: &[i64], s: &[i64]| {
            check_array("a", &desc(e, s), (&extents, &strides), (8, true), 1)
        };
        assert!(check(&[4, 3], &[8, 48]).is_ok());
        let shape = check(&[4, 4], &[8, 48]).unwrap_err();
        assert!(matches!(shape, Error::InvalidShape(_)));
        assert!(
            shape
                .to_string()
                .contains("a has shape (4, 4) but this rank's box has shape (4, 3) (rank 1)")
        );
        let strided = check(&[4, 3], &[16, 48]).unwrap_err();
        assert!(matches!(strided, Error::InvalidStrides(_)));
        assert!(
            strided
                .to_string()
                .contains("along dimension 1 is 2 elements but the plan's is 1")
        );
        let unmolded = (&extents[..], &strides[..]);
        let dense = check_array("a", &desc(&[4, 3], &[16, 48]), unmolded, (8, false), 1);
        let dense = dense.unwrap_err().to_string();
        assert!(
            dense.contains("made without molds: pass contiguous arrays"),
            "{dense}"
        );
        // Any stride on an axis of extent 1, and none checked on an empty box.
        let one: ([u64; 2], [u64; 2]) = ([1, 4], [6, 1]);
        assert!(check_array("b", &desc(&[4, 1], &[8, 8]), (&one.0, &one.1), (8, true), 0).is_ok());
        let empty: ([u64; 2], [u64; 2]) = ([0, 4], [4, 1]);
        assert!(
            check_array(
                "b",
                &desc(&[4, 0], &[24, 3]),
                (&empty.0, &empty.1),
                (8, true),
                0
            )
            .is_ok()
        );
    }
}
