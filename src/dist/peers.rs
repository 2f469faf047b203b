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

use crate::dist::grid::GridLayout;
use crate::dist::groups::{Groups, Side};
use crate::dist::region::{Region, RegionRuns, shared_elements};
use crate::error::{Error, Result};
use crate::planner::Transfer;

/// An input layout and an output layout of the same ranks (shapes with the same
/// number of elements), with the reshape groups of their shapes.
#[derive(Clone, Debug)]
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
        Region::new(&self.groups, Side::Input, self.input.rank_box(rank))
    }

    /// The elements `rank` holds on output. O(ndims).
    pub fn output_region(&self, rank: usize) -> Region {
        Region::new(&self.groups, Side::Output, self.output.rank_box(rank))
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
    pub fn receives(&self, receiver: usize) -> Vec<Transfer> {
        let out = self.output_region(receiver);
        let mut transfers: Vec<Transfer> = candidates(&self.input, &out, Side::Input)
            .filter_map(|holder| {
                let peer = self.source(receiver, holder);
                if peer == receiver {
                    return None;
                }
                let elems = shared_elements(&self.input_region(holder), &out);
                (elems > 0).then_some(Transfer { peer, elems })
            })
            .collect();
        transfers.sort_by_key(|t| t.peer);
        transfers
    }

    /// The ranks `sender` sends to, in rank order, with the elements of each; never
    /// `sender` itself.
    pub fn sends(&self, sender: usize) -> Vec<Transfer> {
        // Every rank holds the whole input: each receiver copies locally.
        if self.input.is_replicated() {
            return Vec::new();
        }
        let from = self.input_region(sender);
        let mut transfers = Vec::new();
        for block in candidates(&self.output, &from, Side::Output) {
            let elems = shared_elements(&from, &self.output_region(block));
            if elems == 0 {
                continue;
            }
            let receivers = self.output.replicas(block).into_iter();
            transfers.extend(
                receivers
                    .filter(|&r| r != sender && self.source(r, sender) == sender)
                    .map(|peer| Transfer { peer, elems }),
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
    side: Side,
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
    side: Side,
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
