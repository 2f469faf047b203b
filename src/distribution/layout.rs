//! Distribution maths: balanced slabs, and the block patterns that say which global
//! C-order flat indices a rank holds. Pure arithmetic, no MPI.

use std::ops::Range;

/// The number of elements of `shape`, `None` if it overflows. Any 0 extent makes it
/// 0, whatever the other extents multiply to.
pub fn checked_product(shape: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n))
}

/// One rank's rows along a split axis: `len` rows from global row `offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Slab {
    /// The global index of the first row.
    pub offset: u64,
    /// How many rows.
    pub len: u64,
}

impl Slab {
    /// One past the last row.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Rank `rank`'s slab when `extent` rows are balanced over `nranks` ranks (Heat's
/// formula: `n/p + (r < n%p)` rows from `r*(n/p) + min(r, n%p)`).
pub fn balanced_slab(extent: u64, nranks: u64, rank: u64) -> Slab {
    let base = extent / nranks;
    let rem = extent % nranks;
    Slab {
        offset: rank * base + rank.min(rem),
        len: base + u64::from(rank < rem),
    }
}

/// The elements one rank holds, as global C-order flat indices: `count` blocks of
/// `block_len` elements, block `o` starting at `start + o * stride`. The rank stores
/// the blocks back to back in that order, so local order is global order.
///
/// Patterns are kept normalized: an empty pattern has `count == 0`, and blocks that
/// touch are merged into one, so distinct blocks are always separated by a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// Global index of the first element of block 0.
    pub start: u64,
    /// Elements per block (> 0 unless the pattern is empty).
    pub block_len: u64,
    /// Distance between block starts (> 0).
    pub stride: u64,
    /// Number of blocks.
    pub count: u64,
}

impl Pattern {
    /// The pattern that holds nothing.
    pub(crate) const EMPTY: Pattern = Pattern {
        start: 0,
        block_len: 0,
        stride: 1,
        count: 0,
    };

    /// One contiguous run of `len` elements from `start`.
    pub fn contiguous(start: u64, len: u64) -> Pattern {
        Pattern::blocks(start, len, len, 1)
    }

    /// The rows `[offset, offset + len)` of axis `extent` of an array viewed as
    /// `(outer, extent, inner)`.
    pub fn slab(outer: u64, extent: u64, inner: u64, rows: Slab) -> Pattern {
        let Slab { offset, len } = rows;
        // Empty before multiplying: the extents of an empty array need not multiply
        // within 64 bits.
        if outer == 0 || inner == 0 || len == 0 {
            return Pattern::EMPTY;
        }
        Pattern::blocks(offset * inner, len * inner, extent * inner, outer)
    }

    /// `count` blocks of `block_len` from `start`, `stride` apart, normalized.
    pub fn blocks(start: u64, block_len: u64, stride: u64, count: u64) -> Pattern {
        if block_len == 0 || count == 0 {
            Pattern::EMPTY
        } else if count == 1 || block_len == stride {
            let len = block_len * count;
            Pattern {
                start,
                block_len: len,
                stride: len,
                count: 1,
            }
        } else {
            Pattern {
                start,
                block_len,
                stride,
                count,
            }
        }
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.block_len * self.count
    }

    /// True when the pattern holds no element.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Global range `[start, end)` of block `o`.
    pub fn block(&self, o: u64) -> Range<u64> {
        let s = self.start + o * self.stride;
        s..s + self.block_len
    }

    /// One past the last element (the start for an empty pattern).
    pub fn end(&self) -> u64 {
        if self.is_empty() {
            self.start
        } else {
            self.block(self.count - 1).end
        }
    }

    /// Number of the pattern's elements whose global index is below `g`.
    pub fn elements_below(&self, g: u64) -> u64 {
        if self.is_empty() || g <= self.start {
            return 0;
        }
        let t = g - self.start;
        let o = t / self.stride;
        if o >= self.count {
            self.len()
        } else {
            o * self.block_len + (t - o * self.stride).min(self.block_len)
        }
    }

    /// Local position of global index `g`, which must belong to the pattern.
    pub fn local_offset(&self, g: u64) -> u64 {
        self.elements_below(g)
    }

    /// Index of the first block that ends after global index `g`.
    pub fn first_block_ending_after(&self, g: u64) -> u64 {
        if g < self.start + self.block_len {
            0
        } else {
            ((g - self.start - self.block_len) / self.stride + 1).min(self.count)
        }
    }

    /// Number of blocks that start before global index `g`.
    pub fn blocks_starting_before(&self, g: u64) -> u64 {
        if self.is_empty() || g <= self.start {
            0
        } else {
            ((g - 1 - self.start) / self.stride + 1).min(self.count)
        }
    }

    /// The blocks that overlap the global range `[lo, hi)`.
    pub fn blocks_overlapping(&self, lo: u64, hi: u64) -> Range<u64> {
        if lo >= hi {
            return 0..0;
        }
        let first = self.first_block_ending_after(lo);
        first..self.blocks_starting_before(hi).max(first)
    }
}

/// How one side (input or output) of a reshape is spread over all ranks: either
/// replicated, or split along one axis of the array viewed as `(outer, extent, inner)`
/// with rank `r` holding rows `[offsets[r], offsets[r+1])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Product of the extents before the split axis.
    pub outer: u64,
    /// Extent of the split axis.
    pub extent: u64,
    /// Product of the extents after the split axis.
    pub inner: u64,
    /// Row offsets per rank plus the final end (`nranks + 1` entries); empty when replicated.
    pub offsets: Vec<u64>,
}

impl Layout {
    /// Every rank holds the whole array of `total` elements.
    pub fn replicated(total: u64) -> Layout {
        Layout {
            outer: 1,
            extent: 1,
            inner: total,
            offsets: Vec::new(),
        }
    }

    /// Split along `axis` of `shape`, rank `r` holding rows
    /// `[offsets[r], offsets[r + 1])` (`offsets` has one entry more than ranks).
    pub fn from_offsets(shape: &[u64], axis: usize, offsets: Vec<u64>) -> Layout {
        // Only an array with a 0 extent (it holds nothing) can have extents that do
        // not multiply within 64 bits; its blocks are empty either way.
        let product = |s: &[u64]| checked_product(s).unwrap_or(0);
        Layout {
            outer: product(&shape[..axis]),
            extent: shape[axis],
            inner: product(&shape[axis + 1..]),
            offsets,
        }
    }

    /// True when every rank holds the whole array.
    pub fn is_replicated(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The rows of `rank`, or `None` when replicated.
    pub fn rows(&self, rank: usize) -> Option<Slab> {
        (!self.is_replicated()).then(|| Slab {
            offset: self.offsets[rank],
            len: self.offsets[rank + 1] - self.offsets[rank],
        })
    }

    /// The global elements `rank` holds.
    pub fn pattern(&self, rank: usize) -> Pattern {
        match self.rows(rank) {
            None => Pattern::contiguous(0, self.outer * self.extent * self.inner),
            Some(rows) => Pattern::slab(self.outer, self.extent, self.inner, rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(p: &Pattern) -> Vec<u64> {
        (0..p.count).flat_map(|o| p.block(o)).collect()
    }

    #[test]
    fn balanced_slabs_tile_the_extent() {
        for n in 0..40u64 {
            for p in 1..9u64 {
                let mut next = 0;
                for r in 0..p {
                    let Slab { offset, len } = balanced_slab(n, p, r);
                    assert_eq!(offset, next);
                    assert!(len == n / p || len == n / p + 1);
                    next += len;
                }
                assert_eq!(next, n);
            }
        }
        let slab = |offset, len| Slab { offset, len };
        assert_eq!(balanced_slab(10, 4, 0), slab(0, 3));
        assert_eq!(balanced_slab(10, 4, 1), slab(3, 3));
        assert_eq!(balanced_slab(10, 4, 2), slab(6, 2));
        assert_eq!(balanced_slab(10, 4, 3), slab(8, 2));
    }

    #[test]
    fn slab_pattern_matches_c_order_enumeration() {
        let (outer, extent, inner) = (3u64, 5u64, 4u64);
        for off in 0..=extent {
            for len in 0..=extent - off {
                let p = Pattern::slab(outer, extent, inner, Slab { offset: off, len });
                let mut want = Vec::new();
                for o in 0..outer {
                    for row in off..off + len {
                        for i in 0..inner {
                            want.push((o * extent + row) * inner + i);
                        }
                    }
                }
                assert_eq!(members(&p), want);
                for g in 0..outer * extent * inner + 2 {
                    let below = want.iter().filter(|&&x| x < g).count() as u64;
                    assert_eq!(p.elements_below(g), below, "{p:?} g={g}");
                }
                for (i, &g) in want.iter().enumerate() {
                    assert_eq!(p.local_offset(g), i as u64);
                }
            }
        }
    }

    #[test]
    fn blocks_overlapping_is_exact() {
        let p = Pattern::blocks(3, 2, 5, 4); // [3,5) [8,10) [13,15) [18,20)
        for lo in 0..25 {
            for hi in lo..25 {
                let want: Vec<u64> = (0..4)
                    .filter(|&o| lo < hi && p.block(o).start < hi && p.block(o).end > lo)
                    .collect();
                let got: Vec<u64> = p.blocks_overlapping(lo, hi).collect();
                assert_eq!(got, want, "lo={lo} hi={hi}");
            }
        }
    }
}
