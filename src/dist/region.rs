//! The elements of one rank's box as a set of global flat indices, comparable with a
//! box of the other side of a reshape: the interface the planner uses on today's
//! [`crate::layout::Pattern`] (`len`, `local_offset`, shared counts and shared runs),
//! for any grid layout and any reshape.
//!
//! A box is a Cartesian product over the reshape's groups of its restrictions to each
//! group's axes ([`Groups`]), so counts multiply over groups, and the shared runs are
//! the product of the groups' shared runs, with the trailing groups both boxes cover
//! fully merged into longer runs.

use std::ops::Range;
use std::sync::Arc;

use crate::args::MAX_DIMS;
use crate::dist::grid::GridBox;
use crate::dist::groups::{Groups, Side};
use crate::dist::subbox::{SubBox, shared_count, shared_runs};
use crate::runs::Run;

/// The elements of a box of one side's shape, viewed through the reshape's groups
/// (shared, so a region borrows nothing and can live in a message stream).
#[derive(Clone, Debug)]
pub struct Region {
    groups: Arc<Groups>,
    side: Side,
    offsets: Vec<u64>,
    extents: Vec<u64>,
    len: u64,
}

impl Region {
    /// The elements of `b`, a box of the shape on `side` of `groups`. O(ndims).
    ///
    /// Panics when `b` does not have one entry per axis of that shape.
    pub fn new(groups: &Arc<Groups>, side: Side, b: &GridBox) -> Region {
        assert_eq!(
            b.offsets.len(),
            groups.shape(side).len(),
            "box and shape differ in axes"
        );
        Region {
            groups: Arc::clone(groups),
            side,
            offsets: b.offsets.clone(),
            extents: b.extents.clone(),
            len: b.len(),
        }
    }

    /// Number of elements. O(1).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the region holds no element. O(1).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The side whose shape the box is a box of.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Position of global index `g` (a member) in the box's C-order buffer. O(ndims).
    pub fn local_offset(&self, g: u64) -> u64 {
        let shape = self.groups.shape(self.side);
        let (mut rest, mut local, mut weight) = (g, 0, 1);
        for i in (0..shape.len()).rev() {
            local += (rest % shape[i] - self.offsets[i]) * weight;
            rest /= shape[i];
            weight *= self.extents[i];
        }
        local
    }

    /// The restriction of the (non-empty) box to the axes of group `k`.
    fn part(&self, k: usize) -> SubBox<'_> {
        let axes = self.groups.groups()[k].axes(self.side);
        let dims = &self.groups.shape(self.side)[axes.clone()];
        SubBox::new(dims, &self.offsets[axes.clone()], &self.extents[axes])
            .expect("a non-empty box is non-empty on every axis")
    }

    /// For each axis of the shape on `side`, a range holding the coordinate of every
    /// element of the region (exact on the region's own side and on groups with one
    /// axis per side), or `None` when the region is empty. O(ndims).
    pub fn bounds_in(&self, side: Side) -> Option<Vec<Range<u64>>> {
        if self.is_empty() {
            return None;
        }
        if side == self.side {
            let ends = self.offsets.iter().zip(&self.extents);
            return Some(ends.map(|(&o, &e)| o..o + e).collect());
        }
        let shape = self.groups.shape(side);
        let mut bounds = vec![0..1; shape.len()];
        for (k, group) in self.groups.groups().iter().enumerate() {
            let axes = group.axes(side);
            let (lo, hi) = self.part(k).span();
            digit_bounds(&shape[axes.clone()], lo, hi - 1, &mut bounds[axes]);
        }
        Some(bounds)
    }
}

/// Per axis of `dims`, the range of coordinates of the digits `[first, last]`: exact
/// while the axes before agree, everything after the first axis where they differ.
fn digit_bounds(dims: &[u64], first: u64, last: u64, bounds: &mut [Range<u64>]) {
    let (mut a, mut b) = ([0u64; MAX_DIMS], [0u64; MAX_DIMS]);
    let (mut x, mut y) = (first, last);
    for i in (0..dims.len()).rev() {
        (a[i], b[i]) = (x % dims[i], y % dims[i]);
        (x, y) = (x / dims[i], y / dims[i]);
    }
    let mut agree = true;
    for i in 0..dims.len() {
        bounds[i] = if agree { a[i]..b[i] + 1 } else { 0..dims[i] };
        agree &= a[i] == b[i];
    }
}

fn same_groups(a: &Region, b: &Region) -> bool {
    Arc::ptr_eq(&a.groups, &b.groups) || a.groups == b.groups
}

/// Number of elements two regions of the same reshape share: the product over groups
/// of the groups' shared counts. O(ndims) when in every group one of the two boxes is
/// a single run: always in 1↔1 groups, splits and merges (the side with one axis holds
/// an interval), and in many↔many groups when a box covers all but its first axis of
/// the group; otherwise O(runs of the box with fewer runs · axes) for that group.
pub fn shared_elements(a: &Region, b: &Region) -> u64 {
    debug_assert!(same_groups(a, b), "regions of different reshapes");
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    let mut shared = 1;
    for k in 0..a.groups.groups().len() {
        shared *= shared_count(&a.part(k), &b.part(k));
        if shared == 0 {
            break;
        }
    }
    shared
}

/// One group's shared digits, stepped through one digit at a time.
#[derive(Clone, Debug)]
struct Digit {
    runs: Vec<Run>,
    weight: u64,
    run: usize,
    digit: u64,
}

impl Digit {
    fn set(&mut self, run: usize, digit: u64, base: &mut u64) {
        *base = *base - self.digit * self.weight + digit * self.weight;
        (self.run, self.digit) = (run, digit);
    }

    fn first(&mut self, base: &mut u64) {
        self.set(0, self.runs[0].global, base);
    }

    fn last(&mut self, base: &mut u64) {
        let r = self.runs[self.runs.len() - 1];
        self.set(self.runs.len() - 1, r.global + r.len - 1, base);
    }

    /// Steps to the next digit; at the end, wraps to the first and returns false.
    fn forward(&mut self, base: &mut u64) -> bool {
        let r = self.runs[self.run];
        if self.digit + 1 < r.global + r.len {
            self.set(self.run, self.digit + 1, base);
        } else if self.run + 1 < self.runs.len() {
            self.set(self.run + 1, self.runs[self.run + 1].global, base);
        } else {
            self.first(base);
            return false;
        }
        true
    }

    /// Steps to the previous digit; at the start, wraps to the last and returns false.
    fn backward(&mut self, base: &mut u64) -> bool {
        let r = self.runs[self.run];
        if self.digit > r.global {
            self.set(self.run, self.digit - 1, base);
        } else if self.run > 0 {
            let p = self.runs[self.run - 1];
            self.set(self.run - 1, p.global + p.len - 1, base);
        } else {
            self.last(base);
            return false;
        }
        true
    }
}

/// Iterator over the maximal runs of global indices two regions share, increasing
/// (or decreasing after [`RegionRuns::descending`]).
///
/// The groups up to the last one not fully shared are an odometer: every group
/// before it steps digit by digit through its shared digits, and that group yields
/// its shared runs scaled by the size of the fully shared groups after it. Runs of
/// consecutive odometer steps never touch: that would need the group's shared digits
/// to hold its first and last digit, and two boxes holding both are full. Setting up costs the groups' shared runs
/// (O(ndims) per group for single-run boxes); each run then costs O(1) amortized.
#[derive(Clone, Debug)]
pub struct RegionRuns {
    prefix: Vec<Digit>,
    last: Vec<Run>,
    last_weight: u64,
    run: usize,
    base: u64,
    count: u64,
    remaining: u64,
    descending: bool,
}

impl RegionRuns {
    /// The runs `a` and `b` share, increasing.
    pub fn new(a: &Region, b: &Region) -> RegionRuns {
        debug_assert!(same_groups(a, b), "regions of different reshapes");
        let mut runs = RegionRuns {
            prefix: Vec::new(),
            last: vec![Run { global: 0, len: 1 }],
            last_weight: a.groups.total(),
            run: 0,
            base: 0,
            count: 0,
            remaining: 0,
            descending: false,
        };
        if a.is_empty() || b.is_empty() {
            return runs;
        }
        let groups = a.groups.groups();
        let full =
            |k: usize| a.part(k).len() == groups[k].size && b.part(k).len() == groups[k].size;
        if let Some(t) = (0..groups.len()).rev().find(|&k| !full(k)) {
            let mut count = 1;
            for k in 0..=t {
                let shared = shared_runs(&a.part(k), &b.part(k));
                if shared.is_empty() {
                    return runs;
                }
                if k < t {
                    count *= shared.iter().map(|r| r.len).sum::<u64>();
                    let weight = a.groups.weight(k);
                    let digit = shared[0].global;
                    runs.base += digit * weight;
                    runs.prefix.push(Digit {
                        runs: shared,
                        weight,
                        run: 0,
                        digit,
                    });
                } else {
                    count *= shared.len() as u64;
                    runs.last = shared;
                }
            }
            runs.last_weight = a.groups.weight(t);
            runs.count = count;
        } else {
            runs.count = 1;
        }
        runs.remaining = runs.count;
        runs
    }

    /// The same runs, decreasing (call before iterating).
    pub fn descending(mut self) -> RegionRuns {
        for d in &mut self.prefix {
            d.last(&mut self.base);
        }
        self.run = self.last.len() - 1;
        self.remaining = self.count;
        self.descending = true;
        self
    }

    fn step(&mut self) {
        let wrapped = if self.descending {
            let wrapped = self.run == 0;
            self.run = if wrapped { self.last.len() } else { self.run } - 1;
            wrapped
        } else {
            self.run += 1;
            let wrapped = self.run == self.last.len();
            if wrapped {
                self.run = 0;
            }
            wrapped
        };
        if !wrapped {
            return;
        }
        for d in self.prefix.iter_mut().rev() {
            let moved = if self.descending {
                d.backward(&mut self.base)
            } else {
                d.forward(&mut self.base)
            };
            if moved {
                break;
            }
        }
    }
}

impl Iterator for RegionRuns {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        if self.remaining == 0 {
            return None;
        }
        let r = self.last[self.run];
        let run = Run {
            global: self.base + r.global * self.last_weight,
            len: r.len * self.last_weight,
        };
        self.remaining -= 1;
        if self.remaining > 0 {
            self.step();
        }
        Some(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::groups::tests::shape_pair;
    use crate::dist::subbox::tests::{Lcg, members, runs_of};

    fn region_box(rng: &mut Lcg, shape: &[u64]) -> GridBox {
        let (offsets, extents) = rng.boxed(shape);
        GridBox { offsets, extents }
    }

    #[test]
    fn regions_match_enumeration_on_random_reshapes() {
        let mut rng = Lcg(3);
        for case in 0..3000 {
            let (input, output) = shape_pair(&mut rng);
            let groups = Arc::new(Groups::new(&input, &output).unwrap());
            let (bi, bo) = (region_box(&mut rng, &input), region_box(&mut rng, &output));
            let other_side = if rng.below(4) == 0 {
                Side::Input
            } else {
                Side::Output
            };
            let bo = if other_side == Side::Input {
                region_box(&mut rng, &input)
            } else {
                bo
            };
            let (a, b) = (
                Region::new(&groups, Side::Input, &bi),
                Region::new(&groups, other_side, &bo),
            );
            let ma = members(&input, &bi.offsets, &bi.extents);
            let mb = members(groups.shape(other_side), &bo.offsets, &bo.extents);
            let ctx = format!("case {case}: {input:?} {bi:?} / {output:?} {bo:?}");
            assert_eq!(a.len(), ma.len() as u64, "{ctx}");
            assert_eq!(b.len(), mb.len() as u64, "{ctx}");
            for (i, &g) in ma.iter().enumerate() {
                assert_eq!(a.local_offset(g), i as u64, "{ctx}");
            }
            for (i, &g) in mb.iter().enumerate() {
                assert_eq!(b.local_offset(g), i as u64, "{ctx}");
            }
            let shared: Vec<u64> = ma
                .iter()
                .copied()
                .filter(|g| mb.binary_search(g).is_ok())
                .collect();
            assert_eq!(shared_elements(&a, &b), shared.len() as u64, "{ctx}");
            assert_eq!(shared_elements(&b, &a), shared.len() as u64, "{ctx}");
            let runs: Vec<Run> = RegionRuns::new(&a, &b).collect();
            assert_eq!(runs, runs_of(&shared), "{ctx}");
            let mut down: Vec<Run> = RegionRuns::new(&b, &a).descending().collect();
            down.reverse();
            assert_eq!(down, runs, "{ctx}");
            check_bounds(&groups, &a, &ma, Side::Output, &output);
            check_bounds(&groups, &b, &mb, Side::Input, &input);
        }
    }

    /// Every member's coordinates lie within the region's bounds on `side`.
    fn check_bounds(groups: &Groups, r: &Region, m: &[u64], side: Side, shape: &[u64]) {
        assert_eq!(groups.shape(side), shape);
        let Some(bounds) = r.bounds_in(side) else {
            assert!(m.is_empty());
            return;
        };
        for &g in m {
            let mut rest = g;
            for i in (0..shape.len()).rev() {
                assert!(
                    bounds[i].contains(&(rest % shape[i])),
                    "{g} outside {bounds:?}"
                );
                rest /= shape[i];
            }
        }
    }
}
