//! A global allocator that counts the allocations of the threads that enabled
//! counting: the bytes, the calls and the peak of their live bytes. A test binary
//! installs it with `#[global_allocator] static GLOBAL: Counting = Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Forwards to the system allocator, counting for the threads in [`measure`].
pub struct Counting;

static BYTES: AtomicU64 = AtomicU64::new(0);
static CALLS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

fn record_alloc(size: usize) {
    if counting() {
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
        CALLS.fetch_add(1, Ordering::Relaxed);
        let live = LIVE.fetch_add(size as u64, Ordering::Relaxed) + size as u64;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

fn record_free(size: usize) {
    if counting() {
        // Saturating: memory allocated before counting started may be freed during it.
        let _ = LIVE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
            Some(l.saturating_sub(size as u64))
        });
    }
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record_alloc(layout.size());
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record_alloc(layout.size());
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        record_free(layout.size());
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record_free(layout.size());
        record_alloc(new_size);
        // SAFETY: the caller's arguments, passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Heap used by one measured call on its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Bytes allocated.
    pub bytes: u64,
    /// Allocation calls (a reallocation counts as one).
    pub calls: u64,
    /// Most bytes live at once, of those allocated during the call.
    pub peak_live: u64,
}

/// Runs `f` with counting on for this thread (one measurement at a time) and
/// returns its result with the heap it used.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    for counter in [&BYTES, &CALLS, &LIVE, &PEAK] {
        counter.store(0, Ordering::Relaxed);
    }
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    let usage = Usage {
        bytes: BYTES.load(Ordering::Relaxed),
        calls: CALLS.load(Ordering::Relaxed),
        peak_live: PEAK.load(Ordering::Relaxed),
    };
    (result, usage)
}
