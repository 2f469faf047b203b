//! The collective steps of plan creation: the arguments validated on every rank
//! and compared across ranks in one agreement, every rank's slab lengths gathered
//! and checked, and the planning outcome agreed.

use crate::api::options::PlanOptions;
use crate::core::error::{Error, Result};
use crate::core::fallible::{contain_panic, try_vec};
use crate::core::faults::injected_panic_point;
use crate::distribution::identity::nothing_moves;
use crate::distribution::layout::MAX_DIMS;
use crate::distribution::peers::Redistribution;
use crate::distribution::storage::{InputStorages, Storages};
use crate::mpi::agree::{agree, agree_on_difference};
use crate::mpi::comm::Comm;
use crate::mpi::library::Switches;
use crate::planning::args::{
    Checked, FINGERPRINT_LEN, ReshapeArgs, check_local, check_rows_add_up, mismatch,
};
use crate::planning::layouts::{LAYOUT_FINGERPRINT_LEN, LayoutArgs};
use crate::planning::messages::StridedRuns;
use crate::planning::planner::RankPlan;
use crate::planning::schedule::proposed_window_width;

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
    let max = &piggyback[..FINGERPRINT_LEN];
    match mismatch(&args, &min, max, rank) {
        Some(own) => Err(agreed_mismatch(comm, own, differs(&fingerprint, &min, max))),
        None => Ok(local),
    }
}

/// Whether this rank's `fingerprint` is not the largest any rank passed at the
/// first entry where the ranks differ (between `min` and `max`).
fn differs(fingerprint: &[i64], min: &[i64], max: &[i64]) -> bool {
    (0..fingerprint.len())
        .find(|&i| min[i] != max[i])
        .is_some_and(|i| fingerprint[i] != max[i])
}

/// Every rank's error when the ranks passed different arguments: `own` (this
/// rank's, naming what it passed) of the lowest rank that `differs` from the
/// largest value, naming the lowest rank that passed the largest.
fn agreed_mismatch(comm: &Comm, own: Error, differs: bool) -> Error {
    agree_on_difference(comm, differs, |other| {
        Error::InconsistentArguments(format!("{}, unlike rank {other}", own.detail()))
    })
}

/// This rank's plan, with what every rank agreed on about all the plans.
pub(super) struct AgreedPlan {
    /// This rank's plan.
    pub(super) plan: RankPlan,
    /// The largest peer count of any rank, per direction (at least 1): it sizes the
    /// messages, the same on every rank.
    pub(super) busiest_peers: usize,
    /// The width of the pairwise windows in distances, the same on every rank.
    pub(super) window_width: usize,
    /// True when some rank sends or receives anything (decided from the layouts).
    pub(super) communicates: bool,
    /// How long strided runs travel: the most cautious way any rank proposes
    /// ([`Switches::proposed_strided_runs`], [`BY_CAUTION`]).
    pub(super) strided_runs: StridedRuns,
    /// True when the plan reads directly between the ranks of a node where they
    /// allow it (each node then decides): some rank proposes them
    /// ([`Switches::proposed_direct_reads`]), or some side is strided and no
    /// rank turned them off. A reader then lands the runs in a bounce and copies
    /// them into its storage, instead of the sender packing into its slot and the
    /// receiver unpacking from its: measured faster
    /// (docs/src/performance/grids.md, "Strided storage").
    pub(super) direct_reads: bool,
    /// True when some rank's input is strided: a plan that reads directly then
    /// gathers every rank's input strides ([`InputStorages`]).
    pub(super) strided_input: bool,
    /// True when some rank stores a box strided: every message is then packed
    /// ([`MessageLimits::all_packed`](crate::planning::messages::MessageLimits::all_packed)),
    /// and direct reads land in a bounce.
    pub(super) strided: bool,
    /// The options, with the message limits agreed: the smallest
    /// `max_message_bytes`, `slot_bytes` and `run_budget` of any rank.
    pub(super) options: PlanOptions,
}

/// The arguments every rank validated and agreed on, and the buffers for the slab
/// lengths that are gathered next.
pub(super) struct Agreed {
    /// This rank's arguments, checked.
    pub(super) checked: Checked,
    /// Room for every rank's slab lengths.
    pub(super) gathered: Gathered,
}

/// Agrees on the planning outcome and on what shapes every rank's exchange: the
/// busiest rank's peer count, the narrowest window width any rank proposes for
/// its `options`' peers per window, the smallest message limits any rank's
/// `options` set (each agreed as the maximum of its complement: both ends of a
/// message must cut it alike), the most cautious way for strided runs any rank
/// proposes, whether any rank proposes direct reads, and whether any rank's
/// `storages` are strided (and its input).
pub(super) fn agree_on_plan(
    comm: &Comm,
    planned: Result<RankPlan>,
    options: &PlanOptions,
    switches: &Switches,
    storages: &Storages,
) -> Result<AgreedPlan> {
    let width = planned.as_ref().map_or(Ok(comm.size()), |plan| {
        proposed_window_width(plan, comm.size(), options.window)
    });
    let peers = planned
        .as_ref()
        .map_or(1, |p| p.sends.len().max(p.recvs.len()).max(1));
    let mine = Proposals {
        busiest_peers: peers,
        window_width: width.as_ref().copied().unwrap_or(comm.size()),
        caution: caution(switches.proposed_strided_runs()),
        direct_reads: switches.proposed_direct_reads(),
        strided: !storages.are_dense(),
        strided_input: !storages.input.is_dense(),
        refuses_direct_reads: switches.refuses_direct_reads(),
        max_message_bytes: options.max_message_bytes,
        slot_bytes: options.slot_bytes,
        run_budget: options.run_budget,
    };
    let mut piggyback = mine.encoded();
    let local = planned.as_ref().err().or(width.as_ref().err());
    agree(comm, local, &mut piggyback)?;
    let agreed = Proposals::decoded(&piggyback);
    let plan = planned?;
    Ok(AgreedPlan {
        communicates: !nothing_moves(&plan.layouts),
        busiest_peers: agreed.busiest_peers,
        window_width: agreed.window_width,
        strided_runs: strided_runs_of_caution(agreed.caution),
        direct_reads: agreed.direct_reads || (agreed.strided && !agreed.refuses_direct_reads),
        strided: agreed.strided,
        strided_input: agreed.strided_input,
        options: PlanOptions {
            max_message_bytes: agreed.max_message_bytes,
            slot_bytes: agreed.slot_bytes,
            run_budget: agreed.run_budget,
            ..*options
        },
        plan,
    })
}

/// What one rank proposes for the whole plan, and, once agreed, what the ranks
/// settled on: the largest of each count and caution over the ranks, whether
/// any rank proposes each switch, and the smallest window width and message
/// limits. Travels as [`agree`]'s piggyback, whose maximum gives the smallest
/// of a value sent as its complement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Proposals {
    /// The rank's peer count in its busier direction (at least 1).
    busiest_peers: usize,
    /// The window width for its peers per window.
    window_width: usize,
    /// Its way for strided runs, as its index in [`BY_CAUTION`].
    caution: i64,
    /// It proposes direct reads.
    direct_reads: bool,
    /// It stores a box strided.
    strided: bool,
    /// Its input is strided.
    strided_input: bool,
    /// It turned direct reads off.
    refuses_direct_reads: bool,
    /// Its options' `max_message_bytes`.
    max_message_bytes: usize,
    /// Its options' `slot_bytes`.
    slot_bytes: usize,
    /// Its options' `run_budget`.
    run_budget: usize,
}

impl Proposals {
    /// The piggyback values, the smallest-wins ones as complements (a value
    /// above `i64::MAX`, no limit in practice, as `i64::MAX`).
    fn encoded(&self) -> [i64; 10] {
        let smallest_wins = |value: usize| !(value.min(i64::MAX as usize) as i64);
        [
            self.busiest_peers as i64,
            smallest_wins(self.window_width),
            self.caution,
            i64::from(self.direct_reads),
            i64::from(self.strided),
            i64::from(self.strided_input),
            i64::from(self.refuses_direct_reads),
            smallest_wins(self.max_message_bytes),
            smallest_wins(self.slot_bytes),
            smallest_wins(self.run_budget),
        ]
    }

    /// The proposals [`Proposals::encoded`] encoded as `values`.
    fn decoded(values: &[i64; 10]) -> Proposals {
        let [
            peers,
            width,
            caution,
            direct,
            strided,
            input,
            refuses,
            message,
            slot,
            budget,
        ] = *values;
        Proposals {
            busiest_peers: peers as usize,
            window_width: !width as usize,
            caution,
            direct_reads: direct != 0,
            strided: strided != 0,
            strided_input: input != 0,
            refuses_direct_reads: refuses != 0,
            max_message_bytes: !message as usize,
            slot_bytes: !slot as usize,
            run_budget: !budget as usize,
        }
    }
}

/// Every rank's input storage, from the input strides every rank gives
/// (collective: one agreement on the buffer's allocation, then an allgather):
/// what a plan that reads strided inputs directly finds a sender's elements by.
pub(super) fn gather_input_storages(
    comm: &Comm,
    plan: &RankPlan,
    storages: &Storages,
) -> Result<InputStorages> {
    let strides = storages.input.strides();
    let mut mine = [0i64; MAX_DIMS];
    for (given, &stride) in mine.iter_mut().zip(strides) {
        *given = stride as i64;
    }
    let mine = &mine[..strides.len()];
    let all = try_vec(
        mine.len() * comm.size(),
        "every rank's input strides",
        plan.rank,
    );
    agree(comm, all.as_ref().err(), &mut [])?;
    let mut all = all?;
    comm.allgather_into(mine, &mut all)?;
    InputStorages::new(plan.layouts.input(), &all, plan.elem_size)
}

/// The ways for strided runs from the least cautious to the most: strided
/// datatypes at both ends, strided receives only, a message per run (contiguous
/// at both ends), slots (every message contiguous at both ends, and as many as a
/// slot's bytes make). The ranks agree on the largest index any rank proposes.
const BY_CAUTION: [StridedRuns; 4] = [
    StridedRuns::StridedDatatypes,
    StridedRuns::StridedReceives,
    StridedRuns::RunMessages,
    StridedRuns::Slots,
];

/// The index of `strided_runs` in [`BY_CAUTION`].
fn caution(strided_runs: StridedRuns) -> i64 {
    BY_CAUTION
        .iter()
        .take_while(|&&w| w != strided_runs)
        .count() as i64
}

/// The way for strided runs of the agreed `caution` ([`BY_CAUTION`]).
fn strided_runs_of_caution(caution: i64) -> StridedRuns {
    BY_CAUTION[(caution.max(0) as usize).min(BY_CAUTION.len() - 1)]
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

/// Two layouts checked on every rank and compared across ranks.
pub(super) struct CheckedLayouts {
    /// Bytes per element.
    pub elem_size: usize,
    /// The grid layouts, resolved.
    pub layouts: Redistribution,
    /// This rank's storages of its boxes, checked.
    pub storages: Storages,
}

/// Checks the layouts on every rank (against the communicator's size and, on a
/// Cartesian communicator, its dimensions) and agrees on the outcome in one
/// collective that also compares them across ranks (their fingerprint's maximum
/// and the maximum of its complement, i.e. the minimum).
pub(super) fn agree_on_layouts(comm: &Comm, args: Result<LayoutArgs>) -> Result<CheckedLayouts> {
    let rank = comm.rank();
    let cartesian = comm.cartesian_dims();
    let checked = contain_panic(|| {
        injected_panic_point();
        let args = args.as_ref().map_err(|e| e.clone().on_rank(rank))?;
        let layouts = args.check(comm.size(), rank)?;
        check_cartesian(&layouts, cartesian?.as_deref(), rank)?;
        Ok(CheckedLayouts {
            elem_size: args.elem_size,
            storages: args.storages(&layouts, rank)?,
            layouts,
        })
    });
    let fingerprint = args
        .as_ref()
        .map_or([0; LAYOUT_FINGERPRINT_LEN], LayoutArgs::fingerprint);
    let mut piggyback: Vec<i64> = fingerprint
        .iter()
        .copied()
        .chain(fingerprint.iter().map(|x| !x))
        .collect();
    agree(comm, checked.as_ref().err(), &mut piggyback)?;
    let (checked, args) = (checked?, args?);
    let min: Vec<i64> = piggyback[LAYOUT_FINGERPRINT_LEN..]
        .iter()
        .map(|x| !x)
        .collect();
    let max = &piggyback[..LAYOUT_FINGERPRINT_LEN];
    match args.mismatch(&min, max, rank) {
        Some(own) => Err(agreed_mismatch(comm, own, differs(&fingerprint, &min, max))),
        None => Ok(checked),
    }
}

/// On a Cartesian communicator of dimensions `dims`, a layout whose grid has as many
/// axes must have these dimensions: its ranks would otherwise sit at other
/// coordinates than the communicator's.
fn check_cartesian(layouts: &Redistribution, dims: Option<&[i64]>, rank: usize) -> Result<()> {
    let Some(dims) = dims else {
        return Ok(());
    };
    for (which, layout) in [("input", layouts.input()), ("output", layouts.output())] {
        let grid: Vec<i64> = layout.grid_dims().iter().map(|&d| d as i64).collect();
        if grid.len() == dims.len() && grid != dims {
            return Err(Error::InvalidDistribution(format!(
                "{which} layout: grid_dims = {grid:?} differ from the Cartesian communicator's dims {dims:?} (rank {rank})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_for_strided_runs_round_trips_through_its_caution() {
        for (index, &way) in BY_CAUTION.iter().enumerate() {
            assert_eq!(caution(way), index as i64);
            assert_eq!(strided_runs_of_caution(caution(way)), way);
        }
        assert_eq!(strided_runs_of_caution(7), StridedRuns::Slots);
    }

    #[test]
    fn proposals_agree_on_the_largest_and_the_smallest() {
        let rank = |peers, width, on: bool, limit| Proposals {
            busiest_peers: peers,
            window_width: width,
            caution: i64::from(on),
            direct_reads: on,
            strided: !on,
            strided_input: on,
            refuses_direct_reads: !on,
            max_message_bytes: limit,
            slot_bytes: limit * 2,
            run_budget: limit * 3,
        };
        let (a, b) = (rank(3, 8, false, 100), rank(5, 2, true, usize::MAX >> 2));
        assert_eq!(Proposals::decoded(&a.encoded()), a);
        let unlimited = Proposals {
            run_budget: i64::MAX as usize,
            ..b
        };
        assert_eq!(Proposals::decoded(&b.encoded()), unlimited);
        let (x, y) = (a.encoded(), b.encoded());
        let max: [i64; 10] = std::array::from_fn(|i| x[i].max(y[i]));
        let agreed = Proposals {
            busiest_peers: 5,
            window_width: 2,
            caution: 1,
            direct_reads: true,
            strided: true,
            strided_input: true,
            refuses_direct_reads: true,
            max_message_bytes: 100,
            slot_bytes: 200,
            run_budget: 300,
        };
        assert_eq!(Proposals::decoded(&max), agreed);
    }
}
