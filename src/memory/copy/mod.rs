//! The host's copy of a box of elements between two strided storages.
//!
//! The box is first normalized: axes of extent 1 go, the others are ordered by
//! their destination stride (the order the elements are copied in is free, since
//! the storages never overlap) and neighbours contiguous in both storages merge.
//! Then one of three loops copies it:
//! - **runs**, when the fastest axis is contiguous in both storages: an odometer
//!   over the other axes, one copy per run, with non-temporal stores
//!   (`stream.rs`) when the box (or the destination it is part of, in
//!   [`copy_box_within`]) is large and its runs long;
//! - **a transpose**, when the source's fastest axis is not the destination's:
//!   of elements of 4, 8 or 16 bytes, in line-sized tiles (`tiles.rs`), moved
//!   through registers where both those axes are contiguous and gathered or
//!   scattered element by element where either has a step; else in blocks staged
//!   whole through a buffer (`staged.rs`), the other axes in an odometer;
//! - **strided**, otherwise (no axis fast in both): element by element along the
//!   destination's fastest axis, the other axes in an odometer.
//!
//! Elements of 1, 2, 4, 8 and 16 bytes move as one unaligned load and store
//! each; any other size moves as bytes.

mod staged;
mod stream;
mod tiles;

use crate::distribution::layout::MAX_DIMS;
use staged::{Plane, STAGING};
use stream::{STREAM_BYTES, STREAM_RUN, copy_streamed, store_fence};

/// One N-d copy of a box of elements between two strided storages: element
/// (i₀, …, iₙ₋₁) goes from `src + elem_size·Σ iₖ·src_stridesₖ` to
/// `dst + elem_size·Σ iₖ·dst_stridesₖ`.
#[derive(Clone, Copy, Debug)]
pub struct BoxCopy<'a> {
    /// The box's extent along each axis (at most [`MAX_DIMS`] axes).
    pub extents: &'a [usize],
    /// The source's stride along each axis, in elements.
    pub src_strides: &'a [usize],
    /// The destination's stride along each axis, in elements.
    pub dst_strides: &'a [usize],
}

/// Copies the elements of the box `copy` from `src` to `dst` with the memory
/// layer's kernels (`copy_box_within` of the whole destination), for tests and
/// benchmarks. An empty box (an extent 0) or a 0 `elem_size` copies nothing.
///
/// # Panics
/// If the three slices of `copy` differ in length or have more than
/// `MAX_DIMS` axes.
///
/// # Safety
/// Every element of the box must be readable at `src` and writable at `dst`
/// (strides of axes of extent 1 are never used), through pointers of any
/// alignment; no element's bytes in `dst` may overlap any element's in `src`,
/// nor another's in `dst`.
#[cfg(feature = "testing")]
pub unsafe fn copy_box(elem_size: usize, copy: BoxCopy<'_>, src: *const u8, dst: *mut u8) {
    // SAFETY: forwarded from the caller.
    unsafe { copy_box_within(elem_size, copy, src, dst, 0) }
}

/// Copies the elements of the box `copy` from `src` to `dst`, as one part of
/// a destination of `whole` bytes that one pass writes part by part and
/// nothing reads before the pass ends (a strided output filled chunk by
/// chunk): its stores are non-temporal wherever those of one box of `whole`
/// bytes would be, even when this part alone is small enough for the caches
/// (`whole` 0: the box is the whole destination). An empty box (an extent 0)
/// or a 0 `elem_size` copies nothing.
///
/// # Panics
/// If the three slices of `copy` differ in length or have more than
/// [`MAX_DIMS`] axes.
///
/// # Safety
/// Every element of the box must be readable at `src` and writable at `dst`
/// (strides of axes of extent 1 are never used), through pointers of any
/// alignment; no element's bytes in `dst` may overlap any element's in `src`,
/// nor another's in `dst`.
pub unsafe fn copy_box_within(
    elem_size: usize,
    copy: BoxCopy<'_>,
    src: *const u8,
    dst: *mut u8,
    whole: usize,
) {
    let Some(axes) = Axes::normalized(elem_size, copy) else {
        return;
    };
    // SAFETY: the caller's contract, for the same elements in another order.
    unsafe {
        match elem_size {
            1 => axes.copy(Fixed::<1>, src, dst, whole),
            2 => axes.copy(Fixed::<2>, src, dst, whole),
            4 => axes.copy(Fixed::<4>, src, dst, whole),
            8 => axes.copy(Fixed::<8>, src, dst, whole),
            16 => axes.copy(Fixed::<16>, src, dst, whole),
            _ => axes.copy(Bytes(elem_size), src, dst, whole),
        }
    }
}

/// How one element moves.
trait Mover: Copy {
    /// The element's size in bytes.
    fn size(self) -> usize;

    /// Copies one element from `src` to `dst`.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for [`Mover::size`] bytes, not
    /// overlapping; any alignment.
    unsafe fn move_one(self, src: *const u8, dst: *mut u8);
}

/// Elements of `N` bytes, moved as one unaligned load and store.
#[derive(Clone, Copy)]
struct Fixed<const N: usize>;

impl<const N: usize> Mover for Fixed<N> {
    fn size(self) -> usize {
        N
    }

    #[inline(always)]
    unsafe fn move_one(self, src: *const u8, dst: *mut u8) {
        // SAFETY: as documented on the trait; the accesses are unaligned.
        unsafe {
            let value = src.cast::<[u8; N]>().read_unaligned();
            dst.cast::<[u8; N]>().write_unaligned(value);
        }
    }
}

/// Elements of any size, moved as bytes.
#[derive(Clone, Copy)]
struct Bytes(usize);

impl Mover for Bytes {
    fn size(self) -> usize {
        self.0
    }

    #[inline(always)]
    unsafe fn move_one(self, src: *const u8, dst: *mut u8) {
        // SAFETY: as documented on the trait.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, self.0) }
    }
}

/// One axis of a normalized box: its extent and both strides in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Axis {
    /// The extent (at least 2 once normalized).
    n: usize,
    /// The source stride in bytes.
    src: usize,
    /// The destination stride in bytes.
    dst: usize,
}

/// A normalized box: no axis of extent 1, ordered by decreasing destination
/// stride, neighbours contiguous in both storages merged.
#[derive(Debug)]
struct Axes {
    /// How many of `at` are used.
    len: usize,
    /// The axes, outermost first.
    at: [Axis; MAX_DIMS],
}

impl Axes {
    /// The normalized axes of `copy` with strides in bytes, `None` when nothing
    /// is to be copied.
    fn normalized(elem_size: usize, copy: BoxCopy<'_>) -> Option<Axes> {
        let BoxCopy {
            extents,
            src_strides,
            dst_strides,
        } = copy;
        assert!(
            extents.len() <= MAX_DIMS,
            "a box of more than {MAX_DIMS} axes"
        );
        assert!(
            src_strides.len() == extents.len() && dst_strides.len() == extents.len(),
            "a box copy's strides differ in length from its extents"
        );
        if elem_size == 0 || extents.contains(&0) {
            return None;
        }
        let mut axes = Axes {
            len: 0,
            at: [Axis::default(); MAX_DIMS],
        };
        for (k, &n) in extents.iter().enumerate().filter(|(_, n)| **n > 1) {
            let (src, dst) = (src_strides[k] * elem_size, dst_strides[k] * elem_size);
            axes.at[axes.len] = Axis { n, src, dst };
            axes.len += 1;
        }
        axes.at[..axes.len].sort_by_key(|a| std::cmp::Reverse((a.dst, a.src)));
        axes.merge();
        Some(axes)
    }

    /// Merges each axis into its outer neighbour where the two are contiguous
    /// in both storages.
    fn merge(&mut self) {
        let mut kept = 0;
        for k in 0..self.len {
            let inner = self.at[k];
            if kept > 0 && self.at[kept - 1].continues_into(inner) {
                self.at[kept - 1] = Axis {
                    n: self.at[kept - 1].n * inner.n,
                    ..inner
                };
            } else {
                self.at[kept] = inner;
                kept += 1;
            }
        }
        self.len = kept;
    }

    /// The used axes.
    fn axes(&self) -> &[Axis] {
        &self.at[..self.len]
    }

    /// Copies the box with the loop its shape calls for, as part of a
    /// destination of `whole` bytes ([`copy_box_within`]).
    ///
    /// # Safety
    /// As [`copy_box_within`], with `mover` of its element size.
    unsafe fn copy<M: Mover>(&self, mover: M, src: *const u8, dst: *mut u8, whole: usize) {
        let axes = self.axes();
        let Some((&last, outer)) = axes.split_last() else {
            // SAFETY: the box's one element, as the caller guarantees.
            return unsafe { mover.move_one(src, dst) };
        };
        let fastest_src = (0..axes.len()).min_by_key(|&k| axes[k].src).unwrap_or(0);
        let unit = mover.size();
        // SAFETY: each loop visits the box's elements, as the caller guarantees.
        unsafe {
            if fastest_src + 1 < axes.len() {
                copy_transposed(mover, self, fastest_src, (src, dst), whole);
            } else if last.src == unit && last.dst == unit {
                copy_runs(outer, last.n * unit, (src, dst), whole);
            } else {
                copy_strided(mover, outer, last, src, dst);
            }
        }
    }
}

impl Axis {
    /// Whether `inner` is the next axis in, contiguous with this one in both
    /// storages, so that the two are one axis.
    fn continues_into(self, inner: Axis) -> bool {
        self.src == inner.src * inner.n && self.dst == inner.dst * inner.n
    }
}

/// Calls `visit` with the byte offsets into the source and the destination of
/// every index of `axes`, the last axis fastest.
fn for_each_offset(axes: &[Axis], mut visit: impl FnMut(usize, usize)) {
    let mut index = [0usize; MAX_DIMS];
    let (mut src, mut dst) = (0, 0);
    loop {
        visit(src, dst);
        let mut k = axes.len();
        loop {
            let Some(next) = k.checked_sub(1) else {
                return;
            };
            k = next;
            index[k] += 1;
            if index[k] < axes[k].n {
                src += axes[k].src;
                dst += axes[k].dst;
                break;
            }
            src -= axes[k].src * (axes[k].n - 1);
            dst -= axes[k].dst * (axes[k].n - 1);
            index[k] = 0;
        }
    }
}

/// Copies a run of `bytes` contiguous in both storages at every index of
/// `outer`, with non-temporal stores when the box (or the `whole` it is part
/// of) is large and its runs long.
///
/// # Safety
/// As [`copy_box_within`], for the runs.
unsafe fn copy_runs(outer: &[Axis], bytes: usize, (src, dst): (*const u8, *mut u8), whole: usize) {
    let total = whole.max(bytes * outer.iter().map(|axis| axis.n).product::<usize>());
    let streamed = total >= STREAM_BYTES && bytes >= STREAM_RUN;
    for_each_offset(outer, |s, d| {
        // SAFETY: one run of the box, in both storages, which do not overlap.
        unsafe {
            if streamed {
                copy_streamed(src.add(s), dst.add(d), bytes);
            } else {
                std::ptr::copy_nonoverlapping(src.add(s), dst.add(d), bytes);
            }
        }
    });
    if streamed {
        store_fence();
    }
}

/// Copies element by element along `inner` at every index of `outer`.
///
/// # Safety
/// As [`copy_box_within`].
unsafe fn copy_strided<M: Mover>(
    mover: M,
    outer: &[Axis],
    inner: Axis,
    src: *const u8,
    dst: *mut u8,
) {
    for_each_offset(outer, |s, d| {
        for i in 0..inner.n {
            // SAFETY: one element of the box in both storages.
            unsafe { mover.move_one(src.add(s + i * inner.src), dst.add(d + i * inner.dst)) }
        }
    });
}

/// Copies `axes` as a transpose of the plane of axis `a` (the source's
/// fastest) and the last axis (the destination's fastest), at every index of
/// the other axes: in tiles where a kernel fits (part of a destination of
/// `whole` bytes), else in staged blocks.
///
/// # Safety
/// As [`copy_box_within`].
unsafe fn copy_transposed<M: Mover>(
    mover: M,
    axes: &Axes,
    a: usize,
    (src, dst): (*const u8, *mut u8),
    whole: usize,
) {
    let all = axes.axes();
    let (b, last) = (all[all.len() - 1], all.len() - 1);
    let mut rest = [Axis::default(); MAX_DIMS];
    let mut len = 0;
    for (k, axis) in all.iter().enumerate().filter(|&(k, _)| k != a && k != last) {
        debug_assert!(k < last);
        rest[len] = *axis;
        len += 1;
    }
    let plane = (all[a], b);
    // SAFETY: forwarded from the caller.
    if unsafe { tiles::copy_tiled(mover.size(), plane, &rest[..len], (src, dst), whole) } {
        return;
    }
    let plane = Plane::new(all[a], b, mover.size());
    let mut staging = [0; STAGING];
    for_each_offset(&rest[..len], |s, d| {
        // SAFETY: one plane of the box, in both storages.
        unsafe { plane.copy(mover, &mut staging, src.add(s), dst.add(d)) }
    });
}

#[cfg(test)]
mod tests {
    use super::staged::PAGE;
    use super::*;
    use proptest::prelude::*;

    /// What no copy writes: every byte of the destination outside the box.
    const SENTINEL: u8 = 0xFF;

    /// One storage of a box: its strides in elements and the byte the box
    /// starts at in its buffer (unaligned on purpose).
    #[derive(Clone, Debug)]
    struct Storage {
        strides: Vec<usize>,
        start: usize,
    }

    impl Storage {
        /// The elements the storage spans: one past its last element.
        fn span(&self, extents: &[usize]) -> usize {
            let last: usize = extents
                .iter()
                .zip(&self.strides)
                .map(|(n, s)| (n - 1) * s)
                .sum();
            last + 1
        }

        /// The byte offset of box element `index`.
        fn offset(&self, elem_size: usize, index: &[usize]) -> usize {
            let element: usize = index.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
            self.start + element * elem_size
        }
    }

    /// The strides of an array stored in `order` (outermost axis first) with
    /// `pad` elements after each axis's extent, `step` the innermost stride.
    fn strides(extents: &[usize], order: &[usize], pad: &[usize], step: usize) -> Vec<usize> {
        let mut strides = vec![0; extents.len()];
        let mut next = step;
        for &k in order.iter().rev() {
            strides[k] = next;
            next *= extents[k].max(1) + pad[k];
        }
        strides
    }

    /// Every index of a box, the last axis fastest.
    fn indices(extents: &[usize]) -> Vec<Vec<usize>> {
        let mut all = vec![vec![]];
        for &n in extents {
            all = all
                .into_iter()
                .flat_map(|i| (0..n).map(move |k| [&i[..], &[k]].concat()))
                .collect();
        }
        all
    }

    /// A cache line of bytes, aligned to one.
    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Line([u8; 64]);

    /// A buffer of `bytes` bytes or more set to `fill`, starting a line (so
    /// that a storage's `start` fixes its alignment).
    fn lines(bytes: usize, fill: u8) -> Vec<Line> {
        vec![Line([fill; 64]); bytes.div_ceil(64)]
    }

    /// The bytes of `lines`.
    fn bytes_of(lines: &mut [Line]) -> &mut [u8] {
        // SAFETY: a line is 64 bytes without padding, borrowed as long.
        unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast(), lines.len() * 64) }
    }

    /// Copies the box with [`copy_box_within`] between fresh buffers and checks every
    /// element and every byte outside the box in the destination.
    fn check(elem_size: usize, extents: &[usize], src: &Storage, dst: &Storage) {
        check_within(elem_size, extents, (src, dst), 0);
    }

    /// The byte a test's input holds at `b`: no two neighbours alike.
    fn input_byte(b: usize) -> u8 {
        (b * 131 % 251) as u8
    }

    /// [`check`] with [`copy_box_within`], the box part of a destination of
    /// `whole` bytes, with every set of tile kernels the processor runs.
    fn check_within(
        elem_size: usize,
        extents: &[usize],
        storages: (&Storage, &Storage),
        whole: usize,
    ) {
        tiles::for_each_kernel_set(|| check_once(elem_size, extents, storages, whole));
    }

    /// [`check_within`] with the tile kernels of this run.
    fn check_once(
        elem_size: usize,
        extents: &[usize],
        (src, dst): (&Storage, &Storage),
        whole: usize,
    ) {
        let empty = extents.contains(&0);
        let bytes = |s: &Storage| {
            s.start
                + if empty {
                    0
                } else {
                    s.span(extents) * elem_size
                }
        };
        let mut input_lines = lines(bytes(src), 0);
        let input = &mut bytes_of(&mut input_lines)[..bytes(src)];
        input
            .iter_mut()
            .enumerate()
            .for_each(|(b, byte)| *byte = input_byte(b));
        let mut output_lines = lines(bytes(dst), SENTINEL);
        let output = &mut bytes_of(&mut output_lines)[..bytes(dst)];
        let copy = BoxCopy {
            extents,
            src_strides: &src.strides,
            dst_strides: &dst.strides,
        };
        // SAFETY: the buffers span both storages (or the box is empty), and the
        // destination's strides come from a non-overlapping storage.
        unsafe {
            let (from, to) = (
                input.as_ptr().add(src.start),
                output.as_mut_ptr().add(dst.start),
            );
            copy_box_within(elem_size, copy, from, to, whole);
        }
        let mut want = vec![SENTINEL; output.len()];
        for index in indices(extents) {
            let (s, d) = (src.offset(elem_size, &index), dst.offset(elem_size, &index));
            want[d..d + elem_size].copy_from_slice(&input[s..s + elem_size]);
        }
        assert_eq!(
            *output, want,
            "extents {extents:?}, src {src:?}, dst {dst:?}"
        );
        assert!(
            input
                .iter()
                .enumerate()
                .all(|(b, &byte)| byte == input_byte(b)),
            "input written: extents {extents:?}, src {src:?}, dst {dst:?}"
        );
    }

    /// A random storage for `extents`: a random axis order, padding, innermost
    /// step, start, and any stride on axes of extent 1.
    fn storage(extents: Vec<usize>) -> impl Strategy<Value = Storage> {
        let d = extents.len();
        (
            Just((0..d).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(prop_oneof![3 => Just(0usize), 1 => 1usize..4], d),
            prop_oneof![4 => Just(1usize), 1 => 2usize..4],
            0usize..64,
            prop::collection::vec(0usize..50, d),
        )
            .prop_map(move |(order, pad, step, start, odd)| {
                let mut strides = strides(&extents, &order, &pad, step);
                for k in (0..d).filter(|&k| extents[k] == 1) {
                    strides[k] = odd[k];
                }
                Storage { strides, start }
            })
    }

    /// A random box: its element size, extents and both storages.
    fn case() -> impl Strategy<Value = (usize, Vec<usize>, Storage, Storage)> {
        let sizes = prop::sample::select(vec![1usize, 2, 3, 4, 8, 12, 16]);
        let extent = prop_oneof![1 => Just(0usize), 3 => Just(1usize), 8 => 2usize..10];
        (sizes, prop::collection::vec(extent, 1..=5)).prop_flat_map(|(size, extents)| {
            let e = extents.clone();
            (Just(size), Just(extents), storage(e.clone()), storage(e))
        })
    }

    /// A random box of tiles: elements of a tile kernel's size, two or three
    /// axes of up to a few tiles, both storages random.
    fn tiled_case() -> impl Strategy<Value = (usize, Vec<usize>, Storage, Storage)> {
        let sizes = prop::sample::select(vec![4usize, 8, 16]);
        (sizes, prop::collection::vec(1usize..50, 2..=3)).prop_flat_map(|(size, extents)| {
            let e = extents.clone();
            (Just(size), Just(extents), storage(e.clone()), storage(e))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn copies_every_element_and_nothing_else((size, extents, src, dst) in case()) {
            check(size, &extents, &src, &dst);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn copies_boxes_of_whole_and_part_tiles((size, extents, src, dst) in tiled_case()) {
            check(size, &extents, &src, &dst);
        }
    }

    /// The C-order storage of `extents` permuted by `order`, at byte 1.
    fn permuted(extents: &[usize], order: &[usize]) -> Storage {
        let pad = vec![0; extents.len()];
        Storage {
            strides: strides(extents, order, &pad, 1),
            start: 1,
        }
    }

    #[test]
    fn transposes_a_plane_of_several_blocks() {
        for size in [1, 2, 3, 4, 8, 12, 16, 24] {
            let extents = [37, 53];
            check(
                size,
                &extents,
                &permuted(&extents, &[0, 1]),
                &permuted(&extents, &[1, 0]),
            );
            let extents = [130, 77];
            check(
                size,
                &extents,
                &permuted(&extents, &[1, 0]),
                &permuted(&extents, &[0, 1]),
            );
        }
    }

    #[test]
    fn transposes_blocks_whose_destination_rows_lie_in_distinct_pages() {
        // Source rows shorter, then longer, than the destination's, so that
        // either axis is the inner loop, neither a whole number of blocks.
        for (size, extents) in [(8, [530, 21]), (12, [350, 70]), (8, [520, 700])] {
            let (src, dst) = (permuted(&extents, &[0, 1]), permuted(&extents, &[1, 0]));
            assert!(dst.strides[1] * size >= PAGE);
            check(size, &extents, &src, &dst);
        }
        let extents = [600, 3, 45];
        check(
            8,
            &extents,
            &permuted(&extents, &[0, 1, 2]),
            &permuted(&extents, &[2, 1, 0]),
        );
    }

    /// The C-order storage of `extents` permuted by `order`, `start` bytes past
    /// a line.
    fn permuted_at(extents: &[usize], order: &[usize], start: usize) -> Storage {
        Storage {
            start,
            ..permuted(extents, order)
        }
    }

    /// A message's unpack: the box (z, y, x) from contiguous C order to a
    /// y-fastest pencil whose rows hold `pad` more elements (the tiles then go
    /// in the destination's order), each side `start` bytes past a line.
    fn check_unpack(size: usize, extents: [usize; 3], pad: usize, start: usize) {
        let src = permuted_at(&extents, &[0, 1, 2], start);
        let dst = Storage {
            strides: strides(&extents, &[0, 2, 1], &[0, pad, 0], 1),
            start,
        };
        check(size, &extents, &src, &dst);
        check(size, &extents, &dst, &src);
    }

    #[test]
    fn transposes_in_tiles_for_every_kernel() {
        for size in [4, 8, 16] {
            let side = 64 / size;
            // Partial tiles at every edge, planes narrower than a tile, rows
            // starting lines or not, and elements not aligned to their size.
            let planes = [
                [3 * side + 5, 2 * side + 3],
                [side - 1, side + 1],
                [side, side],
                [2 * side + 1, side - 1],
            ];
            let starts = [(0, 0), (size, 3 * size), (64 - size, 0), (3, 5)];
            for (extents, (from, to)) in planes.iter().flat_map(|p| starts.map(|s| (p, s))) {
                let src = permuted_at(extents, &[0, 1], from);
                check(size, extents, &src, &permuted_at(extents, &[1, 0], to));
            }
            let extents = [3, side + 7, 2 * side + 1];
            for order in [[0, 2, 1], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
                let src = permuted_at(&extents, &[0, 1, 2], size);
                check(size, &extents, &src, &permuted_at(&extents, &order, 0));
            }
            // Rows in distinct pages, in bursts of tiles and a part burst: the
            // destination's (the source's order), then the source's.
            let far = 66 * side + 3;
            let extents = [far, 2 * side + 1];
            let src = permuted_at(&extents, &[0, 1], size);
            check(size, &extents, &src, &permuted_at(&extents, &[1, 0], 0));
            for start in [0, size] {
                check_unpack(size, [3, 2 * side + 3, side + 5], 7, start);
                check_unpack(size, [2, 2 * side + 1, far], 5, start);
            }
        }
    }

    #[test]
    fn transposes_in_tiles_rows_with_a_step() {
        for size in [4, 8, 16] {
            let side = 64 / size;
            // Steps of 2, 3 and 9 elements in the source's rows, the
            // destination's, or both; part tiles at every edge, into rows
            // starting lines or not, in the destination's order (a step of
            // 2 into C-order rows) and in the source's.
            let extents = [3, 2 * side + 3, 3 * side + 5];
            for (from, to) in [(2, 1), (3, 1), (9, 1), (1, 2), (1, 3), (3, 2)] {
                let src = Storage {
                    strides: strides(&extents, &[0, 1, 2], &[0, 0, 0], from),
                    start: size,
                };
                for (order, start) in [([0, 2, 1], 0), ([2, 0, 1], 0), ([0, 2, 1], 3 * size)] {
                    let dst = Storage {
                        strides: strides(&extents, &order, &[0, 0, 0], to),
                        start,
                    };
                    check(size, &extents, &src, &dst);
                }
            }
            // Large enough to stream, from a step of 2: into rows that start
            // lines (streamed, in the source's order), into rows 16 bytes
            // past a line less than a page long (streamed, in the
            // destination's order), and into rows with a step (not streamed).
            let stepped = |extents: &[usize]| Storage {
                strides: strides(extents, &[0, 1, 2], &[0, 0, 0], 2),
                start: 0,
            };
            let cases = [
                ([8, 67, 2400 / size], 13, 0, 1),
                ([8, 67, 2000 / size], 71, 16, 1),
                ([8, 67, 2400 / size], 3, 16, 2),
            ];
            for (extents, pad, start, step) in cases {
                let dst = Storage {
                    strides: strides(&extents, &[0, 2, 1], &[0, pad, 0], step),
                    start,
                };
                check(size, &extents, &stepped(&extents), &dst);
            }
        }
    }

    #[test]
    fn copies_the_elements_beside_the_tiles_in_blocks() {
        // Destination rows 160 bytes apart (starting at two offsets in a
        // line), each starting every element position of a 16-byte unit:
        // the elements beside the tiles in 16-byte blocks after a lead of
        // single elements, with single elements after; alone, and part of a
        // large destination (streamed for elements of 8 bytes, in 16-byte
        // units).
        for size in [4, 8] {
            let side = 64 / size;
            let extents = [3, 2 * side + 3, 3 * side + 7];
            let pad = 160 / size - extents[1];
            let src = permuted_at(&extents, &[0, 1, 2], size);
            for start in (0..16).step_by(size) {
                let dst = Storage {
                    strides: strides(&extents, &[0, 2, 1], &[0, pad, 0], 1),
                    start,
                };
                check(size, &extents, &src, &dst);
                check_within(size, &extents, (&src, &dst), 1 << 20);
            }
        }
        // 4-byte elements streamed in whole lines (rows of 48 elements, the
        // last 5 of 37 beside the tiles: one block, then one element).
        let extents = [3, 37, 70];
        let dst = Storage {
            strides: strides(&extents, &[0, 2, 1], &[0, 11, 0], 1),
            start: 0,
        };
        let src = permuted_at(&extents, &[0, 1, 2], 4);
        check_within(4, &extents, (&src, &dst), 1 << 20);
    }

    #[test]
    fn streams_rows_that_start_at_many_offsets_in_a_line_through_a_band() {
        // Part of a large destination, y-fastest rows a stride apart that is
        // not a multiple of 32 bytes (so they start at four offsets in a line
        // or more), each row long enough for three parts of the band, the
        // last elements after the tiles, and partial tiles across: first rows
        // at every offset of a 16-byte unit that is a multiple of the
        // element's size, and 48 bytes in; from contiguous source rows and
        // from source rows with a step.
        for size in [4, 8, 16] {
            let side = 64 / size;
            let max_tiles = tiles::BAND_BYTES / side / 64;
            let extents = [2, (2 * max_tiles + 1) * side + 5, 2 * side + 3];
            let sources = [
                permuted_at(&extents, &[0, 1, 2], 3 * size),
                Storage {
                    strides: strides(&extents, &[0, 1, 2], &[0, 0, 0], 2),
                    start: size,
                },
            ];
            for pad in [2, 4, 6] {
                let dst_strides = strides(&extents, &[0, 2, 1], &[0, pad, 0], 1);
                assert!(
                    !(dst_strides[2] * size).is_multiple_of(32),
                    "rows {pad} apart"
                );
                for (src, start) in sources
                    .iter()
                    .flat_map(|s| (0..16).step_by(size).chain([48]).map(move |at| (s, at)))
                {
                    let dst = Storage {
                        strides: dst_strides.clone(),
                        start,
                    };
                    check_within(size, &extents, (src, &dst), 1 << 20);
                }
            }
        }
    }

    #[test]
    fn streams_the_tiles_of_a_box_larger_than_the_caches() {
        // 1 MiB boxes or more: destination rows starting lines (streamed), or
        // 16 bytes past them (streamed in 16-byte stores, as a halo of two
        // 8-byte elements puts them), or not, in the source's order and in
        // the destination's.
        for size in [4, 8, 16] {
            let extents = [4, 128, 2048 / size];
            let cases = [
                ([0, 2, 1], 0),
                ([2, 1, 0], 0),
                ([0, 2, 1], size),
                ([0, 2, 1], 16),
            ];
            for (order, to) in cases {
                let src = permuted_at(&extents, &[0, 1, 2], 3 * size);
                check(size, &extents, &src, &permuted_at(&extents, &order, to));
            }
            check_unpack(size, [4, 67, 66 * 64 / size + 3], 5, 0);
            // In the destination's order (source rows less than a page long),
            // streamed: rows 16 bytes past a line, straight from the tiles
            // for elements of 8 bytes (pad 1: rows that alternate between
            // starting 32-byte units and 16 bytes past them) and 16 (pads 1
            // and 3), through the band for rows at four offsets in a line or
            // more (the others).
            for pad in [1, 3, 4] {
                check_unpack(size, [8, 67, 2400 / size], pad, 16);
            }
        }
    }

    #[test]
    fn streams_the_runs_of_a_box_larger_than_the_caches() {
        // 1.2 MB: runs of 4800 bytes between padded rows, then one run, each
        // side starting anywhere in a line.
        let extents = [4, 64, 600];
        for (from, to) in [(0, 0), (3, 5), (8, 61)] {
            let padded = Storage {
                strides: strides(&extents, &[0, 1, 2], &[1, 2, 3], 1),
                start: from,
            };
            check(8, &extents, &padded, &permuted_at(&extents, &[0, 1, 2], to));
            let src = permuted_at(&extents, &[0, 1, 2], from);
            check(8, &extents, &src, &permuted_at(&extents, &[0, 1, 2], to));
        }
    }

    #[test]
    fn streams_a_large_box_in_the_source_order_when_its_source_rows_span_far() {
        // Source rows spanning 256 KiB or more, fewer than the destination's:
        // the source's order, whole lines streamed; then the same rows not
        // starting lines (the destination's order).
        for (size, outer) in [(4, 8), (8, 4), (16, 2)] {
            let extents = [outer, 128, 256];
            let src = permuted_at(&extents, &[0, 1, 2], size);
            for to in [0, size] {
                let dst = Storage {
                    strides: strides(&extents, &[0, 2, 1], &[0, 128, 0], 1),
                    start: to,
                };
                check(size, &extents, &src, &dst);
            }
        }
    }

    #[test]
    fn streams_a_small_part_of_a_large_destination() {
        // Tiles whose destination rows start lines, then lines apart or not,
        // and runs long enough to stream, each part of a 1 MiB destination.
        for size in [4, 8, 16] {
            let extents = [3, 128 / size, 128 / size + 1];
            let src = permuted_at(&extents, &[0, 1, 2], size);
            for (order, to) in [([0, 2, 1], 0), ([2, 1, 0], 0), ([0, 2, 1], size)] {
                let dst = permuted_at(&extents, &order, to);
                check_within(size, &extents, (&src, &dst), 1 << 20);
            }
            // Destination rows 16 bytes longer: apart by 16-byte units, not
            // lines, in the destination's order.
            let dst = Storage {
                strides: strides(&extents, &[0, 2, 1], &[0, 16 / size, 0], 1),
                start: 0,
            };
            check_within(size, &extents, (&src, &dst), 1 << 20);
        }
        let extents = [3, 5, 70];
        for (from, to) in [(0, 0), (3, 5)] {
            let padded = Storage {
                strides: strides(&extents, &[0, 1, 2], &[0, 1, 2], 1),
                start: from,
            };
            let dst = permuted_at(&extents, &[0, 1, 2], to);
            check_within(8, &extents, (&padded, &dst), 1 << 20);
        }
    }

    #[test]
    fn reverses_the_axes_of_a_box() {
        for size in [1, 8, 12] {
            let extents = [5, 70, 9];
            check(
                size,
                &extents,
                &permuted(&extents, &[0, 1, 2]),
                &permuted(&extents, &[2, 1, 0]),
            );
        }
    }

    #[test]
    fn copies_the_interior_of_a_halo_array() {
        let extents = [6, 7, 8];
        let src = Storage {
            strides: vec![10 * 12, 12, 1],
            start: 3,
        };
        check(8, &extents, &src, &permuted(&extents, &[0, 1, 2]));
        check(8, &extents, &permuted(&extents, &[0, 1, 2]), &src);
    }

    #[test]
    fn normalizing_merges_the_axes_contiguous_in_both() {
        let copy = BoxCopy {
            extents: &[4, 1, 5, 6],
            src_strides: &[30, 0, 6, 1],
            dst_strides: &[1, 9, 24, 4],
        };
        let axes = Axes::normalized(2, copy).expect("a box of 120 elements");
        let want = [
            Axis {
                n: 30,
                src: 2,
                dst: 8,
            },
            Axis {
                n: 4,
                src: 60,
                dst: 2,
            },
        ];
        assert_eq!(axes.axes(), want);
        let empty = BoxCopy {
            extents: &[4, 0],
            src_strides: &[1, 1],
            dst_strides: &[1, 1],
        };
        assert!(Axes::normalized(2, empty).is_none());
    }
}
