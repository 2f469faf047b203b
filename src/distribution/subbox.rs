//! A box on the axes one side gives a reshape group, as a set of the group's digits
//! (C-order flat indices over those axes): counting below a digit, the k-th member,
//! its maximal runs, and intersections with a box on the other side's axes. Every
//! operation is O(axes of the group); counting what two boxes share is O(axes) when
//! either is one run, and O(runs of the box with fewer runs within the other's span
//! · axes) otherwise; their shared runs come lazily, O(axes) each, in O(1) memory.

use std::ops::Range;

use crate::distribution::layout::MAX_DIMS;
use crate::distribution::runs::Run;

/// A non-empty box on some consecutive axes of one shape.
#[derive(Clone, Copy, Debug)]
pub struct SubBox<'a> {
    dims: &'a [u64],
    offsets: &'a [u64],
    extents: &'a [u64],
    len: u64,
    /// Members per maximal run.
    run_len: u64,
}

impl<'a> SubBox<'a> {
    /// The box `offsets`/`extents` on axes of extents `dims`, or `None` when empty.
    pub fn new(dims: &'a [u64], offsets: &'a [u64], extents: &'a [u64]) -> Option<SubBox<'a>> {
        if extents.contains(&0) {
            return None;
        }
        let len = extents.iter().product();
        // The runs span the last axis the box does not cover fully and every axis after.
        let run_len = match (0..dims.len()).rev().find(|&i| extents[i] < dims[i]) {
            None => len,
            Some(p) => extents[p] * dims[p + 1..].iter().product::<u64>(),
        };
        Some(SubBox {
            dims,
            offsets,
            extents,
            len,
            run_len,
        })
    }

    /// Number of members.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Number of maximal runs.
    pub fn run_count(&self) -> u64 {
        self.len / self.run_len
    }

    /// The members' smallest and largest digits plus one: `[first, last + 1)`.
    pub fn span(&self) -> (u64, u64) {
        (self.select(0), self.select(self.len - 1) + 1)
    }

    /// The `k`-th member (0-based, increasing).
    pub fn select(&self, k: u64) -> u64 {
        let (mut rest, mut digit, mut weight) = (k, 0, 1);
        for i in (0..self.dims.len()).rev() {
            digit += (self.offsets[i] + rest % self.extents[i]) * weight;
            rest /= self.extents[i];
            weight *= self.dims[i];
        }
        digit
    }

    /// Number of members below the digit `x` (C order: the box's local offset of `x`
    /// when `x` is a member).
    pub fn below(&self, x: u64) -> u64 {
        let mut digits = [0u64; MAX_DIMS];
        let n = self.dims.len();
        let mut rest = x;
        for i in (0..n).rev() {
            digits[i] = rest % self.dims[i];
            rest /= self.dims[i];
        }
        if rest > 0 {
            return self.len;
        }
        let (mut count, mut inner) = (0, self.len);
        let axes = digits.iter().zip(self.offsets).zip(self.extents);
        for ((&c, &lo), &e) in axes {
            inner /= e;
            if c < lo {
                return count;
            }
            if c >= lo + e {
                return count + e * inner;
            }
            count += (c - lo) * inner;
        }
        count
    }

    /// Maximal run `i` of the box (`i < run_count()`).
    pub fn run(&self, i: u64) -> Run {
        Run {
            global: self.select(i * self.run_len),
            len: self.run_len,
        }
    }

    /// The runs of the box that meet the digits `[start, end)`.
    fn runs_meeting(&self, start: u64, end: u64) -> Range<u64> {
        self.below(start) / self.run_len..self.below(end).div_ceil(self.run_len)
    }
}

/// Number of digits two boxes on the same group (possibly different axes) share.
pub fn shared_count(a: &SubBox, b: &SubBox) -> u64 {
    let (few, many) = by_run_count(a, b);
    let (lo, hi) = many.span();
    few.runs_meeting(lo, hi)
        .map(|i| {
            let r = few.run(i);
            many.below(r.global + r.len) - many.below(r.global)
        })
        .sum()
}

fn by_run_count<'s, 'a>(a: &'s SubBox<'a>, b: &'s SubBox<'a>) -> (&'s SubBox<'a>, &'s SubBox<'a>) {
    if a.run_count() <= b.run_count() {
        (a, b)
    } else {
        (b, a)
    }
}

/// A position in the maximal runs two boxes on one group share, stepped lazily in
/// one direction with O(1) memory. It holds indices only: every call takes the same
/// two boxes. The runs of the box with fewer runs that meet the other's span are
/// walked, and within each the other box's members are located by counting, so a
/// full pass costs O((those runs + shared runs) · axes).
#[derive(Clone, Debug)]
pub struct SharedCursor {
    /// Runs of the box with fewer runs meeting the other's span.
    few_runs: Range<u64>,
    /// Next run of `few_runs` to open (one past it when descending).
    next_few: u64,
    /// Members `[k, stop)` of the other box in the open run, still to yield.
    k: u64,
    stop: u64,
    descending: bool,
}

impl SharedCursor {
    /// Before the first shared run of `a` and `b` (the last when `descending`).
    pub fn new(a: &SubBox, b: &SubBox, descending: bool) -> SharedCursor {
        let (few, many) = by_run_count(a, b);
        let (lo, hi) = many.span();
        let few_runs = few.runs_meeting(lo, hi);
        let next_few = if descending {
            few_runs.end
        } else {
            few_runs.start
        };
        SharedCursor {
            few_runs,
            next_few,
            k: 0,
            stop: 0,
            descending,
        }
    }

    /// Back before the first shared run (the last when descending).
    pub fn reset(&mut self) {
        self.next_few = if self.descending {
            self.few_runs.end
        } else {
            self.few_runs.start
        };
        (self.k, self.stop) = (0, 0);
    }

    /// The next shared run, or `None` after the last.
    pub fn next(&mut self, a: &SubBox, b: &SubBox) -> Option<Run> {
        let (few, many) = by_run_count(a, b);
        while self.k >= self.stop {
            let r = if self.descending {
                if self.next_few == self.few_runs.start {
                    return None;
                }
                self.next_few -= 1;
                few.run(self.next_few)
            } else {
                if self.next_few == self.few_runs.end {
                    return None;
                }
                self.next_few += 1;
                few.run(self.next_few - 1)
            };
            (self.k, self.stop) = (many.below(r.global), many.below(r.global + r.len));
        }
        let (start, end) = if self.descending {
            let end = self.stop;
            let start = ((end - 1) / many.run_len * many.run_len).max(self.k);
            self.stop = start;
            (start, end)
        } else {
            let end = ((self.k / many.run_len + 1) * many.run_len).min(self.stop);
            let start = self.k;
            self.k = end;
            (start, end)
        };
        Some(Run {
            global: many.select(start),
            len: end - start,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every digit of a box, by enumeration of its coordinates.
    pub fn members(dims: &[u64], offsets: &[u64], extents: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64];
        for i in 0..dims.len() {
            out = out
                .iter()
                .flat_map(|&d| (offsets[i]..offsets[i] + extents[i]).map(move |c| d * dims[i] + c))
                .collect();
        }
        if extents.contains(&0) {
            Vec::new()
        } else {
            out
        }
    }

    /// Runs of consecutive values of a sorted list.
    pub fn runs_of(values: &[u64]) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for &v in values {
            match runs.last_mut() {
                Some(r) if r.global + r.len == v => r.len += 1,
                _ => runs.push(Run { global: v, len: 1 }),
            }
        }
        runs
    }

    /// A small deterministic generator (the unit tests need no crate).
    pub struct Lcg(pub u64);
    impl Lcg {
        /// A value in `[0, n)`.
        pub fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n.max(1)
        }
        /// A random box on `dims`.
        pub fn boxed(&mut self, dims: &[u64]) -> (Vec<u64>, Vec<u64>) {
            dims.iter()
                .map(|&d| {
                    let o = self.below(d + 1);
                    let e = if self.below(4) == 0 {
                        d - o
                    } else {
                        self.below(d - o + 1)
                    };
                    if self.below(3) == 0 { (0, d) } else { (o, e) }
                })
                .unzip()
        }
    }

    #[test]
    fn box_operations_match_enumeration() {
        let mut rng = Lcg(7);
        let shapes: [&[u64]; 6] = [
            &[6],
            &[2, 3],
            &[4, 1, 3],
            &[3, 4, 2],
            &[1, 1],
            &[5, 2, 2, 2],
        ];
        for dims in shapes {
            let n: u64 = dims.iter().product();
            for _ in 0..300 {
                let (o, e) = rng.boxed(dims);
                let want = members(dims, &o, &e);
                let Some(b) = SubBox::new(dims, &o, &e) else {
                    assert!(want.is_empty());
                    continue;
                };
                assert_eq!(b.len(), want.len() as u64);
                for (k, &m) in want.iter().enumerate() {
                    assert_eq!(b.select(k as u64), m);
                }
                for x in 0..=n + 1 {
                    let below = want.iter().filter(|&&m| m < x).count() as u64;
                    assert_eq!(b.below(x), below, "{dims:?} {o:?} {e:?} x={x}");
                }
                let runs: Vec<Run> = (0..b.run_count()).map(|i| b.run(i)).collect();
                assert_eq!(runs, runs_of(&want));
                assert_eq!(b.span(), (want[0], want[want.len() - 1] + 1));
            }
        }
    }

    #[test]
    fn intersections_across_factorizations_match_enumeration() {
        let mut rng = Lcg(11);
        let pairs: [(&[u64], &[u64]); 5] = [
            (&[24], &[4, 6]),
            (&[6, 4], &[4, 6]),
            (&[2, 3, 4], &[4, 3, 2]),
            (&[12, 2], &[2, 12]),
            (&[1, 24], &[2, 1, 12]),
        ];
        for (da, db) in pairs {
            for _ in 0..400 {
                let (oa, ea) = rng.boxed(da);
                let (ob, eb) = rng.boxed(db);
                let (Some(a), Some(b)) = (SubBox::new(da, &oa, &ea), SubBox::new(db, &ob, &eb))
                else {
                    continue;
                };
                let mb = members(db, &ob, &eb);
                let want: Vec<u64> = members(da, &oa, &ea)
                    .into_iter()
                    .filter(|m| mb.contains(m))
                    .collect();
                assert_eq!(shared_count(&a, &b), want.len() as u64);
                assert_eq!(shared_count(&b, &a), want.len() as u64);
                let ctx = format!("{da:?}{oa:?}{ea:?} {db:?}{ob:?}{eb:?}");
                let mut up = SharedCursor::new(&a, &b, false);
                assert_eq!(drain(&mut up, &a, &b), runs_of(&want), "{ctx}");
                up.reset();
                assert_eq!(drain(&mut up, &a, &b), runs_of(&want), "{ctx}");
                let mut down = drain(&mut SharedCursor::new(&b, &a, true), &b, &a);
                down.reverse();
                assert_eq!(down, runs_of(&want), "{ctx}");
            }
        }
    }

    fn drain(cursor: &mut SharedCursor, a: &SubBox, b: &SubBox) -> Vec<Run> {
        std::iter::from_fn(|| cursor.next(a, b)).collect()
    }
}
