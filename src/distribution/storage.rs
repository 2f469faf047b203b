//! Where a rank's box lives in its buffer: one stride per axis, in elements, so
//! that box element (i₀, …, iₙ₋₁), counted from the box's corner, lies at
//! Σ iₖ·strideₖ. One mechanism for halos and padding (the padded array's
//! strides), any axis order (the FFT axis contiguous), leading dimensions and
//! NumPy views with positive strides. C order without gaps is the dense storage
//! every plan had before strides.
//!
//! The planner cuts messages from runs of the box in C order; a storage turns
//! such a run into the fewest sub-boxes ([`Storage::pieces`]), each copied by one
//! N-d kernel call, so a permuted side is copied by blocked transposes, never
//! element by element.

use crate::core::error::{Error, Result};
use crate::distribution::grid::GridLayout;
use crate::distribution::groups::ReshapeSide;
use crate::distribution::layout::MAX_DIMS;

/// The strides of one side's box on this rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Storage {
    extents: Vec<u64>,
    strides: Vec<u64>,
    dense: bool,
}

impl Storage {
    /// C order without gaps: the storage of a plan made without strides.
    pub fn dense(extents: &[u64]) -> Storage {
        let mut strides = vec![0; extents.len()];
        let mut weight = 1;
        for (stride, &extent) in strides.iter_mut().zip(extents).rev() {
            *stride = weight;
            weight *= extent;
        }
        Storage {
            extents: extents.to_vec(),
            strides,
            dense: true,
        }
    }

    /// The storage `strides` (in elements, one per axis) of a box of `extents` on
    /// a side, checked: one stride per axis, every stride of an axis longer than
    /// one positive, and no two elements at one address (ordered by stride, every
    /// axis must step over the whole span of the axes below it). Messages name
    /// the strides as `naming` says.
    pub fn new(
        extents: &[u64],
        strides: &[i64],
        naming: impl Into<StridesNaming>,
        elem_size: usize,
        rank: usize,
    ) -> Result<Storage> {
        let naming = naming.into();
        if strides.len() != extents.len() {
            return Err(Error::InvalidStrides(format!(
                "{} has {} values but the {} box {} has {} axes (rank {rank})",
                naming.strides(),
                strides.len(),
                side_word(naming.side()),
                naming.shape(extents),
                extents.len()
            )));
        }
        let empty = extents.contains(&0);
        let mut checked = Vec::with_capacity(strides.len());
        let ndims = extents.len();
        for (axis, (&stride, &extent)) in strides.iter().zip(extents).enumerate() {
            if stride < 1 && extent > 1 && !empty {
                return Err(Error::InvalidStrides(format!(
                    "{} on {} of extent {extent}: strides must be positive (rank {rank})",
                    naming.stride_is(axis, ndims, stride),
                    naming.an_axis()
                )));
            }
            checked.push(stride.max(0) as u64);
        }
        let storage = Storage {
            extents: extents.to_vec(),
            dense: false,
            strides: checked,
        };
        if !empty {
            storage.check_disjoint(naming, elem_size, rank)?;
        }
        let dense = empty || storage.strides_match(&Storage::dense(extents));
        Ok(Storage { dense, ..storage })
    }

    /// Refuses strides that put two elements at one address, or a span whose bytes
    /// overflow.
    fn check_disjoint(&self, naming: StridesNaming, elem_size: usize, rank: usize) -> Result<()> {
        let ndims = self.extents.len();
        let mut axes: Vec<usize> = (0..ndims).filter(|&k| self.extents[k] > 1).collect();
        axes.sort_by_key(|&k| self.strides[k]);
        let mut span: u64 = 1;
        for &k in &axes {
            let stride_is = || naming.stride_is(k, ndims, self.strides[k] as i64);
            if self.strides[k] < span {
                return Err(Error::InvalidStrides(format!(
                    "{} (extent {}) steps into the {span} elements the {} of smaller strides span: two elements would share an address (rank {rank})",
                    stride_is(),
                    self.extents[k],
                    naming.axes()
                )));
            }
            let reach = (self.extents[k] - 1).checked_mul(self.strides[k]);
            span = reach
                .and_then(|r| r.checked_add(span))
                .filter(|&s| {
                    s.checked_mul(elem_size as u64)
                        .is_some_and(|b| b <= i64::MAX as u64)
                })
                .ok_or_else(|| {
                    Error::InvalidStrides(format!(
                        "{}: the storage spans more bytes than fit in 64 bits (rank {rank})",
                        stride_is()
                    ))
                })?;
        }
        Ok(())
    }

    /// True when both storages place every element alike (axes of extent 1 may
    /// differ in stride).
    fn strides_match(&self, other: &Storage) -> bool {
        let axes = self.extents.iter().zip(&self.strides).zip(&other.strides);
        axes.into_iter().all(|((&e, a), b)| e <= 1 || a == b)
    }

    /// True for C order without gaps (or an empty box).
    pub fn is_dense(&self) -> bool {
        self.dense
    }

    /// The box's extents.
    pub fn extents(&self) -> &[u64] {
        &self.extents
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[u64] {
        &self.strides
    }

    /// Elements from the box's first element to one past its last: 1 + Σ
    /// (extentₖ − 1)·strideₖ, or 0 for an empty box.
    pub fn span(&self) -> u64 {
        if self.extents().contains(&0) {
            return 0;
        }
        let reach = self.extents().iter().zip(&self.strides);
        1 + reach.map(|(&e, &s)| (e - 1) * s).sum::<u64>()
    }

    /// Elements from the first to one past the last of the `len` (at least
    /// one) elements from C-order position `start` of a box that is not
    /// empty, in a storage that places the box's elements in C order (its
    /// axes longer than one from the largest stride to the smallest, as a
    /// [`Storage::window`] in stride order has them).
    pub fn range_span(&self, start: u64, len: u64) -> u64 {
        debug_assert!(len > 0 && !self.extents.contains(&0));
        let at = |position| self.pieces(position, 1).next().map_or(0, |p| p.offset);
        at(start + len - 1) + 1 - at(start)
    }

    /// This box in a buffer of its own that keeps every gap of at most `limit`
    /// elements between consecutive slabs along an axis, and closes the longer
    /// ones: a copy of the box between the two can then take those gaps along
    /// with the elements around them, in one run. The axes longer than one
    /// must go from the largest stride to the smallest, as for
    /// [`Storage::range_span`]; so do the result's.
    pub fn keeping_gaps(&self, limit: u64) -> Storage {
        if self.extents.contains(&0) {
            return Storage::dense(&self.extents);
        }
        let mut strides = vec![0; self.extents.len()];
        let (mut span, mut kept_span) = (1u64, 1u64);
        for (k, &extent) in self.extents.iter().enumerate().rev() {
            let stride = self.strides[k];
            let gap = stride.checked_sub(span).filter(|&gap| gap <= limit);
            strides[k] = kept_span + gap.unwrap_or(0);
            if extent > 1 {
                span += (extent - 1) * stride;
                kept_span += (extent - 1) * strides[k];
            }
        }
        let storage = Storage {
            extents: self.extents.clone(),
            strides,
            dense: false,
        };
        let dense = storage.strides_match(&Storage::dense(&storage.extents));
        Storage { dense, ..storage }
    }

    /// The sub-box of `extents` at `corner` of this box, its axes taken in
    /// `order` (outermost first): its storage at this storage's strides, and the
    /// offset of its first element from this box's first. A sub-box of a
    /// storage that puts no two elements at one address puts none either.
    pub fn window(&self, corner: &[u64], extents: &[u64], order: &[usize]) -> Window {
        let offset = corner.iter().zip(&self.strides).map(|(c, s)| c * s).sum();
        let extents: Vec<u64> = order.iter().map(|&k| extents[k]).collect();
        let strides = order.iter().map(|&k| self.strides[k]).collect();
        let storage = Storage {
            dense: false,
            extents,
            strides,
        };
        let dense = storage.extents.contains(&0)
            || storage.strides_match(&Storage::dense(&storage.extents));
        Window {
            offset,
            storage: Storage { dense, ..storage },
        }
    }

    /// The sub-boxes of the `len` elements from C-order position `start` of the box,
    /// in order: at most 2n − 1 for n axes, each an outer block of whole inner
    /// rows. O(ndims) each; allocates nothing.
    pub fn pieces(&self, start: u64, len: u64) -> Pieces<'_> {
        Pieces {
            storage: self,
            next: start,
            end: start + len,
        }
    }
}

/// Every rank's input storage, from the strides every rank gave (gathered when
/// a plan is made): where a rank that reads another's input directly finds the
/// elements it reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputStorages {
    storages: Vec<Storage>,
}

impl InputStorages {
    /// The storages of the boxes of `layout` at `strides` (one per axis per
    /// rank, rank after rank), each checked as [`Storage::new`] checks it.
    pub fn new(layout: &GridLayout, strides: &[i64], elem_size: usize) -> Result<InputStorages> {
        let ndims = layout.shape().len();
        let storages = (0..layout.nranks())
            .map(|rank| {
                let extents = layout.rank_box(rank).extents;
                let given = &strides[rank * ndims..(rank + 1) * ndims];
                Storage::new(&extents, given, ReshapeSide::Input, elem_size, rank)
            })
            .collect::<Result<_>>()?;
        Ok(InputStorages { storages })
    }

    /// Rank `rank`'s input storage.
    pub fn of(&self, rank: usize) -> &Storage {
        &self.storages[rank]
    }
}

/// A sub-box of a storage ([`Storage::window`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Elements from the storage's first element to the sub-box's first.
    pub offset: u64,
    /// The sub-box's storage, its axes in the order asked for.
    pub storage: Storage,
}

/// Both sides' storages on one rank: its input box's and its output box's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Storages {
    /// Where the input box lives in the input buffer.
    pub input: Storage,
    /// Where the output box lives in the output buffer.
    pub output: Storage,
}

impl Storages {
    /// C order without gaps for boxes of `input` and `output` extents.
    pub fn dense(input: &[u64], output: &[u64]) -> Storages {
        Storages {
            input: Storage::dense(input),
            output: Storage::dense(output),
        }
    }

    /// True when both are C order without gaps.
    pub fn are_dense(&self) -> bool {
        self.input.is_dense() && self.output.is_dense()
    }
}

/// How a storage's messages name its strides: the argument of a side
/// (`input_strides[2]`, C order), or a Fortran mold's dimension
/// (`in_mold's stride along dimension 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StridesNaming {
    /// The side's strides argument, axes in C order from 0.
    Argument(ReshapeSide),
    /// The side's mold array of the Fortran module, dimensions from 1 in
    /// Fortran order.
    Mold(ReshapeSide),
}

impl From<ReshapeSide> for StridesNaming {
    fn from(side: ReshapeSide) -> StridesNaming {
        StridesNaming::Argument(side)
    }
}

impl StridesNaming {
    fn side(self) -> ReshapeSide {
        match self {
            StridesNaming::Argument(side) | StridesNaming::Mold(side) => side,
        }
    }

    /// The strides as a whole.
    fn strides(self) -> String {
        match self {
            StridesNaming::Argument(side) => side_name(side).to_string(),
            StridesNaming::Mold(side) => format!("{}'s strides", mold_name(side)),
        }
    }

    /// The stride of axis `axis` (C order) of `ndims` axes being `value`.
    fn stride_is(self, axis: usize, ndims: usize, value: i64) -> String {
        match self {
            StridesNaming::Argument(side) => format!("{}[{axis}] = {value}", side_name(side)),
            StridesNaming::Mold(side) => format!(
                "{}'s stride along dimension {} is {value} elements",
                mold_name(side),
                ndims - axis
            ),
        }
    }

    /// One axis, with its article.
    fn an_axis(self) -> &'static str {
        match self {
            StridesNaming::Argument(_) => "an axis",
            StridesNaming::Mold(_) => "a dimension",
        }
    }

    /// Axes in the plural.
    fn axes(self) -> &'static str {
        match self {
            StridesNaming::Argument(_) => "axes",
            StridesNaming::Mold(_) => "dimensions",
        }
    }

    /// A box's extents (C order) as the caller writes them.
    fn shape(self, extents: &[u64]) -> String {
        let shown: Vec<String> = extents.iter().map(u64::to_string).collect();
        match self {
            StridesNaming::Argument(_) => format!("[{}]", shown.join(", ")),
            StridesNaming::Mold(_) => {
                let reversed: Vec<&str> = shown.iter().rev().map(String::as_str).collect();
                format!("({})", reversed.join(", "))
            }
        }
    }
}

/// The storage argument's name on `side`.
fn side_name(side: ReshapeSide) -> &'static str {
    match side {
        ReshapeSide::Input => "input_strides",
        ReshapeSide::Output => "output_strides",
    }
}

/// The Fortran module's mold argument on `side`.
fn mold_name(side: ReshapeSide) -> &'static str {
    match side {
        ReshapeSide::Input => "in_mold",
        ReshapeSide::Output => "out_mold",
    }
}

/// The side's word in messages.
fn side_word(side: ReshapeSide) -> &'static str {
    match side {
        ReshapeSide::Input => "input",
        ReshapeSide::Output => "output",
    }
}

/// A sub-box of a storage: `extents` elements (C order) from `offset`, at the
/// storage's strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Offset of its first element in the storage, in elements.
    pub offset: u64,
    /// Its extents, one per axis of the box (the first `ndims`).
    pub extents: [u64; MAX_DIMS],
    /// Number of axes.
    pub ndims: usize,
}

impl Piece {
    /// Its extents.
    pub fn extents(&self) -> &[u64] {
        &self.extents[..self.ndims]
    }

    /// Number of elements (never 0 for a piece of [`Storage::pieces`]).
    pub fn elements(&self) -> u64 {
        self.extents().iter().product()
    }
}

/// The sub-boxes of a C-order range of a box ([`Storage::pieces`]).
#[derive(Clone, Debug)]
pub struct Pieces<'a> {
    storage: &'a Storage,
    next: u64,
    end: u64,
}

impl Iterator for Pieces<'_> {
    type Item = Piece;

    /// The largest block starting at the next position: the outermost axis `k`
    /// at whose block boundary the position lies (every coordinate after `k` is
    /// zero) with a whole block left, as many of its rows as remain on `k` and in
    /// the range.
    fn next(&mut self) -> Option<Piece> {
        if self.next >= self.end {
            return None;
        }
        let Storage {
            extents, strides, ..
        } = self.storage;
        let n = extents.len();
        let mut coords = [0u64; MAX_DIMS];
        let mut rest = self.next;
        for k in (0..n).rev() {
            coords[k] = rest % extents[k];
            rest /= extents[k];
        }
        let left = self.end - self.next;
        let (mut axis, mut inner) = (n - 1, 1u64);
        let mut block = 1u64;
        for k in (0..n).rev() {
            if block > left {
                break;
            }
            (axis, inner) = (k, block);
            if coords[k] != 0 {
                break;
            }
            block *= extents[k];
        }
        let rows = (extents[axis] - coords[axis]).min(left / inner);
        let mut piece = Piece {
            offset: (0..n).map(|k| coords[k] * strides[k]).sum(),
            extents: [1; MAX_DIMS],
            ndims: n,
        };
        piece.extents[axis] = rows;
        piece.extents[axis + 1..n].copy_from_slice(&extents[axis + 1..n]);
        self.next += rows * inner;
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_window_is_a_sub_box_at_the_same_strides_in_the_order_asked() {
        let halo =
            Storage::new(&[4, 5, 6], &[80, 10, 1], ReshapeSide::Input, 8, 0).expect("a halo'd box");
        let window = halo.window(&[1, 2, 3], &[2, 3, 3], &[2, 0, 1]);
        assert_eq!(window.offset, 80 + 20 + 3);
        assert_eq!(window.storage.extents(), [3, 2, 3]);
        assert_eq!(window.storage.strides(), [1, 80, 10]);
        assert!(!window.storage.is_dense());
        let dense = Storage::dense(&[4, 5, 6]);
        let rows = dense.window(&[2, 0, 0], &[2, 5, 6], &[0, 1, 2]);
        assert_eq!((rows.offset, rows.storage.is_dense()), (60, true));
    }

    fn positions(storage: &Storage, start: u64, len: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for piece in storage.pieces(start, len) {
            let ext = piece.extents();
            let count = piece.elements();
            for i in 0..count {
                let (mut rest, mut at) = (i, piece.offset);
                for k in (0..ext.len()).rev() {
                    at += rest % ext[k] * storage.strides()[k];
                    rest /= ext[k];
                }
                out.push(at);
            }
        }
        out
    }

    fn address(storage: &Storage, flat: u64) -> u64 {
        let (mut rest, mut at) = (flat, 0);
        for k in (0..storage.extents().len()).rev() {
            at += rest % storage.extents()[k] * storage.strides()[k];
            rest /= storage.extents()[k];
        }
        at
    }

    /// A box of 1–4 axes stored in a random axis order with random padding.
    fn any_storage() -> impl Strategy<Value = (Vec<u64>, Vec<i64>)> {
        proptest::collection::vec((1u64..6, 0u64..3), 1..5).prop_flat_map(|axes| {
            let order = Just((0..axes.len()).collect::<Vec<usize>>()).prop_shuffle();
            (Just(axes), order).prop_map(|(axes, order)| {
                let mut strides = vec![0i64; axes.len()];
                let mut weight = 1i64;
                for &k in order.iter().rev() {
                    strides[k] = weight;
                    weight *= (axes[k].0 + axes[k].1) as i64;
                }
                (axes.iter().map(|a| a.0).collect(), strides)
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn pieces_cover_the_range_in_order((extents, strides) in any_storage(), a in 0u64..400, b in 0u64..400) {
            let storage = Storage::new(&extents, &strides, ReshapeSide::Input, 8, 0).unwrap();
            let total: u64 = extents.iter().product();
            let (start, end) = (a.min(b) % (total + 1), a.max(b) % (total + 1));
            let (start, end) = (start.min(end), start.max(end));
            let want: Vec<u64> = (start..end).map(|f| address(&storage, f)).collect();
            prop_assert_eq!(positions(&storage, start, end - start), want);
            prop_assert!(storage.pieces(start, end - start).count() <= 2 * extents.len());
        }

        #[test]
        fn valid_strides_put_every_element_at_its_own_address_within_the_span((extents, strides) in any_storage()) {
            let storage = Storage::new(&extents, &strides, ReshapeSide::Output, 8, 0).unwrap();
            let total: u64 = extents.iter().product();
            let mut seen: Vec<u64> = (0..total).map(|f| address(&storage, f)).collect();
            seen.sort_unstable();
            seen.dedup();
            prop_assert_eq!(seen.len() as u64, total);
            prop_assert_eq!(seen.last().map_or(0, |l| l + 1), storage.span());
        }
    }

    #[test]
    fn keeping_gaps_keeps_the_short_gaps_and_closes_the_long_ones() {
        // A halo'd box: rows 4 apart (gaps of 1), planes 40 apart (gaps of 29
        // after the 11 elements a plane spans).
        let halo = Storage::new(&[2, 3, 3], &[40, 4, 1], ReshapeSide::Input, 8, 0).unwrap();
        let kept = halo.keeping_gaps(4);
        assert_eq!(kept.strides(), [11, 4, 1]);
        assert_eq!(halo.keeping_gaps(30).strides(), [40, 4, 1]);
        assert_eq!(halo.keeping_gaps(0).strides(), [9, 3, 1]);
        assert!(halo.keeping_gaps(0).is_dense());
        // A strided innermost axis keeps its gaps too.
        let every_other = Storage::new(&[3, 2], &[8, 2], ReshapeSide::Input, 8, 0).unwrap();
        assert_eq!(every_other.keeping_gaps(1).strides(), [3, 2]);
        assert_eq!(every_other.keeping_gaps(5).strides(), [8, 2]);
        assert_eq!(every_other.keeping_gaps(0).strides(), [2, 1]);
        assert_eq!(
            Storage::dense(&[2, 0]).keeping_gaps(5),
            Storage::dense(&[2, 0])
        );
    }

    #[test]
    fn range_span_reaches_from_the_first_element_to_past_the_last() {
        let halo = Storage::new(&[2, 3, 3], &[40, 4, 1], ReshapeSide::Input, 8, 0).unwrap();
        assert_eq!(halo.range_span(0, 1), 1);
        assert_eq!(halo.range_span(0, 3), 3);
        assert_eq!(halo.range_span(2, 2), 3);
        assert_eq!(halo.range_span(0, 18), 40 + 8 + 2 + 1);
        assert_eq!(halo.range_span(8, 2), 40 - 10 + 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn keeping_gaps_places_the_box_in_c_order_inside_the_kept_span(
            (extents, strides) in any_storage(), limit in 0u64..40
        ) {
            let storage = Storage::new(&extents, &strides, ReshapeSide::Input, 8, 0).unwrap();
            let mut order: Vec<usize> = (0..extents.len()).collect();
            order.sort_by_key(|&k| std::cmp::Reverse(storage.strides()[k]));
            let zeros = vec![0; extents.len()];
            let sorted = storage.window(&zeros, &extents, &order).storage;
            let kept = sorted.keeping_gaps(limit);
            let total: u64 = extents.iter().product();
            let at: Vec<u64> = (0..total).map(|f| address(&kept, f)).collect();
            prop_assert!(at.windows(2).all(|w| w[0] < w[1]));
            for f in 1..total {
                let (gap, kept_gap) = (
                    address(&sorted, f) - address(&sorted, f - 1) - 1,
                    at[f as usize] - at[f as usize - 1] - 1,
                );
                prop_assert_eq!(kept_gap, if gap <= limit { gap } else { 0 });
            }
            if total > 0 {
                prop_assert_eq!(kept.range_span(0, total), kept.span());
            }
        }
    }

    #[test]
    fn dense_storage_is_recognized_whatever_the_strides_of_unit_axes() {
        let s = Storage::new(&[3, 1, 4], &[4, 99, 1], ReshapeSide::Input, 8, 0).unwrap();
        assert!(s.is_dense());
        let padded = Storage::new(&[3, 4], &[6, 1], ReshapeSide::Input, 8, 0).unwrap();
        assert!(!padded.is_dense());
        assert_eq!(padded.span(), 16);
        assert!(Storage::dense(&[2, 0, 5]).is_dense());
        assert_eq!(Storage::dense(&[2, 0, 5]).span(), 0);
    }

    #[test]
    fn refusals_name_the_side_the_axis_the_value_and_the_rank() {
        let refuse = |extents: &[u64], strides: &[i64]| {
            Storage::new(extents, strides, ReshapeSide::Output, 8, 3)
                .unwrap_err()
                .to_string()
        };
        let overlap = refuse(&[4, 4], &[2, 1]);
        assert!(
            overlap.contains("output_strides[0] = 2") && overlap.contains("rank 3"),
            "{overlap}"
        );
        let negative = refuse(&[4, 4], &[4, -1]);
        assert!(negative.contains("output_strides[1] = -1"), "{negative}");
        let count = refuse(&[4, 4], &[4]);
        assert!(count.contains("has 1 values"), "{count}");
        assert!(refuse(&[4, 4], &[4, 4]).contains("share an address"));
        let huge = refuse(&[4, 4], &[i64::MAX / 2, 1]);
        assert!(huge.contains("64 bits"), "{huge}");
    }

    #[test]
    fn refusals_of_molds_name_their_fortran_dimensions() {
        let refuse = |extents: &[u64], strides: &[i64]| {
            let naming = StridesNaming::Mold(ReshapeSide::Input);
            Storage::new(extents, strides, naming, 8, 1)
                .unwrap_err()
                .to_string()
        };
        // a(7:1:-1, :, :) of a (7, 5, 3) array: its first dimension runs backwards.
        let backwards = refuse(&[3, 5, 7], &[35, 7, -1]);
        assert!(
            backwards.contains(
                "in_mold's stride along dimension 1 is -1 elements on a dimension of extent 7"
            ) && backwards.contains("rank 1"),
            "{backwards}"
        );
        let overlap = refuse(&[4, 4], &[2, 1]);
        assert!(
            overlap.contains("in_mold's stride along dimension 2 is 2 elements (extent 4)")
                && overlap.contains("the dimensions of smaller strides"),
            "{overlap}"
        );
    }
}
