//! Copies between strided storages and contiguous bytes, run by run: a run of a
//! box in C order (what the planner cuts messages from) becomes the few
//! sub-boxes [`Storage::pieces`] gives, each one kernel call of the memory space.
//! Packing a message gathers its runs into the slot, unpacking scatters them
//! out of it, and the kept elements go from the input's storage to the output's
//! sub-box by sub-box when both sides cut their runs alike (always when the
//! shape does not change), else through a small bounce buffer.

use crate::distribution::layout::MAX_DIMS;
use crate::distribution::storage::{Piece, Storage};
use crate::memory::{BoxCopy, MemorySpace};

/// The C-order strides of `extents`, in elements.
fn packed_strides(extents: &[usize], strides: &mut [usize; MAX_DIMS]) {
    let mut weight = 1;
    for k in (0..extents.len()).rev() {
        strides[k] = weight;
        weight *= extents[k];
    }
}

/// `piece`'s extents and `storage`'s strides as the kernels take them.
struct Shaped {
    extents: [usize; MAX_DIMS],
    strides: [usize; MAX_DIMS],
    ndims: usize,
}

impl Shaped {
    /// Every axis of `piece`, at `storage`'s strides.
    fn of(piece: &Piece, storage: &Storage) -> Shaped {
        let mut shaped = Shaped {
            extents: [1; MAX_DIMS],
            strides: [0; MAX_DIMS],
            ndims: piece.ndims,
        };
        for k in 0..piece.ndims {
            shaped.extents[k] = piece.extents[k] as usize;
            shaped.strides[k] = storage.strides()[k] as usize;
        }
        shaped
    }

    /// Only the axes longer than one, so that two pieces of the same elements in
    /// the same order compare equal whatever their unit axes.
    fn squeezed(piece: &Piece, storage: &Storage) -> Shaped {
        let all = Shaped::of(piece, storage);
        let mut shaped = Shaped {
            extents: [1; MAX_DIMS],
            strides: [0; MAX_DIMS],
            ndims: 0,
        };
        for k in (0..all.ndims).filter(|&k| all.extents[k] > 1) {
            shaped.extents[shaped.ndims] = all.extents[k];
            shaped.strides[shaped.ndims] = all.strides[k];
            shaped.ndims += 1;
        }
        shaped
    }

    fn extents(&self) -> &[usize] {
        &self.extents[..self.ndims]
    }

    fn strides(&self) -> &[usize] {
        &self.strides[..self.ndims]
    }
}

/// Which way a run moves between a storage and contiguous bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the storage into the bytes (packing a send).
    Gather,
    /// From the bytes into the storage (unpacking a receive).
    Scatter,
}

/// Moves the `len` elements from C-order position `start` of the box that
/// `storage` places at `base` between there and `bytes` (back to back), as
/// `direction` says.
///
/// # Safety
/// The storage's span at `base` must be valid (readable for a gather, writable
/// for a scatter), `bytes` valid for `len` elements the other way, the two
/// disjoint.
pub unsafe fn move_run(
    space: &impl MemorySpace,
    elem_size: usize,
    storage: &Storage,
    base: *mut u8,
    run: RunAt,
    bytes: *mut u8,
    direction: Direction,
) {
    let mut at = 0;
    for piece in storage.pieces(run.start, run.len) {
        let shaped = Shaped::of(&piece, storage);
        let mut contiguous = [0; MAX_DIMS];
        packed_strides(shaped.extents(), &mut contiguous);
        let stored = base.wrapping_add(piece.offset as usize * elem_size);
        let packed = bytes.wrapping_add(at * elem_size);
        let (src, dst, src_strides, dst_strides) = match direction {
            Direction::Gather => (
                stored,
                packed,
                shaped.strides(),
                &contiguous[..shaped.ndims],
            ),
            Direction::Scatter => (
                packed,
                stored,
                &contiguous[..shaped.ndims],
                shaped.strides(),
            ),
        };
        let copy = BoxCopy {
            extents: shaped.extents(),
            src_strides,
            dst_strides,
        };
        // SAFETY: the piece lies inside the storage's span (a sub-box of the box)
        // and `at` stays below `len` elements (caller's contract).
        unsafe { space.copy_box(elem_size, copy, src, dst) };
        at += piece.elements() as usize;
    }
}

/// A run of a box: `len` elements from C-order position `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunAt {
    /// C-order position of its first element in the box.
    pub start: u64,
    /// Number of elements.
    pub len: u64,
}

/// One run copied from one storage to another.
#[derive(Clone, Copy, Debug)]
pub struct StoredRun<'a> {
    /// The storage of the box it lies in.
    pub storage: &'a Storage,
    /// Where that box's first element lies.
    pub base: *mut u8,
    /// Its C-order position in that box.
    pub start: u64,
}

/// Copies `len` elements from `from` to `to`: sub-box by sub-box when both
/// boxes cut the run into pieces of the same extents (apart from unit axes),
/// else through `bounce` (at least one element) a chunk at a time.
///
/// # Safety
/// Both spans valid (`from` readable, `to` writable) and disjoint from each
/// other and from `bounce`.
pub unsafe fn copy_run(
    space: &impl MemorySpace,
    elem_size: usize,
    from: StoredRun<'_>,
    to: StoredRun<'_>,
    len: u64,
    bounce: &mut [u8],
) {
    let mut sources = from.storage.pieces(from.start, len);
    let mut targets = to.storage.pieces(to.start, len);
    let matched = sources.clone().zip(targets.clone()).all(|(a, b)| {
        let (a, b) = (
            Shaped::squeezed(&a, from.storage),
            Shaped::squeezed(&b, to.storage),
        );
        a.extents() == b.extents()
    }) && sources.clone().count() == targets.clone().count();
    if !matched {
        // SAFETY: forwarded from the caller.
        return unsafe { copy_bounced(space, elem_size, from, to, len, bounce) };
    }
    while let (Some(a), Some(b)) = (sources.next(), targets.next()) {
        let (sa, sb) = (
            Shaped::squeezed(&a, from.storage),
            Shaped::squeezed(&b, to.storage),
        );
        let copy = BoxCopy {
            extents: sa.extents(),
            src_strides: sa.strides(),
            dst_strides: sb.strides(),
        };
        let src = from.base.wrapping_add(a.offset as usize * elem_size);
        let dst = to.base.wrapping_add(b.offset as usize * elem_size);
        // SAFETY: both pieces lie inside their spans (caller's contract) and hold
        // the same elements in the same order.
        unsafe { space.copy_box(elem_size, copy, src, dst) };
    }
}

/// [`copy_run`] through `bounce`: gathers a chunk, scatters it.
///
/// # Safety
/// As [`copy_run`].
unsafe fn copy_bounced(
    space: &impl MemorySpace,
    elem_size: usize,
    from: StoredRun<'_>,
    to: StoredRun<'_>,
    len: u64,
    bounce: &mut [u8],
) {
    let chunk = (bounce.len() / elem_size).max(1) as u64;
    let mut done = 0;
    while done < len {
        let n = chunk.min(len - done);
        let (source, target) = (
            RunAt {
                start: from.start + done,
                len: n,
            },
            RunAt {
                start: to.start + done,
                len: n,
            },
        );
        let at = bounce.as_mut_ptr();
        // SAFETY: forwarded from the caller; the bounce holds `n` elements.
        unsafe {
            move_run(
                space,
                elem_size,
                from.storage,
                from.base,
                source,
                at,
                Direction::Gather,
            );
            move_run(
                space,
                elem_size,
                to.storage,
                to.base,
                target,
                at,
                Direction::Scatter,
            );
        }
        done += n;
    }
}
