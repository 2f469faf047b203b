//! Memory spaces: where a plan's buffers live and how the elements of a box move
//! between two strided storages in them. Pack, unpack and the local copies go
//! through [`MemorySpace`], the one seam a device memory needs, so that one can
//! follow later without touching the planner. The host's kernels are in
//! [`copy`]; [`strided`] moves the runs of a box in C order (what messages are
//! cut from) through them.

pub mod copy;
pub mod strided;

pub use copy::BoxCopy;

/// Where a plan's buffers live and how their elements are copied: the one seam
/// pack, unpack and the local copies go through, so device memory can follow
/// later without touching the planner.
pub trait MemorySpace {
    /// Copies the elements of the box `copy`, each of `elem_size` bytes, from
    /// `src` to `dst`, both in this memory space, as one part of a destination
    /// of `whole` bytes that one pass writes part by part and nothing reads
    /// before the pass ends (0: the box is a destination of its own); see
    /// [`copy::copy_box_within`].
    ///
    /// # Safety
    /// As [`copy::copy_box_within`].
    unsafe fn copy_box_within(
        &self,
        elem_size: usize,
        copy: BoxCopy<'_>,
        src: *const u8,
        dst: *mut u8,
        whole: usize,
    );
}

/// Host memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct Host;

impl MemorySpace for Host {
    unsafe fn copy_box_within(
        &self,
        elem_size: usize,
        copy: BoxCopy<'_>,
        src: *const u8,
        dst: *mut u8,
        whole: usize,
    ) {
        // SAFETY: the caller's contract is copy::copy_box_within's.
        unsafe { copy::copy_box_within(elem_size, copy, src, dst, whole) }
    }
}
