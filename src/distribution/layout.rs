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

/// Length and offset of rank `rank`'s slab when `extent` rows are balanced over
/// `nranks` ranks (Heat's formula: `n/p + (r < n%p)` rows at `r*(n/p) + min(r, n%p)`).
pub fn balanced_slab(extent: u64, nranks: u64, rank: u64) -> (u64, u64) {
    let base = extent / nranks;
    let rem = extent % nranks;
    (base + u64::from(rank < rem), rank * base + rank.min(rem))
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
                    let (len, off) = balanced_slab(n, p, r);
                    assert_eq!(off, next);
                    assert!(len == n / p || len == n / p + 1);
                    next += len;
                }
                assert_eq!(next, n);
            }
        }
        assert_eq!(balanced_slab(10, 4, 0), (3, 0));
        assert_eq!(balanced_slab(10, 4, 1), (3, 3));
        assert_eq!(balanced_slab(10, 4, 2), (2, 6));
        assert_eq!(balanced_slab(10, 4, 3), (2, 8));
    }
}
