//! A rank's staging while the schedule is made: first-fit slots within its
//! budget, and where and when each staged piece lies ([`Staged`]).

use std::ops::Range;

/// First-fit allocation of byte ranges within a budget.
#[derive(Clone, Debug)]
pub(super) struct Staging {
    /// Free ranges, sorted and separated.
    free: Vec<Range<usize>>,
    pub(super) capacity: usize,
    pub(super) used: usize,
    /// The end of the highest range ever allocated: the staging's size.
    pub(super) high_water: usize,
}

impl Staging {
    pub(super) fn new(budget: usize) -> Staging {
        Staging {
            free: std::iter::once(0..budget).collect(),
            capacity: budget,
            used: 0,
            high_water: 0,
        }
    }

    pub(super) fn allocate(&mut self, len: usize) -> Option<usize> {
        let i = self.free.iter().position(|r| r.len() >= len)?;
        let at = self.free[i].start;
        self.free[i].start += len;
        if self.free[i].is_empty() {
            self.free.remove(i);
        }
        self.used += len;
        self.high_water = self.high_water.max(at + len);
        Some(at)
    }

    pub(super) fn release(&mut self, at: usize, len: usize) {
        let i = self.free.partition_point(|r| r.start < at);
        self.free.insert(i, at..at + len);
        if i + 1 < self.free.len() && self.free[i].end == self.free[i + 1].start {
            self.free[i].end = self.free.remove(i + 1).end;
        }
        if i > 0 && self.free[i - 1].end == self.free[i].start {
            self.free[i - 1].end = self.free.remove(i).end;
        }
        self.used -= len;
    }
}

/// Where and when a piece was staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staged {
    /// The round it was staged in.
    pub round: usize,
    /// Its byte offset in its rank's staging.
    pub offset: usize,
}
