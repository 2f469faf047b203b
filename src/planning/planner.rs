//! The pure planner: from the checked arguments and every rank's slab length, one
//! rank's complete plan (path, peers, volumes). No MPI: every rank's plan can be built
//! in one process, which is how the tests simulate whole exchanges.

use std::fmt;
use std::ops::Range;

use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;
use crate::distribution::layout::{Layout, Pattern, Slab, balanced_slab};
use crate::distribution::runs::{Run, SharedRuns, shared_elements};
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

/// Elements exchanged with one peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerVolume {
    /// The other rank.
    pub peer: usize,
    /// Elements sent to it or received from it.
    pub elems: u64,
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
    /// How the input is spread.
    pub input: Layout,
    /// How the output is spread.
    pub output: Layout,
    /// Input global shape.
    pub gshape: Vec<u64>,
    /// Input split axis (`None`: every rank holds the whole input).
    pub split: Option<usize>,
    /// Resolved output global shape.
    pub new_shape: Vec<u64>,
    /// Output split axis (`None`: every rank holds the whole output).
    pub new_split: Option<usize>,
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
        let input = match args.split {
            None => Layout::replicated(args.total()),
            Some(axis) => split_layout(&args.gshape, axis, lens.iter().copied(), rank)?,
        };
        let output = match (args.new_split, targets) {
            (None, _) => Layout::replicated(args.total()),
            (Some(axis), Some(t)) => split_layout(&args.new_shape, axis, t.iter().copied(), rank)?,
            (Some(axis), None) => {
                let extent = args.new_shape[axis];
                let balanced =
                    (0..nranks).map(|r| balanced_slab(extent, nranks as u64, r as u64).len);
                split_layout(&args.new_shape, axis, balanced, rank)?
            }
        };
        let path = if split_survives(&input, &output) {
            Route::Local
        } else {
            Route::Exchange
        };
        let mut plan = RankPlan {
            rank,
            elem_size: args.elem_size,
            path,
            input,
            output,
            gshape: args.gshape.clone(),
            split: args.split,
            new_shape: args.new_shape.clone(),
            new_split: args.new_split,
            sends: Vec::new(),
            recvs: Vec::new(),
            local_elems: 0,
        };
        plan.local_elems = shared_elements(&plan.input_pattern(), &plan.output_pattern());
        if !plan.input.is_replicated() {
            plan.sends = plan.transfers(nranks, |p, peer| {
                (p.input_pattern(), p.output.pattern(peer))
            })?;
            plan.recvs = plan.transfers(nranks, |p, peer| {
                (p.input.pattern(peer), p.output_pattern())
            })?;
        }
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

    fn transfers(
        &self,
        nranks: usize,
        patterns: impl Fn(&RankPlan, usize) -> (Pattern, Pattern),
    ) -> Result<Vec<PeerVolume>> {
        let mut transfers = try_vec(nranks.saturating_sub(1), "the peer list", self.rank)?;
        for peer in (0..nranks).filter(|&peer| peer != self.rank) {
            let (from, to) = patterns(self, peer);
            let elems = shared_elements(&from, &to);
            if elems > 0 {
                transfers.push(PeerVolume { peer, elems });
            }
        }
        Ok(transfers)
    }

    /// The global elements this rank holds on input.
    pub fn input_pattern(&self) -> Pattern {
        self.input.pattern(self.rank)
    }

    /// The global elements this rank holds on output.
    pub fn output_pattern(&self) -> Pattern {
        self.output.pattern(self.rank)
    }

    /// Runs this rank sends to `peer`, in global order.
    pub fn send_runs(&self, peer: usize) -> SharedRuns {
        SharedRuns::new(&self.input_pattern(), &self.output.pattern(peer))
    }

    /// Runs this rank receives from `peer`, in global order.
    pub fn recv_runs(&self, peer: usize) -> SharedRuns {
        SharedRuns::new(&self.input.pattern(peer), &self.output_pattern())
    }

    /// Runs this rank copies from its input to its output.
    pub fn local_runs(&self) -> SharedRuns {
        SharedRuns::new(&self.input_pattern(), &self.output_pattern())
    }

    /// The copy of each run `runs` yields that this rank keeps: where it lies in
    /// its input buffer and where it starts in its output buffer.
    fn kept_bytes(&self, runs: impl Iterator<Item = Run>) -> impl Iterator<Item = KeptCopy> {
        let (from, to, size) = (self.input_pattern(), self.output_pattern(), self.elem_size);
        runs.map(move |run| {
            let src = from.local_offset(run.global) as usize * size;
            KeptCopy {
                from: src..src + run.len as usize * size,
                to: to.local_offset(run.global) as usize * size,
            }
        })
    }

    /// The copies of the elements this rank keeps, from its input to its output,
    /// runs contiguous on both sides merged.
    pub fn kept_copies(&self) -> impl Iterator<Item = KeptCopy> {
        let mut runs = self.kept_bytes(self.local_runs()).peekable();
        std::iter::from_fn(move || {
            let KeptCopy { mut from, to } = runs.next()?;
            while let Some(next) =
                runs.next_if(|c| c.from.start == from.end && c.to == to + from.len())
            {
                from.end = next.from.end;
            }
            Some(KeptCopy { from, to })
        })
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
        let (from, size, base) = (self.input_pattern(), self.elem_size, packed.len());
        for (t, start) in self.sends.iter().zip(self.packed_send_starts()) {
            debug_assert_eq!(packed.len() - base, start, "packed sends out of layout");
            for run in self.send_runs(t.peer) {
                let src = from.local_offset(run.global) as usize * size;
                packed.extend_from_slice(&input[src..src + run.len as usize * size]);
            }
        }
    }

    /// Moves the elements this rank keeps from their input to their output positions
    /// within one buffer. Both positions grow with the global index, so moving the runs
    /// that go down in ascending order, then those that go up in descending order,
    /// never overwrites a run before it has moved.
    pub fn move_kept_in_place(&self, buffer: &mut [u8]) {
        let down = self
            .kept_bytes(self.local_runs())
            .filter(|c| c.to < c.from.start);
        let up = self
            .kept_bytes(self.local_runs().descending())
            .filter(|c| c.to > c.from.start);
        for KeptCopy { from, to } in down.chain(up) {
            buffer.copy_within(from, to);
        }
    }

    /// Elements in this rank's input buffer.
    pub fn input_elems(&self) -> u64 {
        self.input_pattern().len()
    }

    /// Elements in this rank's output buffer.
    pub fn output_elems(&self) -> u64 {
        self.output_pattern().len()
    }

    /// This rank's output rows along the new split axis, or `None` when not split.
    pub fn output_rows(&self) -> Option<u64> {
        self.output.rows(self.rank).map(|rows| rows.len)
    }

    /// The shape of this rank's input slab (C order): the global shape with this
    /// rank's rows along the split axis.
    pub fn local_input_shape(&self) -> Vec<u64> {
        local_shape(&self.gshape, self.split, self.input.rows(self.rank))
    }

    /// The shape of this rank's output slab (C order): the new global shape with
    /// this rank's rows along the new split axis.
    pub fn local_output_shape(&self) -> Vec<u64> {
        local_shape(&self.new_shape, self.new_split, self.output.rows(self.rank))
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

/// One copy of kept elements: the bytes `from` of the input go to `to` onwards in the
/// output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptCopy {
    /// Byte range in the input buffer.
    pub from: Range<usize>,
    /// Byte offset in the output buffer.
    pub to: usize,
}

/// `shape` with `rows` along `split` (unchanged when not split).
fn local_shape(shape: &[u64], split: Option<usize>, rows: Option<Slab>) -> Vec<u64> {
    let mut local = shape.to_vec();
    if let (Some(axis), Some(rows)) = (split, rows) {
        local[axis] = rows.len;
    }
    local
}

/// A split layout from per-rank row counts, its offsets allocated fallibly.
fn split_layout(
    shape: &[u64],
    axis: usize,
    lens: impl ExactSizeIterator<Item = u64>,
    rank: usize,
) -> Result<Layout> {
    let mut offsets = try_vec(lens.len() + 1, "the slab offsets", rank)?;
    offsets.push(0);
    for len in lens {
        offsets.push(offsets[offsets.len() - 1] + len);
    }
    Ok(Layout::from_offsets(shape, axis, offsets))
}

/// The split-preserving condition: both sides split, the same product of extents
/// before the split axes, and every input slab a whole number of output rows.
fn split_survives(input: &Layout, output: &Layout) -> bool {
    if input.is_replicated() || output.is_replicated() || input.outer != output.outer {
        return false;
    }
    // `is_multiple_of(0)` holds only for 0: an empty inner size takes only empty slabs.
    input
        .offsets
        .windows(2)
        .all(|w| ((w[1] - w[0]) * input.inner).is_multiple_of(output.inner))
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
            self.new_shape,
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
