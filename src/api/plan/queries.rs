//! What a plan tells of itself: its statistics, shapes, boxes and slabs, sizes
//! and whether its executions are collective.

use super::Plan;
use super::in_place::InPlaceRoute;
use crate::distribution::grid::GridBox;
use crate::distribution::layout::Slab;
use crate::planning::planner::{PlanStats, RankPlan, Route};

impl Plan {
    /// The statistics of what this rank will do.
    pub fn stats(&self) -> PlanStats {
        self.executor.plan.stats()
    }

    /// The path taken (the same on every rank).
    pub fn path(&self) -> Route {
        self.executor.plan.path
    }

    /// The resolved output global shape.
    pub fn new_shape(&self) -> &[u64] {
        self.executor.plan.new_shape()
    }

    /// The shape of this rank's input slab (C order): the global shape with this
    /// rank's rows along the split axis.
    pub fn local_input_shape(&self) -> Vec<u64> {
        self.executor.plan.local_input_shape()
    }

    /// The shape of this rank's output slab (C order): the new global shape with
    /// this rank's rows along the new split axis.
    pub fn local_output_shape(&self) -> Vec<u64> {
        self.executor.plan.local_output_shape()
    }

    /// This rank's input box: the global index of its first element along each
    /// axis, and its extent along each (its buffer holds the box in C order).
    pub fn input_box(&self) -> GridBox {
        self.executor
            .plan
            .input_layout()
            .rank_box(self.executor.plan.rank)
    }

    /// This rank's output box, in the resolved output shape.
    pub fn output_box(&self) -> GridBox {
        self.executor
            .plan
            .output_layout()
            .rank_box(self.executor.plan.rank)
    }

    /// This rank's input slab along the split axis: the first global row it holds
    /// and how many (`None` when the input is not a slab layout: not split, or on a
    /// grid of several axes).
    pub fn input_slab(&self) -> Option<Slab> {
        self.executor
            .plan
            .input_layout()
            .slab_of(self.executor.plan.rank)
    }

    /// This rank's output slab along the new split axis (`None` when the output is
    /// not a slab layout). With explicit target lengths the offset is the sum of the
    /// lower ranks' lengths, which no local formula gives.
    pub fn output_slab(&self) -> Option<Slab> {
        self.executor
            .plan
            .output_layout()
            .slab_of(self.executor.plan.rank)
    }

    /// This rank's output rows along the new split axis (`None` when not split).
    pub fn output_rows(&self) -> Option<u64> {
        self.executor.plan.output_rows()
    }

    /// Elements this rank's input buffer holds.
    pub fn input_elems(&self) -> usize {
        self.executor.plan.input_elems() as usize
    }

    /// Elements this rank's output buffer must hold.
    pub fn output_elems(&self) -> usize {
        self.executor.plan.output_elems() as usize
    }

    /// Elements from this rank's first input element to one past its last: what
    /// the input buffer must hold (its element count when the input is dense).
    pub fn input_span(&self) -> usize {
        self.storages.input.span() as usize
    }

    /// Elements from this rank's first output element to one past its last: the
    /// least output capacity (its element count when the output is dense).
    pub fn output_span(&self) -> usize {
        self.storages.output.span() as usize
    }

    /// This rank's input strides, in elements (C order without gaps unless the
    /// plan was made with strides).
    pub fn input_strides(&self) -> &[u64] {
        self.storages.input.strides()
    }

    /// This rank's output strides, in elements.
    pub fn output_strides(&self) -> &[u64] {
        self.storages.output.strides()
    }

    /// True when some rank stores a box strided: every message is then packed
    /// through the slots, nothing is read directly, and in place is refused.
    pub fn is_strided(&self) -> bool {
        self.strided
    }

    /// Bytes per element.
    pub fn elem_size(&self) -> usize {
        self.executor.plan.elem_size
    }

    /// True when executing needs the other ranks: some rank sends or receives. A plan
    /// that moves nothing between ranks (for example the seed case with balanced
    /// input) executes locally: no collective, no synchronization, and a buffer error
    /// is reported only on the rank that made it.
    pub fn is_collective(&self) -> bool {
        self.communicates
    }

    /// Bytes of staging the plan keeps for executions in place on the exchange path
    /// once one has run and found a bounded schedule (at most
    /// [`PlanOptions::in_place_budget`](crate::PlanOptions::in_place_budget)); `None` before, and when every such
    /// execution packs everything the rank sends instead.
    pub fn in_place_staging_bytes(&self) -> Option<usize> {
        match &self.lock().in_place {
            InPlaceRoute::Scheduled(s) => Some(s.staging_bytes()),
            _ => None,
        }
    }

    /// This process's rank in the plan's communicator.
    pub fn rank(&self) -> usize {
        self.executor.comm.rank()
    }

    /// The per-rank plan (peers, volumes, layouts), for the benchmarks and tests.
    #[doc(hidden)]
    pub fn rank_plan(&self) -> &RankPlan {
        &self.executor.plan
    }
}
