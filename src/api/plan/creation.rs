//! The collective steps of plan creation: the arguments validated on every rank
//! and compared across ranks in one agreement, every rank's slab lengths gathered
//! and checked, and the planning outcome agreed.

use crate::core::error::Result;
use crate::core::fallible::{contain_panic, try_vec};
use crate::core::faults::injected_panic_point;
use crate::mpi::agree::agree;
use crate::mpi::comm::Comm;
use crate::planning::args::{
    Checked, FINGERPRINT_LEN, ReshapeArgs, check_local, check_rows_add_up, mismatch,
};
use crate::planning::planner::RankPlan;

/// Validates the arguments on every rank and agrees on the outcome in one
/// collective that also compares the global arguments across ranks exactly (their
/// element-wise maximum and the maximum of their complement, i.e. the minimum).
pub(super) fn agree_on_arguments(comm: &Comm, args: Result<ReshapeArgs>) -> Result<Agreed> {
    let rank = comm.rank();
    let checked = contain_panic(|| {
        injected_panic_point();
        check_local(args.as_ref().map_err(|e| e.clone().on_rank(rank))?, rank)
    });
    let local = checked.and_then(|checked| {
        let gathered = Gathered::allocate(comm.size(), rank)?;
        Ok(Agreed { checked, gathered })
    });
    let fingerprint = args
        .as_ref()
        .map_or_else(|_| vec![0; FINGERPRINT_LEN], ReshapeArgs::fingerprint);
    let mut piggyback: Vec<i64> = fingerprint
        .iter()
        .copied()
        .chain(fingerprint.iter().map(|x| !x))
        .collect();
    agree(comm, local.as_ref().err(), &mut piggyback)?;
    let (local, args) = (local?, args?);
    let min: Vec<i64> = piggyback[FINGERPRINT_LEN..].iter().map(|x| !x).collect();
    match mismatch(&args, &min, &piggyback[..FINGERPRINT_LEN], rank) {
        Some(e) => Err(e),
        None => Ok(local),
    }
}

/// This rank's plan, with what every rank agreed on about all the plans.
pub(super) struct AgreedPlan {
    /// This rank's plan.
    pub(super) plan: RankPlan,
    /// The largest peer count of any rank, per direction (at least 1): it sizes the
    /// messages, the same on every rank.
    pub(super) busiest_peers: usize,
    /// True when some rank sends or receives anything.
    pub(super) communicates: bool,
}

/// The arguments every rank validated and agreed on, and the buffers for the slab
/// lengths that are gathered next.
pub(super) struct Agreed {
    /// This rank's arguments, checked.
    pub(super) checked: Checked,
    /// Room for every rank's slab lengths.
    pub(super) gathered: Gathered,
}

/// Agrees on the planning outcome and on what sizes every rank's exchange.
pub(super) fn agree_on_plan(comm: &Comm, planned: Result<RankPlan>) -> Result<AgreedPlan> {
    let (peers, talks) = planned.as_ref().map_or((1, false), |p| {
        (
            p.sends.len().max(p.recvs.len()).max(1),
            !(p.sends.is_empty() && p.recvs.is_empty()),
        )
    });
    let mut piggyback = [peers as i64, i64::from(talks)];
    agree(comm, planned.as_ref().err(), &mut piggyback)?;
    Ok(AgreedPlan {
        plan: planned?,
        busiest_peers: piggyback[0] as usize,
        communicates: piggyback[1] != 0,
    })
}

/// Every rank's input slab length and requested output length, in buffers
/// allocated before the ranks agree, so that an allocation failure is agreed too.
pub(super) struct Gathered {
    raw: Vec<i64>,
    /// Every rank's input slab length.
    pub(super) lens: Vec<u64>,
    targets: Vec<u64>,
}

impl Gathered {
    pub(super) fn allocate(nranks: usize, rank: usize) -> Result<Gathered> {
        Ok(Gathered {
            raw: try_vec(2 * nranks, "the gathered slab lengths", rank)?,
            lens: try_vec(nranks, "the slab lengths", rank)?,
            targets: try_vec(nranks, "the target lengths", rank)?,
        })
    }

    /// Allgathers this rank's `[local_len, target_len]`.
    pub(super) fn exchange(&mut self, comm: &Comm, checked: &Checked) -> Result<()> {
        let mine = [
            checked.local_len as i64,
            checked.target_len.map_or(0, |t| t as i64),
        ];
        comm.allgather_into(&mine, &mut self.raw)?;
        self.lens
            .extend(self.raw.iter().step_by(2).map(|&l| l as u64));
        self.targets
            .extend(self.raw.iter().skip(1).step_by(2).map(|&l| l as u64));
        Ok(())
    }

    /// Checks that the lengths add up (the same outcome on every rank); returns the
    /// explicit targets, if any.
    pub(super) fn check(&self, checked: &Checked) -> Result<Option<&[u64]>> {
        if let Some(axis) = checked.split {
            check_rows_add_up("local_len", &self.lens, checked.gshape[axis])?;
        }
        let explicit = checked.new_split.filter(|_| checked.target_len.is_some());
        if let Some(axis) = explicit {
            check_rows_add_up("new_local_len", &self.targets, checked.new_shape[axis])?;
        }
        Ok(explicit.map(|_| self.targets.as_slice()))
    }
}
