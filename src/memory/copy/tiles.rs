//! The transpose of a plane for elements of 4, 8 or 16 bytes: square tiles of
//! one cache line a side, each read as rows and written as columns straight
//! from registers where the source's rows and the destination's are both
//! contiguous, and gathered or scattered element by element where either has
//! a step (`stepped.rs`).
//!
//! The tiles go along one side's rows, every tile of a row of tiles in turn,
//! the other axes outside in that side's order: along the source's (read as a
//! few streams), unless the source's rows span less than the destination's
//! (then the strided side, read, stays in the caches between passes). A box
//! too large for the caches and streamed in whole lines, whose source rows
//! span [`TLB_REACH`] or more, goes in the source's order anyway: a pass down
//! those rows would miss the TLB and the prefetchers at every tile, with
//! nothing to keep in the caches, while the streamed destination takes whole
//! lines in any order. The other side is met a line per row per tile, or,
//! when its rows lie in distinct pages, [`FAR_BURST`] lines per row (tiles in
//! bursts), so that a visit to a page moves more than a line. The tiles start
//! where the destination's rows start a line when they are contiguous and a
//! multiple of [`ROW_PHASES`] bytes apart, so that a tile writes whole lines
//! (rows with a step, or at more offsets in a line, start them at their first
//! element), and where the source's rows start (a line read in part by one tile
//! is read by the next, or, in the destination's order, stays in the caches
//! until the next pass): peeling the source too would leave whole strips to
//! move element by element. The elements outside the tiles move one by one,
//! except those beside a row of tiles in the destination's order into
//! contiguous destination rows: they go along with it (their source lines
//! asked for before its tiles, as no prefetcher goes back to the start of a
//! row of tiles), in 16-byte blocks of each destination row where the rows
//! keep 16-byte units and the source's rows are contiguous, and with
//! non-temporal stores when the tiles have them: their part lines, which
//! another copy (or nothing) completes, are then not read from memory first,
//! which was most of what a transpose into rows that do not start a line cost
//! over one into rows that do. A box of [`STREAM_BYTES`] or more, or part of
//! a destination that large ([`super::copy_box_within`]), into contiguous
//! destination rows, is written with non-temporal stores (where the target
//! has them): its lines are then never read before they are written, and no
//! line of it is evicted and written twice (a destination with a step is
//! written in part lines, read first whatever the stores). So it is when
//! every destination row starts a line, each tile then writing whole lines;
//! or, for elements of 8 or 16 bytes, when the rows start at multiples of
//! [`STORE`] bytes, a multiple of [`ROW_PHASES`] bytes and less than a page
//! apart (a halo of two 8-byte elements), and the tiles go in the
//! destination's order one at a time: a tile then leaves two part lines in
//! each of its 8 or 4 rows, which the next tile along those rows completes
//! while they are still being combined (the 16 rows of a 4-byte tile would
//! leave too many). Rows a stride apart that is not a multiple of 32 bytes
//! (rows of 256 8-byte elements inside a halo of one or three, or of 256
//! 4-byte ones inside a halo of one to three) start at four offsets in a line
//! or more, which leave too many part lines for any tile order: the tiles
//! start at each row's first element, and a large box's rows of tiles in the
//! destination's order, one tile a visit, go through a [`Band`], a buffer in
//! the caches, out of which each row is streamed in whole lines.
//!
//! The kernels of contiguous rows come in three sets, chosen once per copy by
//! what the processor runs: narrow (16-byte registers, SSE2 on every x86-64;
//! element moves elsewhere), AVX (32-byte registers, each loaded from two
//! source rows) and wide (a tile row in one 64-byte register, AVX-512F). Rows
//! with a step take the kernels of `stepped.rs` whatever the set.

use super::stream::{STREAM_BYTES, copy_element_streamed, copy_streamed_elements, store_fence};
use super::{Axis, Fixed, Mover, for_each_offset};
use crate::distribution::layout::MAX_DIMS;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use stepped::{Gather, Scatter};

/// The bytes of a cache line: one side of a tile.
const LINE: usize = 64;

/// The bytes of a tile kernel's store, to which its non-temporal stores are
/// aligned.
const STORE: usize = 16;

/// The bytes of a page: rows this far apart each lie in another.
const PAGE: usize = 4096;

/// The bytes the first-level TLB reaches (64 pages): a pass down a column
/// of source rows spanning more misses it at every tile.
const TLB_REACH: usize = 64 * PAGE;

/// The tiles of a burst: the lines a visit to a row of the strided side
/// moves when its rows lie in distinct pages.
const FAR_BURST: usize = 4;

/// Destination rows a multiple of this many bytes apart start at one or two
/// offsets in a line; rows a stride apart that is not a multiple of it start
/// at four or more, and the rows of tiles of a large box into them go through
/// a [`Band`] (in the destination's order, one tile a visit, the rows'
/// elements aligned to their size).
const ROW_PHASES: usize = 32;

/// The bytes of a [`Band`]'s tiles at most.
pub(super) const BAND_BYTES: usize = 16 << 10;

/// The bytes of a [`Band`]'s buffer: its tiles, and a line more on each of
/// its rows (at most 16, of 4-byte elements), so that its rows start at other
/// sets of the caches.
const BAND_BUFFER_BYTES: usize = BAND_BYTES + (LINE / 4) * LINE;

/// Copies the plane of `a` (the source's fastest axis) and `b` (the
/// destination's), either with a step or not, at every index of `rest` in
/// tiles, when elements of `size` bytes have a tile kernel, as part of a
/// destination of `whole` bytes ([`super::copy_box_within`]). Returns whether
/// it copied.
///
/// # Safety
/// As [`super::copy_box_within`], for the box of `a`, `b` and `rest`.
pub(super) unsafe fn copy_tiled(
    size: usize,
    plane: (Axis, Axis),
    rest: &[Axis],
    (src, dst): (*const u8, *mut u8),
    whole: usize,
) -> bool {
    let (a, b) = plane;
    let tiled = Tiled { a, b, rest, whole };
    // SAFETY: forwarded from the caller.
    unsafe { tiled.copy_sized(size, Isa::detected(), src, dst) }
}

/// The instructions the tile kernels are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    /// 16-byte registers: SSE2 on x86-64, element moves elsewhere.
    Narrow,
    /// 32-byte registers (AVX), each loaded from two source rows; 4-byte
    /// elements take the narrow kernels.
    #[cfg(target_arch = "x86_64")]
    Avx,
    /// 64-byte registers (AVX-512F): a tile row in one register.
    #[cfg(target_arch = "x86_64")]
    Wide,
}

impl Isa {
    /// The widest this processor runs (in tests, the set `for_each_kernel_set`
    /// is running).
    fn detected() -> Isa {
        #[cfg(test)]
        if let Some(isa) = FORCED.get() {
            return isa;
        }
        Isa::widest()
    }

    /// The widest kernels this processor runs.
    fn widest() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Isa::Wide;
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            return Isa::Avx;
        }
        Isa::Narrow
    }

    /// Every set this processor runs, the widest first.
    #[cfg(test)]
    fn runnable() -> Vec<Isa> {
        #[cfg(target_arch = "x86_64")]
        let sets = [Isa::Wide, Isa::Avx, Isa::Narrow];
        #[cfg(not(target_arch = "x86_64"))]
        let sets = [Isa::Narrow];
        let widest = sets.iter().position(|&isa| isa == Isa::widest());
        sets[widest.unwrap_or(0)..].to_vec()
    }
}

#[cfg(test)]
thread_local! {
    /// The kernels this thread's tiled copies take whatever the processor
    /// runs, when set.
    static FORCED: std::cell::Cell<Option<Isa>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with each set of kernels this processor runs, so that a test
/// covers them all.
#[cfg(test)]
pub(super) fn for_each_kernel_set(mut f: impl FnMut()) {
    for isa in Isa::runnable() {
        FORCED.set(Some(isa));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut f));
        FORCED.set(None);
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }
}

/// The box of a tiled transpose.
struct Tiled<'a> {
    /// The source's fastest axis (a step where its stride is more than one
    /// element).
    a: Axis,
    /// The destination's fastest axis (a step where its stride is more than
    /// one element).
    b: Axis,
    /// The other axes.
    rest: &'a [Axis],
    /// The bytes of the destination the box is part of (0 when none).
    whole: usize,
}

/// Where the tiles of a plane lie along one of its axes: `start` elements
/// before them, then `count` tiles.
#[derive(Clone, Copy)]
struct Span {
    /// The elements before the first tile.
    start: usize,
    /// The whole tiles.
    count: usize,
}

impl Span {
    /// The span along an axis of `n` elements of `N` bytes whose rows start at
    /// `at`: the first tile starts a line, unless no element can (`at` not a
    /// multiple of `N`).
    fn new<const N: usize>(n: usize, at: *const u8) -> Span {
        let to_line = (LINE - at as usize % LINE) % LINE;
        let start = if to_line.is_multiple_of(N) {
            to_line / N
        } else {
            0
        }
        .min(n);
        Span {
            start,
            count: (n - start) / (LINE / N),
        }
    }

    /// The span along an axis of `n` elements of `N` bytes whose first tile
    /// starts at its first element.
    fn from_first<const N: usize>(n: usize) -> Span {
        Span {
            start: 0,
            count: n / (LINE / N),
        }
    }

    /// One past the last element in a tile.
    fn end<const N: usize>(self) -> usize {
        self.start + self.count * (LINE / N)
    }
}

impl Tiled<'_> {
    /// Copies the box, elements of `size` bytes, with the kernels of `isa`;
    /// returns whether `size` has kernels.
    ///
    /// # Safety
    /// As [`copy_tiled`].
    unsafe fn copy_sized(&self, size: usize, isa: Isa, src: *const u8, dst: *mut u8) -> bool {
        // SAFETY: forwarded from the caller; the AVX and wide kernels only
        // where the processor has AVX and AVX-512F.
        unsafe {
            let (gathered, scattered) = (self.a.src != size, self.b.dst != size);
            match (size, isa) {
                (4, _) if scattered => self.copy::<4, Scatter<4>>(src, dst),
                (8, _) if scattered => self.copy::<8, Scatter<8>>(src, dst),
                (16, _) if scattered => self.copy::<16, Scatter<16>>(src, dst),
                (4, _) if gathered => self.copy::<4, Gather<4>>(src, dst),
                (8, _) if gathered => self.copy::<8, Gather<8>>(src, dst),
                (16, _) if gathered => self.copy::<16, Gather<16>>(src, dst),
                (4, Isa::Narrow) => self.copy::<4, Tile<4>>(src, dst),
                (8, Isa::Narrow) => self.copy::<8, Tile<8>>(src, dst),
                (16, Isa::Narrow) => self.copy::<16, Tile<16>>(src, dst),
                #[cfg(target_arch = "x86_64")]
                (4, Isa::Avx) => self.copy::<4, Tile<4>>(src, dst),
                #[cfg(target_arch = "x86_64")]
                (8, Isa::Avx) => self.copy::<8, avx::Avx<8>>(src, dst),
                #[cfg(target_arch = "x86_64")]
                (16, Isa::Avx) => self.copy::<16, avx::Avx<16>>(src, dst),
                #[cfg(target_arch = "x86_64")]
                (4, Isa::Wide) => self.copy::<4, avx512::Wide<4>>(src, dst),
                #[cfg(target_arch = "x86_64")]
                (8, Isa::Wide) => self.copy::<8, avx512::Wide<8>>(src, dst),
                #[cfg(target_arch = "x86_64")]
                (16, Isa::Wide) => self.copy::<16, avx512::Wide<16>>(src, dst),
                _ => return false,
            }
        }
        true
    }

    /// Copies the box, elements of `N` bytes, in tiles of `K`.
    ///
    /// # Safety
    /// As [`copy_tiled`], and `K` runnable on this processor.
    unsafe fn copy<const N: usize, K: RowKernel>(&self, src: *const u8, dst: *mut u8) {
        let (a, b) = (self.a, self.b);
        let span_a = Span::from_first::<N>(a.n);
        // Rows that start at four offsets in a line or more have no line
        // start the tiles could share: they start at the rows' first elements.
        let span_b = match b.dst == N && a.dst.is_multiple_of(ROW_PHASES) {
            true => Span::new::<N>(b.n, dst),
            false => Span::from_first::<N>(b.n),
        };
        // SAFETY: the tiles (with the elements beside them in their bands of
        // destination rows, when they go in the destination's order into
        // contiguous rows), then the elements outside them, cover the box
        // once.
        unsafe {
            let mut tiled = Tiles::default();
            if span_a.count > 0 && span_b.count > 0 {
                let corner = (
                    src.add(span_a.start * a.src + span_b.start * b.src),
                    dst.add(span_a.start * a.dst + span_b.start * b.dst),
                );
                tiled = self.copy_tiles::<N, K>((span_a, span_b), corner.0, corner.1);
            }
            if tiled.stream {
                self.copy_edges::<N, true>((span_a, span_b), tiled.beside, src, dst);
                store_fence();
            } else {
                self.copy_edges::<N, false>((span_a, span_b), tiled.beside, src, dst);
            }
        }
    }

    /// Copies the tiles of the box, the first at `src` and `dst`; in the
    /// destination's order into contiguous destination rows, also the
    /// elements beside them along `b` (before and after them in each band of
    /// destination rows). A fence must follow when they were streamed.
    ///
    /// # Safety
    /// As [`copy_tiled`], for the tiles and, when they go with them, the
    /// elements beside them.
    unsafe fn copy_tiles<const N: usize, K: RowKernel>(
        &self,
        (span_a, span_b): (Span, Span),
        src: *const u8,
        dst: *mut u8,
    ) -> Tiles {
        let (a, b) = (self.a, self.b);
        let side = LINE / N;
        let tiles = |n: usize, axis: Axis| Axis {
            n,
            src: side * axis.src,
            dst: side * axis.dst,
        };
        let (tiles_a, tiles_b) = (tiles(span_a.count, a), tiles(span_b.count, b));
        let bytes = N * a.n * b.n * self.rest.iter().map(|axis| axis.n).product::<usize>();
        let large = bytes.max(self.whole) >= STREAM_BYTES;
        let starts = |unit: usize| {
            (dst as usize).is_multiple_of(unit)
                && a.dst.is_multiple_of(unit)
                && self.rest.iter().all(|axis| axis.dst.is_multiple_of(unit))
        };
        // Only contiguous destination rows are streamed, or take the
        // elements beside the tiles along.
        let dst_rows = b.dst == N;
        let lines = large && dst_rows && starts(LINE);
        let far_source = lines && bytes >= STREAM_BYTES && b.n * b.src >= TLB_REACH;
        let dst_order = !far_source && b.n * b.src < a.n * a.dst;
        let (across, along, far) = if dst_order {
            (tiles_a, tiles_b, b.src)
        } else {
            (tiles_b, tiles_a, a.dst)
        };
        let burst = if far >= PAGE { FAR_BURST } else { 1 };
        // Part lines (rows starting 16-byte units) are completed by the next
        // tile along the same rows only in the destination's order, one tile
        // a visit, and only while few: 8 or 4 rows a tile.
        let stream = lines
            || (large
                && dst_rows
                && dst_order
                && burst == 1
                && N >= 8
                && a.dst < PAGE
                && starts(STORE));
        // Rows that start at four offsets in a line or more take too many
        // lines in part for a tile's stores to be combined into whole lines:
        // their tiles go through a band buffer, and each row out of it in
        // whole lines.
        let banded = cfg!(target_arch = "x86_64")
            && large
            && dst_rows
            && dst_order
            && burst == 1
            && !a.dst.is_multiple_of(ROW_PHASES)
            && starts(N);
        let stream = stream || banded;
        let whole = across.n / burst;
        let beside = Beside {
            before: span_b.start,
            after: b.n - span_b.end::<N>(),
            along: span_b.count * side,
        };
        let sweep = Sweep {
            across: Axis {
                n: whole,
                src: burst * across.src,
                dst: burst * across.dst,
            },
            burst: (burst, across),
            along,
            dst_order,
            beside: dst_order && dst_rows,
            stream,
            banded,
        };
        // SAFETY: the tiles in whole bursts, then the tiles left, in one burst.
        unsafe {
            if whole > 0 {
                self.sweep::<N, K>(sweep, beside, src, dst);
            }
            let left = across.n - whole * burst;
            if left > 0 {
                let sweep = Sweep {
                    across: Axis { n: 1, ..across },
                    burst: (left, across),
                    ..sweep
                };
                let (s, d) = (whole * burst * across.src, whole * burst * across.dst);
                self.sweep::<N, K>(sweep, beside, src.add(s), dst.add(d));
            }
        }
        Tiles {
            beside: sweep.beside,
            stream,
        }
    }

    /// Copies the tiles of `sweep` from `src` and `dst`, and when
    /// `sweep.beside` the elements `beside` each row of tiles, while the rows
    /// they lie in are fresh.
    ///
    /// # Safety
    /// As [`copy_tiled`], for the tiles and the elements beside them.
    unsafe fn sweep<const N: usize, K: RowKernel>(
        &self,
        sweep: Sweep,
        beside: Beside,
        src: *const u8,
        dst: *mut u8,
    ) {
        let (a, b) = (self.a, self.b);
        let mut outer = [Axis::default(); MAX_DIMS];
        outer[..self.rest.len()].copy_from_slice(self.rest);
        outer[self.rest.len()] = sweep.across;
        let outer = &mut outer[..=self.rest.len()];
        if sweep.dst_order {
            outer.sort_by_key(|axis| std::cmp::Reverse(axis.dst));
        } else {
            outer.sort_by_key(|axis| std::cmp::Reverse(axis.src));
        }
        let row = TileRow {
            along: sweep.along,
            burst: sweep.burst,
            rows: (b.src, a.dst),
            steps: (a.src, b.dst),
            stream: sweep.stream,
        };
        // SAFETY: forwarded from the caller; a band takes rows of tiles in the
        // destination's order, one tile a visit, into rows of contiguous
        // elements that start at multiples of their size (`banded`).
        unsafe {
            match sweep.banded {
                true => self.sweep_banded::<N, K>(outer, sweep, beside, &row, (src, dst)),
                false => self.rows_of_tiles::<N>(outer, sweep, beside, (src, dst), |s, d| {
                    K::row(&row, s, d)
                }),
            }
        }
    }

    /// [`Tiled::rows_of_tiles`] through a [`Band`] on this function's stack
    /// (never inlined, so that other sweeps do not take its room).
    ///
    /// # Safety
    /// As [`Tiled::rows_of_tiles`], and as [`Band::copy`] for `row` at every
    /// row of tiles.
    #[inline(never)]
    unsafe fn sweep_banded<const N: usize, K: RowKernel>(
        &self,
        outer: &[Axis],
        sweep: Sweep,
        beside: Beside,
        row: &TileRow,
        (src, dst): (*const u8, *mut u8),
    ) {
        let mut buffer = BandBuffer([MaybeUninit::uninit(); BAND_BUFFER_BYTES]);
        let band = Band::new::<N>(&mut buffer);
        // SAFETY: forwarded from the caller.
        unsafe {
            self.rows_of_tiles::<N>(outer, sweep, beside, (src, dst), |s, d| {
                band.copy::<N, K>(row, s, d)
            })
        }
    }

    /// Copies every row of tiles of `sweep` (at every offset of `outer`) with
    /// `copy_row` (its first tile's source and destination), and when
    /// `sweep.beside` the elements `beside` each, while the rows they lie in
    /// are fresh.
    ///
    /// # Safety
    /// As [`copy_tiled`], for the tiles and the elements beside them;
    /// `copy_row` copies the row of tiles it is given.
    unsafe fn rows_of_tiles<const N: usize>(
        &self,
        outer: &[Axis],
        sweep: Sweep,
        beside: Beside,
        (src, dst): (*const u8, *mut u8),
        copy_row: impl Fn(*const u8, *mut u8),
    ) {
        let band = sweep.burst.0 * (LINE / N);
        for_each_offset(outer, |s, d| {
            // SAFETY: a row of tiles of the box, and with `sweep.beside` the
            // elements beside it (the caller's contract).
            unsafe {
                if sweep.beside {
                    self.prefetch_beside::<N>(beside, band, src.add(s));
                }
                copy_row(src.add(s), dst.add(d));
                match (sweep.beside, sweep.stream) {
                    (true, true) => {
                        self.copy_beside::<N, true>(beside, band, src.add(s), dst.add(d))
                    }
                    (true, false) => {
                        self.copy_beside::<N, false>(beside, band, src.add(s), dst.add(d))
                    }
                    (false, _) => {}
                }
            }
        });
    }

    /// Asks for the source lines of the elements beside a row of tiles along
    /// `b` whose first tile reads `src`, in its `band` of destination rows:
    /// no prefetcher follows a row of tiles back to its start, so each of
    /// those lines was waited for when its first element was copied.
    fn prefetch_beside<const N: usize>(&self, beside: Beside, band: usize, src: *const u8) {
        let row = self.b.src;
        let (before, after) = (1..=beside.before, beside.along..beside.along + beside.after);
        let columns = before
            .map(|j| src.wrapping_sub(j * row))
            .chain(after.map(|j| src.wrapping_add(j * row)));
        // A column's elements of the band lie `a.src` bytes apart: its lines
        // are those of its first byte and every line on (or every element's,
        // when they lie a line apart or more), and of its last byte.
        let bytes = (band - 1) * self.a.src + N;
        for column in columns {
            (0..bytes)
                .step_by(LINE.max(self.a.src))
                .for_each(|at| prefetch(column.wrapping_add(at)));
            prefetch(column.wrapping_add(bytes - 1));
        }
    }

    /// Copies the elements beside a row of tiles along `b` (contiguous in the
    /// destination) whose first tile is at `src` and `dst`, in its `band` of
    /// destination rows, with non-temporal stores when `STREAM`.
    ///
    /// # Safety
    /// As [`copy_tiled`], for those elements.
    unsafe fn copy_beside<const N: usize, const STREAM: bool>(
        &self,
        beside: Beside,
        band: usize,
        src: *const u8,
        dst: *mut u8,
    ) {
        let (a, b) = (self.a, self.b);
        let strip = |columns| Strip {
            rows: band,
            columns,
            src_row: a.src,
            src_column: b.src,
            dst_row: a.dst,
        };
        let strips = [
            (
                strip(beside.before),
                src.wrapping_sub(beside.before * b.src),
                dst.wrapping_sub(beside.before * N),
            ),
            (
                strip(beside.after),
                src.wrapping_add(beside.along * b.src),
                dst.wrapping_add(beside.along * N),
            ),
        ];
        for (strip, src, dst) in strips {
            // SAFETY: the elements before the row's first tile, then those
            // after its last, in the band (the caller's contract).
            unsafe { strip.copy::<N, STREAM>(src, dst) }
        }
    }

    /// Copies the elements outside the tiles one by one: along `a` before and
    /// after them, and along `b` beside them unless `beside_done`; with
    /// non-temporal stores when `STREAM`.
    ///
    /// # Safety
    /// As [`copy_tiled`], for those elements.
    unsafe fn copy_edges<const N: usize, const STREAM: bool>(
        &self,
        (span_a, span_b): (Span, Span),
        beside_done: bool,
        src: *const u8,
        dst: *mut u8,
    ) {
        let (a, b) = (self.a, self.b);
        let (end_a, end_b) = (span_a.end::<N>(), span_b.end::<N>());
        let beside_a = if beside_done {
            (0, 0)
        } else {
            (span_a.start, end_a)
        };
        let strips = [
            ((0, span_a.start), (0, b.n)),
            ((end_a, a.n), (0, b.n)),
            (beside_a, (0, span_b.start)),
            (beside_a, (end_b, b.n)),
        ];
        for_each_offset(self.rest, |s, d| {
            for ((a0, a1), (b0, b1)) in strips {
                for i in a0..a1 {
                    for j in b0..b1 {
                        let (from, to) = (s + i * a.src + j * b.src, d + i * a.dst + j * b.dst);
                        // SAFETY: an element of the box outside the tiles.
                        unsafe { copy_element::<N, STREAM>(src.add(from), dst.add(to)) }
                    }
                }
            }
        });
    }
}

/// How the tiles of a box were copied, for the elements outside them.
#[derive(Clone, Copy, Default)]
struct Tiles {
    /// The elements beside them along `b` were copied with them.
    beside: bool,
    /// They were stored non-temporally, and so are the elements outside them.
    stream: bool,
}

/// Asks for the line holding `at` to be brought into the caches, where the
/// target has a prefetch; a prefetch reads nothing the program sees and never
/// faults, whatever the address.
#[inline(always)]
fn prefetch(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE, in every x86-64; a prefetch has no effect the program
        // sees and never faults.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Copies one element of `N` bytes, with a non-temporal store when `STREAM`.
///
/// # Safety
/// As [`Mover::move_one`].
#[inline(always)]
unsafe fn copy_element<const N: usize, const STREAM: bool>(src: *const u8, dst: *mut u8) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if STREAM {
            copy_element_streamed::<N>(src, dst)
        } else {
            Fixed::<N>.move_one(src, dst)
        }
    }
}

/// The elements beside each row of tiles along `b`, in elements.
#[derive(Clone, Copy)]
struct Beside {
    /// Before the first tile.
    before: usize,
    /// After the last tile.
    after: usize,
    /// From the first tile's start to the last tile's end.
    along: usize,
}

/// A strip beside a row of tiles: `columns` consecutive elements of each of
/// `rows` contiguous destination rows, `dst_row` bytes apart; element `j` of
/// row `i` comes from `i * src_row + j * src_column` bytes into the source.
#[derive(Clone, Copy)]
struct Strip {
    /// The destination rows.
    rows: usize,
    /// The elements of each.
    columns: usize,
    /// The source's bytes from an element of one destination row to the same
    /// column's element of the next row.
    src_row: usize,
    /// The source's bytes from one column to the next.
    src_column: usize,
    /// The bytes from one destination row to the next.
    dst_row: usize,
}

impl Strip {
    /// Copies the strip from `src` into `dst`, its first element, with
    /// non-temporal stores when `STREAM`. Where 16 bytes hold a whole number
    /// of elements of `N` bytes (4 or 8), the destination rows lie a multiple
    /// of 16 bytes apart, the first element is aligned to `N` and the source
    /// holds each column's elements of consecutive rows contiguous (`src_row`
    /// is `N`), it goes in 16-byte blocks of `16 / N` rows by as many
    /// columns ([`sse2::block`]), each row's block stored 16-byte aligned,
    /// after single elements up to the first 16-byte unit (the lead) and
    /// before single elements past the last; otherwise element by element.
    ///
    /// # Safety
    /// As [`copy_tiled`], for the strip's elements.
    #[inline(always)]
    unsafe fn copy<const N: usize, const STREAM: bool>(self, src: *const u8, dst: *mut u8) {
        let block = 16 / N;
        let blocked = cfg!(target_arch = "x86_64")
            && matches!(N, 4 | 8)
            && self.src_row == N
            && self.rows.is_multiple_of(block)
            && (dst as usize).is_multiple_of(N)
            && self.dst_row.is_multiple_of(16);
        // A lead longer than the strip (its rows offset from 16-byte units
        // by their band's position) leaves no block.
        let lead = match blocked {
            true => ((16 - dst as usize % 16) % 16 / N).min(self.columns),
            false => self.columns,
        };
        let blocks = (self.columns - lead) / block;
        let tail = lead + blocks * block;
        let step = if blocked { block } else { 1 };
        for i in (0..self.rows).step_by(step) {
            for j in (0..lead).chain(tail..self.columns) {
                for k in i..i + step {
                    let from = k * self.src_row + j * self.src_column;
                    // SAFETY: an element of the strip.
                    unsafe {
                        copy_element::<N, STREAM>(src.add(from), dst.add(k * self.dst_row + j * N))
                    }
                }
            }
            #[cfg(target_arch = "x86_64")]
            for j in (lead..tail).step_by(block) {
                let (s, d) = (
                    i * self.src_row + j * self.src_column,
                    i * self.dst_row + j * N,
                );
                // SAFETY: 16 bytes of each of the strip's destination rows i..
                // from column j, 16-byte aligned (past the lead, the rows a
                // multiple of 16 bytes apart), from 16 bytes of the source at
                // each of its columns j.. (contiguous along the rows).
                unsafe {
                    sse2::block::<N, STREAM>(src.add(s), self.src_column, dst.add(d), self.dst_row)
                }
            }
        }
    }
}

/// The order of a box's tiles: every tile along `along` (innermost), in
/// bursts of tiles along the other axis, at every index of `across` and the
/// box's other axes.
#[derive(Clone, Copy)]
struct Sweep {
    /// The bursts.
    across: Axis,
    /// The tiles of a burst, and the axis they step along.
    burst: (usize, Axis),
    /// The tiles innermost.
    along: Axis,
    /// Whether the other axes go in the destination's order, else the source's.
    dst_order: bool,
    /// Whether the elements beside each row of tiles go with it: in the
    /// destination's order, into contiguous destination rows.
    beside: bool,
    /// Whether the tiles are stored non-temporally.
    stream: bool,
    /// Whether each row of tiles goes through a [`Band`] (then streamed).
    banded: bool,
}

/// A buffer of [`BAND_BUFFER_BYTES`], aligned to a line.
#[repr(C, align(64))]
struct BandBuffer([MaybeUninit<u8>; BAND_BUFFER_BYTES]);

/// Where a row of tiles into contiguous destination rows that start at four
/// offsets in a line or more goes first: the tiles, in parts of at most
/// `max_tiles` (as even as they can be), are copied into a buffer whose rows
/// start lines (in the caches), then each of its rows out into the
/// destination with non-temporal stores, in whole lines but where a row (or
/// a part of it) starts or ends, and the bytes outside its 16-byte units
/// element by element ([`copy_streamed_elements`]). Written straight from the
/// tiles, such rows leave more lines in part than the stores can combine, and
/// each goes to memory in pieces (docs/src/performance/grids.md, "Rows at
/// many offsets in a line").
struct Band<'a> {
    /// The buffer's first byte, a line's.
    at: *mut u8,
    /// The most tiles of a part: [`BAND_BYTES`] of its rows' bytes.
    max_tiles: usize,
    /// The buffer, borrowed while the band lives.
    _buffer: PhantomData<&'a mut BandBuffer>,
}

impl<'a> Band<'a> {
    /// The band of elements of `N` bytes through `buffer`.
    fn new<const N: usize>(buffer: &'a mut BandBuffer) -> Band<'a> {
        Band {
            at: buffer.0.as_mut_ptr().cast(),
            max_tiles: BAND_BYTES / (LINE / N) / LINE,
            _buffer: PhantomData,
        }
    }

    /// Copies the tiles of `row` (along contiguous destination rows), the
    /// first at `src` and `dst`, through the buffer, part by part; the
    /// buffer's rows lie a line more apart than a part's rows are long.
    ///
    /// # Safety
    /// As [`RowKernel::row`] for `row`, one tile a visit (`row.burst.0` 1),
    /// `dst` and `row.rows.1` multiples of `N`, `row.along.dst` a line, and
    /// `K` a kernel of contiguous destination rows.
    unsafe fn copy<const N: usize, K: RowKernel>(
        &self,
        row: &TileRow,
        src: *const u8,
        dst: *mut u8,
    ) {
        debug_assert_eq!(row.burst.0, 1, "a band takes one tile a visit");
        let (along, dst_row) = (row.along, row.rows.1);
        let parts = along.n.div_ceil(self.max_tiles);
        let per_part = along.n.div_ceil(parts.max(1)).max(1);
        for first in (0..along.n).step_by(per_part) {
            let tiles = per_part.min(along.n - first);
            let pitch = (tiles + 1) * LINE;
            let part = TileRow {
                along: Axis { n: tiles, ..along },
                rows: (row.rows.0, pitch),
                stream: false,
                ..*row
            };
            let (from, to) = (
                src.wrapping_add(first * along.src),
                dst.wrapping_add(first * along.dst),
            );
            // SAFETY: the part's tiles, from the source (the caller's
            // contract) into the buffer, whose `LINE / N` rows of `pitch`
            // bytes (at most [`BAND_BUFFER_BYTES`] in all) they fill; then
            // each row, `tiles` lines of it, out into the destination's rows,
            // which start at multiples of `N` (the caller's contract).
            unsafe {
                K::row(&part, from, self.at);
                for r in 0..LINE / N {
                    let out = self.at.add(r * pitch);
                    copy_streamed_elements::<N>(out, to.add(r * dst_row), tiles * LINE);
                }
            }
        }
    }
}

/// The tiles a kernel copies in one call: every tile along `along`
/// (innermost), `burst.0` of them along `burst.1` at each.
struct TileRow {
    /// The tiles along the row.
    along: Axis,
    /// The tiles of a burst, and the axis they step along.
    burst: (usize, Axis),
    /// The source's and the destination's row strides in bytes.
    rows: (usize, usize),
    /// The bytes from one element of a source row to the next, and of a
    /// destination row.
    steps: (usize, usize),
    /// Whether the tiles are stored non-temporally.
    stream: bool,
}

/// The tile of elements of `N` bytes: `LINE / N` a side.
struct Tile<const N: usize>;

/// Copies the tiles of `row`, the first at `src` and `dst`, with `K`'s tile
/// kernel: inlined into each kernel set's [`RowKernel::row`], so that the tile
/// kernel is inlined with the instructions it was compiled for.
///
/// # Safety
/// As [`RowKernel::row`], the rows of both sides contiguous (`row.steps` the
/// element size).
#[inline(always)]
unsafe fn tiles_of_row<K: Kernel>(row: &TileRow, src: *const u8, dst: *mut u8) {
    let (src_row, dst_row) = row.rows;
    // SAFETY: forwarded from the caller, one tile at a time.
    unsafe {
        for_each_tile(row, src, dst, |from, to| {
            if row.stream {
                K::stream(from, src_row, to, dst_row);
            } else {
                K::copy(from, src_row, to, dst_row);
            }
        })
    }
}

/// Calls `tile` with the first source and destination element of every tile
/// of `row`, the first at `src` and `dst`, in the row's order.
///
/// # Safety
/// The tiles of `row` in the buffers at `src` and `dst`.
#[inline(always)]
unsafe fn for_each_tile(
    row: &TileRow,
    src: *const u8,
    dst: *mut u8,
    mut tile: impl FnMut(*const u8, *mut u8),
) {
    let (along, (burst, across)) = (row.along, row.burst);
    for t in 0..along.n {
        for g in 0..burst {
            let from = t * along.src + g * across.src;
            let to = t * along.dst + g * across.dst;
            // SAFETY: one tile of the row, in both buffers (the caller's
            // contract).
            unsafe { tile(src.add(from), dst.add(to)) }
        }
    }
}

/// How a tile whose source rows and destination rows are contiguous moves.
trait Kernel {
    /// Copies the tile whose source rows start at `src`, `src_row` bytes apart,
    /// into the destination rows from `dst`, `dst_row` bytes apart: element
    /// `j` of source row `i` becomes element `i` of destination row `j`.
    ///
    /// # Safety
    /// The tile's elements readable at `src` and writable at `dst`, not
    /// overlapping; any alignment.
    unsafe fn copy(src: *const u8, src_row: usize, dst: *mut u8, dst_row: usize);

    /// As [`Kernel::copy`], with non-temporal stores where the target has
    /// them; [`store_fence`] must follow before the destination is read.
    ///
    /// # Safety
    /// As [`Kernel::copy`], and `dst` and `dst_row` multiples of 16.
    unsafe fn stream(src: *const u8, src_row: usize, dst: *mut u8, dst_row: usize);
}

/// How a row of tiles moves.
trait RowKernel {
    /// Copies the tiles of `row`, the first at `src` and `dst`.
    ///
    /// # Safety
    /// Every tile of `row` readable and writable as [`Kernel::copy`] requires
    /// (the elements of its rows `row.steps` bytes apart), and aligned as
    /// [`Kernel::stream`] requires when `row.stream`; the processor runs the
    /// kernel's instructions.
    unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8);
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    //! The tile kernels with SSE2 (every x86-64 has it): 16-byte loads, the
    //! shuffles of a 2 × 2 (8-byte) or 4 × 4 (4-byte) transpose, 16-byte stores.

    use super::{Kernel, RowKernel, Tile};
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_setzero_si128, _mm_storeu_si128, _mm_stream_si128,
        _mm_unpackhi_epi32, _mm_unpackhi_epi64, _mm_unpacklo_epi32, _mm_unpacklo_epi64,
    };

    /// Stores `value` at `at`, non-temporally when `STREAM` (then `at` a
    /// multiple of 16).
    ///
    /// # Safety
    /// 16 bytes writable at `at`.
    #[inline(always)]
    pub(super) unsafe fn store<const STREAM: bool>(at: *mut u8, value: __m128i) {
        // SAFETY: as documented; streamed stores are aligned by the caller.
        unsafe {
            if STREAM {
                _mm_stream_si128(at.cast(), value)
            } else {
                _mm_storeu_si128(at.cast(), value)
            }
        }
    }

    /// Loads 16 bytes at `at`.
    ///
    /// # Safety
    /// 16 bytes readable at `at`.
    #[inline(always)]
    pub(super) unsafe fn load(at: *const u8) -> __m128i {
        // SAFETY: as documented; the load is unaligned.
        unsafe { _mm_loadu_si128(at.cast()) }
    }

    /// The 4 × 4 tile of 16-byte elements, one destination row at a time.
    ///
    /// # Safety
    /// As [`Kernel::copy`].
    #[inline(always)]
    unsafe fn copy16<const STREAM: bool>(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
        for j in 0..4 {
            for i in 0..4 {
                // SAFETY: element j of source row i, to element i of row j.
                unsafe { store::<STREAM>(dst.add(j * dr + 16 * i), load(src.add(i * sr + 16 * j))) }
            }
        }
    }

    /// The block of 16 bytes from each of `16 / N` source rows from `src`,
    /// `sr` bytes apart, into as many destination rows from `dst`, `dr` bytes
    /// apart (a 2 × 2 transpose of 8-byte elements, 4 × 4 of 4-byte ones).
    ///
    /// # Safety
    /// As [`Kernel::copy`] for the block, or [`Kernel::stream`] when
    /// `STREAM`; `N` is 4 or 8.
    #[inline(always)]
    pub(super) unsafe fn block<const N: usize, const STREAM: bool>(
        src: *const u8,
        sr: usize,
        dst: *mut u8,
        dr: usize,
    ) {
        // SAFETY: as documented.
        unsafe {
            if N == 8 {
                let (r0, r1) = (load(src), load(src.add(sr)));
                store::<STREAM>(dst, _mm_unpacklo_epi64(r0, r1));
                store::<STREAM>(dst.add(dr), _mm_unpackhi_epi64(r0, r1));
            } else {
                let rows = transpose4([0, 1, 2, 3].map(|k| load(src.add(k * sr))));
                for (k, row) in rows.into_iter().enumerate() {
                    store::<STREAM>(dst.add(k * dr), row);
                }
            }
        }
    }

    /// The 4 × 4 transpose of 4-byte elements: register `k` of the result
    /// holds element `k` of each of `rows`.
    #[inline(always)]
    fn transpose4([r0, r1, r2, r3]: [__m128i; 4]) -> [__m128i; 4] {
        // SAFETY: SSE2, in every x86-64.
        unsafe {
            let (low01, low23) = (_mm_unpacklo_epi32(r0, r1), _mm_unpacklo_epi32(r2, r3));
            let (high01, high23) = (_mm_unpackhi_epi32(r0, r1), _mm_unpackhi_epi32(r2, r3));
            [
                _mm_unpacklo_epi64(low01, low23),
                _mm_unpackhi_epi64(low01, low23),
                _mm_unpacklo_epi64(high01, high23),
                _mm_unpackhi_epi64(high01, high23),
            ]
        }
    }

    /// The 8 × 8 tile of 8-byte elements, in 2 × 2 blocks, two destination
    /// rows at a time.
    ///
    /// # Safety
    /// As [`Kernel::copy`].
    #[inline(always)]
    unsafe fn copy8<const STREAM: bool>(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
        for j in (0..8).step_by(2) {
            for i in (0..8).step_by(2) {
                // SAFETY: the block of source rows i, i + 1 and columns j, j + 1.
                unsafe {
                    block::<8, STREAM>(src.add(i * sr + 8 * j), sr, dst.add(j * dr + 8 * i), dr)
                }
            }
        }
    }

    /// The 16 × 16 tile of 4-byte elements, in 4 × 4 blocks, four destination
    /// rows at a time, each written whole before the next.
    ///
    /// # Safety
    /// As [`Kernel::copy`].
    #[inline(always)]
    unsafe fn copy4<const STREAM: bool>(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
        // SAFETY: the blocks of source rows i..i + 4, columns j..j + 4, to
        // destination rows j..j + 4, whole.
        unsafe {
            for j in (0..16).step_by(4) {
                let mut rows = [[_mm_setzero_si128(); 4]; 4];
                for (unit, i) in (0..16).step_by(4).enumerate() {
                    let columns =
                        transpose4([0, 1, 2, 3].map(|k| load(src.add((i + k) * sr + 4 * j))));
                    for (k, column) in columns.into_iter().enumerate() {
                        rows[k][unit] = column;
                    }
                }
                for (k, row) in rows.iter().enumerate() {
                    for (unit, &value) in row.iter().enumerate() {
                        store::<STREAM>(dst.add((j + k) * dr + 16 * unit), value);
                    }
                }
            }
        }
    }

    /// A kernel from the function of one element size.
    macro_rules! kernel {
        ($n:literal, $copy:ident) => {
            impl Kernel for Tile<$n> {
                #[inline(always)]
                unsafe fn copy(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
                    // SAFETY: forwarded.
                    unsafe { $copy::<false>(src, sr, dst, dr) }
                }

                #[inline(always)]
                unsafe fn stream(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
                    // SAFETY: forwarded, `dst` and `dr` aligned as required.
                    unsafe { $copy::<true>(src, sr, dst, dr) }
                }
            }

            impl RowKernel for Tile<$n> {
                #[inline(always)]
                unsafe fn row(row: &super::TileRow, src: *const u8, dst: *mut u8) {
                    // SAFETY: forwarded; SSE2 is in every x86-64.
                    unsafe { super::tiles_of_row::<Self>(row, src, dst) }
                }
            }
        };
    }
    kernel!(4, copy4);
    kernel!(8, copy8);
    kernel!(16, copy16);
}

#[cfg(not(target_arch = "x86_64"))]
impl<const N: usize> Kernel for Tile<N> {
    #[inline(always)]
    unsafe fn copy(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
        let side = LINE / N;
        for i in 0..side {
            for j in 0..side {
                // SAFETY: element j of source row i, to element i of row j.
                unsafe { Fixed::<N>.move_one(src.add(i * sr + j * N), dst.add(j * dr + i * N)) }
            }
        }
    }

    #[inline(always)]
    unsafe fn stream(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
        // SAFETY: forwarded.
        unsafe { Self::copy(src, sr, dst, dr) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
impl<const N: usize> RowKernel for Tile<N> {
    #[inline(always)]
    unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
        // SAFETY: forwarded.
        unsafe { tiles_of_row::<Self>(row, src, dst) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod stepped;
