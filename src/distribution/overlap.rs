//! Whether two boxes stored in one address space share a byte: the input and
//! the output of one execution, whose spans may interleave without sharing an
//! element (the odd and the even rows of one array, the real and the imaginary
//! parts of complex numbers).
//!
//! Each box's storage puts no two elements at one address, so its axes, ordered
//! by stride, step over the span of the axes below them: a box is the disjoint
//! union of its sub-boxes along its outermost axis, each spanning an address
//! range of its own. The search descends both boxes together, splitting the
//! one of longer span along its outermost axis and following the pairs of
//! sub-boxes whose ranges meet. A pair is dropped when no two of its addresses
//! can be closer than an element (the addresses of a sub-box lie on a lattice
//! of the greatest common divisor of its strides, so the two lattices' offset
//! tells); a pair of two elements that meet is a shared byte. The search stops
//! after a budget of pairs, undecided.

use crate::distribution::layout::MAX_DIMS;
use crate::distribution::storage::Storage;

/// A box in memory: its storage and the address of its first element, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Placed<'a> {
    /// The box's extents and strides, in elements.
    pub storage: &'a Storage,
    /// The address of the box's first element.
    pub address: usize,
}

/// What the search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// The boxes share no byte.
    Apart,
    /// An element of one box and an element of the other share a byte.
    Shared,
    /// Undecided within the budget.
    Undecided,
}

/// Whether the non-empty boxes `a` and `b`, of `elem_size`-byte elements,
/// share a byte, looking at no more than `budget` pairs of sub-boxes.
/// Allocates nothing.
pub fn sharing(a: Placed<'_>, b: Placed<'_>, elem_size: usize, budget: usize) -> Sharing {
    let size = elem_size as i128;
    let boxes = [Axes::of(a.storage, size), Axes::of(b.storage, size)];
    let pair = [SubBox::whole(a.address), SubBox::whole(b.address)];
    let mut left = budget;
    search(&boxes, pair, size, &mut left)
}

/// The search below `pair`, each sub-box's axes in `boxes`, counting the pairs
/// against `left`. Recurses at most one level per axis of either box.
fn search(boxes: &[Axes; 2], pair: [SubBox; 2], size: i128, left: &mut usize) -> Sharing {
    if *left == 0 {
        return Sharing::Undecided;
    }
    *left -= 1;
    let ranges = [boxes[0].range(pair[0]), boxes[1].range(pair[1])];
    let meet = ranges[0].start < ranges[1].end && ranges[1].start < ranges[0].end;
    if !meet || lattices_apart(boxes, pair, size) {
        return Sharing::Apart;
    }
    let longer = usize::from(ranges[1].end - ranges[1].start > ranges[0].end - ranges[0].start);
    let Some(side) = [longer, 1 - longer]
        .into_iter()
        .find(|&side| boxes[side].splittable(pair[side]))
    else {
        return Sharing::Shared;
    };
    let other = ranges[1 - side].clone();
    let mut found = Sharing::Apart;
    for part in boxes[side].parts(pair[side], other) {
        let mut next = pair;
        next[side] = part;
        match search(boxes, next, size, left) {
            Sharing::Apart => {}
            Sharing::Shared => return Sharing::Shared,
            Sharing::Undecided => found = Sharing::Undecided,
        }
    }
    found
}

/// True when no element of one sub-box of `pair` comes within an element of
/// one of the other: every difference of their addresses is the two firsts'
/// difference plus a multiple of the common divisor of their strides.
fn lattices_apart(boxes: &[Axes; 2], pair: [SubBox; 2], size: i128) -> bool {
    let step = gcd(
        boxes[0].lattice[pair[0].level],
        boxes[1].lattice[pair[1].level],
    );
    let difference = pair[0].first - pair[1].first;
    if step == 0 {
        return difference.abs() >= size;
    }
    let offset = difference.rem_euclid(step);
    offset >= size && step - offset >= size
}

/// A box's axes longer than one, outermost (largest stride) first, in bytes.
struct Axes {
    /// How many axes are longer than one.
    count: usize,
    /// Each axis's byte stride and extent.
    axes: [(i128, i128); MAX_DIMS],
    /// The bytes spanned by the sub-boxes below level `k` (`reach[k]`): from
    /// the first byte of their first element to one past their last.
    reach: [i128; MAX_DIMS + 1],
    /// The greatest common divisor of the strides below level `k`
    /// (`lattice[k]`; 0 for a single element).
    lattice: [i128; MAX_DIMS + 1],
}

impl Axes {
    fn of(storage: &Storage, size: i128) -> Axes {
        let mut axes = [(0, 0); MAX_DIMS];
        let mut count = 0;
        let pairs = storage.strides().iter().zip(storage.extents());
        for (&stride, &extent) in pairs.filter(|&(_, &e)| e > 1) {
            axes[count] = (i128::from(stride) * size, i128::from(extent));
            count += 1;
        }
        axes[..count].sort_by_key(|&(stride, _)| std::cmp::Reverse(stride));
        let (mut reach, mut lattice) = ([size; MAX_DIMS + 1], [0; MAX_DIMS + 1]);
        for k in (0..count).rev() {
            let (stride, extent) = axes[k];
            reach[k] = reach[k + 1] + (extent - 1) * stride;
            lattice[k] = gcd(lattice[k + 1], stride);
        }
        Axes {
            count,
            axes,
            reach,
            lattice,
        }
    }

    /// The byte range of `sub`.
    fn range(&self, sub: SubBox) -> std::ops::Range<i128> {
        sub.first..sub.first + self.reach[sub.level]
    }

    fn splittable(&self, sub: SubBox) -> bool {
        sub.level < self.count
    }

    /// The sub-boxes of `sub` one level down whose ranges meet `other`.
    fn parts(&self, sub: SubBox, other: std::ops::Range<i128>) -> impl Iterator<Item = SubBox> {
        let (stride, extent) = self.axes[sub.level];
        let below = self.reach[sub.level + 1];
        // Part i spans [first + i·stride, first + i·stride + below).
        let lowest = (other.start - sub.first - below).div_euclid(stride) + 1;
        let highest = (other.end - 1 - sub.first).div_euclid(stride);
        (lowest.max(0)..=highest.min(extent - 1)).map(move |i| SubBox {
            first: sub.first + i * stride,
            level: sub.level + 1,
        })
    }
}

/// The sub-box of a box below its `level` outermost axes, whose first element
/// is at byte `first`.
#[derive(Clone, Copy, Debug)]
struct SubBox {
    first: i128,
    level: usize,
}

impl SubBox {
    fn whole(address: usize) -> SubBox {
        SubBox {
            first: address as i128,
            level: 0,
        }
    }
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::groups::ReshapeSide;
    use proptest::prelude::*;

    /// A storage of `extents` with its axes laid out in `order` (outermost
    /// first) and `pad` elements after each axis's span.
    fn storage(extents: &[u64], order: &[usize], pad: &[u64]) -> Storage {
        let mut strides = vec![0i64; extents.len()];
        let mut weight = 1u64;
        for (&k, &p) in order.iter().rev().zip(pad) {
            strides[k] = weight as i64;
            weight = weight * extents[k] + p;
        }
        Storage::new(extents, &strides, ReshapeSide::Input, 8, 0).unwrap()
    }

    /// Every byte of the box at `address`, element by element.
    fn bytes(storage: &Storage, address: usize, size: usize) -> std::collections::BTreeSet<usize> {
        let mut out = std::collections::BTreeSet::new();
        let (extents, strides) = (storage.extents(), storage.strides());
        let count: u64 = extents.iter().product();
        for flat in 0..count {
            let mut rest = flat;
            let mut offset = 0;
            for (&e, &s) in extents.iter().zip(strides).rev() {
                offset += (rest % e) * s;
                rest /= e;
            }
            let first = address + offset as usize * size;
            out.extend(first..first + size);
        }
        out
    }

    fn placed(storage: &Storage, address: usize) -> Placed<'_> {
        Placed { storage, address }
    }

    #[test]
    fn odd_and_even_rows_are_apart() {
        // Rows 0, 2, 4 and rows 1, 3 of a (5, 7) array of float64, C order.
        let rows = |n| Storage::new(&[n, 7], &[14, 1], ReshapeSide::Input, 8, 0).unwrap();
        let (even, odd) = (rows(3), rows(2));
        assert_eq!(
            sharing(placed(&even, 1000), placed(&odd, 1056), 8, 1000),
            Sharing::Apart
        );
        // Every other element of a (5, 7) Fortran array with 7 odd: the
        // lattices alone do not tell, the columns do.
        let fortran = |n| Storage::new(&[7, n], &[5, 2], ReshapeSide::Input, 8, 0).unwrap();
        let (first, second) = (fortran(3), fortran(2));
        assert_eq!(
            sharing(placed(&first, 0), placed(&second, 8), 8, 1000),
            Sharing::Apart
        );
        assert_eq!(
            sharing(placed(&first, 0), placed(&second, 16), 8, 1000),
            Sharing::Shared
        );
        // Half an element off: the bytes meet.
        assert_eq!(
            sharing(placed(&first, 0), placed(&second, 12), 8, 1000),
            Sharing::Shared
        );
    }

    #[test]
    fn the_budget_leaves_it_undecided() {
        let (first, second) = (
            Storage::new(&[64, 7], &[2, 129], ReshapeSide::Input, 8, 0).unwrap(),
            Storage::new(&[64, 7], &[2, 129], ReshapeSide::Input, 8, 0).unwrap(),
        );
        assert_eq!(
            sharing(placed(&first, 0), placed(&second, 8), 8, 3),
            Sharing::Undecided
        );
        assert_eq!(
            sharing(placed(&first, 0), placed(&second, 8), 8, 1000),
            Sharing::Apart
        );
    }

    fn any_placed() -> impl Strategy<Value = (Vec<u64>, Vec<usize>, Vec<u64>, usize)> {
        (1usize..=3).prop_flat_map(|n| {
            (
                proptest::collection::vec(1u64..=4, n),
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                proptest::collection::vec(0u64..=3, n),
                0usize..48,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The search agrees with every byte of both boxes, or stays undecided
        /// only past its budget.
        #[test]
        fn agrees_with_every_byte(
            (ae, ao, ap, aa) in any_placed(),
            (be, bo, bp, ba) in any_placed(),
            size in prop::sample::select(vec![1usize, 2, 4, 8]),
        ) {
            let (a, b) = (storage(&ae, &ao, &ap), storage(&be, &bo, &bp));
            let shared = !bytes(&a, aa, size).is_disjoint(&bytes(&b, ba, size));
            let want = if shared { Sharing::Shared } else { Sharing::Apart };
            prop_assert_eq!(sharing(placed(&a, aa), placed(&b, ba), size, 1 << 16), want);
        }
    }
}
