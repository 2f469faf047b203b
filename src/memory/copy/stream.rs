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
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        const CHUNK: usize = 16;
        let head = ((CHUNK - dst as usize % CHUNK) % CHUNK).min(bytes);
        let chunks = (bytes - head) / CHUNK;
        // SAFETY: the head, the aligned 16-byte chunks, then the tail, all
        // inside the caller's bytes; SSE2 is in every x86-64.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, head);
            let (from, to) = (src.add(head), dst.add(head));
            for k in 0..chunks {
                let value = _mm_loadu_si128(from.add(k * CHUNK).cast::<__m128i>());
                _mm_stream_si128(to.add(k * CHUNK).cast::<__m128i>(), value);
            }
            let done = head + chunks * CHUNK;
            std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), bytes - done);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as documented.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, bytes)
    };
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
