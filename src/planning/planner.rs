//! The pure planner: from two layouts of the ranks (slabs from the checked slab
//! arguments and every rank's slab length, or any grid layouts), one rank's
//! complete plan (path, peers, volumes). No MPI: every rank's plan can be built in
//! one process, which is how the tests simulate whole exchanges.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;
use crate::distribution::grid::GridLayout;
use crate::distribution::joint_runs::JointRuns;
use crate::distribution::layout::balanced_slab;
use crate::distribution::peers::{PeerVolume, Redistribution};
use crate::distribution::region::{Region, RegionRuns};
use crate::distribution::runs::Run;
use crate::planning::args::Checked;

/// How a reshape moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The split axis survives: every slab reshapes in place, and only the rows that
    /// change owner move, between the ranks whose slabs overlap.
    Local,
    /// The general exchange: each element moves once, straight to its new owner.
    Exchange,
}

/// What a plan will do on one rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanStats {
    /// The path taken (the same on every rank).
    pub path: Route,
    /// Bytes this rank sends.
    pub bytes_sent: u64,
    /// Bytes this rank receives.
    pub bytes_received: u64,
    /// Bytes this rank copies from its input to its output without MPI.
    pub bytes_copied_locally: u64,
    /// Ranks this rank sends to.
    pub peers_sent: usize,
    /// Ranks this rank receives from.
    pub peers_received: usize,
}

/// One rank's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlan {
    /// This rank.
    pub rank: usize,
    /// Bytes per element.
    pub elem_size: usize,
    /// The path taken.
    pub path: Route,
    /// How the input and the output are spread over the ranks.
    pub layouts: Arc<Redistribution>,
    /// Peers this rank sends to, in rank order.
    pub sends: Vec<PeerVolume>,
    /// Peers this rank receives from, in rank order.
    pub recvs: Vec<PeerVolume>,
    /// Elements copied locally.
    pub local_elems: u64,
}

impl RankPlan {
    /// Plans `rank`'s part of the reshape `args`, given every rank's input slab length
    /// (`lens`) and, for an explicit target distribution, every rank's output length.
    /// Fails only when an allocation fails.
    pub fn new(
        args: &Checked,
        lens: &[u64],
        targets: Option<&[u64]>,
        rank: usize,
    ) -> Result<RankPlan> {
        let nranks = lens.len();
        let input = slab_layout(&args.gshape, args.split, lens.iter().copied(), rank)?;
        let output = match (args.new_split, targets) {
            (Some(axis), None) => {
                let extent = args.new_shape[axis];
                let balanced =
                    (0..nranks).map(|r| balanced_slab(extent, nranks as u64, r as u64).len);
                slab_layout(&args.new_shape, Some(axis), balanced, rank)?
            }
            (split, targets) => {
                let lens = targets.unwrap_or(lens).iter().copied();
                slab_layout(&args.new_shape, split, lens, rank)?
            }
        };
        let layouts = Redistribution::new(input, output).map_err(|e| e.on_rank(rank))?;
        RankPlan::for_layouts(Arc::new(layouts), args.elem_size, rank)
    }

    /// Plans `rank`'s part of the redistribution `layouts` of elements of
    /// `elem_size` bytes. Fails only when an allocation fails.
    pub fn for_layouts(
        layouts: Arc<Redistribution>,
        elem_size: usize,
        rank: usize,
    ) -> Result<RankPlan> {
        let path = match split_survives(layouts.input(), layouts.output()) {
            true => Route::Local,
            false => Route::Exchange,
        };
        let plan = RankPlan {
            rank,
            elem_size,
            path,
            sends: layouts.sends(rank),
            recvs: layouts.receives(rank),
            local_elems: layouts.local_elements(rank),
            layouts,
        };
        plan.check_coverage()?;
        Ok(plan)
    }

    /// Checks that the elements kept and received fill the output exactly: what lets
    /// a successful execution hand out an output it did not initialize.
    fn check_coverage(&self) -> Result<()> {
        let received: u64 = self.recvs.iter().map(|t| t.elems).sum();
        if self.local_elems + received == self.output_elems() {
            return Ok(());
        }
        Err(Error::Internal(format!(
            "rank {} keeps {} and receives {received} elements but its output holds {}",
            self.rank,
            self.local_elems,
            self.output_elems()
        )))
    }

    /// The global elements this rank holds on input.
    pub fn input_region(&self) -> Region {
        self.layouts.input_region(self.rank)
    }

    /// The global elements this rank holds on output.
    pub fn output_region(&self) -> Region {
        self.layouts.output_region(self.rank)
    }

    /// Runs this rank sends to `peer`, in global order.
    pub fn send_runs(&self, peer: usize) -> RegionRuns {
        self.layouts.runs(self.rank, peer)
    }

    /// Runs this rank receives from `peer`, in global order.
    pub fn recv_runs(&self, peer: usize) -> RegionRuns {
        self.layouts.runs(peer, self.rank)
    }

    /// Runs this rank copies from its input to its output.
    pub fn local_runs(&self) -> RegionRuns {
        self.layouts.runs(self.rank, self.rank)
    }

    /// The input layout.
    pub fn input_layout(&self) -> &GridLayout {
        self.layouts.input()
    }

    /// The output layout.
    pub fn output_layout(&self) -> &GridLayout {
        self.layouts.output()
    }

    /// The resolved output global shape.
    pub fn new_shape(&self) -> &[u64] {
        self.layouts.output().shape()
    }

    /// The copy of each run `runs` yields that this rank keeps: where it lies in
    /// its input buffer and where it starts in its output buffer.
    fn kept_bytes(&self, runs: impl Iterator<Item = Run>) -> impl Iterator<Item = KeptCopy> {
        let (from, to, size) = (self.input_region(), self.output_region(), self.elem_size);
        runs.map(move |run| {
            let src = from.local_offset(run.global) as usize * size;
            KeptCopy {
                from: src..src + run.len as usize * size,
                to: to.local_offset(run.global) as usize * size,
            }
        })
    }

    /// The copies of the elements this rank keeps, from its input to its output,
    /// one per joint run (runs contiguous on both sides merged), read from `runs` (this rank's
    /// [`RankPlan::local_runs`], which an execution rewinds rather than makes anew).
    pub fn kept_copies<'a>(&self, runs: &'a mut RegionRuns) -> KeptCopies<'a> {
        KeptCopies {
            runs: JointRuns::new(runs),
            elem_size: self.elem_size,
        }
    }

    /// Where each peer's bytes start among the packed sends (the layout of
    /// [`RankPlan::pack_sends`]): peer after peer in the order of `sends`, each
    /// taking the bytes it is sent.
    pub fn packed_send_starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.sends.iter().scan(0, |at, t| {
            let start = *at;
            *at += t.elems as usize * self.elem_size;
            Some(start)
        })
    }

    /// Appends the packed sends (everything this rank sends, from its input) to
    /// `packed`, laid out as [`RankPlan::packed_send_starts`] says, each peer's runs
    /// in global order: in place, the sends are read from there while the buffer is
    /// rewritten.
    pub fn pack_sends(&self, input: &[u8], packed: &mut Vec<u8>) {
        let (from, size, base) = (self.input_region(), self.elem_size, packed.len());
        for (t, start) in self.sends.iter().zip(self.packed_send_starts()) {
            debug_assert_eq!(packed.len() - base, start, "packed sends out of layout");
            for run in self.send_runs(t.peer) {
                let src = from.local_offset(run.global) as usize * size;
                packed.extend_from_slice(&input[src..src + run.len as usize * size]);
            }
        }
    }

    /// Moves the elements this rank keeps from their input to their output positions
    /// within one buffer ([`move_kept_within`]).
    pub fn move_kept_in_place(&self, buffer: &mut [u8]) {
        let ascending = self.kept_bytes(self.local_runs());
        let descending = self.kept_bytes(self.local_runs().descending());
        move_kept_within(buffer, ascending, descending);
    }

    /// Elements in this rank's input buffer.
    pub fn input_elems(&self) -> u64 {
        self.layouts.input().elements(self.rank)
    }

    /// Elements in this rank's output buffer.
    pub fn output_elems(&self) -> u64 {
        self.layouts.output().elements(self.rank)
    }

    /// This rank's output rows along the new split axis, or `None` when the output
    /// is not a slab layout (not split, or on a grid of several axes).
    pub fn output_rows(&self) -> Option<u64> {
        self.output_layout().slab_of(self.rank).map(|s| s.len)
    }

    /// The shape of this rank's input box (C order): for a slab, the global shape
    /// with this rank's rows along the split axis.
    pub fn local_input_shape(&self) -> Vec<u64> {
        self.input_layout().rank_box(self.rank).extents
    }

    /// The shape of this rank's output box (C order).
    pub fn local_output_shape(&self) -> Vec<u64> {
        self.output_layout().rank_box(self.rank).extents
    }

    /// True when the output buffer equals the input buffer: nothing is sent or
    /// received, so both hold the same elements in the same (global) order.
    pub fn is_identity(&self) -> bool {
        self.sends.is_empty() && self.recvs.is_empty() && self.input_elems() == self.output_elems()
    }

    /// Volumes and peers of this plan.
    pub fn stats(&self) -> PlanStats {
        let bytes =
            |t: &[PeerVolume]| t.iter().map(|t| t.elems).sum::<u64>() * self.elem_size as u64;
        PlanStats {
            path: self.path,
            bytes_sent: bytes(&self.sends),
            bytes_received: bytes(&self.recvs),
            bytes_copied_locally: self.local_elems * self.elem_size as u64,
            peers_sent: self.sends.len(),
            peers_received: self.recvs.len(),
        }
    }
}

/// The copies of the elements a rank keeps (see [`RankPlan::kept_copies`]), one
/// per joint run: allocates nothing.
#[derive(Debug)]
pub struct KeptCopies<'a> {
    runs: JointRuns<&'a mut RegionRuns>,
    elem_size: usize,
}

impl Iterator for KeptCopies<'_> {
    type Item = KeptCopy;

    fn next(&mut self) -> Option<KeptCopy> {
        let run = self.runs.next()?;
        let (size, from) = (self.elem_size, run.source as usize * self.elem_size);
        Some(KeptCopy {
            from: from..from + run.len as usize * size,
            to: run.target as usize * size,
        })
    }
}

/// One copy of kept elements: the bytes `from` of the input go to `to` onwards in the
/// output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptCopy {
    /// Byte range in the input buffer.
    pub from: Range<usize>,
    /// Byte offset in the output buffer.
    pub to: usize,
}

/// Moves kept copies from their input to their output positions within one
/// buffer: `ascending` and `descending` hand out the same copies (of one rank, in
/// global order) in the two orders. Both positions grow with the global index, so
/// moving the copies that go down in ascending order, then those that go up in
/// descending order, never overwrites elements before they have moved.
pub fn move_kept_within(
    buffer: &mut [u8],
    ascending: impl Iterator<Item = KeptCopy>,
    descending: impl Iterator<Item = KeptCopy>,
) {
    let down = ascending.filter(|c| c.to < c.from.start);
    let up = descending.filter(|c| c.to > c.from.start);
    for KeptCopy { from, to } in down.chain(up) {
        buffer.copy_within(from, to);
    }
}

/// The slab layout of `shape` from per-rank row counts along `split` (replicated
/// when not split), its offsets allocated fallibly.
fn slab_layout(
    shape: &[u64],
    split: Option<usize>,
    lens: impl ExactSizeIterator<Item = u64>,
    rank: usize,
) -> Result<GridLayout> {
    let nranks = lens.len();
    let Some(axis) = split else {
        return GridLayout::replicated(shape, nranks).map_err(|e| e.on_rank(rank));
    };
    let mut offsets = try_vec(nranks + 1, "the slab offsets", rank)?;
    offsets.push(0);
    for len in lens {
        offsets.push(offsets[offsets.len() - 1] + len);
    }
    GridLayout::slab(shape, axis, &offsets).map_err(|e| e.on_rank(rank))
}

/// The split-preserving condition, for slab layouts (one grid axis splitting one
/// array axis, on both sides): the same product of extents before the split axes,
/// and every input slab a whole number of output rows.
fn split_survives(input: &GridLayout, output: &GridLayout) -> bool {
    let (Some(from), Some(to)) = (input.slab_view(), output.slab_view()) else {
        return false;
    };
    // `is_multiple_of(0)` holds only for 0: an empty inner size takes only empty slabs.
    from.outer == to.outer
        && from
            .offsets
            .windows(2)
            .all(|w| ((w[1] - w[0]) * from.inner).is_multiple_of(to.inner))
}

impl fmt::Display for RankPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.stats();
        let path = match self.path {
            Route::Local => "local (split-preserving reshape + balance)",
            Route::Exchange => "exchange (general)",
        };
        write!(
            f,
            "rank {}: path {path}; new shape {:?}; sends {} B to {} peers, receives {} B from {} peers, copies {} B locally{}",
            self.rank,
            self.new_shape(),
            s.bytes_sent,
            s.peers_sent,
            s.bytes_received,
            s.peers_received,
            s.bytes_copied_locally,
            if self.is_identity() {
                "; nothing moves on this rank (in place touches nothing)"
            } else {
                ""
            }
        )
    }
}
