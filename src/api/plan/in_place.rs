//! The in-place policy of a plan: how an execution in place on the exchange path
//! runs (the bounded rounds of an in-place schedule, or everything sent packed),
//! decided with every rank at the plan's first such execution and kept.
//!
//! What allocates when: the decision, at the first execution in place on the
//! exchange path, builds the schedule and allocates this rank's part of it (its
//! staging, within [`PlanOptions::in_place_budget`], its requests and the MPI
//! datatypes of its messages of several pieces), kept for
//! every later execution; when there is no schedule, every execution in place
//! allocates its pack buffer (exactly the bytes this rank sends) and frees it when
//! it completes.

use super::Plan;
use crate::api::options::PlanOptions;
use crate::core::error::Result;
use crate::core::fallible::{contain_panic, try_vec};
use crate::mpi::agree::agree;
use crate::mpi::comm::Comm;
use crate::mpi::exchange::Mode;
use crate::mpi::inplace_exchange::ScheduledExchange;
use crate::planning::inplace::thresholds::{PACK_ALL_BYTES, SCHEDULING_BYTES_PER_PIECE};
use crate::planning::inplace::{Problem, Schedule, Unscheduled};
use crate::planning::planner::Route;

/// How a plan executes in place on the exchange path, decided (the same on every
/// rank) at its first such execution.
#[derive(Debug)]
pub(super) enum InPlaceRoute {
    /// No execution in place yet.
    Undecided,
    /// The bounded rounds of an in-place schedule.
    Scheduled(ScheduledExchange<Comm>),
    /// Everything sent is packed first ([`Mode::InPlacePacked`]), for the reason
    /// given: little to send, or no bounded schedule.
    Packed(Unscheduled),
}

/// What one execution runs on this rank.
#[derive(Debug)]
pub(super) enum Run {
    /// The exchange engine in `mode`; with everything sent packed
    /// ([`Mode::InPlacePacked`]), `packed` (the pack buffer) has room for it.
    Exchange { mode: Mode, packed: Vec<u8> },
    /// The rounds of the plan's in-place schedule, which every rank runs when any
    /// rank executes in place on the exchange path (in place or not, each on its
    /// own buffers), staging at most the budget.
    Scheduled,
}

impl Plan {
    /// True when executions in place can follow an in-place schedule: on the
    /// exchange path with a split input, when ranks communicate.
    pub(super) fn schedulable(&self) -> bool {
        self.communicates
            && self.executor.plan.path == Route::Exchange
            && !self.executor.plan.input_layout().is_replicated()
    }

    /// What this rank runs when some rank executes in place on the exchange path:
    /// the plan's in-place schedule, on every rank, when it has one (decided with
    /// every rank at the first such execution), else `run`, this rank's own mode.
    pub(super) fn in_place_somewhere(
        &self,
        route: &mut InPlaceRoute,
        in_place: bool,
        run: Option<Run>,
    ) -> Result<Option<Run>> {
        if matches!(route, InPlaceRoute::Undecided) {
            *route = self.decide_in_place()?;
            if matches!(route, InPlaceRoute::Packed(_)) {
                let repacked = match (in_place, run) {
                    (true, Some(_)) => self.prepare(true, true),
                    (_, run) => Ok(run),
                };
                agree(&self.executor.comm, repacked.as_ref().err(), &mut [])?;
                return repacked;
            }
        }
        match route {
            InPlaceRoute::Scheduled(_) => Ok(Some(Run::Scheduled)),
            _ => Ok(run),
        }
    }

    /// Decides with every rank how executions in place on the exchange path run:
    /// the rounds of an in-place schedule when every rank made its part, else
    /// everything sent packed.
    fn decide_in_place(&self) -> Result<InPlaceRoute> {
        let rank = self.executor.comm.rank();
        let small = PACK_ALL_BYTES.min(self.in_place_budget(rank)) as u64;
        let mut large = [i64::from(self.executor.plan.stats().bytes_sent > small)];
        agree(&self.executor.comm, None, &mut large)?;
        if large[0] == 0 {
            return Ok(InPlaceRoute::Packed(Unscheduled::Small));
        }
        let made = contain_panic(|| self.in_place_schedule());
        let mut unscheduled = [i64::from(!matches!(made, Ok(Ok(_))))];
        agree(&self.executor.comm, None, &mut unscheduled)?;
        Ok(match made {
            Ok(Ok(scheduled)) if unscheduled[0] == 0 => InPlaceRoute::Scheduled(scheduled),
            Ok(Err(why)) => InPlaceRoute::Packed(why),
            _ => InPlaceRoute::Packed(Unscheduled::OutOfMemory),
        })
    }

    /// Rank `r`'s staging budget for in place on the exchange path.
    fn in_place_budget(&self, r: usize) -> usize {
        let (input, output) = (
            self.executor.plan.input_layout(),
            self.executor.plan.output_layout(),
        );
        let elems = input.elements(r).max(output.elements(r)) as usize;
        let buffer = elems * self.executor.plan.elem_size;
        self.options
            .in_place_budget
            .unwrap_or_else(|| PlanOptions::default_in_place_budget(buffer))
    }

    /// This rank's part of the in-place schedule, with every rank's budget.
    fn in_place_schedule(
        &self,
    ) -> Result<std::result::Result<ScheduledExchange<Comm>, Unscheduled>> {
        let size = self.executor.plan.elem_size;
        let budgets: Vec<usize> = (0..self.executor.comm.size())
            .map(|r| self.in_place_budget(r))
            .collect();
        let problem = Problem {
            layouts: &self.executor.plan.layouts,
            elem_size: size,
            budgets: &budgets,
            scheduling_bytes_per_piece: SCHEDULING_BYTES_PER_PIECE,
        };
        let rank = self.executor.comm.rank();
        // The global schedule is dropped before the staging is allocated, so the
        // two never add up.
        let part = Schedule::new(&problem, self.options.run_budget).map(|s| s.for_rank(rank));
        match part {
            Ok(part) => Ok(Ok(ScheduledExchange::new(
                part,
                rank,
                &*self.executor.comm,
            )?)),
            Err(why) => Ok(Err(why)),
        }
    }

    /// The mode of an execution, and with everything sent packed (in place on the
    /// exchange path, when `packed` or no schedule applies) the pack buffer for it,
    /// allocated here, for this execution;
    /// `None` when there is nothing to do (in place on a rank whose output equals
    /// its input).
    pub(super) fn prepare(&self, in_place: bool, packed: bool) -> Result<Option<Run>> {
        if in_place && self.executor.plan.is_identity() {
            return Ok(None);
        }
        let mode = match (in_place, self.executor.plan.path) {
            (false, _) => Mode::OutOfPlace,
            (true, Route::Local) => Mode::InPlaceOrdered,
            (true, Route::Exchange) if packed || !self.schedulable() => Mode::InPlacePacked,
            (true, Route::Exchange) => return Ok(Some(Run::Scheduled)),
        };
        let packed = match mode {
            Mode::InPlacePacked => {
                let bytes = self.executor.plan.stats().bytes_sent as usize;
                try_vec(bytes, "the in-place pack buffer", self.executor.comm.rank())?
            }
            _ => Vec::new(),
        };
        Ok(Some(Run::Exchange { mode, packed }))
    }
}
