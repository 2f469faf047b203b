//! Reshapes of `ndarray` arrays that infer the slab length from the local array.

use mpi::topology::Communicator;
use ndarray::{ArrayD, ArrayViewD, IxDyn};

use crate::api::options::PlanOptions;
use crate::api::plan::Plan;
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::planning::args::ReshapeArgs;

/// Reshapes a distributed array given as this rank's local part (collective).
///
/// `local` has the global shape `gshape` except along `split`, where it holds this
/// rank's slab (its length is taken from `local`); with `split == None` it is the
/// whole array. The result is this rank's part of the array reshaped to `new_shape`
/// (NumPy semantics, one `-1` allowed) and balanced along `new_split`.
///
/// ```no_run
/// use ndarray::{ArrayD, IxDyn};
/// let universe = mpi::initialize().unwrap();
/// let world = mpi::topology::SimpleCommunicator::world();
/// // Every rank holds the whole (4, 6) array; the result is split along axis 0.
/// let whole = ArrayD::from_shape_fn(IxDyn(&[4, 6]), |ix| (ix[0] * 6 + ix[1]) as f64);
/// let part = distreshape::reshape_array(&world, whole.view(), &[4, 6], None, &[3, -1], Some(0)).unwrap();
/// assert_eq!(part.shape()[1], 8);
/// ```
pub fn reshape_array<T: Element, C: Communicator>(
    comm: &C,
    local: ArrayViewD<'_, T>,
    gshape: &[usize],
    split: Option<usize>,
    new_shape: &[isize],
    new_split: Option<usize>,
) -> Result<ArrayD<T>> {
    let local_len = split
        .and_then(|axis| local.shape().get(axis))
        .copied()
        .unwrap_or(0);
    let args = ReshapeArgs::new(
        size_of::<T>(),
        &gshape.iter().map(|&n| n as i64).collect::<Vec<_>>(),
        split,
        local_len as i64,
        &new_shape.iter().map(|&n| n as i64).collect::<Vec<_>>(),
        new_split,
    )
    .with_element::<T>();
    let checked_args = check_local_shape(local.shape(), gshape, split, comm.rank()).map(|()| args);
    let plan = Plan::create(comm.as_raw(), checked_args, PlanOptions::default())?.agreeing_always();
    let input = local.as_standard_layout();
    let data = input.as_slice().unwrap_or_default();
    let output = crate::api::plan::reshape_with(&plan, data)?;
    let mut shape: Vec<usize> = plan.new_shape().iter().map(|&n| n as usize).collect();
    if let (Some(axis), Some(rows)) = (new_split, plan.output_rows()) {
        shape[axis] = rows as usize;
    }
    ArrayD::from_shape_vec(IxDyn(&shape), output)
        .map_err(|e| Error::Internal(format!("output shape {shape:?}: {e}")))
}

/// Checks that the local array has the global shape outside the split axis.
fn check_local_shape(
    local: &[usize],
    gshape: &[usize],
    split: Option<usize>,
    rank: i32,
) -> Result<()> {
    let fits = local.len() == gshape.len()
        && local
            .iter()
            .zip(gshape)
            .enumerate()
            .all(|(i, (l, g))| l == g || Some(i) == split);
    if fits {
        return Ok(());
    }
    Err(Error::InvalidShape(format!(
        "the local array has shape {local:?}, which does not match gshape {gshape:?} outside split axis {split:?} (rank {rank})"
    )))
}
