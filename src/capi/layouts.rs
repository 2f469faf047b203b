//! Grid layouts in C: layout descriptors, plans between two of them, and the boxes
//! a rank holds.

use crate::api::options::PlanOptions;
use crate::api::plan::Plan;
use crate::capi::boundary::{elem_size, guard, guard_without_status, shape_arg};
use crate::capi::handles::{checked_args, dr_plan, plan_ref, store_plan};
use crate::capi::options::{configured, dr_options, dr_plan_options, options_arg};
use crate::capi::plans::MPI_Comm;
use crate::core::abi::{DR_SPLIT_NONE, DtypeCode, dr_status};
use crate::core::error::{Error, Result};
use crate::distribution::grid::GridBox;
use crate::planning::layouts::{Layout, LayoutArgs};

/// A block layout of an array on a process grid (opaque): its global shape, the
/// grid, the grid axis splitting each array axis, and block lengths. Local: made
/// and changed without communicating; checked (the same on every rank) when a plan
/// is made from it.
pub struct dr_layout {
    layout: Layout,
}

/// Describes a layout (local, not collective): the global shape `gshape` (`ndims`
/// extents, C order; the shape of an output layout may hold one -1, resolved from
/// the input's element count), a process grid of `grid_ndims` axes `grid_dims`
/// whose product is the communicator's size (ranks numbered row-major over it, as
/// `MPI_Cart_create` without reordering numbers them, so such a Cartesian
/// communicator just works), and for each array axis `i` the grid axis
/// `axis_grid[i]` splitting it, or `DR_SPLIT_NONE`. Each grid axis splits at most
/// one array axis; one that splits none replicates (ranks differing only in that
/// coordinate hold the same block). Blocks are balanced (as `dr_balanced_slab`)
/// unless `dr_layout_set_lengths` gives them. Only what this call needs to read its
/// arguments is checked here (NULL pointers, dimension counts); everything else is
/// checked by the plan, with the same status on every rank. On success `*layout`
/// is a layout to free with `dr_layout_destroy`; it may be freed once plans are
/// made from it.
///
/// # Safety
/// `gshape` and `axis_grid` readable for `ndims` values, `grid_dims` for
/// `grid_ndims`; `layout` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_layout_create(
    ndims: i32,
    gshape: *const i64,
    grid_ndims: i32,
    grid_dims: *const i32,
    axis_grid: *const i32,
    layout: *mut *mut dr_layout,
) -> dr_status {
    guard(|| {
        if layout.is_null() {
            return Err(Error::NullPointer(
                "layout (the output pointer) is NULL".into(),
            ));
        }
        // SAFETY: the arrays as documented.
        let (shape, grid, axes) = unsafe {
            (
                shape_arg("gshape", ndims, gshape)?,
                shape_arg("grid_dims", grid_ndims, grid_dims)?,
                shape_arg("axis_grid", ndims, axis_grid)?,
            )
        };
        let grid: Vec<i64> = grid.into_iter().map(i64::from).collect();
        let axes = axes
            .iter()
            .enumerate()
            .map(|(i, &g)| grid_axis(i, g))
            .collect::<Result<Vec<_>>>()?;
        let made = Box::new(dr_layout {
            layout: Layout::new(&shape, &grid, &axes),
        });
        // SAFETY: layout is non-null (checked above) and writable.
        unsafe { *layout = Box::into_raw(made) };
        Ok(())
    })
}

/// The grid axis of `axis_grid[axis]`: `None` for `DR_SPLIT_NONE`.
fn grid_axis(axis: usize, value: i32) -> Result<Option<usize>> {
    match value {
        DR_SPLIT_NONE => Ok(None),
        g if g >= 0 => Ok(Some(g as usize)),
        g => Err(Error::InvalidSplit(format!(
            "axis_grid[{axis}] = {g} is negative and not DR_SPLIT_NONE"
        ))),
    }
}

/// Gives the blocks of array axis `axis` of `layout` explicit lengths (local):
/// `lengths` holds one length per coordinate of the grid axis splitting `axis`
/// (`grid_dims[axis_grid[axis]]` values), adding up to the extent; zeros are
/// allowed. That the lengths add up is checked by the plan, on every rank alike.
///
/// # Safety
/// `layout` from `dr_layout_create`; `lengths` readable for its values.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_layout_set_lengths(
    layout: *mut dr_layout,
    axis: i32,
    lengths: *const i64,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let layout = unsafe { layout.as_mut() }
            .ok_or_else(|| Error::NullPointer("layout is NULL".into()))?;
        let count = length_count(&layout.layout, axis)?;
        // SAFETY: lengths readable for the grid axis's size (documented).
        let given = unsafe { shape_arg("lengths", count, lengths) }?;
        layout.layout = layout.layout.clone().with_lengths(axis as usize, &given);
        Ok(())
    })
}

/// How many lengths axis `axis` of `layout` takes: the size of its grid axis.
fn length_count(layout: &Layout, axis: i32) -> Result<i32> {
    let split = usize::try_from(axis)
        .ok()
        .and_then(|a| layout.axis_grid().get(a).copied());
    let grid_axis = match split {
        Some(Some(g)) => g,
        Some(None) => {
            return Err(Error::InvalidSplit(format!(
                "axis = {axis} is not split, so it has no block lengths"
            )));
        }
        None => {
            return Err(Error::InvalidSplit(format!(
                "axis = {axis} is not an axis of the {}-d layout",
                layout.axis_grid().len()
            )));
        }
    };
    let size = layout.grid_dims().get(grid_axis).copied();
    size.and_then(|n| i32::try_from(n).ok())
        .filter(|&n| n >= 0)
        .ok_or_else(|| {
            Error::InvalidSplit(format!(
                "axis {axis} is split over grid axis {grid_axis}, which the grid {:?} does not have",
                layout.grid_dims()
            ))
        })
}

/// Frees a layout. NULL is a no-op. Plans made from it do not need it.
///
/// # Safety
/// `layout` from `dr_layout_create`, destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_layout_destroy(layout: *mut dr_layout) {
    if !layout.is_null() {
        // SAFETY: layout came from Box::into_raw in dr_layout_create and is freed once.
        guard_without_status(|| drop(unsafe { Box::from_raw(layout) }));
    }
}

/// Plans the redistribution of elements of `dtype` from the layout `in_layout` to
/// the layout `out_layout` (collective over `comm`): the two grids may differ, and
/// so may the shapes, by NumPy's reshape rules (the output's may hold one -1). Every
/// element is sent at most once to each rank that needs it, straight from one rank
/// holding it (a rank holding it itself copies it); when no element changes rank,
/// nothing is sent and in place touches nothing. Every rank passes the same layouts:
/// a grid whose size is not the communicator's, on a Cartesian communicator a grid
/// of its number of axes with other dimensions, a grid axis used twice, lengths that
/// do not add up or layouts that differ between ranks are errors on every rank, the
/// message naming the argument, the value and the rank. The plan then works as one
/// from `dr_plan_create` (execute, in place, non-blocking, stats, describe);
/// `dr_plan_input_box` and `dr_plan_output_box` give this rank's boxes,
/// `dr_plan_output` the resolved output shape.
///
/// # Safety
/// Layouts NULL or from `dr_layout_create`; `plan` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_create_layouts(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    out_layout: *const dr_layout,
    comm: MPI_Comm,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented (NULL options: the defaults).
    unsafe {
        dr_plan_create_layouts_with_options(
            dtype,
            in_layout,
            out_layout,
            comm,
            std::ptr::null(),
            plan,
        )
    }
}

/// `dr_plan_create_layouts` with the tuning knobs of `*options` (NULL for the
/// defaults), checked as `dr_plan_create_with_options` checks them.
///
/// # Safety
/// As `dr_plan_create_layouts`; `options` NULL or readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_create_layouts_with_options(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    out_layout: *const dr_layout,
    comm: MPI_Comm,
    options: *const dr_plan_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let layouts = layout_args(dtype, in_layout, out_layout);
        create_layouts_plan(comm, layouts, options_arg(options), plan)
    })
}

/// `dr_plan_create_layouts` with every option of `*options` (NULL for the
/// defaults), made with `dr_options_create` and set with `dr_options_set`,
/// agreed as `dr_plan_create_configured` agrees them.
///
/// # Safety
/// As `dr_plan_create_layouts`; `options` NULL or from `dr_options_create` and
/// not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_create_layouts_configured(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    out_layout: *const dr_layout,
    comm: MPI_Comm,
    options: *const dr_options,
    plan: *mut *mut dr_plan,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let layouts = layout_args(dtype, in_layout, out_layout);
        create_layouts_plan(comm, layouts, configured(options), plan)
    })
}

/// Plans between the layouts of `args` with `options` (agreeing an error in
/// either, or a NULL `plan`, like any argument error) and stores the plan in
/// `*plan`.
///
/// # Safety
/// `plan` NULL or writable.
pub(crate) unsafe fn create_layouts_plan(
    comm: MPI_Comm,
    args: Result<LayoutArgs>,
    options: Result<PlanOptions>,
    plan: *mut *mut dr_plan,
) -> Result<()> {
    let args = checked_args(args, &options, plan);
    let created = Plan::create_from_layouts(comm, args, options.unwrap_or_default())?;
    // SAFETY: plan is non-null (checked and agreed above).
    unsafe { store_plan(created, plan) };
    Ok(())
}

/// The plan's arguments from C: the dtype and the two layouts.
///
/// # Safety
/// Layouts NULL or from `dr_layout_create`.
pub(crate) unsafe fn layout_args(
    dtype: DtypeCode,
    in_layout: *const dr_layout,
    out_layout: *const dr_layout,
) -> Result<LayoutArgs> {
    let size = elem_size(dtype)?;
    // SAFETY: as documented.
    let (input, output) = unsafe { (in_layout.as_ref(), out_layout.as_ref()) };
    let input = input.ok_or_else(|| Error::NullPointer("in_layout is NULL".into()))?;
    let output = output.ok_or_else(|| Error::NullPointer("out_layout is NULL".into()))?;
    Ok(LayoutArgs {
        dtype: Some(dtype),
        ..LayoutArgs::new(size, &input.layout, &output.layout)
    })
}

/// The box rank `rank` of `nranks` holds in `layout` (local, no MPI): for each
/// axis, the global index of its first element (`offsets`) and its extent
/// (`extents`), as a plan from the layout on `nranks` ranks gives it, so that a
/// caller can size its storage (halos, padding, an axis order) before planning.
/// The layout is checked as a plan checks it (its errors name the value and
/// `rank`); a shape holding -1 has no box until a plan resolves it
/// (`DR_ERROR_INVALID_SHAPE`). Its time and memory do not grow with `nranks`
/// (the box comes from the rank's grid coordinates; explicit block lengths,
/// one per coordinate, aside). Either pointer may be NULL.
///
/// # Safety
/// `layout` NULL or from `dr_layout_create`; non-NULL outputs writable for the
/// layout's axis count.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_layout_rank_box(
    layout: *const dr_layout,
    nranks: i32,
    rank: i32,
    offsets: *mut i64,
    extents: *mut i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe {
        let layout = layout
            .as_ref()
            .ok_or_else(|| Error::NullPointer("layout is NULL".into()))?;
        let count = |name: &str, n: i32| {
            usize::try_from(n)
                .map_err(|_| Error::InvalidDistribution(format!("{name} = {n} is negative")))
        };
        let (nranks, rank) = (count("nranks", nranks)?, count("rank", rank)?);
        write_box(layout.layout.rank_box(nranks, rank)?, offsets, extents)
    })
}

/// This rank's input box (local): for each axis of the input shape, the global
/// index of its first element (`offsets`) and its extent (`extents`); the rank's
/// input buffer holds the box in C order. For a plan from `dr_plan_create`, the
/// slab (whole along every axis but the split one). Either pointer may be NULL.
///
/// # Safety
/// `plan` from a plan creation; non-NULL outputs writable for the input's `ndims`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_input_box(
    plan: *const dr_plan,
    offsets: *mut i64,
    extents: *mut i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { write_box(plan_ref(plan)?.input_box(), offsets, extents) })
}

/// This rank's output box (local), in the resolved output shape, as
/// `dr_plan_input_box` gives the input's.
///
/// # Safety
/// `plan` from a plan creation; non-NULL outputs writable for the output's `ndims`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_output_box(
    plan: *const dr_plan,
    offsets: *mut i64,
    extents: *mut i64,
) -> dr_status {
    // SAFETY: as documented.
    guard(|| unsafe { write_box(plan_ref(plan)?.output_box(), offsets, extents) })
}

/// Writes a box's offsets and extents to the non-NULL pointers.
///
/// # Safety
/// Non-NULL pointers writable for the box's axes.
unsafe fn write_box(b: GridBox, offsets: *mut i64, extents: *mut i64) -> Result<()> {
    for (out, values) in [(offsets, &b.offsets), (extents, &b.extents)] {
        if !out.is_null() {
            for (i, &v) in values.iter().enumerate() {
                // SAFETY: out is writable for the box's axes (documented).
                unsafe { *out.add(i) = v as i64 };
            }
        }
    }
    Ok(())
}
