//! The elements of one rank's box as a set of global flat indices, comparable with a
//! box of the other side of a reshape: what the planner asks of a box (`len`,
//! `local_offset`, shared counts and shared runs), for any grid layout and any
//! reshape.
//!
//! A box is a Cartesian product over the reshape's groups of its restrictions to each
//! group's axes ([`Groups`]), so counts multiply over groups, and the shared runs are
//! the product of the groups' shared runs, with the trailing groups both boxes cover
//! fully merged into longer runs.

use std::ops::Range;
use std::sync::Arc;

use crate::distribution::grid::GridBox;
use crate::distribution::groups::{Groups, ReshapeSide};
use crate::distribution::layout::MAX_DIMS;
use crate::distribution::runs::Run;
use crate::distribution::subbox::{SharedCursor, SubBox, shared_count};

/// The elements of a box of one side's shape, viewed through the reshape's groups
/// (shared, so a region borrows nothing and can live in a message stream).
#[derive(Clone, Debug)]
pub struct Region {
    groups: Arc<Groups>,
    side: ReshapeSide,
    offsets: Vec<u64>,
    extents: Vec<u64>,
    len: u64,
}

impl Region {
    /// The elements of `b`, a box of the shape on `side` of `groups`. O(ndims).
    ///
    /// Panics when `b` does not have one entry per axis of that shape.
    pub fn new(groups: &Arc<Groups>, side: ReshapeSide, b: GridBox) -> Region {
        assert_eq!(
            b.offsets.len(),
            groups.shape(side).len(),
            "box and shape differ in axes"
        );
        Region {
            groups: Arc::clone(groups),
            side,
            len: b.len(),
            offsets: b.offsets,
            extents: b.extents,
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
    pub fn side(&self) -> ReshapeSide {
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
    pub fn bounds_in(&self, side: ReshapeSide) -> Option<Vec<Range<u64>>> {
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

    /// The coordinates along axis `axis` of the shape on `side` that the region's
    /// elements take, as increasing disjoint ranges, when they are cheap to list: when
    /// `axis` is the only axis of extent > 1 of its group on `side` (then its
    /// coordinates are the group's digits) and the region's restriction to that group
    /// has at most `limit` runs. O(ndims + runs · axes).
    pub fn projection(
        &self,
        side: ReshapeSide,
        axis: usize,
        limit: u64,
    ) -> Option<Vec<Range<u64>>> {
        if self.is_empty() {
            return Some(Vec::new());
        }
        let shape = self.groups.shape(side);
        let groups = self.groups.groups();
        let k = groups.iter().position(|g| g.axes(side).contains(&axis))?;
        if groups[k].axes(side).any(|i| i != axis && shape[i] > 1) {
            return None;
        }
        let part = self.part(k);
        (part.run_count() <= limit).then(|| {
            (0..part.run_count())
                .map(|i| part.run(i))
                .map(|r| r.global..r.global + r.len)
                .collect()
        })
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
/// the group; otherwise O(runs of the box with fewer runs within the other's span ·
/// axes) for that group.
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

/// A group before the last one not fully shared: its shared digits, one at a time.
#[derive(Clone, Debug)]
struct Digit {
    group: usize,
    weight: u64,
    cursor: SharedCursor,
    run: Run,
    digit: u64,
}

impl Digit {
    /// Group `group` at its first shared digit (its last when `descending`), or `None`
    /// when it shares nothing.
    fn open(a: &Region, b: &Region, group: usize, descending: bool) -> Option<Digit> {
        let (pa, pb) = (a.part(group), b.part(group));
        let mut cursor = SharedCursor::new(&pa, &pb, descending);
        let run = cursor.next(&pa, &pb)?;
        Some(Digit {
            group,
            weight: a.groups.weight(group),
            cursor,
            run,
            digit: first_digit(run, descending),
        })
    }

    /// Steps to the next shared digit in the cursor's direction; after the last,
    /// wraps to the first and returns false.
    fn step(&mut self, a: &Region, b: &Region, descending: bool) -> bool {
        let end = self.run.global + self.run.len;
        if descending && self.digit > self.run.global {
            self.digit -= 1;
            return true;
        }
        if !descending && self.digit + 1 < end {
            self.digit += 1;
            return true;
        }
        let (pa, pb) = (a.part(self.group), b.part(self.group));
        let (run, moved) = match self.cursor.next(&pa, &pb) {
            Some(run) => (run, true),
            None => {
                self.cursor.reset();
                let first = self.cursor.next(&pa, &pb);
                (first.expect("the group shares a digit"), false)
            }
        };
        (self.run, self.digit) = (run, first_digit(run, descending));
        moved
    }
}

/// The digit of `run` met first when walking in that direction.
fn first_digit(run: Run, descending: bool) -> u64 {
    if descending {
        run.global + run.len - 1
    } else {
        run.global
    }
}

/// Iterator over the maximal runs of global indices two regions share, increasing
/// (or decreasing after [`RegionRuns::descending`]).
///
/// Let `t` be the last group the two regions do not both cover fully. The groups
/// before `t` are an odometer stepping through their shared digits, and for each of
/// its positions group `t` yields its shared runs, scaled by the size of the (fully
/// shared) groups after it. Runs of consecutive positions never touch: that would
/// need group `t`'s shared digits to hold its first and last digit, and two boxes
/// holding both are full. Lazy, O(ndims) memory; setting up costs one shared run per
/// group, and each run O(axes of group `t`) plus the odometer's amortized carries.
#[derive(Clone, Debug)]
pub struct RegionRuns {
    a: Region,
    b: Region,
    descending: bool,
    prefix: Vec<Digit>,
    /// Group `t` and its position in its shared runs; `None` when every group is
    /// fully shared (one run of the whole array).
    last: Option<(usize, SharedCursor)>,
    /// Weight of group `t`'s digit (the whole array when there is no `t`).
    weight: u64,
    /// The global index of the odometer's position (its digits times their weights).
    base: u64,
    /// The next run of group `t` to yield, in its digits; `None` when done.
    next: Option<Run>,
}

impl RegionRuns {
    /// The runs `a` and `b` share, increasing.
    pub fn new(a: &Region, b: &Region) -> RegionRuns {
        debug_assert!(same_groups(a, b), "regions of different reshapes");
        RegionRuns::start(a.clone(), b.clone(), false)
    }

    /// The same runs, decreasing (starts over).
    pub fn descending(self) -> RegionRuns {
        RegionRuns::start(self.a, self.b, true)
    }

    /// Starts over, in the same direction, reusing what was allocated: a stream that
    /// cuts its runs at every execution allocates nothing after the first.
    pub fn rewind(&mut self) {
        self.prefix.clear();
        (self.last, self.base, self.next) = (None, 0, None);
        self.weight = self.a.groups.total();
        if !self.a.is_empty() && !self.b.is_empty() {
            self.next = self.open();
        }
    }

    /// The region the runs are read from (the first given).
    pub fn source(&self) -> &Region {
        &self.a
    }

    /// The region the runs go to (the second given).
    pub fn target(&self) -> &Region {
        &self.b
    }

    fn start(a: Region, b: Region, descending: bool) -> RegionRuns {
        let mut runs = RegionRuns {
            weight: a.groups.total(),
            a,
            b,
            descending,
            prefix: Vec::new(),
            last: None,
            base: 0,
            next: None,
        };
        if !runs.a.is_empty() && !runs.b.is_empty() {
            runs.next = runs.open();
        }
        runs
    }

    /// Sets up the odometer and returns the first run of group `t`.
    fn open(&mut self) -> Option<Run> {
        let (a, b) = (&self.a, &self.b);
        let groups = a.groups.groups();
        let full =
            |k: usize| a.part(k).len() == groups[k].size && b.part(k).len() == groups[k].size;
        let Some(t) = (0..groups.len()).rev().find(|&k| !full(k)) else {
            return Some(Run { global: 0, len: 1 });
        };
        for k in 0..t {
            let digit = Digit::open(a, b, k, self.descending)?;
            self.base += digit.digit * digit.weight;
            self.prefix.push(digit);
        }
        let (pa, pb) = (a.part(t), b.part(t));
        let mut cursor = SharedCursor::new(&pa, &pb, self.descending);
        let first = cursor.next(&pa, &pb);
        self.weight = a.groups.weight(t);
        self.last = Some((t, cursor));
        first
    }

    /// The run of group `t` after the one just yielded, stepping the odometer when
    /// group `t` has no more.
    fn advance(&mut self) -> Option<Run> {
        let (t, cursor) = self.last.as_mut()?;
        let (pa, pb) = (self.a.part(*t), self.b.part(*t));
        if let Some(run) = cursor.next(&pa, &pb) {
            return Some(run);
        }
        for digit in self.prefix.iter_mut().rev() {
            self.base -= digit.digit * digit.weight;
            let moved = digit.step(&self.a, &self.b, self.descending);
            self.base += digit.digit * digit.weight;
            if moved {
                cursor.reset();
                return cursor.next(&pa, &pb);
            }
        }
        None
    }
}

impl Iterator for RegionRuns {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        let r = self.next?;
        let run = Run {
            global: self.base + r.global * self.weight,
            len: r.len * self.weight,
        };
        self.next = self.advance();
        Some(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::groups::tests::shape_pair;
    use crate::distribution::subbox::tests::{Lcg, members, runs_of};

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
                ReshapeSide::Input
            } else {
                ReshapeSide::Output
            };
            let bo = if other_side == ReshapeSide::Input {
                region_box(&mut rng, &input)
            } else {
                bo
            };
            let (a, b) = (
                Region::new(&groups, ReshapeSide::Input, bi.clone()),
                Region::new(&groups, other_side, bo.clone()),
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
            check_bounds(&groups, &a, &ma, ReshapeSide::Output, &output);
            check_bounds(&groups, &b, &mb, ReshapeSide::Input, &input);
            check_projections(&a, &ma, ReshapeSide::Output, &output);
            check_projections(&a, &ma, ReshapeSide::Input, &input);
            check_projections(&b, &mb, ReshapeSide::Input, &input);
        }
    }

    /// Where the region lists its projection on an axis of `side`, it is exactly the
    /// coordinates its members take there.
    fn check_projections(r: &Region, m: &[u64], side: ReshapeSide, shape: &[u64]) {
        for axis in 0..shape.len() {
            let Some(ranges) = r.projection(side, axis, u64::MAX) else {
                continue;
            };
            let inner: u64 = shape[axis + 1..].iter().product();
            let mut want: Vec<u64> = m.iter().map(|g| g / inner % shape[axis]).collect();
            want.sort_unstable();
            want.dedup();
            let got: Vec<u64> = ranges.into_iter().flatten().collect();
            assert_eq!(got, want, "{r:?} {side:?} axis {axis}");
        }
    }

    /// Every member's coordinates lie within the region's bounds on `side`.
    fn check_bounds(groups: &Groups, r: &Region, m: &[u64], side: ReshapeSide, shape: &[u64]) {
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

/// Regions for the property tests of the modules that cut and place runs
/// (`planning::messages`): boxes of one small shape, read on both sides of the
/// identity reshape, so their members are the boxes' flat indices.
#[cfg(test)]
pub(crate) mod test_regions {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::Region;
    use crate::distribution::grid::GridBox;
    use crate::distribution::groups::{Groups, ReshapeSide};

    /// Two boxes of one shape as an input and an output region, with their members.
    #[derive(Clone, Debug)]
    pub struct RegionPair {
        /// The input region.
        pub a: Region,
        /// The output region.
        pub b: Region,
        /// `a`'s global indices, increasing.
        pub a_members: Vec<u64>,
        /// `b`'s global indices, increasing.
        pub b_members: Vec<u64>,
    }

    /// A shape of up to three axes and two boxes in it, empty boxes included.
    pub fn region_pair() -> impl Strategy<Value = RegionPair> {
        proptest::collection::vec(1u64..8, 1..4).prop_flat_map(|shape| {
            let boxes = (grid_box(&shape), grid_box(&shape));
            (Just(shape), boxes).prop_map(|(shape, (a, b))| {
                let groups = Arc::new(Groups::new(&shape, &shape).expect("one shape"));
                RegionPair {
                    a_members: members(&shape, &a),
                    b_members: members(&shape, &b),
                    a: Region::new(&groups, ReshapeSide::Input, a),
                    b: Region::new(&groups, ReshapeSide::Output, b),
                }
            })
        })
    }

    /// A box of `shape`: one time in four any box, possibly empty, otherwise one
    /// holding the middle index of every axis (so two of them always overlap,
    /// where boxes drawn alike would mostly miss each other).
    fn grid_box(shape: &[u64]) -> impl Strategy<Value = GridBox> + use<> {
        let axes = |wide: bool| -> Vec<_> {
            let axis = move |n: u64| match wide {
                true => (0..=(n - 1) / 2)
                    .prop_flat_map(move |o| (Just(o), n / 2 + 1 - o..=n - o))
                    .boxed(),
                false => (0..=n).prop_flat_map(move |o| (Just(o), 0..=n - o)).boxed(),
            };
            shape.iter().map(|&n| axis(n)).collect()
        };
        prop_oneof![1 => axes(false), 3 => axes(true)].prop_map(|axes| GridBox {
            offsets: axes.iter().map(|a| a.0).collect(),
            extents: axes.iter().map(|a| a.1).collect(),
        })
    }

    /// The flat indices of box `b` of `shape` in C order (so increasing), one by one.
    fn members(shape: &[u64], b: &GridBox) -> Vec<u64> {
        let total: u64 = b.extents.iter().product();
        (0..total)
            .map(|k| {
                let mut rest = k;
                let mut digits = vec![0; shape.len()];
                for a in (0..shape.len()).rev() {
                    digits[a] = rest % b.extents[a];
                    rest /= b.extents[a];
                }
                (0..shape.len()).fold(0, |flat, a| flat * shape[a] + b.offsets[a] + digits[a])
            })
            .collect()
    }
}
