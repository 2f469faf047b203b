//! Process-grid layouts: a global array whose axes are split over the axes of a
//! process grid, each rank holding one box. Pure arithmetic, no MPI.

use std::ops::Range;

use crate::core::error::{Error, Result};
use crate::core::fallible::try_room;
use crate::distribution::layout::{MAX_DIMS, Slab, balanced_slab, checked_product};

/// How the blocks of one array axis are sized along the grid axis that splits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockLengths {
    /// Balanced over the grid axis ([`balanced_slab`], Heat's formula); also what an
    /// axis that is not split takes.
    Balanced,
    /// One length per coordinate of the grid axis, adding up to the extent (zeros allowed).
    Explicit(Vec<i64>),
}

/// The part of the global array one rank holds: `extents[a]` indices of axis `a` from
/// `offsets[a]`, stored C-order contiguous with these extents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridBox {
    /// First global index along each axis.
    pub offsets: Vec<u64>,
    /// Number of indices along each axis.
    pub extents: Vec<u64>,
}

impl GridBox {
    /// Number of elements in the box.
    pub fn len(&self) -> u64 {
        checked_product(&self.extents).unwrap_or(0)
    }

    /// True when the box holds no element.
    pub fn is_empty(&self) -> bool {
        self.extents.contains(&0)
    }

    /// The elements both boxes hold (of one array), `None` when they share none.
    pub fn intersection(&self, other: &GridBox) -> Option<GridBox> {
        let mut shared = GridBox {
            offsets: Vec::with_capacity(self.offsets.len()),
            extents: Vec::with_capacity(self.offsets.len()),
        };
        for a in 0..self.offsets.len() {
            let start = self.offsets[a].max(other.offsets[a]);
            let end = (self.offsets[a] + self.extents[a]).min(other.offsets[a] + other.extents[a]);
            shared.offsets.push(start);
            shared
                .extents
                .push(end.checked_sub(start).filter(|&n| n > 0)?);
        }
        Some(shared)
    }

    /// This box's offsets from the corner of `outer`, which holds it.
    pub fn offsets_within(&self, outer: &GridBox) -> Vec<u64> {
        self.offsets
            .iter()
            .zip(&outer.offsets)
            .map(|(a, b)| a - b)
            .collect()
    }
}

/// A slab layout seen as today's slabs: the array as `(outer, extent, inner)` around
/// its split axis, rank `r` holding rows `[offsets[r], offsets[r + 1])`.
#[derive(Clone, Copy, Debug)]
pub struct SlabView<'a> {
    /// The split axis.
    pub axis: usize,
    /// Product of the extents before the split axis (0 when one of them is 0).
    pub outer: u64,
    /// Product of the extents after the split axis (0 when one of them is 0).
    pub inner: u64,
    /// Row offsets per rank plus the extent.
    pub offsets: &'a [u64],
}

/// A global C-order array spread over a row-major process grid (`MPI_Cart_create`
/// without reordering): each array axis is either not split or split over one grid
/// axis, each grid axis splitting at most one array axis. Grid axes that split nothing
/// replicate: ranks differing only in those coordinates hold the same box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridLayout {
    shape: Vec<u64>,
    grid_dims: Vec<usize>,
    axis_grid: Vec<Option<usize>>,
    /// For each grid axis, the array axis it splits.
    grid_axis_splits: Vec<Option<usize>>,
    /// For each array axis, its block offsets plus the extent (`grid_dims[g] + 1`
    /// entries) when split over grid axis `g`; empty when not split.
    offsets: Vec<Vec<u64>>,
    /// Rank distance between neighbours along each grid axis (row-major).
    strides: Vec<usize>,
    /// The grid axes that split no array axis, in order.
    replicating: Vec<usize>,
    /// Number of ranks holding each box (product of the replicating grid axes).
    replica_count: usize,
}

impl GridLayout {
    /// The layout of `shape` over the grid `grid_dims` (`nranks` ranks in all), array
    /// axis `a` split over grid axis `axis_grid[a]` (or not split when `None`) in the
    /// blocks `lengths[a]` (one entry per array axis; [`BlockLengths::Balanced`] for
    /// axes not split).
    pub fn new(
        shape: &[u64],
        grid_dims: &[i64],
        axis_grid: &[Option<usize>],
        lengths: &[BlockLengths],
        nranks: usize,
    ) -> Result<GridLayout> {
        let Checked {
            grid_dims,
            grid_axis_splits,
        } = check_layout(shape, grid_dims, axis_grid, lengths, nranks)?;
        let offsets = (0..shape.len())
            .map(|a| axis_offsets(a, shape[a], axis_grid[a], &grid_dims, &lengths[a]))
            .collect::<Result<Vec<_>>>()?;
        let replicating: Vec<usize> = (0..grid_dims.len())
            .filter(|&g| grid_axis_splits[g].is_none())
            .collect();
        Ok(GridLayout {
            shape: shape.to_vec(),
            replica_count: replicating.iter().map(|&g| grid_dims[g]).product(),
            strides: row_major_strides(&grid_dims),
            grid_dims,
            axis_grid: axis_grid.to_vec(),
            grid_axis_splits,
            offsets,
            replicating,
        })
    }

    /// The box `rank` (below `nranks`) holds in the layout [`GridLayout::new`]
    /// makes of the same arguments, checked as it checks them but for the
    /// memory of every block offset, which this never takes: O(ndims) time and
    /// memory however many ranks, explicit lengths aside (one per coordinate,
    /// given by the caller). A caller's rank count may be far larger than any
    /// communicator ([`crate::Layout::rank_box`]).
    pub fn rank_box_of(
        shape: &[u64],
        grid_dims: &[i64],
        axis_grid: &[Option<usize>],
        lengths: &[BlockLengths],
        nranks: usize,
        rank: usize,
    ) -> Result<GridBox> {
        let Checked { grid_dims, .. } = check_layout(shape, grid_dims, axis_grid, lengths, nranks)?;
        let strides = row_major_strides(&grid_dims);
        let blocks = (0..shape.len()).map(|a| {
            check_axis_lengths(a, shape[a], axis_grid[a], &grid_dims, &lengths[a])?;
            let Some(g) = axis_grid[a] else {
                return Ok((0, shape[a]));
            };
            let (n, c) = (grid_dims[g], rank / strides[g] % grid_dims[g]);
            Ok(match &lengths[a] {
                BlockLengths::Balanced => {
                    let slab = balanced_slab(shape[a], n as u64, c as u64);
                    (slab.offset, slab.len)
                }
                BlockLengths::Explicit(l) => {
                    let offset = l[..c].iter().map(|&len| len as u64).sum();
                    (offset, l[c] as u64)
                }
            })
        });
        let (offsets, extents) = blocks.collect::<Result<Vec<_>>>()?.into_iter().unzip();
        Ok(GridBox { offsets, extents })
    }

    /// [`GridLayout::new`] with every split axis balanced.
    pub fn balanced(
        shape: &[u64],
        grid_dims: &[i64],
        axis_grid: &[Option<usize>],
        nranks: usize,
    ) -> Result<GridLayout> {
        let lengths = vec![BlockLengths::Balanced; shape.len()];
        GridLayout::new(shape, grid_dims, axis_grid, &lengths, nranks)
    }

    /// Today's slab layout: `shape` split along `axis` over a 1-d grid, rank `r`
    /// holding rows `[offsets[r], offsets[r + 1])` (`offsets` has one entry more than
    /// ranks: 0 first, the axis's extent last).
    pub fn slab(shape: &[u64], axis: usize, offsets: &[u64]) -> Result<GridLayout> {
        if axis >= shape.len() {
            return Err(Error::InvalidSplit(format!(
                "split axis {axis} is out of range for the {}-d shape {shape:?}",
                shape.len()
            )));
        }
        let bad = || {
            Error::InvalidDistribution(format!(
                "slab offsets {offsets:?} do not start at 0 and grow"
            ))
        };
        if offsets.first() != Some(&0) {
            return Err(bad());
        }
        let lens = offsets.windows(2).map(|w| {
            let len = w[1].checked_sub(w[0]).ok_or_else(bad)?;
            i64::try_from(len).map_err(|_| bad())
        });
        let mut lengths = vec![BlockLengths::Balanced; shape.len()];
        lengths[axis] = BlockLengths::Explicit(lens.collect::<Result<Vec<i64>>>()?);
        let mut axis_grid = vec![None; shape.len()];
        axis_grid[axis] = Some(0);
        let nranks = offsets.len() - 1;
        GridLayout::new(shape, &[nranks as i64], &axis_grid, &lengths, nranks)
    }

    /// Today's replicated layout: every one of `nranks` ranks holds all of `shape`.
    pub fn replicated(shape: &[u64], nranks: usize) -> Result<GridLayout> {
        GridLayout::balanced(shape, &[nranks as i64], &vec![None; shape.len()], nranks)
    }

    /// The global shape.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// The process grid.
    pub fn grid_dims(&self) -> &[usize] {
        &self.grid_dims
    }

    /// For each array axis, the grid axis that splits it.
    pub fn axis_grid(&self) -> &[Option<usize>] {
        &self.axis_grid
    }

    /// Number of ranks.
    pub fn nranks(&self) -> usize {
        self.grid_dims.iter().product()
    }

    /// True when no axis is split: every rank holds the whole array.
    pub fn is_replicated(&self) -> bool {
        self.axis_grid.iter().all(Option::is_none)
    }

    /// Block offsets of array axis `axis` plus its extent (one entry per coordinate of
    /// its grid axis, then the extent), or `None` when the axis is not split.
    pub fn axis_offsets(&self, axis: usize) -> Option<&[u64]> {
        self.axis_grid[axis].map(|_| self.offsets[axis].as_slice())
    }

    /// The slab view of a slab layout: one grid axis, splitting one array axis;
    /// `None` for other layouts.
    pub fn slab_view(&self) -> Option<SlabView<'_>> {
        let split = self.split_axes();
        let ([_], &[axis]) = (self.grid_dims.as_slice(), split.as_slice()) else {
            return None;
        };
        let product = |s: &[u64]| checked_product(s).unwrap_or(0);
        Some(SlabView {
            axis,
            outer: product(&self.shape[..axis]),
            inner: product(&self.shape[axis + 1..]),
            offsets: &self.offsets[axis],
        })
    }

    /// The array axes that are split, in order.
    fn split_axes(&self) -> Vec<usize> {
        (0..self.shape.len())
            .filter(|&a| self.axis_grid[a].is_some())
            .collect()
    }

    /// `rank`'s rows of the split axis of a slab layout ([`GridLayout::slab_view`]);
    /// `None` for other layouts.
    pub fn slab_of(&self, rank: usize) -> Option<Slab> {
        let view = self.slab_view()?;
        Some(Slab {
            offset: view.offsets[rank],
            len: view.offsets[rank + 1] - view.offsets[rank],
        })
    }

    /// Grid coordinates of `rank` (row-major).
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        (0..self.grid_dims.len())
            .map(|g| self.coord(rank, g))
            .collect()
    }

    /// Coordinate of `rank` along grid axis `g`.
    fn coord(&self, rank: usize, g: usize) -> usize {
        rank / self.strides[g] % self.grid_dims[g]
    }

    /// The rank at grid coordinates `coords`.
    pub fn rank_of(&self, coords: &[usize]) -> usize {
        coords.iter().zip(&self.strides).map(|(c, s)| c * s).sum()
    }

    /// The box `rank` holds. O(ndims).
    pub fn rank_box(&self, rank: usize) -> GridBox {
        let (offsets, extents) = (0..self.shape.len())
            .map(|a| self.axis_block(rank, a))
            .unzip();
        GridBox { offsets, extents }
    }

    /// The first index and the extent of `rank`'s block of array axis `a`.
    fn axis_block(&self, rank: usize, a: usize) -> (u64, u64) {
        match self.axis_grid[a] {
            Some(g) => {
                let (c, offsets) = (self.coord(rank, g), &self.offsets[a]);
                (offsets[c], offsets[c + 1] - offsets[c])
            }
            None => (0, self.shape[a]),
        }
    }

    /// Number of elements `rank` holds. O(ndims), allocating nothing (executions
    /// ask it).
    pub fn elements(&self, rank: usize) -> u64 {
        let mut extents = (0..self.shape.len()).map(|a| self.axis_block(rank, a).1);
        match extents.any(|n| n == 0) {
            true => 0,
            false => (0..self.shape.len())
                .map(|a| self.axis_block(rank, a).1)
                .product(),
        }
    }

    /// Number of ranks holding each box.
    pub fn replica_count(&self) -> usize {
        self.replica_count
    }

    /// Position of `rank` among the ranks holding its box (row-major over the
    /// replicating grid axes, so it follows rank order).
    pub fn replica_index(&self, rank: usize) -> usize {
        self.replicating.iter().fold(0, |index, &g| {
            index * self.grid_dims[g] + self.coord(rank, g)
        })
    }

    /// The rank holding the same box as `rank` at position `index` among its
    /// replicas. O(grid axes), no allocation.
    pub fn replica(&self, rank: usize, index: usize) -> usize {
        let mut rest = index;
        let mut replica = rank;
        for &g in self.replicating.iter().rev() {
            let c = rest % self.grid_dims[g];
            rest /= self.grid_dims[g];
            replica = replica - self.coord(rank, g) * self.strides[g] + c * self.strides[g];
        }
        replica
    }

    /// The replica group of `rank`: every rank holding its box, in rank order.
    pub fn replicas(&self, rank: usize) -> Vec<usize> {
        (0..self.replica_count)
            .map(|index| self.replica(rank, index))
            .collect()
    }

    /// True when ranks `a` and `b` hold the same box (they differ only in replicating
    /// coordinates).
    pub fn same_box(&self, a: usize, b: usize) -> bool {
        self.replica(a, 0) == self.replica(b, 0)
    }

    /// The grid axes that split no array axis, in order.
    pub fn replicating_axes(&self) -> &[usize] {
        &self.replicating
    }

    /// The array axis grid axis `grid_axis` splits, if any.
    pub fn split_axis_of(&self, grid_axis: usize) -> Option<usize> {
        self.grid_axis_splits[grid_axis]
    }

    /// The coordinates along the grid axis splitting `axis` whose blocks meet the
    /// indices `indices` of that axis (empty blocks inside the range included), found
    /// by binary search on the block offsets.
    pub fn blocks_overlapping(&self, axis: usize, indices: Range<u64>) -> Range<usize> {
        let offsets = &self.offsets[axis];
        if indices.is_empty() {
            return 0..0;
        }
        let first = offsets[1..].partition_point(|&end| end <= indices.start);
        let last = offsets[..offsets.len() - 1].partition_point(|&start| start < indices.end);
        first..last.max(first)
    }
}

/// Rank distance between neighbours along each axis of a row-major grid.
fn row_major_strides(grid_dims: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; grid_dims.len()];
    for g in (0..grid_dims.len().saturating_sub(1)).rev() {
        strides[g] = strides[g + 1] * grid_dims[g + 1];
    }
    strides
}

fn check_shape(shape: &[u64]) -> Result<()> {
    if shape.len() > MAX_DIMS {
        return Err(Error::InvalidShape(format!(
            "shape has {} dimensions, more than the maximum {MAX_DIMS}",
            shape.len()
        )));
    }
    if checked_product(shape).is_none() {
        return Err(Error::InvalidShape(format!(
            "shape {shape:?} holds more elements than fit in 64 bits"
        )));
    }
    Ok(())
}

fn check_grid(grid_dims: &[i64], nranks: usize) -> Result<Vec<usize>> {
    if grid_dims.is_empty() || grid_dims.len() > MAX_DIMS {
        return Err(Error::InvalidDistribution(format!(
            "grid_dims = {grid_dims:?} has {} axes; a grid has 1 to {MAX_DIMS}",
            grid_dims.len()
        )));
    }
    let dims = grid_dims
        .iter()
        .enumerate()
        .map(|(g, &n)| match usize::try_from(n) {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::InvalidDistribution(format!(
                "grid_dims[{g}] = {n} is not positive"
            ))),
        })
        .collect::<Result<Vec<usize>>>()?;
    let ranks = dims.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n));
    if ranks != Some(nranks) {
        let shown = ranks.map_or("more than 2^64".into(), |n| n.to_string());
        return Err(Error::InvalidDistribution(format!(
            "grid_dims = {grid_dims:?} has {shown} ranks but the communicator has {nranks}"
        )));
    }
    Ok(dims)
}

/// Checks `axis_grid` and returns, for each grid axis, the array axis it splits.
fn check_axis_grid(
    axis_grid: &[Option<usize>],
    ndims: usize,
    grid_dims: &[usize],
) -> Result<Vec<Option<usize>>> {
    if axis_grid.len() != ndims {
        return Err(Error::InvalidSplit(format!(
            "axis_grid has {} entries but the shape has {ndims} axes",
            axis_grid.len()
        )));
    }
    let mut splits = vec![None; grid_dims.len()];
    for (a, &grid_axis) in axis_grid.iter().enumerate() {
        let Some(g) = grid_axis else { continue };
        if g >= grid_dims.len() {
            return Err(Error::InvalidSplit(format!(
                "axis_grid[{a}] = {g} is out of range for the {}-d grid {grid_dims:?}",
                grid_dims.len()
            )));
        }
        if let Some(other) = splits[g] {
            return Err(Error::InvalidSplit(format!(
                "axis_grid[{a}] = {g} uses grid axis {g} already used by axis {other}"
            )));
        }
        splits[g] = Some(a);
    }
    Ok(splits)
}

/// What [`check_layout`] finds of a layout's arguments.
struct Checked {
    /// The grid's axes.
    grid_dims: Vec<usize>,
    /// For each grid axis, the array axis it splits.
    grid_axis_splits: Vec<Option<usize>>,
}

/// Checks the arguments of [`GridLayout::new`] but the block lengths of each
/// axis ([`check_axis_lengths`]).
fn check_layout(
    shape: &[u64],
    grid_dims: &[i64],
    axis_grid: &[Option<usize>],
    lengths: &[BlockLengths],
    nranks: usize,
) -> Result<Checked> {
    check_shape(shape)?;
    let grid_dims = check_grid(grid_dims, nranks)?;
    let grid_axis_splits = check_axis_grid(axis_grid, shape.len(), &grid_dims)?;
    if lengths.len() != shape.len() {
        return Err(Error::InvalidDistribution(format!(
            "lengths has {} entries but the shape {shape:?} has {} axes",
            lengths.len(),
            shape.len()
        )));
    }
    Ok(Checked {
        grid_dims,
        grid_axis_splits,
    })
}

/// Checks the block lengths of array axis `axis` of `extent` indices split
/// over grid axis `grid_axis` (or not split): explicit lengths only for a
/// split axis, and then as [`check_lengths`] checks them.
fn check_axis_lengths(
    axis: usize,
    extent: u64,
    grid_axis: Option<usize>,
    grid_dims: &[usize],
    lengths: &BlockLengths,
) -> Result<()> {
    match (grid_axis, lengths) {
        (None, BlockLengths::Explicit(l)) => Err(Error::InvalidDistribution(format!(
            "lengths of axis {axis} = {l:?} are given but axis_grid[{axis}] splits it over no grid axis"
        ))),
        (Some(g), BlockLengths::Explicit(l)) => check_lengths(axis, extent, g, grid_dims[g], l),
        (_, BlockLengths::Balanced) => Ok(()),
    }
}

/// The block offsets (plus the extent) of array axis `axis` of `extent` indices split
/// over grid axis `grid_axis`, or nothing when not split.
fn axis_offsets(
    axis: usize,
    extent: u64,
    grid_axis: Option<usize>,
    grid_dims: &[usize],
    lengths: &BlockLengths,
) -> Result<Vec<u64>> {
    check_axis_lengths(axis, extent, grid_axis, grid_dims, lengths)?;
    let Some(g) = grid_axis else {
        return Ok(Vec::new());
    };
    let n = grid_dims[g];
    let what = format!("the block offsets of axis {axis} ({n} coordinates of grid axis {g})");
    let mut offsets = try_room(n + 1, &what)?;
    offsets.push(0);
    for c in 0..n {
        let len = match lengths {
            BlockLengths::Balanced => balanced_slab(extent, n as u64, c as u64).len,
            BlockLengths::Explicit(l) => l[c] as u64,
        };
        offsets.push(offsets[c] + len);
    }
    Ok(offsets)
}

/// Checks explicit lengths `l` of array axis `axis` (of `extent`) over the `n`
/// coordinates of grid axis `g`: one each, none negative, adding up to the
/// extent.
fn check_lengths(axis: usize, extent: u64, g: usize, n: usize, l: &[i64]) -> Result<()> {
    let bad =
        |what: String| Error::InvalidDistribution(format!("lengths of axis {axis} = {l:?} {what}"));
    if l.len() != n {
        return Err(bad(format!(
            "has {} entries but grid axis {g} has {n} coordinates",
            l.len()
        )));
    }
    if let Some(c) = l.iter().position(|&len| len < 0) {
        return Err(bad(format!(
            "has the negative length {} at coordinate {c}",
            l[c]
        )));
    }
    let sum: u128 = l.iter().map(|&len| len as u128).sum();
    if sum != u128::from(extent) {
        return Err(bad(format!("add up to {sum}, not the extent {extent}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_intersect_where_they_share_elements() {
        let a = GridBox {
            offsets: vec![0, 4, 2],
            extents: vec![6, 4, 5],
        };
        let b = GridBox {
            offsets: vec![3, 0, 6],
            extents: vec![8, 6, 9],
        };
        let shared = a.intersection(&b).expect("they share elements");
        assert_eq!(shared.offsets, [3, 4, 6]);
        assert_eq!(shared.extents, [3, 2, 1]);
        assert_eq!(shared.offsets_within(&a), [3, 0, 4]);
        let touching = GridBox {
            offsets: vec![6, 0, 0],
            extents: vec![2, 8, 8],
        };
        assert_eq!(a.intersection(&touching), None);
    }

    fn explicit(l: &[i64]) -> BlockLengths {
        BlockLengths::Explicit(l.to_vec())
    }

    #[test]
    fn boxes_follow_row_major_coordinates() {
        let lengths = [
            explicit(&[1, 3]),
            BlockLengths::Balanced,
            explicit(&[0, 2, 3]),
        ];
        let g = GridLayout::new(
            &[4, 5, 5],
            &[3, 2, 2],
            &[Some(1), None, Some(0)],
            &lengths,
            12,
        )
        .unwrap();
        assert_eq!(g.coords(7), vec![1, 1, 1]);
        assert_eq!(g.rank_of(&[1, 1, 1]), 7);
        let b = g.rank_box(7);
        assert_eq!(b.offsets, vec![1, 0, 0]);
        assert_eq!(b.extents, vec![3, 5, 2]);
        assert_eq!(g.elements(7), 30);
        assert_eq!(g.elements(1), 0);
        assert_eq!(g.replica_count(), 2);
        assert_eq!(g.replicas(7), vec![6, 7]);
        assert_eq!(g.replica_index(7), 1);
        assert!(g.same_box(6, 7) && !g.same_box(5, 7));
        assert_eq!(g.axis_offsets(2), Some(&[0u64, 0, 2, 5][..]));
        assert_eq!(g.axis_offsets(1), None);
        assert!(!g.is_replicated());
    }

    #[test]
    fn every_rank_of_a_grid_without_split_holds_everything() {
        let g = GridLayout::replicated(&[3, 4], 5).unwrap();
        assert!(g.is_replicated());
        assert_eq!(g.replicas(2), vec![0, 1, 2, 3, 4]);
        assert!((0..5).all(|r| g.elements(r) == 12));
    }

    #[test]
    fn blocks_overlapping_is_exact_on_nonempty_blocks() {
        let lengths = [explicit(&[2, 0, 3, 0, 1])];
        let g = GridLayout::new(&[6], &[5], &[Some(0)], &lengths, 5).unwrap();
        let offsets = g.axis_offsets(0).unwrap().to_vec();
        for lo in 0..=6 {
            for hi in lo..=6 {
                let got = g.blocks_overlapping(0, lo..hi);
                for c in 0..5 {
                    let (s, e) = (offsets[c], offsets[c + 1]);
                    if lo < hi && s < e && s < hi && e > lo {
                        assert!(got.contains(&c), "{lo}..{hi} {got:?} misses {c}");
                    }
                }
                assert!(got.clone().all(|c| offsets[c] < hi && offsets[c + 1] > lo));
            }
        }
    }

    #[test]
    fn errors_name_the_argument_and_its_value() {
        let err = |r: Result<GridLayout>| r.unwrap_err().to_string();
        let b = BlockLengths::Balanced;
        assert!(
            err(GridLayout::balanced(&[4, 4], &[3, 2], &[Some(0), None], 4))
                .contains("grid_dims = [3, 2] has 6 ranks but the communicator has 4")
        );
        assert!(
            err(GridLayout::balanced(
                &[4, 4, 4],
                &[2, 2],
                &[Some(1), None, Some(1)],
                4
            ))
            .contains("axis_grid[2] = 1 uses grid axis 1 already used by axis 0")
        );
        assert!(
            err(GridLayout::new(
                &[4, 7],
                &[2],
                &[None, Some(0)],
                &[b.clone(), explicit(&[3, 3])],
                2
            ))
            .contains("lengths of axis 1 = [3, 3] add up to 6, not the extent 7")
        );
        assert!(
            err(GridLayout::new(
                &[4],
                &[2],
                &[Some(0)],
                &[explicit(&[5, -1])],
                2
            ))
            .contains("negative length -1 at coordinate 1")
        );
        assert!(
            err(GridLayout::balanced(&[4], &[2], &[Some(3)], 2))
                .contains("axis_grid[0] = 3 is out of range for the 1-d grid")
        );
        assert!(err(GridLayout::balanced(&[4], &[0], &[None], 0)).contains("grid_dims[0] = 0"));
        let e = GridLayout::balanced(&[u64::MAX, 2], &[1], &[None, None], 1).unwrap_err();
        assert!(matches!(e, Error::InvalidShape(_)));
        let e = GridLayout::balanced(&[4], &[2], &[None, None], 2).unwrap_err();
        assert!(matches!(e, Error::InvalidSplit(_)));
    }

    #[test]
    fn the_box_of_one_rank_is_the_layouts() {
        let b = BlockLengths::Balanced;
        type Case = (
            Vec<u64>,
            Vec<i64>,
            Vec<Option<usize>>,
            Vec<BlockLengths>,
            usize,
        );
        let cases: Vec<Case> = vec![
            (
                vec![4, 5, 5],
                vec![3, 2, 2],
                vec![Some(1), None, Some(0)],
                vec![explicit(&[1, 3]), b.clone(), explicit(&[0, 2, 3])],
                12,
            ),
            (
                vec![7, 3],
                vec![3, 1],
                vec![Some(0), Some(1)],
                vec![b.clone(), b.clone()],
                3,
            ),
            (
                vec![6],
                vec![5],
                vec![Some(0)],
                vec![explicit(&[2, 0, 3, 0, 1])],
                5,
            ),
            (
                vec![2, 9],
                vec![4, 2],
                vec![None, Some(0)],
                vec![b.clone(), b.clone()],
                8,
            ),
            (
                vec![3, 4],
                vec![5],
                vec![None, None],
                vec![b.clone(), b.clone()],
                5,
            ),
            (
                vec![4, 7],
                vec![2],
                vec![None, Some(0)],
                vec![b.clone(), explicit(&[3, 3])],
                2,
            ),
            (vec![4], vec![2], vec![None], vec![explicit(&[2, 2])], 2),
            (vec![4], vec![2], vec![Some(0)], vec![explicit(&[5, -1])], 2),
            (
                vec![4, 4],
                vec![3, 2],
                vec![Some(0), None],
                vec![b.clone(), b.clone()],
                4,
            ),
            (vec![4], vec![2], vec![Some(3)], vec![b.clone()], 2),
            (vec![4], vec![2], vec![None, None], vec![b.clone()], 2),
        ];
        for (shape, grid, axis_grid, lengths, nranks) in cases {
            let layout = GridLayout::new(&shape, &grid, &axis_grid, &lengths, nranks);
            for rank in 0..nranks {
                let one =
                    GridLayout::rank_box_of(&shape, &grid, &axis_grid, &lengths, nranks, rank);
                match &layout {
                    Ok(layout) => assert_eq!(one.unwrap(), layout.rank_box(rank)),
                    Err(e) => assert_eq!(one.unwrap_err().to_string(), e.to_string()),
                }
            }
        }
    }

    #[test]
    fn the_box_of_one_rank_of_two_billion() {
        // 2^31 - 1 ranks: a layout's offsets would take 16 GiB.
        let nranks = i32::MAX as usize;
        let (extent, rank) = (1u64 << 40, 5);
        let one = GridLayout::rank_box_of(
            &[extent],
            &[nranks as i64],
            &[Some(0)],
            &[BlockLengths::Balanced],
            nranks,
            rank,
        )
        .unwrap();
        let slab = balanced_slab(extent, nranks as u64, rank as u64);
        assert_eq!(
            (one.offsets, one.extents),
            (vec![slab.offset], vec![slab.len])
        );
    }

    #[test]
    fn slab_constructor_matches_today_layout() {
        let g = GridLayout::slab(&[3, 5, 2], 1, &[0, 2, 2, 5]).unwrap();
        assert_eq!(g.nranks(), 3);
        assert_eq!(g.rank_box(2).offsets, vec![0, 2, 0]);
        assert_eq!(g.rank_box(2).extents, vec![3, 3, 2]);
        assert!(GridLayout::slab(&[3], 0, &[0, 2, 1]).is_err());
        assert!(GridLayout::slab(&[3], 1, &[0, 3]).is_err());
    }
}
