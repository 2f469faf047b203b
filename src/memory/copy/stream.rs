//! Non-temporal stores, for destinations far larger than the caches: their
//! lines are written without being read first, and without evicting the
//! lines the caches hold.

/// The bytes of a box from which its destination is written with non-temporal
/// stores: half the L2 of a core, past which the lines the stores would read
/// first mostly come from memory.
pub(super) const STREAM_BYTES: usize = 1 << 20;

/// The shortest run copied with non-temporal stores: shorter runs would leave
/// lines part-written at both ends.
pub(super) const STREAM_RUN: usize = 256;

/// Copies `bytes` bytes from `src` to `dst`, with non-temporal stores where the
/// target has them; [`store_fence`] must follow before the destination is read.
///
/// # Safety
/// `bytes` readable at `src` and writable at `dst`, not overlapping.
pub(super) unsafe fn copy_streamed(src: *const u8, dst: *mut u8, bytes: usize) {
    // SAFETY: forwarded from the caller; the edges are inside its bytes.
    unsafe {
        stream_between_edges(src, dst, bytes, |from, to, len| {
            std::ptr::copy_nonoverlapping(from, to, len)
        })
    }
}

/// Copies a row of `bytes / N` elements of `N` bytes from `src` to `dst`, a
/// multiple of `N`, with non-temporal stores where the target has them, the
/// elements before the first 16-byte unit and after the last included (each
/// alone): no line of the row is read from memory before it is written, even
/// its first and last, which other copies complete. [`store_fence`] must follow
/// before the destination is read.
///
/// # Safety
/// `bytes` (a multiple of `N`) readable at `src` and writable at `dst`, not
/// overlapping; `dst` a multiple of `N`, and `N` a divisor of 16.
pub(super) unsafe fn copy_streamed_elements<const N: usize>(
    src: *const u8,
    dst: *mut u8,
    bytes: usize,
) {
    debug_assert!(
        16 % N == 0 && (dst as usize).is_multiple_of(N) && bytes.is_multiple_of(N),
        "whole elements of {N} bytes at a multiple of {N}"
    );
    // SAFETY: forwarded from the caller; the edges are whole elements inside
    // its bytes, since `dst` is a multiple of `N` (so is every 16-byte unit).
    unsafe {
        stream_between_edges(src, dst, bytes, |from, to, len| {
            for at in (0..len).step_by(N) {
                copy_element_streamed::<N>(from.add(at), to.add(at));
            }
        })
    }
}

/// Copies `bytes` bytes from `src` to `dst`: the 16-byte units of the
/// destination with non-temporal stores where the target has them, the bytes
/// before the first and after the last with `edge` (from, to, length).
///
/// # Safety
/// `bytes` readable at `src` and writable at `dst`, not overlapping; `edge`
/// copies what it is given.
#[inline(always)]
unsafe fn stream_between_edges(
    src: *const u8,
    dst: *mut u8,
    bytes: usize,
    edge: impl Fn(*const u8, *mut u8, usize),
) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        const CHUNK: usize = 16;
        let head = ((CHUNK - dst as usize % CHUNK) % CHUNK).min(bytes);
        let chunks = (bytes - head) / CHUNK;
        let (from, to) = (src.wrapping_add(head), dst.wrapping_add(head));
        // SAFETY: one aligned 16-byte chunk inside the caller's bytes; SSE2 is
        // in every x86-64.
        let chunk = |k: usize| unsafe {
            let value = _mm_loadu_si128(from.add(k * CHUNK).cast::<__m128i>());
            _mm_stream_si128(to.add(k * CHUNK).cast::<__m128i>(), value);
        };
        let done = head + chunks * CHUNK;
        // SAFETY: the head, the chunks, then the tail, all inside the caller's
        // bytes.
        unsafe {
            if stores_alias_next_loads(src, dst) {
                edge(src.add(done), dst.add(done), bytes - done);
                (0..chunks).rev().for_each(chunk);
                edge(src, dst, head);
            } else {
                edge(src, dst, head);
                (0..chunks).for_each(chunk);
                edge(src.add(done), dst.add(done), bytes - done);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    edge(src, dst, bytes);
}

/// Copies one element of `N` bytes from `src` to `dst`, with a non-temporal
/// store where the target has one for it (elements of 4, 8 or 16 bytes at a
/// multiple of their size): the elements beside a streamed box's tiles, in
/// lines that another copy (or nothing) completes, which an ordinary store
/// would read from memory first. [`store_fence`] must follow before the
/// destination is read.
///
/// # Safety
/// `N` bytes readable at `src` and writable at `dst`, not overlapping.
#[inline(always)]
pub(super) unsafe fn copy_element_streamed<const N: usize>(src: *const u8, dst: *mut u8) {
    #[cfg(target_arch = "x86_64")]
    if (dst as usize).is_multiple_of(N) {
        use std::arch::x86_64::{
            _mm_loadu_si128, _mm_stream_si32, _mm_stream_si64, _mm_stream_si128,
        };
        // SAFETY: as documented; the store is aligned to its size (checked
        // above), and SSE2, whose stores these are, is in every x86-64.
        unsafe {
            match N {
                4 => return _mm_stream_si32(dst.cast(), src.cast::<i32>().read_unaligned()),
                8 => return _mm_stream_si64(dst.cast(), src.cast::<i64>().read_unaligned()),
                16 => return _mm_stream_si128(dst.cast(), _mm_loadu_si128(src.cast())),
                _ => {}
            }
        }
    }
    // SAFETY: as documented.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, N) }
}

/// How far the destination may lie ahead of the source within a page, in
/// bytes, for a forward copy's stores to hold up its next loads: a load whose
/// address matches a pending store's in its low 12 bits waits for it, and
/// non-temporal stores stay pending long (measured in the performance pages).
const ALIASING_WINDOW: usize = 256;

/// Whether a forward copy from `src` to `dst` would store just ahead of its
/// next loads within a page (two arrays allocated one after the other, for
/// example); copied backward, its stores trail its loads instead.
fn stores_alias_next_loads(src: *const u8, dst: *mut u8) -> bool {
    let ahead = (dst as usize).wrapping_sub(src as usize) % 4096;
    ahead != 0 && ahead < ALIASING_WINDOW
}

/// Orders the non-temporal stores before any later store (a no-op where there
/// are none).
pub(super) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2, which every x86-64 has.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_forward_or_backward_whatever_the_pages_offsets() {
        // The destination at every distance from the source within a page
        // around the aliasing window, each copy of a length with a head and
        // a tail or without; every byte copied, the bytes around untouched.
        let mut buffer = vec![0u8; 4 * 4096];
        let base = buffer.as_ptr().align_offset(4096);
        for ahead in [0, 1, 16, 40, 255, ALIASING_WINDOW, 4080, 4095] {
            assert_eq!(
                stores_alias_next_loads(std::ptr::null(), std::ptr::without_provenance_mut(ahead)),
                (1..ALIASING_WINDOW).contains(&ahead)
            );
            for (from, bytes) in [(0, 0), (3, 5), (0, 1000), (7, 1003), (16, 2048)] {
                let (src, dst) = (base + from, base + from + 4096 + ahead);
                buffer
                    .iter_mut()
                    .enumerate()
                    .for_each(|(b, v)| *v = (b * 131 % 251) as u8);
                let mut want = buffer.clone();
                want.copy_within(src..src + bytes, dst);
                let p = buffer.as_mut_ptr();
                // SAFETY: both ranges inside the buffer, 4096 bytes apart or more.
                unsafe {
                    copy_streamed(p.add(src), p.add(dst), bytes);
                    store_fence();
                }
                assert!(
                    buffer == want,
                    "{bytes} bytes, destination {ahead} bytes ahead in its page"
                );
            }
        }
    }
}
