//! Layout descriptors as callers write them (global, the same on every rank): the
//! global shape, the process grid, the grid axis splitting each array axis, and
//! block lengths; checked on one rank into the two grid layouts of a plan, and
//! fingerprinted so that the ranks can compare them in one agreement.

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::core::abi::dtype_words;
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::distribution::grid::{BlockLengths, GridBox, GridLayout};
use crate::distribution::groups::ReshapeSide;
use crate::distribution::layout::{MAX_DIMS, checked_product};
use crate::distribution::peers::Redistribution;
use crate::distribution::storage::{Storage, Storages, StridesNaming};
use crate::planning::args::{Notation, resolve_new_shape};

/// How an array is laid out over the ranks of a communicator: its global shape (C
/// order), a process grid (ranks numbered row-major over it, as `MPI_Cart_create`
/// without reordering numbers them), and for each array axis either "not split" or
/// the one grid axis that splits it, in balanced blocks (Heat's formula, as
/// [`balanced_slab`](crate::balanced_slab)) or in explicit lengths. A grid axis that
/// splits no array axis replicates: ranks that differ only in its coordinate hold
/// the same block. Every rank passes the same layout.
///
/// The shape of an output layout may hold one `-1`, resolved as NumPy does from the
/// input's element count. Nothing is checked until a plan is made, so that every
/// rank reports the same error.
///
/// ```
/// use distreshape::Layout;
/// // A (64, 64, 64) array in x-pencils on a 2 x 4 grid: axis 0 whole, axis 1 over
/// // grid axis 0, axis 2 over grid axis 1.
/// let x_pencils = Layout::new(&[64, 64, 64], &[2, 4], &[None, Some(0), Some(1)]);
/// // The same array as bricks on a 2 x 2 x 2 grid, axis 0 in uneven blocks.
/// let bricks = Layout::new(&[64, 64, 64], &[2, 2, 2], &[Some(0), Some(1), Some(2)])
///     .with_lengths(0, &[40, 24]);
/// # let _ = (x_pencils, bricks);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Vec<i64>,
    grid_dims: Vec<i64>,
    axis_grid: Vec<Option<usize>>,
    /// Explicit block lengths per array axis, in the order they were given.
    lengths: Vec<(usize, Vec<i64>)>,
}

impl Layout {
    /// `shape` over the grid `grid_dims`, array axis `a` split over grid axis
    /// `axis_grid[a]` (or not split when `None`) in balanced blocks.
    pub fn new(shape: &[i64], grid_dims: &[i64], axis_grid: &[Option<usize>]) -> Layout {
        Layout {
            shape: shape.to_vec(),
            grid_dims: grid_dims.to_vec(),
            axis_grid: axis_grid.to_vec(),
            lengths: Vec::new(),
        }
    }

    /// The same layout with array axis `axis` split in the blocks `lengths` (one
    /// per coordinate of its grid axis, adding up to the extent; zeros allowed).
    pub fn with_lengths(mut self, axis: usize, lengths: &[i64]) -> Layout {
        self.lengths.retain(|(a, _)| *a != axis);
        self.lengths.push((axis, lengths.to_vec()));
        self
    }

    /// Today's slab layout on `nranks` ranks: `shape` split along `split` in
    /// balanced slabs (one grid axis), or replicated when `split` is `None`.
    pub fn slab(shape: &[i64], split: Option<usize>, nranks: usize) -> Layout {
        let axis_grid: Vec<Option<usize>> = (0..shape.len())
            .map(|a| (Some(a) == split).then_some(0))
            .collect();
        Layout::new(shape, &[nranks as i64], &axis_grid)
    }

    /// The layout in words, as messages show it: its shape, its grid, the grid
    /// axis of each array axis (`-` for none) and any explicit block lengths.
    pub fn describe(&self) -> String {
        let axes: Vec<String> = (self.axis_grid.iter())
            .map(|g| g.map_or_else(|| "-".to_string(), |g| g.to_string()))
            .collect();
        let mut words = format!(
            "shape {:?} on grid {:?}, axis_grid [{}]",
            self.shape,
            self.grid_dims,
            axes.join(", ")
        );
        for (axis, lengths) in &self.lengths {
            words += &format!(", lengths {lengths:?} along axis {axis}");
        }
        words
    }

    /// The global shape as given (an output layout may hold one `-1`).
    pub fn shape(&self) -> &[i64] {
        &self.shape
    }

    /// The process grid.
    pub fn grid_dims(&self) -> &[i64] {
        &self.grid_dims
    }

    /// The grid axis splitting each array axis.
    pub fn axis_grid(&self) -> &[Option<usize>] {
        &self.axis_grid
    }

    /// The box rank `rank` of `nranks` holds (local, no MPI), the layout checked as a
    /// plan checks it; errors name the argument, its value and `rank`. A shape
    /// holding `-1` has no box until a plan resolves it ([`Plan::output_box`]).
    /// Its time and memory do not grow with `nranks` (but for explicit block
    /// lengths, which the layout holds one per coordinate).
    ///
    /// [`Plan::output_box`]: crate::Plan::output_box
    ///
    /// ```
    /// use distreshape::Layout;
    /// let pencils = Layout::new(&[4, 6, 8], &[2, 3], &[None, Some(1), Some(0)]);
    /// let mine = pencils.rank_box(6, 5).unwrap();
    /// assert_eq!((mine.offsets, mine.extents), (vec![0, 4, 4], vec![4, 2, 4]));
    /// ```
    pub fn rank_box(&self, nranks: usize, rank: usize) -> Result<GridBox> {
        self.rank_box_on(nranks, rank).map_err(|e| e.on_rank(rank))
    }

    fn rank_box_on(&self, nranks: usize, rank: usize) -> Result<GridBox> {
        if rank >= nranks {
            return Err(Error::InvalidDistribution(format!(
                "rank {rank} is not below the {nranks} ranks"
            )));
        }
        let shape = known_shape("layout", &self.shape)?;
        let lengths = self.block_lengths(&shape, "layout")?;
        GridLayout::rank_box_of(
            &shape,
            &self.grid_dims,
            &self.axis_grid,
            &lengths,
            nranks,
            rank,
        )
        .map_err(|e| named("layout", e))
    }

    /// The grid layout of `shape` (resolved) on `nranks` ranks, or the error that
    /// names `which` layout.
    fn resolve(&self, shape: &[u64], nranks: usize, which: &str) -> Result<GridLayout> {
        let lengths = self.block_lengths(shape, which)?;
        GridLayout::new(shape, &self.grid_dims, &self.axis_grid, &lengths, nranks)
            .map_err(|e| named(which, e))
    }

    /// The block lengths of each axis of `shape` (resolved), or the error that
    /// names `which` layout.
    fn block_lengths(&self, shape: &[u64], which: &str) -> Result<Vec<BlockLengths>> {
        if self.axis_grid.len() != shape.len() {
            return Err(Error::InvalidSplit(format!(
                "{which}: axis_grid has {} entries but the shape {:?} has {} axes",
                self.axis_grid.len(),
                self.shape,
                shape.len()
            )));
        }
        let mut lengths = vec![BlockLengths::Balanced; shape.len()];
        for (axis, given) in &self.lengths {
            let Some(slot) = lengths.get_mut(*axis) else {
                return Err(Error::InvalidDistribution(format!(
                    "{which}: lengths given for axis {axis} but the shape {:?} has {} axes",
                    self.shape,
                    shape.len()
                )));
            };
            if self.axis_grid[*axis].is_none() {
                return Err(Error::InvalidDistribution(format!(
                    "{which}: lengths given for axis {axis}, which is not split"
                )));
            }
            *slot = BlockLengths::Explicit(given.clone());
        }
        Ok(lengths)
    }
}

/// `error` with its detail prefixed by the layout it names.
fn named(which: &str, error: Error) -> Error {
    Error::from_status(error.status(), format!("{which}: {}", error.detail()))
}

/// What a plan between two layouts is made of: the element type and the two
/// layouts, the same on every rank.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LayoutArgs {
    /// Bytes per element.
    pub elem_size: usize,
    /// The `dr_dtype` of the elements when known, compared across ranks.
    pub dtype: Option<i32>,
    /// How the input is laid out.
    pub input: Layout,
    /// How the output is laid out (its shape may hold one `-1`).
    pub output: Layout,
    /// This rank's input storage: one stride per axis of its input box, in
    /// elements; `None` for C order without gaps. Local: each rank passes its own.
    pub input_strides: Option<Vec<i64>>,
    /// This rank's output storage, as `input_strides` (one stride per axis of the
    /// resolved output shape).
    pub output_strides: Option<Vec<i64>>,
    /// Whether the strides were read from the Fortran module's molds: messages
    /// then name a mold's dimensions rather than a strides argument's axes.
    pub strides_from_molds: bool,
}

impl LayoutArgs {
    /// A plan's arguments for elements of `elem_size` bytes.
    pub fn new(elem_size: usize, input: &Layout, output: &Layout) -> LayoutArgs {
        LayoutArgs {
            elem_size,
            dtype: None,
            input: input.clone(),
            output: output.clone(),
            input_strides: None,
            output_strides: None,
            strides_from_molds: false,
        }
    }

    /// The same arguments with this rank's storages: one stride per axis of each
    /// side's box, in elements (`None`: C order without gaps).
    pub fn with_strides(self, input: Option<&[i64]>, output: Option<&[i64]>) -> LayoutArgs {
        LayoutArgs {
            input_strides: input.map(<[i64]>::to_vec),
            output_strides: output.map(<[i64]>::to_vec),
            ..self
        }
    }

    /// This rank's storages of the resolved `layouts`, checked: one stride per axis, positive
    /// on every axis longer than one, no two elements at one address.
    pub(crate) fn storages(&self, layouts: &Redistribution, rank: usize) -> Result<Storages> {
        let storage = |side, strides: &Option<Vec<i64>>| {
            let naming = match self.strides_from_molds {
                true => StridesNaming::Mold(side),
                false => StridesNaming::Argument(side),
            };
            let layout = match side {
                ReshapeSide::Input => layouts.input(),
                ReshapeSide::Output => layouts.output(),
            };
            let extents = layout.rank_box(rank).extents;
            match strides {
                Some(strides) => Storage::new(&extents, strides, naming, self.elem_size, rank),
                None => Ok(Storage::dense(&extents)),
            }
        };
        Ok(Storages {
            input: storage(ReshapeSide::Input, &self.input_strides)?,
            output: storage(ReshapeSide::Output, &self.output_strides)?,
        })
    }

    /// The same arguments for elements of type `T`, whose dtype the ranks compare.
    pub fn for_element<T: Element>(input: &Layout, output: &Layout) -> LayoutArgs {
        LayoutArgs {
            dtype: (T::DTYPE >= 0).then_some(T::DTYPE),
            ..LayoutArgs::new(size_of::<T>(), input, output)
        }
    }

    /// Checks the arguments on one rank of `nranks` and resolves the two grid
    /// layouts; errors name the argument, its value and `rank`.
    pub fn check(&self, nranks: usize, rank: usize) -> Result<Redistribution> {
        self.check_on(nranks).map_err(|e| e.on_rank(rank))
    }

    fn check_on(&self, nranks: usize) -> Result<Redistribution> {
        if self.elem_size == 0 {
            return Err(Error::InvalidDtype("elem_size = 0 bytes".into()));
        }
        let gshape = known_shape("input layout", &self.input.shape)?;
        let total = checked_product(&gshape).ok_or_else(|| {
            Error::InvalidShape(format!(
                "input layout: the shape {:?} has more than 2^64 elements",
                self.input.shape
            ))
        })?;
        check_dims("output layout", &self.output.shape)?;
        let new_shape =
            resolve_new_shape(&self.output.shape, total, &self.input.shape, Notation::C)
                .map_err(|m| Error::InvalidShape(format!("output layout: {m}")))?;
        let input = self.input.resolve(&gshape, nranks, "input layout")?;
        let output = self.output.resolve(&new_shape, nranks, "output layout")?;
        Redistribution::new(input, output)
    }

    /// A fixed-size digest of the arguments for comparing them across ranks: the
    /// element size, the dtype and a hash of both layouts (every rank runs the same
    /// library, so the same arguments hash alike).
    pub fn fingerprint(&self) -> [i64; LAYOUT_FINGERPRINT_LEN] {
        let mut hasher = DefaultHasher::new();
        (&self.input, &self.output).hash(&mut hasher);
        [
            self.elem_size as i64,
            self.dtype.map_or(-1, i64::from),
            hasher.finish() as i64,
        ]
    }

    /// The error for ranks whose fingerprints differ (`min` and `max` over the
    /// ranks), naming what differs and `rank`; `None` when they all agree.
    pub fn mismatch(&self, min: &[i64], max: &[i64], rank: usize) -> Option<Error> {
        let field = (0..LAYOUT_FINGERPRINT_LEN).find(|&i| min[i] != max[i])?;
        let detail = match field {
            0 => format!(
                "the element size differs between ranks: {} bytes on rank {rank}",
                self.elem_size
            ),
            1 => format!(
                "the dtype differs between ranks: {} on rank {rank}",
                self.dtype
                    .map_or_else(|| "none given".to_string(), dtype_words)
            ),
            _ => format!(
                "the layouts differ between ranks: on rank {rank} the input layout is {} and the output layout {}",
                self.input.describe(),
                self.output.describe()
            ),
        };
        Some(Error::InconsistentArguments(detail))
    }
}

/// Length of [`LayoutArgs::fingerprint`].
pub(crate) const LAYOUT_FINGERPRINT_LEN: usize = 3;

/// A shape with every extent known (an input's): no `-1`, no negative extent, at
/// most [`MAX_DIMS`] axes; errors name `which` layout.
fn known_shape(which: &str, shape: &[i64]) -> Result<Vec<u64>> {
    check_dims(which, shape)?;
    shape
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            u64::try_from(n).map_err(|_| {
                Error::InvalidShape(format!(
                    "{which}: shape[{i}] = {n} is negative (only an output layout's shape may hold -1, resolved by a plan)"
                ))
            })
        })
        .collect()
}

/// At most [`MAX_DIMS`] axes.
fn check_dims(which: &str, shape: &[i64]) -> Result<()> {
    if shape.len() > MAX_DIMS {
        return Err(Error::InvalidShape(format!(
            "{which}: the shape has {} axes, more than {MAX_DIMS}",
            shape.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pencils() -> Layout {
        Layout::new(&[4, 6, 8], &[2, 3], &[None, Some(1), Some(0)])
    }

    #[test]
    fn layouts_resolve_with_minus_one_and_lengths() {
        let output =
            Layout::new(&[-1, 8], &[6], &[Some(0), None]).with_lengths(0, &[0, 4, 4, 4, 4, 8]);
        let plan = LayoutArgs::new(8, &pencils(), &output).check(6, 0).unwrap();
        assert_eq!(plan.output().shape(), &[24, 8]);
        assert_eq!(plan.output().rank_box(5).offsets, vec![16, 0]);
        assert_eq!(plan.input().rank_box(5).extents, vec![4, 2, 4]);
    }

    #[test]
    fn errors_name_the_layout_the_value_and_the_rank() {
        let err = |args: LayoutArgs, nranks| args.check(nranks, 3).unwrap_err().to_string();
        let grid = err(LayoutArgs::new(8, &pencils(), &pencils()), 4);
        assert!(
            grid.contains("input layout") && grid.contains("rank 3"),
            "{grid}"
        );
        let minus = Layout::new(&[-1, 6, 8], &[6], &[None, None, Some(0)]);
        let text = err(LayoutArgs::new(8, &minus, &pencils()), 6);
        assert!(text.contains("shape[0] = -1"), "{text}");
        let lengths = pencils().with_lengths(1, &[3, 3]);
        let text = err(LayoutArgs::new(8, &pencils(), &lengths), 6);
        assert!(
            text.contains("output layout") && text.contains("[3, 3]"),
            "{text}"
        );
        let unsplit = pencils().with_lengths(0, &[4]);
        let text = err(LayoutArgs::new(8, &unsplit, &pencils()), 6);
        assert!(text.contains("axis 0, which is not split"), "{text}");
    }

    #[test]
    fn rank_boxes_are_the_plans_boxes() {
        let bricks = Layout::new(&[5, 4, 3], &[2, 1, 3], &[Some(2), None, Some(0)])
            .with_lengths(0, &[0, 1, 4]);
        let resolved = LayoutArgs::new(8, &bricks, &bricks).check(6, 0).unwrap();
        for rank in 0..6 {
            assert_eq!(
                bricks.rank_box(6, rank).unwrap(),
                resolved.input().rank_box(rank)
            );
        }
        let err =
            |layout: &Layout, nranks, rank| layout.rank_box(nranks, rank).unwrap_err().to_string();
        let text = err(&bricks, 4, 1);
        assert!(
            text.contains("has 6 ranks") && text.contains("rank 1"),
            "{text}"
        );
        let text = err(&bricks, 6, 6);
        assert!(text.contains("rank 6 is not below the 6 ranks"), "{text}");
        let inferred = Layout::new(&[-1, 4], &[6], &[Some(0), None]);
        let text = err(&inferred, 6, 2);
        assert!(text.contains("layout: shape[0] = -1"), "{text}");
    }

    #[test]
    fn fingerprints_differ_exactly_when_the_arguments_do() {
        let a = LayoutArgs::new(8, &pencils(), &pencils());
        let b = LayoutArgs::new(8, &pencils(), &pencils().with_lengths(1, &[1, 2, 3]));
        let (fa, fb) = (a.fingerprint(), b.fingerprint());
        assert_eq!(fa, a.clone().fingerprint());
        assert_ne!(fa[2], fb[2]);
        let (min, max): (Vec<i64>, Vec<i64>) = fa
            .iter()
            .zip(&fb)
            .map(|(x, y)| (*x.min(y), *x.max(y)))
            .unzip();
        let e = a.mismatch(&min, &max, 2).unwrap().to_string();
        assert!(
            e.contains("the layouts differ") && e.contains("rank 2"),
            "{e}"
        );
        assert!(
            e.contains("shape [4, 6, 8] on grid [2, 3], axis_grid [-, 1, 0]"),
            "{e}"
        );
        let mut other_size = fa;
        other_size[0] = 4;
        let e = a.mismatch(&other_size, &fa, 1).unwrap().to_string();
        assert!(
            e.contains("the element size differs between ranks: 8 bytes on rank 1"),
            "{e}"
        );
        assert!(a.mismatch(&fa, &fa, 0).is_none());
    }
}
