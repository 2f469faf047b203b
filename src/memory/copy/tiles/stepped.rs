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
    _mm_castpd_si128, _mm_cvtsi32_si128, _mm_set_pd, _mm_unpacklo_epi32, _mm_unpacklo_epi64,
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

/// The 16 × 16 tile of 4-byte elements: each destination row as four
/// registers of four elements, each joined from four loads.
///
/// # Safety
/// The tile's elements readable at `src` (by `from`) and writable at `dst`
/// (rows `dr` bytes apart), not overlapping, any alignment; with `STREAM`,
/// `dst` and `dr` multiples of 16.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn gather4<const STREAM: bool>(src: *const u8, from: Source, dst: *mut u8, dr: usize) {
    for j in 0..16 {
        let column = src.wrapping_add(j * from.step);
        for i in (0..16).step_by(4) {
            // SAFETY: element j of source rows i..i + 4, to elements i..i + 4
            // of destination row j.
            unsafe {
                let one = |k: usize| {
                    let at = column.add((i + k) * from.row).cast::<i32>();
                    _mm_cvtsi32_si128(at.read_unaligned())
                };
                let (low, high) = (
                    _mm_unpacklo_epi32(one(0), one(1)),
                    _mm_unpacklo_epi32(one(2), one(3)),
                );
                store::<STREAM>(dst.add(j * dr + 4 * i), _mm_unpacklo_epi64(low, high));
            }
        }
    }
}

/// The 8 × 8 tile of 8-byte elements: each destination row as four
/// registers of two elements, each from two loads.
///
/// # Safety
/// As [`gather4`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn gather8<const STREAM: bool>(src: *const u8, from: Source, dst: *mut u8, dr: usize) {
    for j in 0..8 {
        let column = src.wrapping_add(j * from.step);
        for i in (0..8).step_by(2) {
            // SAFETY: element j of source rows i, i + 1, to elements i, i + 1
            // of destination row j.
            unsafe {
                let one = |k: usize| {
                    column
                        .add((i + k) * from.row)
                        .cast::<f64>()
                        .read_unaligned()
                };
                let pair = _mm_castpd_si128(_mm_set_pd(one(1), one(0)));
                store::<STREAM>(dst.add(j * dr + 8 * i), pair);
            }
        }
    }
}

/// The 4 × 4 tile of 16-byte elements: each element one load and one store.
///
/// # Safety
/// As [`gather4`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn gather16<const STREAM: bool>(src: *const u8, from: Source, dst: *mut u8, dr: usize) {
    for j in 0..4 {
        let column = src.wrapping_add(j * from.step);
        for i in 0..4 {
            // SAFETY: element j of source row i, to element i of row j.
            unsafe { store::<STREAM>(dst.add(j * dr + 16 * i), load(column.add(i * from.row))) }
        }
    }
}

/// A row kernel from the gather of one element size.
#[cfg(target_arch = "x86_64")]
macro_rules! kernel {
    ($n:literal, $gather:ident) => {
        impl RowKernel for Gather<$n> {
            #[inline(always)]
            unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
                let ((sr, dr), (step, _)) = (row.rows, row.steps);
                let from = Source { row: sr, step };
                // SAFETY: forwarded, one tile at a time; SSE2 is in every
                // x86-64.
                unsafe {
                    for_each_tile(row, src, dst, |s, d| match row.stream {
                        true => $gather::<true>(s, from, d, dr),
                        false => $gather::<false>(s, from, d, dr),
                    })
                }
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
kernel!(4, gather4);
#[cfg(target_arch = "x86_64")]
kernel!(8, gather8);
#[cfg(target_arch = "x86_64")]
kernel!(16, gather16);

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
