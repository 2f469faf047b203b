//! The arguments of a slab reshape as the entry points receive them (the C
//! one-shots and plan constructors, and the Fortran module's), decoded once for
//! both notations into [`ReshapeArgs`].

use crate::capi::boundary::{elem_size, shape_arg};
use crate::core::abi::{DR_SPLIT_NONE, DtypeCode};
use crate::core::error::{Error, Result};
use crate::planning::args::{Notation, ReshapeArgs, Target};

/// One side (input or output) of a slab reshape as passed: the global shape's
/// dimension count and extents, and the split, in the caller's notation.
#[derive(Clone, Copy)]
pub(crate) struct SlabSide {
    /// The number of extents `gshape` points to.
    pub(crate) ndims: i32,
    /// The global shape (C order in C, column-major in Fortran).
    pub(crate) gshape: *const i64,
    /// The split: a 0-based axis or `DR_SPLIT_NONE` in C, a 1-based dimension or 0
    /// (not split) in Fortran.
    pub(crate) split: i32,
}

impl SlabSide {
    /// The side of `ndims` extents at `gshape`, split by `split`.
    pub(crate) fn new(ndims: i32, gshape: *const i64, split: i32) -> SlabSide {
        SlabSide {
            ndims,
            gshape,
            split,
        }
    }
}

/// Every argument a slab reshape takes besides the communicator and the buffers.
#[derive(Clone, Copy)]
pub(crate) struct SlabArgs {
    /// The element type's `dr_dtype` code.
    pub(crate) dtype: DtypeCode,
    /// The input's shape and split.
    pub(crate) input: SlabSide,
    /// The output's shape (maybe with one -1) and split.
    pub(crate) output: SlabSide,
    /// This rank's input rows along the split.
    pub(crate) local_len: i64,
    /// This rank's output rows along the new split, -1 for balanced.
    pub(crate) new_local_len: i64,
}

impl SlabArgs {
    /// The arguments of element type `dtype` from `input` (this rank's
    /// `local_len` rows) to `output` (`new_local_len` rows, -1 for balanced).
    pub(crate) fn new(
        dtype: DtypeCode,
        input: SlabSide,
        output: SlabSide,
        local_len: i64,
        new_local_len: i64,
    ) -> SlabArgs {
        SlabArgs {
            dtype,
            input,
            output,
            local_len,
            new_local_len,
        }
    }

    /// Decodes the arguments, given in `notation`, into C order; the first bad one
    /// (dtype, input shape, split, output shape, new split) is the error.
    ///
    /// # Safety
    /// Both sides' `gshape` readable for their `ndims` values.
    pub(crate) unsafe fn decode(&self, notation: Notation) -> Result<ReshapeArgs> {
        let elem_size = elem_size(self.dtype)?;
        // SAFETY: forwarded from the caller.
        let gshape = unsafe { side_shape("gshape", self.input, notation) }?;
        let split = split_arg("split", self.input.split, gshape.len(), notation)?;
        // SAFETY: forwarded from the caller.
        let new_shape = unsafe { side_shape("new_gshape", self.output, notation) }?;
        let new_split = split_arg("new_split", self.output.split, new_shape.len(), notation)?;
        Ok(ReshapeArgs {
            elem_size,
            gshape,
            split,
            local_len: self.local_len,
            new_shape,
            new_split,
            target: target_arg(self.new_local_len),
            dtype: Some(self.dtype),
            notation,
        })
    }
}

/// A side's global shape in C order.
///
/// # Safety
/// `side.gshape` readable for `side.ndims` values.
unsafe fn side_shape(name: &str, side: SlabSide, notation: Notation) -> Result<Vec<i64>> {
    // SAFETY: forwarded from the caller.
    let mut shape = unsafe { shape_arg(name, side.ndims, side.gshape) }?;
    if notation == Notation::Fortran {
        shape.reverse();
    }
    Ok(shape)
}

/// A split argument as a C axis: in C an axis or `DR_SPLIT_NONE`, in Fortran a
/// dimension (1-based, 0 for not split) of an array of `ndims` dimensions.
fn split_arg(name: &str, split: i32, ndims: usize, notation: Notation) -> Result<Option<usize>> {
    match notation {
        Notation::C => match split {
            DR_SPLIT_NONE => Ok(None),
            s if s >= 0 => Ok(Some(s as usize)),
            s => Err(Error::InvalidSplit(format!(
                "{name} = {s} is negative and not DR_SPLIT_NONE"
            ))),
        },
        Notation::Fortran => match usize::try_from(split) {
            Ok(0) => Ok(None),
            Ok(d) if d <= ndims => Ok(Some(ndims - d)),
            _ => Err(Error::InvalidSplit(format!(
                "{name} = {split} is out of range for {ndims} dimensions (1 to {ndims}, or 0 for not split)"
            ))),
        },
    }
}

/// A `new_local_len` argument: -1 for the balanced distribution.
fn target_arg(new_local_len: i64) -> Target {
    match new_local_len {
        -1 => Target::Balanced,
        n => Target::Len(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_dimensions_map_to_c_axes() {
        let fortran = Notation::Fortran;
        assert_eq!(split_arg("split", 0, 3, fortran).unwrap(), None);
        assert_eq!(split_arg("split", 1, 3, fortran).unwrap(), Some(2));
        assert_eq!(split_arg("split", 3, 3, fortran).unwrap(), Some(0));
        for bad in [4, 5, -1] {
            let message = split_arg("split", bad, 3, fortran).unwrap_err().to_string();
            assert!(message.contains(&format!("split = {bad} is out of range for 3")));
        }
    }

    #[test]
    fn c_splits_are_axes_or_none() {
        assert_eq!(
            split_arg("split", DR_SPLIT_NONE, 2, Notation::C).unwrap(),
            None
        );
        assert_eq!(split_arg("split", 5, 2, Notation::C).unwrap(), Some(5));
        let message = split_arg("new_split", -3, 2, Notation::C)
            .unwrap_err()
            .to_string();
        assert!(message.contains("new_split = -3 is negative and not DR_SPLIT_NONE"));
    }
}
