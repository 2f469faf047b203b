//! Whether two boxes stored in one address space share a byte: the input and
//! the output of one execution, or two fields of a batch, whose spans may
//! interleave without sharing an element (the odd and the even rows of one
//! array, the real and the imaginary parts of complex numbers, the fields of
//! an array of structures).
//!
//! Each box's storage puts no two elements at one address, so its axes, ordered
//! by stride, step over the span of the axes below them: a box is the disjoint
//! union of its sub-boxes along its outermost axis, each spanning an address
//! range of its own. The search descends both boxes together, splitting the
//! one of larger outermost stride along that axis and following the pairs of
//! sub-boxes whose ranges meet; where both outermost axes have one stride, it
//! splits both, and a pair of parts stands for all those the same number of
//! steps apart (they are translates). Of the parts that lie against the other
//! sub-box away from its ends, those a whole number of its steps apart stand
//! for one another too ([`Alike`]). A pair is dropped when no two of its
//! addresses can be closer than an element (the addresses of a sub-box lie on
//! a lattice of the greatest common divisor of its strides, so the two
//! lattices' offset tells); a pair of two elements that meet is a shared byte.
//! The search stops after a budget of pairs, undecided.

use std::ops::RangeInclusive;

use crate::distribution::layout::MAX_DIMS;
use crate::distribution::storage::Storage;

/// The pairs of sub-boxes a check of two buffers looks at, at most.
pub(crate) const SEARCH_BUDGET: usize = 1 << 16;

/// A box in memory: its storage, the address of its first element and the
/// bytes of an element.
#[derive(Clone, Copy, Debug)]
pub struct Placed<'a> {
    /// The box's extents and strides, in elements; `None` for a single
    /// element, a plain range of `elem_size` bytes.
    pub storage: Option<&'a Storage>,
    /// The address of the box's first element.
    pub address: usize,
    /// The bytes of an element.
    pub elem_size: usize,
}

impl<'a> Placed<'a> {
    /// The box of `storage` whose first element, of `elem_size` bytes, is at
    /// `address`.
    pub fn of_box(storage: &'a Storage, address: usize, elem_size: usize) -> Placed<'a> {
        Placed {
            storage: Some(storage),
            address,
            elem_size,
        }
    }

    /// One past the box's last byte.
    pub fn end(&self) -> usize {
        let elements = self.storage.map_or(1, Storage::span) as usize;
        self.address + elements * self.elem_size
    }

    /// The `bytes` bytes from `address`, as a single element.
    pub fn of_range(address: usize, bytes: usize) -> Placed<'a> {
        Placed {
            storage: None,
            address,
            elem_size: bytes,
        }
    }
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

impl Sharing {
    /// What keeps two buffers from being an execution's, in words (`None`
    /// when they are apart).
    pub fn problem(self) -> Option<&'static str> {
        match self {
            Sharing::Apart => None,
            Sharing::Shared => Some("share bytes"),
            Sharing::Undecided => Some("interleave too finely to tell that they share no byte"),
        }
    }
}

/// Whether the non-empty boxes `a` and `b` share a byte, looking at no more
/// than `budget` pairs of sub-boxes. Allocates nothing.
pub fn sharing(a: Placed<'_>, b: Placed<'_>, budget: usize) -> Sharing {
    let (a_end, b_end) = (a.end(), b.end());
    if a_end <= b.address || b_end <= a.address {
        return Sharing::Apart;
    }
    let boxes = [Axes::of(a), Axes::of(b)];
    let pair = [SubBox::whole(a.address), SubBox::whole(b.address)];
    let mut left = budget;
    search(&boxes, pair, &mut left)
}

/// The search below `pair`, each sub-box's axes in `boxes`, counting the pairs
/// against `left`. Recurses at most one level per axis of either box.
fn search(boxes: &[Axes; 2], pair: [SubBox; 2], left: &mut usize) -> Sharing {
    if *left == 0 {
        return Sharing::Undecided;
    }
    *left -= 1;
    let ranges = [boxes[0].range(pair[0]), boxes[1].range(pair[1])];
    let meet = ranges[0].start < ranges[1].end && ranges[1].start < ranges[0].end;
    if !meet || lattices_apart(boxes, pair) {
        return Sharing::Apart;
    }
    let splittable = [0, 1].map(|side| boxes[side].splittable(pair[side]));
    if splittable == [true, true] && boxes[0].stride(pair[0]) == boxes[1].stride(pair[1]) {
        return descend(boxes, together(boxes, pair), left);
    }
    // The side whose outermost stride is the larger: its parts are the fewer
    // that meet the other's range, and they step down towards its strides.
    let side = match splittable {
        [false, false] => return Sharing::Shared,
        [true, true] => usize::from(boxes[1].stride(pair[1]) > boxes[0].stride(pair[0])),
        [first, _] => usize::from(!first),
    };
    let indices = boxes[side].part_indices(pair[side], ranges[1 - side].clone());
    let pairs = Alike::new(boxes, pair, side).searched(indices).map(|i| {
        let mut next = pair;
        next[side] = boxes[side].part(pair[side], i);
        next
    });
    descend(boxes, pairs, left)
}

/// Which parts of the split sub-box of a pair stand for one another against
/// the other sub-box, `X`, when `X` has an axis left (stride `S`): a part
/// whose range meets only parts of `X` away from its ends lies against them
/// as a part `p` steps further does, translated by a multiple of `S`
/// (`p = S / gcd(S, the parts' stride)`), so of the parts within `X` only
/// the first `p` are searched.
struct Alike {
    /// `X`'s outermost axis; `None` when `X` is one element.
    other: Option<Outer>,
    /// The split sub-box's outermost axis, along which its parts lie.
    split: Outer,
    /// The steps between parts that stand for one another.
    period: i128,
}

/// A sub-box's outermost axis: the sub-box's first byte, the axis's stride
/// and extent, and the bytes each part along it spans.
#[derive(Clone, Copy, Debug)]
struct Outer {
    first: i128,
    stride: i128,
    extent: i128,
    reach: i128,
}

impl Alike {
    fn new(boxes: &[Axes; 2], pair: [SubBox; 2], side: usize) -> Alike {
        let split = boxes[side].outer(pair[side]);
        let other = boxes[1 - side]
            .splittable(pair[1 - side])
            .then(|| boxes[1 - side].outer(pair[1 - side]));
        let period = other.map_or(1, |x| x.stride / gcd(x.stride, split.stride));
        Alike {
            other,
            split,
            period,
        }
    }

    /// The parts to search of those at `indices` (in order): every part but
    /// those within `X` (meeting only its parts, none past its ends) that one
    /// of the first `period` of them stands for.
    fn searched(&self, indices: RangeInclusive<i128>) -> impl Iterator<Item = i128> + use<> {
        let (lowest, highest) = (*indices.start(), *indices.end());
        let y = self.split;
        let within = self.other.map(|x| {
            // Part k lies within X when its first byte, y.first + k·y.stride,
            // is at least x.first + x.reach − x.stride (it meets no part
            // before X's first) and at most x.first + x.extent·x.stride −
            // y.reach (none after X's last).
            let from = ceil_div(x.first + x.reach - x.stride - y.first, y.stride);
            let to = (x.first + x.extent * x.stride - y.reach - y.first).div_euclid(y.stride);
            (from.max(lowest), to.min(highest))
        });
        let (from, to) = (within.filter(|(from, to)| from <= to)).unwrap_or((highest + 1, highest));
        let searched_to = to.min(from + self.period - 1);
        (lowest..=(from - 1).min(highest))
            .chain(from..=searched_to)
            .chain((to + 1).max(lowest)..=highest)
    }
}

/// The search below each of `pairs`: shared when one is, undecided as soon
/// as one is (the budget is spent), else apart.
fn descend(
    boxes: &[Axes; 2],
    pairs: impl Iterator<Item = [SubBox; 2]>,
    left: &mut usize,
) -> Sharing {
    for next in pairs {
        match search(boxes, next, left) {
            Sharing::Apart => {}
            found => return found,
        }
    }
    Sharing::Apart
}

/// The pairs one level down both sub-boxes of `pair`, whose outermost axes
/// have one stride: part `i` of the first and part `j` of the second lie as
/// every other two parts with the same `j − i` do, translated, so one pair
/// stands for each difference whose parts' ranges meet.
fn together(boxes: &[Axes; 2], pair: [SubBox; 2]) -> impl Iterator<Item = [SubBox; 2]> {
    let [(stride, a_extent), (_, b_extent)] = [0, 1].map(|side| boxes[side].axes[pair[side].level]);
    let [a_below, b_below] = [0, 1].map(|side| boxes[side].reach[pair[side].level + 1]);
    let difference = pair[0].first - pair[1].first;
    // Parts i and i + δ meet when −a_below < difference − δ·stride < b_below.
    let lowest = (difference - b_below).div_euclid(stride) + 1;
    let highest = (difference + a_below - 1).div_euclid(stride);
    (lowest.max(1 - a_extent)..=highest.min(b_extent - 1)).map(move |delta| {
        let i = (-delta).max(0);
        [
            SubBox {
                first: pair[0].first + i * stride,
                level: pair[0].level + 1,
            },
            SubBox {
                first: pair[1].first + (i + delta) * stride,
                level: pair[1].level + 1,
            },
        ]
    })
}

/// True when no element of one sub-box of `pair` meets one of the other:
/// every difference of their addresses is the two firsts' difference plus a
/// multiple of the common divisor of their strides, and an element at `x`
/// meets one at `y` when `-size(x) < x - y < size(y)`.
fn lattices_apart(boxes: &[Axes; 2], pair: [SubBox; 2]) -> bool {
    let step = gcd(
        boxes[0].lattice[pair[0].level],
        boxes[1].lattice[pair[1].level],
    );
    let (a_size, b_size) = (boxes[0].size, boxes[1].size);
    let difference = pair[0].first - pair[1].first;
    if step == 0 {
        return difference >= b_size || -difference >= a_size;
    }
    let offset = difference.rem_euclid(step);
    offset >= b_size && step - offset >= a_size
}

/// A box's axes longer than one, outermost (largest stride) first, in bytes.
struct Axes {
    /// The bytes of an element.
    size: i128,
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
    fn of(placed: Placed<'_>) -> Axes {
        let size = placed.elem_size as i128;
        let mut axes = [(0, 0); MAX_DIMS];
        let mut count = 0;
        let (strides, extents) = placed
            .storage
            .map_or((&[][..], &[][..]), |s| (s.strides(), s.extents()));
        for (&stride, &extent) in strides.iter().zip(extents).filter(|&(_, &e)| e > 1) {
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
            size,
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

    /// The byte stride of `sub`'s outermost axis (one it can be split along).
    fn stride(&self, sub: SubBox) -> i128 {
        self.axes[sub.level].0
    }

    /// `sub`'s outermost axis (one it can be split along).
    fn outer(&self, sub: SubBox) -> Outer {
        let (stride, extent) = self.axes[sub.level];
        Outer {
            first: sub.first,
            stride,
            extent,
            reach: self.reach[sub.level + 1],
        }
    }

    /// The indices of the sub-boxes of `sub` one level down whose ranges
    /// meet `other`.
    fn part_indices(&self, sub: SubBox, other: std::ops::Range<i128>) -> RangeInclusive<i128> {
        let (stride, extent) = self.axes[sub.level];
        let below = self.reach[sub.level + 1];
        // Part i spans [first + i·stride, first + i·stride + below).
        let lowest = (other.start - sub.first - below).div_euclid(stride) + 1;
        let highest = (other.end - 1 - sub.first).div_euclid(stride);
        lowest.max(0)..=highest.min(extent - 1)
    }

    /// The sub-box `i` of `sub` one level down.
    fn part(&self, sub: SubBox, i: i128) -> SubBox {
        SubBox {
            first: sub.first + i * self.axes[sub.level].0,
            level: sub.level + 1,
        }
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

/// `a / b` rounded up, for `b` > 0.
fn ceil_div(a: i128, b: i128) -> i128 {
    -(-a).div_euclid(b)
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

    fn placed(storage: &Storage, address: usize, elem_size: usize) -> Placed<'_> {
        Placed::of_box(storage, address, elem_size)
    }

    /// What every byte of the two boxes of `size`-byte elements tells.
    fn by_every_byte(a: &Storage, aa: usize, b: &Storage, ba: usize, size: usize) -> Sharing {
        match bytes(a, aa, size).is_disjoint(&bytes(b, ba, size)) {
            true => Sharing::Apart,
            false => Sharing::Shared,
        }
    }

    /// Checks the search against every byte, in both argument orders.
    fn agrees_both_ways(
        a: &Storage,
        aa: usize,
        b: &Storage,
        ba: usize,
        size: usize,
    ) -> Result<(), TestCaseError> {
        let want = by_every_byte(a, aa, b, ba, size);
        let (first, second) = (placed(a, aa, size), placed(b, ba, size));
        prop_assert_eq!(sharing(first, second, 1 << 16), want);
        prop_assert_eq!(sharing(second, first, 1 << 16), want);
        Ok(())
    }

    #[test]
    fn odd_and_even_rows_are_apart() {
        // Rows 0, 2, 4 and rows 1, 3 of a (5, 7) array of float64, C order.
        let rows = |n| Storage::new(&[n, 7], &[14, 1], ReshapeSide::Input, 8, 0).unwrap();
        let (even, odd) = (rows(3), rows(2));
        assert_eq!(
            sharing(placed(&even, 1000, 8), placed(&odd, 1056, 8), 1000),
            Sharing::Apart
        );
        // Every other element of a (5, 7) Fortran array with 7 odd: the
        // lattices alone do not tell, the columns do.
        let fortran = |n| Storage::new(&[7, n], &[5, 2], ReshapeSide::Input, 8, 0).unwrap();
        let (first, second) = (fortran(3), fortran(2));
        assert_eq!(
            sharing(placed(&first, 0, 8), placed(&second, 8, 8), 1000),
            Sharing::Apart
        );
        assert_eq!(
            sharing(placed(&first, 0, 8), placed(&second, 16, 8), 1000),
            Sharing::Shared
        );
        // Half an element off: the bytes meet.
        assert_eq!(
            sharing(placed(&first, 0, 8), placed(&second, 12, 8), 1000),
            Sharing::Shared
        );
    }

    #[test]
    fn the_budget_leaves_it_undecided() {
        // Rows of 64 at stride 2, 7 of them 129 and 131 elements apart.
        let (first, second) = (
            Storage::new(&[7, 64], &[129, 2], ReshapeSide::Input, 8, 0).unwrap(),
            Storage::new(&[7, 64], &[131, 2], ReshapeSide::Input, 8, 0).unwrap(),
        );
        let (a, b) = (placed(&first, 0, 8), placed(&second, 8, 8));
        assert_eq!(sharing(a, b, 3), Sharing::Undecided);
        let shared = !bytes(&first, 0, 8).is_disjoint(&bytes(&second, 8, 8));
        assert!(shared);
        assert_eq!(sharing(a, b, 1 << 16), Sharing::Shared);
    }

    #[test]
    fn translates_take_a_few_pairs_whatever_their_size() {
        // Every other element along dimension 1 of a Fortran (63, 200, 200)
        // float64 array, from the first and from the second.
        let odd = |n| Storage::new(&[200, 200, n], &[63 * 200, 63, 2], ReshapeSide::Input, 8, 0);
        let (first, second) = (odd(32).unwrap(), odd(31).unwrap());
        let (a, b) = (placed(&first, 0, 8), placed(&second, 8, 8));
        assert_eq!(sharing(a, b, 100), Sharing::Apart);
        assert_eq!(sharing(a, placed(&second, 16, 8), 100), Sharing::Shared);
        // 2³¹ rows of 3 bytes, every other row of 6.
        let rows = Storage::new(&[1 << 31, 3], &[6, 1], ReshapeSide::Input, 1, 0).unwrap();
        let (a, b) = (placed(&rows, 0, 1), placed(&rows, 3, 1));
        assert_eq!(sharing(a, b, 100), Sharing::Apart);
    }

    #[test]
    fn either_order_takes_a_few_pairs() {
        // Even rows of a (2N, 7) array read as (N, 7), written into its odd
        // rows as (N/2, 2, 7): the outermost strides differ, and the pairs of
        // rows (N/2, 2, 7) splits into lie alike against (N, 7) away from its
        // ends.
        for n in [1000, 1_000_000, 1_000_000_000] {
            let rows = Storage::new(&[n, 7], &[14, 1], ReshapeSide::Input, 8, 0).unwrap();
            let pairs = Storage::new(&[n / 2, 2, 7], &[28, 14, 1], ReshapeSide::Output, 8, 0);
            let pairs = pairs.unwrap();
            let (a, b) = (placed(&rows, 0, 8), placed(&pairs, 56, 8));
            assert_eq!(sharing(a, b, 100), Sharing::Apart);
            assert_eq!(sharing(b, a, 100), Sharing::Apart);
            assert_eq!(sharing(a, placed(&pairs, 112, 8), 100), Sharing::Shared);
        }
    }

    #[test]
    fn a_part_past_the_end_stands_for_none() {
        // Float32 elements at bytes 38, 94, 102 and 158 (strides 14 and 16)
        // against every fourth element from byte 51: the part that meets
        // byte 38 reaches before the first box's first part, so it stands
        // for no later part; the one at byte 99 meets the element at 102.
        let (a, b) = (
            Storage::new(&[2, 2], &[16, 14], ReshapeSide::Input, 4, 0).unwrap(),
            Storage::new(&[6], &[4], ReshapeSide::Output, 4, 0).unwrap(),
        );
        assert_eq!(
            sharing(placed(&a, 38, 4), placed(&b, 51, 4), 100),
            Sharing::Shared
        );
        assert_eq!(
            sharing(placed(&b, 51, 4), placed(&a, 38, 4), 100),
            Sharing::Shared
        );
    }

    /// A storage of 1 or 2 axes of extents up to 10 and strides up to 24,
    /// as checked storages allow, at a byte offset below 64.
    fn any_lattice() -> impl Strategy<Value = (Storage, usize)> {
        let axes = (1usize..=2).prop_flat_map(|n| {
            (
                proptest::collection::vec(1u64..=10, n),
                proptest::collection::vec(1i64..=24, n),
            )
        });
        (axes, 0usize..64).prop_filter_map("overlapping strides", |((extents, strides), at)| {
            Storage::new(&extents, &strides, ReshapeSide::Input, 1, 0)
                .ok()
                .map(|s| (s, at))
        })
    }

    fn any_placed() -> impl Strategy<Value = (Vec<u64>, Vec<usize>, Vec<u64>, usize)> {
        placed_of(4)
    }

    /// Boxes of 1-3 axes of extents up to `longest`, in any order, padded,
    /// at a byte offset below 48.
    fn placed_of(longest: u64) -> impl Strategy<Value = (Vec<u64>, Vec<usize>, Vec<u64>, usize)> {
        (1usize..=3).prop_flat_map(move |n| {
            (
                proptest::collection::vec(1u64..=longest, n),
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                proptest::collection::vec(0u64..=3, n),
                0usize..48,
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The search agrees with every byte of both boxes, of elements of
        /// any sizes, the second sometimes a translate of the first or a
        /// plain byte range.
        #[test]
        fn agrees_with_every_byte(
            (ae, ao, ap, aa) in any_placed(),
            (be, bo, bp, ba) in any_placed(),
            a_size in prop::sample::select(vec![1usize, 2, 4, 8, 16]),
            b_size in prop::sample::select(vec![1usize, 2, 4, 8, 16]),
            range in prop::option::of(1usize..80),
            translate in any::<bool>(),
        ) {
            let a = storage(&ae, &ao, &ap);
            let (b, b_size) = match translate {
                true => (a.clone(), a_size),
                false => (storage(&be, &bo, &bp), b_size),
            };
            let a_bytes = bytes(&a, aa, a_size);
            let (b_placed, b_bytes) = match range {
                Some(len) => (Placed::of_range(ba, len), (ba..ba + len).collect()),
                None => (placed(&b, ba, b_size), bytes(&b, ba, b_size)),
            };
            let want = match a_bytes.is_disjoint(&b_bytes) {
                true => Sharing::Apart,
                false => Sharing::Shared,
            };
            prop_assert_eq!(sharing(placed(&a, aa, a_size), b_placed, 1 << 16), want);
        }

        /// The same on boxes of strides with common divisors, whose parts
        /// often lie alike against the other box.
        #[test]
        fn agrees_with_every_byte_on_lattices(
            (a, aa) in any_lattice(),
            (b, ba) in any_lattice(),
            size in prop::sample::select(vec![1usize, 2, 4]),
        ) {
            agrees_both_ways(&a, aa, &b, ba, size)?;
        }

        /// The same on boxes long enough for parts to lie alike against the
        /// middle of the other box, one element size on both sides.
        #[test]
        fn agrees_with_every_byte_on_long_boxes(
            (ae, ao, ap, aa) in placed_of(12),
            (be, bo, bp, ba) in placed_of(12),
            size in prop::sample::select(vec![1usize, 2, 8]),
        ) {
            let (a, b) = (storage(&ae, &ao, &ap), storage(&be, &bo, &bp));
            agrees_both_ways(&a, aa, &b, ba, size)?;
        }
    }
}
