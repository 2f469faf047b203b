//! Who sends what to whom when an input grid layout becomes an output grid layout:
//! every rank computes the same lists from the two layouts alone, so what a sender
//! serves and what a receiver takes agree exactly.
//!
//! Replicas: a receiver takes each distinct input box it needs from exactly one rank
//! holding it: itself when it holds that box (a local copy, never a transfer),
//! otherwise the replica at position `receiver % replica_count` of that box's replica
//! group ([`GridLayout::replica`], row-major over the replicating grid axes), which
//! spreads receivers evenly over the replicas.
//!
//! Cost per rank: the candidate boxes are those whose blocks meet the other side's
//! coordinate bounds ([`Region::bounds_in`]), found by binary search on the block
//! offsets of each split axis (O(ndims + log P) per split axis, never a loop over the
//! P ranks); each candidate is then tested exactly ([`shared_elements`], O(ndims) on
//! 1↔1, split and merge groups), so the lists hold only real peers. The candidates
//! are exactly the peers when every group has one axis per side; on splits, merges
//! and many↔many groups the bounds are a bounding range, and empty blocks inside a
//! range are candidates too. So a list costs O(candidates · ndims), plus, for a
//! sender, a walk of the replica group of each output box it meets (O(output
//! replicas) each; nothing when the input is replicated).

use std::ops::Range;
use std::sync::Arc;

use crate::core::error::{Error, Result};
use crate::distribution::grid::GridLayout;
use crate::distribution::groups::{Groups, ReshapeSide};
use crate::distribution::region::{Region, RegionRuns, shared_elements};

/// Elements exchanged with one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerVolume {
    /// The other rank.
    pub peer: usize,
    /// Elements sent to it or received from it.
    pub elems: u64,
}

/// An input layout and an output layout of the same ranks (shapes with the same
/// number of elements), with the reshape groups of their shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redistribution {
    input: GridLayout,
    output: GridLayout,
    groups: Arc<Groups>,
}

impl Redistribution {
    /// The redistribution from `input` to `output`.
    pub fn new(input: GridLayout, output: GridLayout) -> Result<Redistribution> {
        if input.nranks() != output.nranks() {
            return Err(Error::InvalidDistribution(format!(
                "the input grid {:?} has {} ranks but the output grid {:?} has {}",
                input.grid_dims(),
                input.nranks(),
                output.grid_dims(),
                output.nranks()
            )));
        }
        let groups = Arc::new(Groups::new(input.shape(), output.shape())?);
        Ok(Redistribution {
            input,
            output,
            groups,
        })
    }

    /// The input layout.
    pub fn input(&self) -> &GridLayout {
        &self.input
    }

    /// The output layout.
    pub fn output(&self) -> &GridLayout {
        &self.output
    }

    /// The reshape groups of the two shapes.
    pub fn groups(&self) -> &Arc<Groups> {
        &self.groups
    }

    /// The elements `rank` holds on input. O(ndims).
    pub fn input_region(&self, rank: usize) -> Region {
        Region::new(&self.groups, ReshapeSide::Input, self.input.rank_box(rank))
    }

    /// The elements `rank` holds on output. O(ndims).
    pub fn output_region(&self, rank: usize) -> Region {
        Region::new(
            &self.groups,
            ReshapeSide::Output,
            self.output.rank_box(rank),
        )
    }

    /// The rank `receiver` takes the input box of `holder` from (see the module
    /// documentation): itself when it holds that box. O(ndims).
    pub fn source(&self, receiver: usize, holder: usize) -> usize {
        if self.input.same_box(receiver, holder) {
            receiver
        } else {
            let index = receiver % self.input.replica_count();
            self.input.replica(holder, index)
        }
    }

    /// Elements `rank` copies from its input to its output.
    pub fn local_elements(&self, rank: usize) -> u64 {
        shared_elements(&self.input_region(rank), &self.output_region(rank))
    }

    /// The runs `sender`'s input shares with `receiver`'s output, increasing (the
    /// local copy when they are the same rank).
    pub fn runs(&self, sender: usize, receiver: usize) -> RegionRuns {
        RegionRuns::new(&self.input_region(sender), &self.output_region(receiver))
    }

    /// The ranks `receiver` receives from, in rank order, with the elements of each;
    /// never `receiver` itself.
    pub fn receives(&self, receiver: usize) -> Vec<PeerVolume> {
        let out = self.output_region(receiver);
        let mut transfers: Vec<PeerVolume> = candidates(&self.input, &out, ReshapeSide::Input)
            .filter_map(|holder| {
                let peer = self.source(receiver, holder);
                if peer == receiver {
                    return None;
                }
                let elems = shared_elements(&self.input_region(holder), &out);
                (elems > 0).then_some(PeerVolume { peer, elems })
            })
            .collect();
        transfers.sort_by_key(|t| t.peer);
        transfers
    }

    /// The ranks `sender` sends to, in rank order, with the elements of each; never
    /// `sender` itself.
    pub fn sends(&self, sender: usize) -> Vec<PeerVolume> {
        // Every rank holds the whole input: each receiver copies locally.
        if self.input.is_replicated() {
            return Vec::new();
        }
        let from = self.input_region(sender);
        let mut transfers = Vec::new();
        for block in candidates(&self.output, &from, ReshapeSide::Output) {
            let elems = shared_elements(&from, &self.output_region(block));
            if elems == 0 {
                continue;
            }
            let receivers = self.output.replicas(block).into_iter();
            transfers.extend(
                receivers
                    .filter(|&r| r != sender && self.source(r, sender) == sender)
                    .map(|peer| PeerVolume { peer, elems }),
            );
        }
        transfers.sort_by_key(|t| t.peer);
        transfers
    }
}

/// One rank per box of `layout` (its replica 0) whose blocks on every split axis
/// may meet `region`, `side` being the side of `layout`.
fn candidates<'a>(
    layout: &'a GridLayout,
    region: &Region,
    side: ReshapeSide,
) -> impl Iterator<Item = usize> + 'a {
    let blocks: Vec<Vec<usize>> = match region.bounds_in(side) {
        None => Vec::new(),
        Some(bounds) => (0..layout.grid_dims().len())
            .map(|g| match layout.split_axis_of(g) {
                Some(a) => axis_blocks(layout, region, side, a, &bounds[a]),
                None => vec![0],
            })
            .collect(),
    };
    let empty = blocks.is_empty() || blocks.iter().any(Vec::is_empty);
    let mut at: Option<Vec<usize>> = (!empty).then(|| vec![0; blocks.len()]);
    std::iter::from_fn(move || {
        let current = at.as_mut()?;
        let coords: Vec<usize> = current.iter().zip(&blocks).map(|(&i, b)| b[i]).collect();
        if !advance(current, &blocks) {
            at = None;
        }
        Some(layout.rank_of(&coords))
    })
}

/// The blocks of split axis `axis` of `layout` that may meet `region`, whose
/// coordinates along `axis` lie in `bound`: those meeting its projection on the axis
/// when that is listed in fewer runs than the bound holds blocks, else the blocks
/// meeting the bound (binary search on the block offsets either way).
fn axis_blocks(
    layout: &GridLayout,
    region: &Region,
    side: ReshapeSide,
    axis: usize,
    bound: &Range<u64>,
) -> Vec<usize> {
    let range = layout.blocks_overlapping(axis, bound.clone());
    if range.len() <= 1 {
        return range.collect();
    }
    let Some(projection) = region.projection(side, axis, range.len() as u64) else {
        return range.collect();
    };
    let mut blocks: Vec<usize> = Vec::new();
    for coords in projection {
        for c in layout.blocks_overlapping(axis, coords) {
            if blocks.last().is_none_or(|&last| c > last) {
                blocks.push(c);
            }
        }
    }
    blocks
}

/// Steps the positions `at` to the next point of the product of `lists` (row-major);
/// false after the last.
fn advance(at: &mut [usize], lists: &[Vec<usize>]) -> bool {
    for g in (0..at.len()).rev() {
        at[g] += 1;
        if at[g] < lists[g].len() {
            return true;
        }
        at[g] = 0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::runs::Run;

    fn transfers(list: &[PeerVolume]) -> Vec<(usize, u64)> {
        list.iter().map(|t| (t.peer, t.elems)).collect()
    }

    #[test]
    fn a_pencil_transpose_exchanges_within_grid_rows() {
        // (4, 4, 2) on a 2x2 grid: x-pencils split axes 1 and 2, y-pencils 0 and 2.
        let x = GridLayout::balanced(&[4, 4, 2], &[2, 2], &[None, Some(0), Some(1)], 4).unwrap();
        let y = GridLayout::balanced(&[4, 4, 2], &[2, 2], &[Some(0), None, Some(1)], 4).unwrap();
        let plan = Redistribution::new(x, y).unwrap();
        // Rank 1 (grid (0, 1)) holds y 0..2, z 1..2 and wants x 0..2, z 1..2: it
        // keeps x 0..2 of its y rows and takes y 2..4 from rank 3 (grid (1, 1)).
        assert_eq!(transfers(&plan.receives(1)), vec![(3, 4)]);
        assert_eq!(transfers(&plan.sends(1)), vec![(3, 4)]);
        assert_eq!(plan.local_elements(1), 4);
        let runs: Vec<Run> = plan.runs(3, 1).collect();
        // Elements (x, y, 1) for x in 0..2, y in 2..4: global 8x + 2y + 1.
        let want = [5, 7, 13, 15].map(|global| Run { global, len: 1 });
        assert_eq!(runs, want);
    }

    #[test]
    fn receivers_spread_over_the_replicas_and_keep_what_they_hold() {
        // Input: 2 copies (grid axis 0 replicates) of 3 slabs; output: 6 slabs.
        let input = GridLayout::balanced(&[6, 2], &[2, 3], &[Some(1), None], 6).unwrap();
        let output = GridLayout::balanced(&[6, 2], &[6], &[Some(0), None], 6).unwrap();
        let plan = Redistribution::new(input, output).unwrap();
        assert_eq!(plan.input().replicas(4), vec![1, 4]);
        // Rank 2 wants rows 2..3, held by ranks 1 and 4: 2 % 2 picks replica 0 (rank 1).
        assert_eq!(transfers(&plan.receives(2)), vec![(1, 2)]);
        // Rank 3 wants rows 3..4, held by 1 and 4: 3 % 2 picks replica 1 (rank 4).
        assert_eq!(transfers(&plan.receives(3)), vec![(4, 2)]);
        // Rank 4 holds rows 2..4 itself and wants row 4: it takes it from 2 or 5.
        assert_eq!(transfers(&plan.receives(4)), vec![(2, 2)]);
        // Rank 0 holds rows 0..2 and wants row 0: a local copy.
        assert!(plan.receives(0).is_empty());
        assert_eq!(plan.local_elements(0), 2);
        assert_eq!(transfers(&plan.sends(1)), vec![(2, 2)]);
        assert_eq!(transfers(&plan.sends(4)), vec![(3, 2)]);
    }

    #[test]
    fn grids_of_different_ranks_are_refused() {
        let a = GridLayout::replicated(&[4], 4).unwrap();
        let b = GridLayout::replicated(&[4], 2).unwrap();
        let err = Redistribution::new(a, b).unwrap_err().to_string();
        assert!(
            err.contains("has 4 ranks but the output grid [2] has 2"),
            "{err}"
        );
    }
}
