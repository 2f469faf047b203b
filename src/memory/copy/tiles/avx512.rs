//! The tile kernels with AVX-512F: a tile's source row, one cache line, is
//! one 64-byte register; the tile is transposed in registers and each
//! destination row stored in one store.
//!
//! Streamed destination rows that do not start lines (a halo'd or padded
//! output) take the narrow kernels' 16-byte stores: realigning such rows in
//! registers to store whole lines (one permute per line, masked stores at
//! each row's ends) was measured slower inside an exchange
//! (docs/src/performance/grids.md, "Strided storage").

use std::arch::x86_64::{
    __m512i, _mm512_castpd_si512, _mm512_castsi512_pd, _mm512_loadu_si512, _mm512_permutex2var_pd,
    _mm512_set_epi64, _mm512_setzero_si512, _mm512_shuffle_i64x2, _mm512_storeu_si512,
    _mm512_stream_si512, _mm512_unpackhi_epi32, _mm512_unpackhi_epi64, _mm512_unpacklo_epi32,
    _mm512_unpacklo_epi64,
};

use super::{Kernel, LINE, RowKernel, Tile, TileRow, tiles_of_row};

/// The tile of elements of `N` bytes (`64 / N` a side) in 64-byte registers.
pub(super) struct Wide<const N: usize>;

/// The destination rows of a tile, in registers (the first `64 / N` used).
type Rows = [__m512i; 16];

/// Loads the 64 bytes at `at`.
///
/// # Safety
/// 64 bytes readable at `at`; AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load(at: *const u8) -> __m512i {
    // SAFETY: as documented; the load is unaligned.
    unsafe { _mm512_loadu_si512(at.cast()) }
}

/// Loads the first `count` source rows of a tile, `sr` bytes apart.
///
/// # Safety
/// The rows readable; AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load_rows(src: *const u8, sr: usize, count: usize) -> Rows {
    let mut rows = [_mm512_setzero_si512(); 16];
    for (i, row) in rows.iter_mut().enumerate().take(count) {
        // SAFETY: source row i of the tile.
        *row = unsafe { load(src.add(i * sr)) };
    }
    rows
}

/// The 4 × 4 tile of 16-byte elements: two rounds of 128-bit lane shuffles.
///
/// # Safety
/// The tile's source rows readable; AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn transpose16(src: *const u8, sr: usize) -> Rows {
    // SAFETY: forwarded.
    let r = unsafe { load_rows(src, sr, 4) };
    // Lanes 0 and 1 of two rows, then lanes 2 and 3.
    let (low01, high01) = (
        _mm512_shuffle_i64x2::<0x44>(r[0], r[1]),
        _mm512_shuffle_i64x2::<0xEE>(r[0], r[1]),
    );
    let (low23, high23) = (
        _mm512_shuffle_i64x2::<0x44>(r[2], r[3]),
        _mm512_shuffle_i64x2::<0xEE>(r[2], r[3]),
    );
    let mut out = r;
    out[0] = _mm512_shuffle_i64x2::<0x88>(low01, low23);
    out[1] = _mm512_shuffle_i64x2::<0xDD>(low01, low23);
    out[2] = _mm512_shuffle_i64x2::<0x88>(high01, high23);
    out[3] = _mm512_shuffle_i64x2::<0xDD>(high01, high23);
    out
}

/// The 8-byte elements of `a` and `b` (indices 8 and up) that `index` picks.
#[inline]
#[target_feature(enable = "avx512f")]
fn pick(a: __m512i, index: __m512i, b: __m512i) -> __m512i {
    _mm512_castpd_si512(_mm512_permutex2var_pd(
        _mm512_castsi512_pd(a),
        index,
        _mm512_castsi512_pd(b),
    ))
}

/// The 8 × 8 tile of 8-byte elements: pairs of rows interleaved, then pairs
/// of pairs (by index), then halves.
///
/// # Safety
/// The tile's source rows readable; AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn transpose8(src: *const u8, sr: usize) -> Rows {
    // SAFETY: forwarded.
    let r = unsafe { load_rows(src, sr, 8) };
    // t[2k] holds the even elements of rows 2k and 2k + 1, interleaved;
    // t[2k + 1] the odd ones.
    let mut t = r;
    for k in 0..4 {
        t[2 * k] = _mm512_unpacklo_epi64(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi64(r[2 * k], r[2 * k + 1]);
    }
    // u[j] (j < 4) holds elements j and j + 4 of four rows: 0-3 for
    // u[0..4], 4-7 for u[4..8].
    let even = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    let odd = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    let mut u = t;
    for half in [0, 4] {
        u[half] = pick(t[half], even, t[half + 2]);
        u[half + 1] = pick(t[half + 1], even, t[half + 3]);
        u[half + 2] = pick(t[half], odd, t[half + 2]);
        u[half + 3] = pick(t[half + 1], odd, t[half + 3]);
    }
    let mut out = u;
    for j in 0..4 {
        out[j] = _mm512_shuffle_i64x2::<0x44>(u[j], u[j + 4]);
        out[j + 4] = _mm512_shuffle_i64x2::<0xEE>(u[j], u[j + 4]);
    }
    out
}

/// The 16 × 16 tile of 4-byte elements: pairs of rows interleaved by 4-byte
/// element, then pairs of those by 8-byte element, then 128-bit lanes across
/// groups of four rows, twice.
///
/// # Safety
/// The tile's source rows readable; AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn transpose4(src: *const u8, sr: usize) -> Rows {
    // SAFETY: forwarded.
    let r = unsafe { load_rows(src, sr, 16) };
    let mut a = r;
    for k in 0..8 {
        a[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    // b[4q + m], lane l: column 4l + m of rows 4q..4q + 4.
    let mut b = a;
    for q in 0..4 {
        let base = 4 * q;
        b[base] = _mm512_unpacklo_epi64(a[base], a[base + 2]);
        b[base + 1] = _mm512_unpackhi_epi64(a[base], a[base + 2]);
        b[base + 2] = _mm512_unpacklo_epi64(a[base + 1], a[base + 3]);
        b[base + 3] = _mm512_unpackhi_epi64(a[base + 1], a[base + 3]);
    }
    // c[j] and c[j + 8] hold columns j and j + 8 (j < 8), of rows 0-7 and
    // 8-15.
    let mut c = b;
    for j in 0..4 {
        c[j] = _mm512_shuffle_i64x2::<0x88>(b[j], b[j + 4]);
        c[j + 4] = _mm512_shuffle_i64x2::<0xDD>(b[j], b[j + 4]);
        c[j + 8] = _mm512_shuffle_i64x2::<0x88>(b[j + 8], b[j + 12]);
        c[j + 12] = _mm512_shuffle_i64x2::<0xDD>(b[j + 8], b[j + 12]);
    }
    let mut out = c;
    for j in 0..8 {
        out[j] = _mm512_shuffle_i64x2::<0x88>(c[j], c[j + 8]);
        out[j + 8] = _mm512_shuffle_i64x2::<0xDD>(c[j], c[j + 8]);
    }
    out
}

/// Stores the first `count` rows of `rows`, `dr` bytes apart from `dst`,
/// non-temporally when `STREAM` (then each starts a line).
///
/// # Safety
/// The rows writable; AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store_rows<const STREAM: bool>(rows: &Rows, count: usize, dst: *mut u8, dr: usize) {
    for (j, &line) in rows.iter().enumerate().take(count) {
        // SAFETY: destination row j of the tile; streamed rows start lines.
        unsafe {
            let at = dst.add(j * dr).cast();
            if STREAM {
                _mm512_stream_si512(at, line);
            } else {
                _mm512_storeu_si512(at, line);
            }
        }
    }
}

/// A row of tiles with `K`'s kernel, compiled with AVX-512F so that the
/// kernel is inlined with it.
///
/// # Safety
/// As [`RowKernel::row`] (the rows of both sides contiguous); AVX-512F.
#[target_feature(enable = "avx512f")]
unsafe fn row_of<K: Kernel>(row: &TileRow, src: *const u8, dst: *mut u8) {
    // SAFETY: forwarded.
    unsafe { tiles_of_row::<K>(row, src, dst) }
}

/// A kernel from the transpose of one element size.
macro_rules! kernel {
    ($n:literal, $transpose:ident) => {
        impl Kernel for Wide<$n> {
            #[inline(always)]
            unsafe fn copy(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
                // SAFETY: forwarded (the caller runs AVX-512F).
                unsafe { store_rows::<false>(&$transpose(src, sr), 64 / $n, dst, dr) }
            }

            /// Destination rows that start lines take one non-temporal store
            /// each; others (16-byte units apart) the narrow kernel's 16-byte
            /// stores, which it orders so that the next tile along the rows
            /// completes each line while it is still being combined.
            #[inline(always)]
            unsafe fn stream(src: *const u8, sr: usize, dst: *mut u8, dr: usize) {
                // SAFETY: forwarded, `dst` and `dr` aligned as each kernel requires.
                unsafe {
                    if (dst as usize).is_multiple_of(LINE) && dr.is_multiple_of(LINE) {
                        store_rows::<true>(&$transpose(src, sr), 64 / $n, dst, dr)
                    } else {
                        Tile::<$n>::stream(src, sr, dst, dr)
                    }
                }
            }
        }

        impl RowKernel for Wide<$n> {
            unsafe fn row(row: &TileRow, src: *const u8, dst: *mut u8) {
                // SAFETY: forwarded; the caller checked the processor.
                unsafe { row_of::<Self>(row, src, dst) }
            }
        }
    };
}
kernel!(4, transpose4);
kernel!(8, transpose8);
kernel!(16, transpose16);
