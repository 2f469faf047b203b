//! The oracle of distributions, written with plain loops straight from the
//! definitions, independently of the crate's layout code.

// The oracle spells out `%` on purpose, independent of the library's arithmetic.
#![allow(clippy::manual_is_multiple_of)]

/// Global C-order flat indices of rows `[offset, offset + len)` of `axis` of an
/// array of `shape` (every index when `axis` is `None`), in C order: the elements a
/// rank holds, in its local order.
pub fn slab_indices(shape: &[u64], axis: Option<usize>, offset: u64, len: u64) -> Vec<u64> {
    let total: u64 = shape.iter().product();
    let Some(axis) = axis else {
        return (0..total).collect();
    };
    let outer: u64 = shape[..axis].iter().product();
    let inner: u64 = shape[axis + 1..].iter().product();
    let mut indices = Vec::with_capacity((outer * len * inner) as usize);
    for o in 0..outer {
        for row in offset..offset + len {
            for i in 0..inner {
                indices.push((o * shape[axis] + row) * inner + i);
            }
        }
    }
    indices
}

/// The split-preserving condition, straight from its definition: both sides split,
/// the same product of extents before the split axes, and every input slab (of
/// `lens` rows of `split` in `shape`) a whole number of output rows of
/// `new_split` in `new_shape`.
pub fn split_survives(
    shape: &[u64],
    split: Option<usize>,
    lens: &[u64],
    new_shape: &[u64],
    new_split: Option<usize>,
) -> bool {
    let (Some(s), Some(t)) = (split, new_split) else {
        return false;
    };
    let inner_in: u64 = shape[s + 1..].iter().product();
    let inner_out: u64 = new_shape[t + 1..].iter().product();
    shape[..s].iter().product::<u64>() == new_shape[..t].iter().product::<u64>()
        && lens.iter().all(|l| {
            let elems = l * inner_in;
            if inner_out == 0 {
                elems == 0
            } else {
                elems % inner_out == 0
            }
        })
}
