//! The shape arithmetic every layout shares: the most axes, the element count of a
//! shape, and balanced slabs (Heat's formula).

use crate::core::abi::DR_MAX_DIMS;

/// Most dimensions a shape may have (`DR_MAX_DIMS` of the C ABI).
pub const MAX_DIMS: usize = DR_MAX_DIMS as usize;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_slabs_tile_the_extent() {
        for n in 0..40u64 {
            for p in 1..9u64 {
                let mut next = 0;
                for r in 0..p {
                    let slab = balanced_slab(n, p, r);
                    assert_eq!(slab.offset, next);
                    assert!(slab.len == n / p || slab.len == n / p + 1);
                    next = slab.end();
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
}
