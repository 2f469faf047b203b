//! Plans on strided local storage in C: each side's strides, in elements, one
//! per axis of its box (NULL for C order without gaps), and the spans and
//! strides a plan reports.

use crate::capi::boundary::guard;
use crate::capi::handles::dr_plan;
use crate::capi::handles::plan_ref;
use crate::capi::layouts::{create_layouts_plan, dr_layout, layout_args};
use crate::capi::options::{configured, dr_options, dr_plan_options, options_arg};
use crate::capi::plans::MPI_Comm;
use crate::core::abi::{DtypeCode, dr_status};
use crate::core::error::{Error, Result};
use crate::planning::layouts::LayoutArgs;

/// Plans between two layouts with this rank's local storage on each side
/// (collective): `in_strides` NULL (C order without gaps) or one stride per
/// axis of the input shape, in elements, so that input box element (i₀, …),
/// counted from the box's corner, lies at `in + Σ iₖ·in_strides[k]`;
/// `out_strides` likewise, one per axis of the output layout's shape (with its
/// -1 resolved). Strides are local: each rank passes its own, for its own box.
/// They express halos and padding (the padded array's strides, the buffer
/// pointer at the first interior element), any axis order, a leading dimension,
/// and any view with positive strides. Memory that is no box element is never
/// written nor used (a direct read between ranks of a node may copy a short
/// gap along with the rows around it and drop it: see the storage page), and
/// the input is never written.
///
/// Strides that are not positive on an axis longer than one, or that put two
/// elements at one address (ordered by stride, every axis must step over the
/// span of the axes below it), are `DR_ERROR_INVALID_STRIDES` on every rank,
/// the message naming the side, the axis, the value and the rank. The strides
/// of an empty box (an extent 0) place nothing and are not checked. Executions
/// take pointers to each box's first element; `out_capacity` counts elements
/// from `out` and must cover the output's span (`dr_plan_spans`); in place is
/// `DR_ERROR_INVALID_STRIDES` on a plan any rank made with strides. `options`:
/// NULL for the defaults, as `dr_plan_create_layouts_with_options`.
///
/// # Safety
/// As `dr_plan_create_layouts_with_options`; each strides pointer NULL or
/// readable for its layout's axis count.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_plan_create_strided(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    in_strides: *const i64,
    out_layout: *const dr_layout,
    out_strides: *const i64,
    comm: MPI_Comm,
    options: *const dr_plan_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let args = strided_args(dtype, (in_layout, in_strides), (out_layout, out_strides));
        create_layouts_plan(comm, args, options_arg(options), plan)
    })
}

/// `dr_plan_create_strided` with every option of `*options` (NULL for the
/// defaults), made with `dr_options_create`, as
/// `dr_plan_create_layouts_configured` takes them.
///
/// # Safety
/// As `dr_plan_create_strided`; `options` NULL or from `dr_options_create` and
/// not freed.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_plan_create_strided_configured(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    in_strides: *const i64,
    out_layout: *const dr_layout,
    out_strides: *const i64,
    comm: MPI_Comm,
    options: *const dr_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let args = strided_args(dtype, (in_layout, in_strides), (out_layout, out_strides));
        create_layouts_plan(comm, args, configured(options), plan)
    })
}

/// `dr_plan_create_strided_configured` with each side's count of strides, for
/// callers that hold their strides with a length (the C++ layer's do): `in_count`
/// values at `in_strides` and `out_count` at `out_strides`, a count of 0 meaning
/// C order without gaps (the pointer is then not read). A count that is not the
/// side's axis count is `DR_ERROR_INVALID_STRIDES` on every rank, the message
/// naming the side, the count and the rank, as a negative count is; a positive
/// count with a NULL pointer is `DR_ERROR_NULL_POINTER` on every rank. So a
/// count wrong on one rank fails the plan on all of them, where
/// `dr_plan_create_strided` cannot know it.
///
/// # Safety
/// As `dr_plan_create_strided_configured`; each strides pointer readable for
/// its count.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn dr_plan_create_strided_counted(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    in_strides: *const i64,
    in_count: i64,
    out_layout: *const dr_layout,
    out_strides: *const i64,
    out_count: i64,
    comm: MPI_Comm,
    options: *const dr_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let args = counted_args(
            dtype,
            (in_layout, in_strides, in_count),
            (out_layout, out_strides, out_count),
        );
        create_layouts_plan(comm, args, configured(options), plan)
    })
}

/// A layout with its strides from C.
type StridedSide = (*const dr_layout, *const i64);

/// A layout with its strides and their count from C.
type CountedSide = (*const dr_layout, *const i64, i64);

/// The plan's arguments from C with counted strides: the dtype, the two
/// layouts and as many strides as each count says (none for 0).
///
/// # Safety
/// Layouts NULL or from `dr_layout_create`; strides readable for their count.
unsafe fn counted_args(
    dtype: DtypeCode,
    (in_layout, in_strides, in_count): CountedSide,
    (out_layout, out_strides, out_count): CountedSide,
) -> Result<LayoutArgs> {
    // SAFETY: as documented.
    let args = unsafe { layout_args(dtype, in_layout, out_layout) }?;
    let axes = (args.input.shape().len(), args.output.shape().len());
    let in_names = ("in_strides", "in_count");
    // SAFETY: as documented.
    let input = unsafe { counted(in_names, in_strides, in_count, axes.0) }?;
    let out_names = ("out_strides", "out_count");
    // SAFETY: as documented.
    let output = unsafe { counted(out_names, out_strides, out_count, axes.1) }?;
    Ok(args.with_strides(input, output))
}

/// The `count` strides at `strides` (named `names`: the strides and their
/// count) of a side of `axes` axes, `None` for 0; a count that is neither 0
/// nor `axes` is refused before anything is read.
///
/// # Safety
/// `strides` readable for `count` values.
unsafe fn counted<'a>(
    (name, count_name): (&str, &str),
    strides: *const i64,
    count: i64,
    axes: usize,
) -> Result<Option<&'a [i64]>> {
    let len = usize::try_from(count)
        .ok()
        .filter(|&len| len == 0 || len == axes);
    let Some(len) = len else {
        return Err(Error::InvalidStrides(format!(
            "{count_name} = {count}: a count of strides is 0 (C order) or the axis count, {axes}"
        )));
    };
    match (len, strides.is_null()) {
        (0, _) => Ok(None),
        (_, true) => Err(Error::NullPointer(format!(
            "{name} is NULL with {count_name} = {count}"
        ))),
        // SAFETY: readable for `count` values (documented).
        (_, false) => Ok(Some(unsafe { std::slice::from_raw_parts(strides, len) })),
    }
}

/// The plan's arguments from C: the dtype, the two layouts and their strides.
///
/// # Safety
/// Layouts NULL or from `dr_layout_create`; strides NULL or readable for their
/// layout's axis count.
unsafe fn strided_args(
    dtype: DtypeCode,
    (in_layout, in_strides): StridedSide,
    (out_layout, out_strides): StridedSide,
) -> Result<LayoutArgs> {
    // SAFETY: as documented.
    let args = unsafe { layout_args(dtype, in_layout, out_layout) }?;
    let read = |strides: *const i64, axes: usize| {
        // SAFETY: non-NULL strides are readable for the layout's axes (documented).
        (!strides.is_null()).then(|| unsafe { std::slice::from_raw_parts(strides, axes) })
    };
    let axes = (args.input.shape().len(), args.output.shape().len());
    let (input, output) = (read(in_strides, axes.0), read(out_strides, axes.1));
    Ok(args.with_strides(input, output))
}

/// This rank's spans (local): the elements from its first input element to one
/// past its last (what the input buffer must hold) in `*in_span`, and the
/// output's (the least `out_capacity`) in `*out_span`; each is the box's element
/// count on a side without strides, 0 for an empty box. Either pointer may be
/// NULL.
///
/// # Safety
/// `plan` from a plan creation; non-NULL outputs writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_spans(
    plan: *const dr_plan,
    in_span: *mut i64,
    out_span: *mut i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let plan = plan_ref(plan)?;
        for (out, span) in [(in_span, plan.input_span()), (out_span, plan.output_span())] {
            if let Some(out) = out.as_mut() {
                *out = span as i64;
            }
        }
        Ok(())
    })
}

/// This rank's strides (local), in elements, one per axis of each side's shape:
/// those the plan was made with (a negative one on an axis of extent 1, where
/// it places nothing, reads back as 0), or C order without gaps. Either pointer
/// may be NULL.
///
/// # Safety
/// `plan` from a plan creation; non-NULL outputs writable for their side's axis
/// count.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_strides(
    plan: *const dr_plan,
    in_strides: *mut i64,
    out_strides: *mut i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let plan = plan_ref(plan)?;
        for (out, strides) in [
            (in_strides, plan.input_strides()),
            (out_strides, plan.output_strides()),
        ] {
            if out.is_null() {
                continue;
            }
            for (k, &stride) in strides.iter().enumerate() {
                // SAFETY: writable for the side's axes (documented).
                *out.add(k) = stride as i64;
            }
        }
        Ok(())
    })
}
