//! TEMPORARY stub until the kernels branch lands.
pub mod copy;
pub mod strided;

pub use copy::BoxCopy;

/// Where buffers live.
pub trait MemorySpace {
    /// Copies a box.
    ///
    /// # Safety
    /// As [`copy::copy_box`].
    unsafe fn copy_box(&self, elem_size: usize, copy: BoxCopy<'_>, src: *const u8, dst: *mut u8);
}

/// Host memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

impl MemorySpace for Host {
    unsafe fn copy_box(&self, elem_size: usize, copy: BoxCopy<'_>, src: *const u8, dst: *mut u8) {
        // SAFETY: forwarded.
        unsafe { copy::copy_box(elem_size, copy, src, dst) }
    }
}
