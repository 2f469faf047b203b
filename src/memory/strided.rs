//! Copies between strided storages and contiguous bytes, run by run: a run of a
//! box in C order (what the planner cuts messages from) becomes the few
//! sub-boxes [`Storage::pieces`] gives, and consecutive sub-boxes of one shape
//! at one step on both sides join one kernel call with one more axis. So the
//! rows of a message (its runs, one per row of a pencil) unpacked into a
//! permuted storage make one blocked transpose, never a strided copy per row.
//! Packing a message gathers its runs into the slot, unpacking scatters them
//! out of it, and the kept elements go from the input's storage to the
//! output's sub-box by sub-box when both sides cut a run alike (always when
//! the shape does not change), else through a small bounce buffer.

use crate::distribution::layout::MAX_DIMS;
use crate::distribution::storage::{Piece, Storage};
use crate::memory::{BoxCopy, MemorySpace};

/// A run of a box: `len` elements from C-order position `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunAt {
    /// C-order position of its first element in the box.
    pub start: u64,
    /// Number of elements.
    pub len: u64,
}

/// Which way runs move between a storage and contiguous bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the storage into the bytes (packing a send).
    Gather,
    /// From the bytes into the storage (unpacking a receive).
    Scatter,
}

/// One sub-box copy: its axes longer than one, their strides on both sides, and
/// where it starts on both sides (in elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Block {
    extents: [usize; MAX_DIMS],
    src_strides: [usize; MAX_DIMS],
    dst_strides: [usize; MAX_DIMS],
    ndims: usize,
    src_at: usize,
    dst_at: usize,
}

impl Block {
    /// `piece` of `storage` (its axes longer than one) against the same
    /// elements back to back: their C-order strides.
    fn against_packed(piece: &Piece, storage: &Storage) -> Block {
        let mut block = Block::squeezed(piece, storage);
        let mut weight = 1;
        for k in (0..block.ndims).rev() {
            block.dst_strides[k] = weight;
            weight *= block.extents[k];
        }
        block
    }

    /// `piece`'s axes longer than one, at `storage`'s strides on the source side.
    fn squeezed(piece: &Piece, storage: &Storage) -> Block {
        let mut block = Block {
            extents: [1; MAX_DIMS],
            src_strides: [0; MAX_DIMS],
            dst_strides: [0; MAX_DIMS],
            ndims: 0,
            src_at: piece.offset as usize,
            dst_at: 0,
        };
        for k in (0..piece.ndims).filter(|&k| piece.extents[k] > 1) {
            block.extents[block.ndims] = piece.extents[k] as usize;
            block.src_strides[block.ndims] = storage.strides()[k] as usize;
            block.ndims += 1;
        }
        block
    }

    /// The same copy the other way.
    fn swapped(self) -> Block {
        Block {
            src_strides: self.dst_strides,
            dst_strides: self.src_strides,
            src_at: self.dst_at,
            dst_at: self.src_at,
            ..self
        }
    }

    /// True when `other` copies elements of the same shape at the same strides.
    fn same_shape(&self, other: &Block) -> bool {
        let n = self.ndims;
        n == other.ndims
            && self.extents[..n] == other.extents[..n]
            && self.src_strides[..n] == other.src_strides[..n]
            && self.dst_strides[..n] == other.dst_strides[..n]
    }
}

/// Copies blocks from `src` to `dst`, joining consecutive blocks of one shape
/// at one positive step on both sides into one kernel call with a leading axis.
pub struct Copier<'a, S: MemorySpace> {
    space: &'a S,
    elem_size: usize,
    src: *const u8,
    dst: *mut u8,
    /// The bytes of the destination this copier's pass writes, when the caller
    /// said ([`Copier::within`]), else 0.
    whole: usize,
    /// The blocks joined so far, not yet copied.
    pending: Option<Joined>,
}

/// Consecutive blocks of one shape joined into one copy.
#[derive(Clone, Copy, Debug)]
struct Joined {
    /// The first block.
    first: Block,
    /// How many blocks.
    count: usize,
    /// The step from one block to the next on both sides, once a second joined.
    steps: Option<Steps>,
}

/// How far apart consecutive joined blocks start, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Steps {
    src: usize,
    dst: usize,
}

impl Joined {
    /// Where the last joined block starts on both sides.
    fn last(&self) -> (usize, usize) {
        let (src, dst) = self.steps.map_or((0, 0), |s| (s.src, s.dst));
        let k = self.count - 1;
        (self.first.src_at + src * k, self.first.dst_at + dst * k)
    }

    /// Joins `block` when it has the blocks' shape and follows the last one at
    /// their step (any positive step on both sides for the second); returns
    /// whether it did.
    fn join(&mut self, block: &Block) -> bool {
        let (src, dst) = self.last();
        let (Some(a), Some(b)) = (block.src_at.checked_sub(src), block.dst_at.checked_sub(dst))
        else {
            return false;
        };
        let step = Steps { src: a, dst: b };
        let follows = match self.steps {
            None => a > 0 && b > 0,
            Some(steps) => steps == step,
        };
        let room = self.first.ndims < MAX_DIMS;
        if !(room && follows && self.first.same_shape(block)) {
            return false;
        }
        self.steps = Some(step);
        self.count += 1;
        true
    }
}

impl<'a, S: MemorySpace> Copier<'a, S> {
    /// A copier of elements of `elem_size` bytes from `src` to `dst`.
    pub fn new(space: &'a S, elem_size: usize, src: *const u8, dst: *mut u8) -> Copier<'a, S> {
        Copier {
            space,
            elem_size,
            src,
            dst,
            whole: 0,
            pending: None,
        }
    }

    /// This copier, its copies part of a pass that writes `whole` bytes of its
    /// destination, none read before the pass ends (a strided output filled
    /// chunk by chunk): their stores are then chosen for the whole
    /// ([`MemorySpace::copy_box_within`]).
    pub fn within(self, whole: usize) -> Copier<'a, S> {
        Copier { whole, ..self }
    }

    /// Moves the run `run` of the box that `storage` places at this copier's
    /// storage side (the source for a gather, the destination for a scatter)
    /// to or from position `packed_at` (in elements) of its bytes side.
    ///
    /// # Safety
    /// The run inside the box, the storage's span valid on its side, the bytes
    /// valid for the run on theirs, the two disjoint; they stay so until
    /// [`Copier::finish`].
    pub unsafe fn run(
        &mut self,
        storage: &Storage,
        run: RunAt,
        packed_at: usize,
        direction: Direction,
    ) {
        let mut at = packed_at;
        for piece in storage.pieces(run.start, run.len) {
            let mut block = Block::against_packed(&piece, storage);
            block.dst_at = at;
            at += piece.elements() as usize;
            let block = match direction {
                Direction::Gather => block,
                Direction::Scatter => block.swapped(),
            };
            // SAFETY: forwarded from the caller.
            unsafe { self.push(block) };
        }
    }

    /// Copies the run of `len` elements from position `from.1` of the box that
    /// `from.0` places at the source to position `to.1` of the box that `to.0`
    /// places at the destination: sub-box by sub-box when both cut it alike,
    /// else through `bounce` (at least one element) a chunk at a time.
    ///
    /// # Safety
    /// Both runs inside their boxes, both spans valid (the source readable, the
    /// destination writable) and disjoint from each other and from `bounce`.
    pub unsafe fn copy_run(
        &mut self,
        from: (&Storage, u64),
        to: (&Storage, u64),
        len: u64,
        bounce: &mut [u8],
    ) {
        let (sources, targets) = (from.0.pieces(from.1, len), to.0.pieces(to.1, len));
        let pairs = sources.clone().zip(targets.clone());
        let alike = sources.count() == targets.count()
            && pairs.clone().all(|(a, b)| {
                let (a, b) = (Block::squeezed(&a, from.0), Block::squeezed(&b, to.0));
                a.extents[..a.ndims] == b.extents[..b.ndims]
            });
        if !alike {
            // SAFETY: forwarded from the caller.
            return unsafe { self.bounced(from, to, len, bounce) };
        }
        // SAFETY: forwarded from the caller; the pieces are alike.
        unsafe { self.copy_alike(from, to, len) }
    }

    /// [`Copier::copy_run`] between two storages that cut the run into pieces
    /// of the same shapes (two storages of one box, for example).
    ///
    /// # Safety
    /// As [`Copier::copy_run`], and the pieces alike.
    pub unsafe fn copy_alike(&mut self, from: (&Storage, u64), to: (&Storage, u64), len: u64) {
        let pairs = from.0.pieces(from.1, len).zip(to.0.pieces(to.1, len));
        for (a, b) in pairs {
            let (source, target) = (Block::squeezed(&a, from.0), Block::squeezed(&b, to.0));
            let block = Block {
                dst_strides: target.src_strides,
                dst_at: target.src_at,
                ..source
            };
            // SAFETY: forwarded from the caller; both pieces hold the same
            // elements in the same order.
            unsafe { self.push(block) };
        }
    }

    /// [`Copier::copy_run`] through `bounce`: gathers a chunk, scatters it.
    ///
    /// # Safety
    /// As [`Copier::copy_run`].
    unsafe fn bounced(
        &mut self,
        from: (&Storage, u64),
        to: (&Storage, u64),
        len: u64,
        bounce: &mut [u8],
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { self.flush() };
        let chunk = (bounce.len() / self.elem_size).max(1) as u64;
        let at = bounce.as_mut_ptr();
        let mut done = 0;
        while done < len {
            let n = chunk.min(len - done);
            let mut gather = Copier::new(self.space, self.elem_size, self.src, at);
            let scatter = Copier::new(self.space, self.elem_size, at, self.dst);
            let mut scatter = scatter.within(self.whole);
            // SAFETY: forwarded from the caller; the bounce holds `n` elements.
            unsafe {
                gather.run(
                    from.0,
                    RunAt {
                        start: from.1 + done,
                        len: n,
                    },
                    0,
                    Direction::Gather,
                );
                gather.finish();
                scatter.run(
                    to.0,
                    RunAt {
                        start: to.1 + done,
                        len: n,
                    },
                    0,
                    Direction::Scatter,
                );
                scatter.finish();
            }
            done += n;
        }
    }

    /// Joins `block` to the pending ones when it has their shape and follows at
    /// their step, else copies those and keeps it pending.
    ///
    /// # Safety
    /// As [`Copier::run`].
    unsafe fn push(&mut self, block: Block) {
        if self
            .pending
            .as_mut()
            .is_some_and(|joined| joined.join(&block))
        {
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.flush() };
        self.pending = Some(Joined {
            first: block,
            count: 1,
            steps: None,
        });
    }

    /// Copies the pending blocks in one kernel call.
    ///
    /// # Safety
    /// As [`Copier::run`].
    unsafe fn flush(&mut self) {
        let Some(Joined {
            first,
            count,
            steps,
        }) = self.pending.take()
        else {
            return;
        };
        let n = first.ndims;
        let (mut extents, mut src_strides, mut dst_strides) =
            ([0; MAX_DIMS], [0; MAX_DIMS], [0; MAX_DIMS]);
        // A leading axis for the joined blocks (none joins a block of MAX_DIMS axes).
        let lead = usize::from(n < MAX_DIMS);
        extents[0] = count;
        (src_strides[0], dst_strides[0]) = steps.map_or((0, 0), |s| (s.src, s.dst));
        extents[lead..n + lead].copy_from_slice(&first.extents[..n]);
        src_strides[lead..n + lead].copy_from_slice(&first.src_strides[..n]);
        dst_strides[lead..n + lead].copy_from_slice(&first.dst_strides[..n]);
        let axes = n + lead;
        let copy = BoxCopy {
            extents: &extents[..axes],
            src_strides: &src_strides[..axes],
            dst_strides: &dst_strides[..axes],
        };
        let size = self.elem_size;
        let (src, dst) = (
            self.src.wrapping_add(first.src_at * size),
            self.dst.wrapping_add(first.dst_at * size),
        );
        // SAFETY: every joined block lies inside its side (caller's contract).
        unsafe { self.space.copy_box_within(size, copy, src, dst, self.whole) };
    }

    /// Copies what is pending.
    ///
    /// # Safety
    /// As [`Copier::run`].
    pub unsafe fn finish(mut self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.flush() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::groups::ReshapeSide;
    use crate::memory::Host;
    use proptest::prelude::*;

    /// A box's extents, two storages' strides, and runs as (start, length).
    type Case = (Vec<u64>, [Vec<i64>; 2], Vec<(u64, u64)>);

    /// A box of 1–4 axes, two random storages of it (axis order and padding),
    /// and increasing disjoint runs of it.
    fn case() -> impl Strategy<Value = Case> {
        let axes = prop::collection::vec(1u64..6, 1..5);
        axes.prop_flat_map(|extents| {
            let storage = || {
                let n = extents.len();
                let order = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
                (order, prop::collection::vec(0u64..3, n))
            };
            let total: u64 = extents.iter().product();
            let cuts = prop::collection::vec(0..=total, 0..8);
            (Just(extents.clone()), storage(), storage(), cuts)
        })
        .prop_map(|(extents, a, b, mut cuts)| {
            let strides = |(order, pad): (Vec<usize>, Vec<u64>)| {
                let mut strides = vec![0i64; extents.len()];
                let mut weight = 1i64;
                for &k in order.iter().rev() {
                    strides[k] = weight;
                    weight *= (extents[k] + pad[k]) as i64;
                }
                strides
            };
            cuts.sort_unstable();
            let runs = cuts.chunks(2).filter(|c| c.len() == 2 && c[0] < c[1]);
            let runs = runs.map(|c| (c[0], c[1] - c[0])).collect();
            let strides = [strides(a), strides(b)];
            (extents, strides, runs)
        })
    }

    /// The address of box element `flat` (C order) in `storage`.
    fn address(storage: &Storage, flat: u64) -> usize {
        let (mut rest, mut at) = (flat, 0);
        for k in (0..storage.extents().len()).rev() {
            at += rest % storage.extents()[k] * storage.strides()[k];
            rest /= storage.extents()[k];
        }
        at as usize
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn runs_move_between_storages_and_touch_nothing_else((extents, [a, b], runs) in case()) {
            let side = ReshapeSide::Input;
            let (from, to) = (Storage::new(&extents, &a, side, 8, 0).unwrap(), Storage::new(&extents, &b, side, 8, 0).unwrap());
            let total: u64 = extents.iter().product();
            let mut source = vec![u64::MAX; from.span() as usize];
            (0..total).for_each(|f| source[address(&from, f)] = f);
            let (mut packed, mut target, mut copied) = (vec![0u64; total as usize], vec![u64::MAX; to.span() as usize], vec![u64::MAX; to.span() as usize]);
            let bytes = |v: &mut Vec<u64>| v.as_mut_ptr().cast::<u8>();
            let mut bounce = [0u8; 16];
            // SAFETY: every run lies inside the box; the buffers hold the spans.
            unsafe {
                let mut gather = Copier::new(&Host, 8, source.as_ptr().cast(), bytes(&mut packed));
                let mut at = 0;
                for &(start, len) in &runs {
                    gather.run(&from, RunAt { start, len }, at, Direction::Gather);
                    at += len as usize;
                }
                gather.finish();
                let mut scatter = Copier::new(&Host, 8, packed.as_ptr().cast(), bytes(&mut target));
                let mut at = 0;
                for &(start, len) in &runs {
                    scatter.run(&to, RunAt { start, len }, at, Direction::Scatter);
                    at += len as usize;
                }
                scatter.finish();
                let mut copier = Copier::new(&Host, 8, source.as_ptr().cast(), bytes(&mut copied));
                for &(start, len) in &runs {
                    copier.copy_run((&from, start), (&to, start), len, &mut bounce);
                }
                copier.finish();
            }
            let mut want = vec![u64::MAX; to.span() as usize];
            for &(start, len) in &runs {
                (start..start + len).for_each(|f| want[address(&to, f)] = f);
            }
            prop_assert_eq!(&target, &want);
            prop_assert_eq!(&copied, &want);
        }
    }
}
