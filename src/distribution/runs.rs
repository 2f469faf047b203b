//! Intersections of block patterns: how many elements two ranks share and the
//! maximal runs they share in global order, computed analytically from the
//! patterns, never per element.

use std::ops::Range;

use crate::distribution::layout::Pattern;

/// A maximal run of consecutive global indices shared by two patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Global flat index of the first element.
    pub global: u64,
    /// Number of elements.
    pub len: u64,
}

/// Orders two patterns as (fewer blocks, more blocks): iterating the blocks of the
/// first and locating the second's by arithmetic costs O(min(blocks) + runs).
fn by_block_count(a: Pattern, b: Pattern) -> (Pattern, Pattern) {
    if a.count <= b.count { (a, b) } else { (b, a) }
}

/// Number of elements two patterns share.
pub fn shared_elements(a: &Pattern, b: &Pattern) -> u64 {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    if same_period(a, b) {
        return a.count * overlap(a.block(0), b.block(0));
    }
    let (few, many) = by_block_count(*a, *b);
    let shared_in = |o: u64| {
        let block = few.block(o);
        many.elements_below(block.end) - many.elements_below(block.start)
    };
    let blocks = few.blocks_overlapping(many.start, many.end());
    let Some((periodic, period)) = periodic_blocks(&few, &many, blocks.clone()) else {
        return blocks.map(shared_in).sum();
    };
    let periods = (periodic.end - periodic.start) / period;
    let rest = periodic.start + periods * period;
    let one_period: u64 = (periodic.start..periodic.start + period)
        .map(shared_in)
        .sum();
    (blocks.start..periodic.start).map(shared_in).sum::<u64>()
        + periods * one_period
        + (rest..blocks.end).map(shared_in).sum::<u64>()
}

/// The blocks of `few` over which what they share with `many` repeats every
/// `period` blocks, when that saves work. Moving `period` blocks along `few` moves
/// by a whole number `m` of strides of `many`, and `many.elements_below(x + m*stride)`
/// is `elements_below(x) + m*block_len` while `x` stays in its first `count - m`
/// periods; so blocks starting after `many.start` and ending (with their shifted copy)
/// within `many` share the same amount as the block `period` before them.
fn periodic_blocks(few: &Pattern, many: &Pattern, blocks: Range<u64>) -> Option<(Range<u64>, u64)> {
    let period = many.stride / gcd(few.stride, many.stride);
    let m = period.checked_mul(few.stride)? / many.stride;
    if many.count <= m {
        return None;
    }
    let first = blocks
        .start
        .max(many.start.saturating_sub(few.start).div_ceil(few.stride));
    let limit = many.start + (many.count - m) * many.stride;
    let last = limit
        .checked_sub(few.start + few.block_len)
        .map_or(0, |room| (room / few.stride + 1).min(few.count));
    let end = (last + period).min(blocks.end);
    (first < last && end >= first + 2 * period).then_some((first..end, period))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// True when the patterns repeat with the same period and a block of one can only
/// meet the block of the same index in the other (slabs of one layout family).
fn same_period(a: &Pattern, b: &Pattern) -> bool {
    a.count > 1
        && a.count == b.count
        && a.stride == b.stride
        && a.start + a.block_len <= b.start + b.stride
        && b.start + b.block_len <= a.start + a.stride
}

fn overlap(a: std::ops::Range<u64>, b: std::ops::Range<u64>) -> u64 {
    a.end.min(b.end).saturating_sub(a.start.max(b.start))
}

/// Iterator over the maximal runs shared by two patterns, in increasing global order.
#[derive(Clone, Debug)]
pub struct SharedRuns {
    few: Pattern,
    many: Pattern,
    block: u64,
    end_block: u64,
    other: u64,
}

impl SharedRuns {
    /// The runs shared by `a` and `b`.
    pub fn new(a: &Pattern, b: &Pattern) -> SharedRuns {
        let (few, many) = by_block_count(*a, *b);
        let blocks = if many.is_empty() {
            0..0
        } else {
            few.blocks_overlapping(many.start, many.end())
        };
        SharedRuns {
            few,
            many,
            block: blocks.start,
            end_block: blocks.end,
            other: 0,
        }
    }
}

impl Iterator for SharedRuns {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        while self.block < self.end_block {
            let outer = self.few.block(self.block);
            self.other = self
                .other
                .max(self.many.first_block_ending_after(outer.start));
            if self.other < self.many.count {
                let inner = self.many.block(self.other);
                if inner.start < outer.end {
                    let start = outer.start.max(inner.start);
                    let end = outer.end.min(inner.end);
                    if inner.end <= outer.end {
                        self.other += 1;
                    } else {
                        self.block += 1;
                    }
                    return Some(Run {
                        global: start,
                        len: end - start,
                    });
                }
            }
            self.block += 1;
        }
        None
    }
}

impl SharedRuns {
    /// The same runs in decreasing global order.
    pub fn descending(self) -> SharedRunsDescending {
        let other = self.many.count;
        SharedRunsDescending { runs: self, other }
    }
}

/// Iterator over the maximal runs shared by two patterns, in decreasing global order
/// (see [`SharedRuns::descending`]).
#[derive(Clone, Debug)]
pub struct SharedRunsDescending {
    runs: SharedRuns,
    /// One past the index of the inner block to look at next.
    other: u64,
}

impl Iterator for SharedRunsDescending {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        let r = &mut self.runs;
        while r.end_block > r.block {
            let outer = r.few.block(r.end_block - 1);
            self.other = self.other.min(r.many.blocks_starting_before(outer.end));
            if self.other > 0 {
                let inner = r.many.block(self.other - 1);
                if inner.end > outer.start {
                    let start = outer.start.max(inner.start);
                    let end = outer.end.min(inner.end);
                    if inner.start >= outer.start {
                        self.other -= 1;
                    } else {
                        r.end_block -= 1;
                    }
                    return Some(Run {
                        global: start,
                        len: end - start,
                    });
                }
            }
            r.end_block -= 1;
        }
        None
    }
}

/// Patterns for the property tests of this module and of [`crate::planning::messages`].
#[cfg(test)]
pub(crate) mod test_patterns {
    use proptest::prelude::*;

    use crate::distribution::layout::Pattern;

    /// The global indices of `p`, one by one.
    pub fn members(p: &Pattern) -> Vec<u64> {
        (0..p.count).flat_map(|o| p.block(o)).collect()
    }

    /// Small random patterns, empty ones included.
    pub fn pattern() -> impl Strategy<Value = Pattern> {
        (0u64..12, 0u64..6, 1u64..9, 0u64..40)
            .prop_map(|(start, len, gap, count)| Pattern::blocks(start, len, len + gap, count))
    }
}

#[cfg(test)]
mod tests {
    use super::test_patterns::{members, pattern};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn periodic_counting_matches_brute_force() {
        let cases = [
            (Pattern::blocks(0, 3, 10, 50), Pattern::blocks(2, 4, 5, 100)),
            (Pattern::blocks(7, 2, 6, 40), Pattern::blocks(1, 3, 4, 70)),
            (
                Pattern::blocks(100, 1000, 100_000, 100),
                Pattern::blocks(0, 50_000, 1_000_000, 10),
            ),
        ];
        for (a, b) in cases {
            let (few, many) = by_block_count(a, b);
            let blocks = few.blocks_overlapping(many.start, many.end());
            assert!(
                periodic_blocks(&few, &many, blocks).is_some(),
                "{a:?} {b:?}"
            );
            let bset: std::collections::HashSet<u64> = members(&b).into_iter().collect();
            let want = members(&a).iter().filter(|g| bset.contains(g)).count() as u64;
            assert_eq!(shared_elements(&a, &b), want);
            assert_eq!(shared_elements(&b, &a), want);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn shared_runs_are_the_exact_maximal_intersection(a in pattern(), b in pattern()) {
            let bset = members(&b);
            let want: Vec<u64> = members(&a).into_iter().filter(|g| bset.contains(g)).collect();
            let runs: Vec<Run> = SharedRuns::new(&a, &b).collect();
            let got: Vec<u64> = runs.iter().flat_map(|r| r.global..r.global + r.len).collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(shared_elements(&a, &b), want.len() as u64);
            let mut reversed: Vec<Run> = SharedRuns::new(&a, &b).descending().collect();
            reversed.reverse();
            prop_assert_eq!(&reversed, &runs);
            for w in runs.windows(2) {
                prop_assert!(w[0].global + w[0].len < w[1].global, "runs not maximal: {:?}", w);
            }
        }
    }
}
