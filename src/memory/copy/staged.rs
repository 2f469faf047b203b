//! The blocked transpose of a plane of any strides and element size (the
//! transposes [`super::tiles`] has no kernel for): blocks one cache line a
//! side, or, when each of a block's destination rows lies in another page, 128
//! bytes along the source's rows by 256 along the destination's, each staged
//! whole through a buffer, so that a visit to a page moves more than a line.

use super::{Axis, Mover};

/// The bytes of a cache line, a block's rows when its destination rows share
/// pages.
const LINE: usize = 64;

/// The bytes of a page: destination rows this far apart each lie in another.
pub(super) const PAGE: usize = 4096;

/// The bytes a block spans along the source's rows when its destination rows
/// lie in distinct pages.
const FAR_SRC_ROW: usize = 128;

/// The bytes a block spans along the destination's rows when those lie in
/// distinct pages.
const FAR_DST_ROW: usize = 256;

/// The most elements a block spans along either axis.
const MAX_SIDE: usize = 64;

/// The bytes of the staging: `FAR_SRC_ROW · MAX_SIDE` bound every block, since
/// a block spans at most `FAR_SRC_ROW / elem_size` elements along the source's
/// rows (or `LINE / elem_size`, fewer) and `MAX_SIDE` along the other axis.
pub(super) const STAGING: usize = FAR_SRC_ROW * MAX_SIDE;

/// The staging of one block.
pub(super) type Staging = [u8; STAGING];

/// One plane of a transpose: axis `a` fastest in the source, `b` in the
/// destination. It is copied in blocks, each read into a staging buffer whole,
/// then written out whole, so that every line is touched once whatever the
/// strides' alignment (a power-of-two stride would otherwise map a tile's lines
/// to a few cache sets).
pub(super) struct Plane {
    /// The source's fastest axis.
    a: Axis,
    /// The destination's fastest axis.
    b: Axis,
    /// The elements a block spans along `a`, the source's rows.
    side_a: usize,
    /// The elements a block spans along `b`, the destination's rows.
    side_b: usize,
}

impl Plane {
    /// The plane of `a` and `b` for elements of `size` bytes: blocks of one
    /// line a side, or, when the destination's rows are a page or more apart,
    /// of [`FAR_SRC_ROW`] by [`FAR_DST_ROW`] bytes (measured 1.5–2× faster
    /// there on 256³ and 128³ float64 transposes, and slower elsewhere).
    pub(super) fn new(a: Axis, b: Axis, size: usize) -> Plane {
        let (src_row, dst_row) = if a.dst >= PAGE {
            (FAR_SRC_ROW, FAR_DST_ROW)
        } else {
            (LINE, LINE)
        };
        let side = |bytes: usize| (bytes / size).clamp(1, MAX_SIDE);
        Plane {
            a,
            b,
            side_a: side(src_row),
            side_b: side(dst_row),
        }
    }

    /// Copies the plane at `src` and `dst` block by block, along the shorter
    /// of the two axes innermost: the lines a pass along it touches on its
    /// strided side stay few, and the next pass uses their neighbours (measured
    /// twice as fast as along the longer axis when one is 256 times the other).
    ///
    /// # Safety
    /// As [`super::copy_box_within`], for the plane's elements.
    pub(super) unsafe fn copy<M: Mover>(
        &self,
        mover: M,
        staging: &mut Staging,
        src: *const u8,
        dst: *mut u8,
    ) {
        let a_starts = (0..self.a.n).step_by(self.side_a);
        let b_starts = (0..self.b.n).step_by(self.side_b);
        // SAFETY: the blocks of the plane.
        unsafe {
            if self.a.n < self.b.n {
                for b0 in b_starts {
                    for a0 in a_starts.clone() {
                        self.copy_block_at(mover, staging, (a0, b0), src, dst);
                    }
                }
            } else {
                for a0 in a_starts {
                    for b0 in b_starts.clone() {
                        self.copy_block_at(mover, staging, (a0, b0), src, dst);
                    }
                }
            }
        }
    }

    /// Copies the block that starts at index `a0` along `a` and `b0` along `b`
    /// of the plane at `src` and `dst`.
    ///
    /// # Safety
    /// As [`super::copy_box_within`], for the plane's elements.
    #[inline(always)]
    unsafe fn copy_block_at<M: Mover>(
        &self,
        mover: M,
        staging: &mut Staging,
        (a0, b0): (usize, usize),
        src: *const u8,
        dst: *mut u8,
    ) {
        let extents = (
            self.side_a.min(self.a.n - a0),
            self.side_b.min(self.b.n - b0),
        );
        let (s, d) = (
            a0 * self.a.src + b0 * self.b.src,
            a0 * self.a.dst + b0 * self.b.dst,
        );
        // SAFETY: one block of the plane.
        unsafe { self.copy_block(mover, staging, extents, src.add(s), dst.add(d)) }
    }

    /// Copies the block of `extents` (along `a`, along `b`) at `src` and `dst`:
    /// into `staging` along `a`, the source's lines, then out along `b`, the
    /// destination's.
    ///
    /// # Safety
    /// As [`super::copy_box_within`], for the block's elements.
    #[inline(always)]
    unsafe fn copy_block<M: Mover>(
        &self,
        mover: M,
        staging: &mut Staging,
        (na, nb): (usize, usize),
        src: *const u8,
        dst: *mut u8,
    ) {
        let size = mover.size();
        let row = self.side_b * size;
        debug_assert!(
            self.side_a * row <= STAGING,
            "a block larger than the staging"
        );
        let buffer = staging.as_mut_ptr();
        if self.side_a == 1 && self.side_b == 1 {
            // SAFETY: the block's one element.
            return unsafe { mover.move_one(src, dst) };
        }
        for j in 0..nb {
            for i in 0..na {
                let (from, to) = (i * self.a.src + j * self.b.src, i * row + j * size);
                // SAFETY: an element of the block; the staging holds the block.
                unsafe { mover.move_one(src.add(from), buffer.add(to)) }
            }
        }
        for i in 0..na {
            for j in 0..nb {
                let (from, to) = (i * row + j * size, i * self.a.dst + j * self.b.dst);
                // SAFETY: as above, back from the staging.
                unsafe { mover.move_one(buffer.add(from), dst.add(to)) }
            }
        }
    }
}
