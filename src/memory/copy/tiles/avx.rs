//! The tile kernels with AVX, for processors without AVX-512F: 32-byte
//! registers, each filled from two 16-byte loads of two source rows, so that
//! one unpack makes half a destination row of 8-byte elements (or one 32-byte
//! store moves two 16-byte elements): half the stores of the narrow kernels,
//! and no shuffle across the registers' halves.
//!
//! Streamed destination rows that do not start 32-byte units (inside a halo
//! of two 8-byte elements, say) take the narrow kernels' 16-byte stores, as
//! the wide kernels do.

use std::arch::x86_64::{
    __m256d, _mm256_loadu2_m128d, _mm256_storeu_pd, _mm256_stream_pd, _mm256_unpackhi_pd,
    _mm256_unpacklo_pd,
};

use super::{Kernel, RowKernel, Tile, TileRow, tiles_of_row};

/// The tile of elements of `N` bytes in 32-byte registers.
pub(super) struct Avx<const N: usize>;

/// The bytes of one store, to which streamed stores are aligned.
const STORE: usize = 32;

/// Loads the 16 bytes at `low` and the 16 at `high` into one register.
///
/// # Safety
/// 16 bytes readable at each; AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn load_pair(low: *const u8, high: *const u8) -> __m256d {
    // SAFETY: as documented; the loads are unaligned.
    unsafe { _mm256_loadu2_m128d(high.cast(), low.cast()) }
}

/// Stores `value` at `at`, non-temporally when `STREAM` (then `at` a
/// multiple of [`STORE`]).
///
/// # Safety
/// 32 bytes writable at `at`; AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn store<const STREAM: bool>(at: *mut u8, value: __m256d) {
    // SAFETY: as documented.
    unsafe {
        if STREAM {
            _mm256_stream_pd(at.cast(), value)
        } else {
            _mm256_storeu_pd(at.cast(), value)
        }
    }
}

/// The 8 × 8 tile of 8-byte elements: for each pair of columns and each four
/// rows, rows `i` and `i + 2` in one register and rows `i + 1` and `i + 3` in
/// another, whose unpacks are the two columns' elements of the four rows.
///
/// # Safety
/// As [`Kernel::copy`]; AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn copy8<const STREAM: bool>(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
    for j in (0..8).step_by(2) {
        for i in (0..8).step_by(4) {
            // SAFETY: columns j, j + 1 of source rows i..i + 4, to elements
            // i..i + 4 of destination rows j, j + 1.
            unsafe {
                let at = |k: usize| src.add((i + k) * sr + 8 * j);
                let (even, odd) = (load_pair(at(0), at(2)), load_pair(at(1), at(3)));
                store::<STREAM>(dst.add(j * dr + 8 * i), _mm256_unpacklo_pd(even, odd));
                store::<STREAM>(dst.add((j + 1) * dr + 8 * i), _mm256_unpackhi_pd(even, odd));
            }
        }
    }
}

/// The 4 × 4 tile of 16-byte elements, one destination row (two stores) at a
/// time.
///
/// # Safety
/// As [`Kernel::copy`]; AVX.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn copy16<const STREAM: bool>(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
    for j in 0..4 {
        for i in (0..4).step_by(2) {
            // SAFETY: column j of source rows i, i + 1, to elements i, i + 1
            // of destination row j.
            unsafe {
                let pair = load_pair(src.add(i * sr + 16 * j), src.add((i + 1) * sr + 16 * j));
                store::<STREAM>(dst.add(j * dr + 16 * i), pair);
            }
        }
    }
}

/// A row of tiles with `K`'s kernel, compiled with AVX so that the kernel is
/// inlined with it.
///
/// # Safety
/// As [`RowKernel::row`] (the rows of both sides contiguous); AVX.
#[target_feature(enable = "avx")]
unsafe fn row_of<K: Kernel>(row: &TileRow, src: *const u8, dst: *mut u8) {
    // SAFETY: forwarded.
    unsafe { tiles_of_row::<K>(row, src, dst) }
}

/// A kernel from the copy of one element size.
macro_rules! kernel {
    ($n:literal, $copy:ident) => {
        impl Kernel for Avx<$n> {
            #[inline(always)]
            unsafe fn copy(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
                // SAFETY: forwarded (the caller runs AVX).
                unsafe { $copy::<false>(src, sr, dst, dr) }
            }

            /// Destination rows at multiples of 32 bytes take 32-byte
            /// non-temporal stores; others (16-byte units apart) the narrow
            /// kernel's.
            #[inline(always)]
            unsafe fn stream(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
                // SAFETY: forwarded, `dst` and `dr` aligned as each kernel requires.
                unsafe {
                    if (dst as usize).is_multiple_of(STORE) && dr.is_multiple_of(STORE) {
                        $copy::<true>(src, sr, dst, dr)
                    } else {
                        Tile::<$n>::stream(src, sr, dst, dr)
                    }
                }
            }
        }

        impl RowKernel for Avx<$n> {
            unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
                // SAFETY: forwarded; the caller checked the processor.
                unsafe { row_of::<Self>(row, src, dst) }
            }
        }
    };
}
kernel!(8, copy8);
kernel!(16, copy16);
