//! The tile kernels of rows with a step (one field of an array of
//! structures, the real parts of a complex array: elements further apart than
//! their size along a side's fastest axis):
//! - [`Gather`], source rows with a step into contiguous destination rows:
//!   each destination row of a tile is gathered element by element from the
//!   tile's source rows, into 16-byte registers on x86-64 (SSE2, in every
//!   x86-64), and stored as the narrow kernels store theirs, each row whole
//!   before the next;
//! - [`Scatter`], destination rows with a step, whatever the source's: element
//!   by element along each source row of a tile, with ordinary stores (the
//!   lines a row with a step writes in part are read first whatever the
//!   stores).
//!
//! Each source element is read once.

use super::super::{Fixed, Mover};
#[cfg(target_arch = "x86_64")]
use super::sse2::{load, store};
use super::{LINE, RowKernel, TileRow, for_each_tile};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m128i, _mm_castpd_si128, _mm_cvtsi32_si128, _mm_set_pd, _mm_unpacklo_epi32,
    _mm_unpacklo_epi64,
};

/// The tile of elements of `N` bytes gathered from source rows with a step.
pub(super) struct Gather<const N: usize>;

/// The tile of elements of `N` bytes scattered into destination rows with a
/// step.
pub(super) struct Scatter<const N: usize>;

/// A tile's source: its rows `row` bytes apart, each row's elements `step`
/// bytes apart.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Source {
    row: usize,
    step: usize,
}

/// The tile of elements of `N` bytes (4, 8 or 16), `LINE / N` a side: each
/// destination row as 16-byte registers, each gathered from `16 / N` source
/// rows ([`gather_unit`]) and stored as the narrow kernels store theirs.
///
/// # Safety
/// The tile's elements readable at `src` (by `from`) and writable at `dst`
/// (rows `dr` bytes apart), not overlapping, any alignment; with `STREAM`,
/// `dst` and `dr` multiples of 16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn gather<const N: usize, const STREAM: bool>(
    src: *const u8,
    from: Source,
    dst: *mut u8,
    dr: usize,
) {
    let side = LINE / N;
    for j in 0..side {
        let column = src.wrapping_add(j * from.step);
        for i in (0..side).step_by(16 / N) {
            // SAFETY: element j of source rows i..i + 16 / N, to elements
            // i..i + 16 / N of destination row j.
            unsafe {
                let unit = gather_unit::<N>(column.add(i * from.row), from.row);
                store::<STREAM>(dst.add(j * dr + N * i), unit);
            }
        }
    }
}

/// The 16 bytes of `16 / N` elements of `N` bytes (4, 8 or 16), the first at
/// `at`, the others `row` bytes apart, in one register.
///
/// # Safety
/// Each element readable, any alignment.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn gather_unit<const N: usize>(at: *const u8, row: usize) -> __m128i {
    // SAFETY: as documented; the loads are unaligned.
    unsafe {
        match N {
            4 => {
                let one =
                    |k: usize| _mm_cvtsi32_si128(at.add(k * row).cast::<i32>().read_unaligned());
                let (low, high) = (
                    _mm_unpacklo_epi32(one(0), one(1)),
                    _mm_unpacklo_epi32(one(2), one(3)),
                );
                _mm_unpacklo_epi64(low, high)
            }
            8 => {
                let one = |k: usize| at.add(k * row).cast::<f64>().read_unaligned();
                _mm_castpd_si128(_mm_set_pd(one(1), one(0)))
            }
            _ => load(at),
        }
    }
}

/// Gathered tiles where SSE2 is (every x86-64).
#[cfg(target_arch = "x86_64")]
impl<const N: usize> RowKernel for Gather<N> {
    #[inline(always)]
    unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
        let ((sr, dr), (step, _)) = (row.rows, row.steps);
        let from = Source { row: sr, step };
        // SAFETY: forwarded, one tile at a time (`N` is 4, 8 or 16, the
        // element sizes with tiles).
        unsafe {
            for_each_tile(row, src, dst, |s, d| match row.stream {
                true => gather::<N, true>(s, from, d, dr),
                false => gather::<N, false>(s, from, d, dr),
            })
        }
    }
}

/// Elsewhere, element by element.
#[cfg(not(target_arch = "x86_64"))]
impl<const N: usize> RowKernel for Gather<N> {
    #[inline(always)]
    unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
        // SAFETY: forwarded.
        unsafe { move_tiles::<N>(row, src, dst) }
    }
}

impl<const N: usize> RowKernel for Scatter<N> {
    #[inline(always)]
    unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
        // SAFETY: forwarded.
        unsafe { move_tiles::<N>(row, src, dst) }
    }
}

/// Copies the tiles of `row` element by element, along each source row of a
/// tile in turn, with ordinary stores.
///
/// # Safety
/// As [`RowKernel::row`].
#[inline(always)]
unsafe fn move_tiles<const N: usize>(row: &TileRow, src: *const u8, dst: *mut u8) {
    let ((sr, dr), (ss, ds), side) = (row.rows, row.steps, LINE / N);
    // SAFETY: forwarded, one tile at a time.
    unsafe {
        for_each_tile(row, src, dst, |s, d| {
            for i in 0..side {
                for j in 0..side {
                    // Element j of source row i, to element i of destination row j.
                    Fixed::<N>.move_one(s.add(i * sr + j * ss), d.add(j * dr + i * ds))
                }
            }
        })
    }
}
