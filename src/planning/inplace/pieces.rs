//! The pieces of an in-place schedule: runs of elements between two buffers at
//! fixed strides ([`Piece`], [`PieceShape`]), the bytes they cover in one buffer
//! and whether two such sets meet ([`RunSet`]), and the reshape ([`Problem`]) cut
//! into them within the chunk and the budgets.

use super::Unscheduled;
use super::thresholds::MAX_PIECE_BYTES;
use crate::distribution::peers::Redistribution;

/// How the bytes of a piece lie: `count` runs of `len` bytes, `src_stride` bytes
/// apart in the source buffer and `dst_stride` apart in the destination buffer
/// (both `len` for a single run). In the staging a piece lies contiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceShape {
    /// Bytes per run.
    pub len: usize,
    /// Runs (at least one).
    pub count: usize,
    /// Bytes from one run to the next in the source buffer.
    pub src_stride: usize,
    /// Bytes from one run to the next in the destination buffer.
    pub dst_stride: usize,
}

impl PieceShape {
    /// One contiguous run of `len` bytes.
    pub fn contiguous(len: usize) -> PieceShape {
        PieceShape {
            len,
            count: 1,
            src_stride: len,
            dst_stride: len,
        }
    }

    /// Bytes of the piece.
    pub fn bytes(&self) -> usize {
        self.len * self.count
    }

    /// Its runs from `start`, `stride` bytes apart: in one of its buffers, or in
    /// the staging (`stride` = `len`).
    pub fn runs_at(&self, start: usize, stride: usize) -> RunSet {
        RunSet {
            start,
            len: self.len,
            count: self.count,
            stride,
        }
    }
}

/// The bytes of a piece in one buffer: `count` runs of `len` bytes from `start`,
/// `stride` bytes apart.
#[derive(Clone, Copy, Debug)]
pub struct RunSet {
    start: usize,
    len: usize,
    count: usize,
    stride: usize,
}

impl RunSet {
    /// One past the last byte.
    pub(super) fn end(&self) -> usize {
        self.start + (self.count - 1) * self.stride + self.len
    }

    /// The byte ranges of the runs, in order.
    #[cfg(feature = "testing")]
    pub fn ranges(&self) -> impl Iterator<Item = std::ops::Range<usize>> + use<> {
        let RunSet {
            start,
            len,
            count,
            stride,
        } = *self;
        (0..count).map(move |i| start + i * stride..start + i * stride + len)
    }

    /// True when some byte lies in both: each run of the set with fewer runs, within
    /// the other's span, against the one run of the other that could meet it.
    pub(super) fn meets(&self, other: &RunSet) -> bool {
        if self.start >= other.end() || other.start >= self.end() {
            return false;
        }
        let (few, many) = match self.count <= other.count {
            true => (self, other),
            false => (other, self),
        };
        let first = many.start.saturating_sub(few.start) / few.stride;
        (first..few.count)
            .map(|i| few.start + i * few.stride)
            .take_while(|&at| at < many.end())
            .any(|at| many.meets_run(at, at + few.len))
    }

    /// True when some byte of `[from, to)` lies in a run: in the last run that
    /// starts before `to` (runs do not overlap, so the earlier ones end before it).
    fn meets_run(&self, from: usize, to: usize) -> bool {
        if to <= self.start {
            return false;
        }
        let last = ((to - 1 - self.start) / self.stride).min(self.count - 1);
        self.start + last * self.stride + self.len > from
    }
}

/// One piece of the data: the runs of `shape` at `src` in rank `from`'s buffer go
/// to `dst` in rank `to`'s buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The rank holding the piece on input.
    pub from: usize,
    /// Byte offset of its first run in `from`'s buffer.
    pub src: usize,
    /// The rank the piece belongs to on output.
    pub to: usize,
    /// Byte offset of its first run in `to`'s buffer.
    pub dst: usize,
    /// Its runs (spanning at most the schedule's chunk on both sides).
    pub shape: PieceShape,
}

impl Piece {
    /// Its bytes in the source buffer.
    pub fn source(&self) -> RunSet {
        self.shape.runs_at(self.src, self.shape.src_stride)
    }

    /// Its bytes in the destination buffer.
    pub(super) fn destination(&self) -> RunSet {
        self.shape.runs_at(self.dst, self.shape.dst_stride)
    }

    /// True when a local move may copy it over its own source run by run, in the
    /// order of [`PieceMove::forward`](super::PieceMove::forward): a run lands only on source runs already
    /// read (or on its own, as `memmove` allows). Forward holds when the
    /// destination starts no later and its runs lie no farther apart; backward
    /// when both hold the other way.
    pub(super) fn moves_over_itself(&self) -> bool {
        let PieceShape {
            count,
            src_stride,
            dst_stride,
            ..
        } = self.shape;
        let forward = self.dst <= self.src && dst_stride <= src_stride;
        let backward = self.dst >= self.src && dst_stride >= src_stride;
        count == 1 || forward || backward
    }

    /// Appends the run of `len` bytes at `src` going to `dst` when it continues the
    /// piece's strides, within `limits`; false when it does not.
    fn extend(&mut self, src: usize, dst: usize, len: usize, limits: PieceLimits) -> bool {
        let follows = src >= self.source().end() && dst >= self.dst + self.shape.len;
        let shape = &mut self.shape;
        if len != shape.len || !follows || shape.count >= limits.runs {
            return false;
        }
        let (src_stride, dst_stride) = match shape.count {
            1 => (src - self.src, dst - self.dst),
            _ => (shape.src_stride, shape.dst_stride),
        };
        let count = shape.count;
        let continues =
            src == self.src + count * src_stride && dst == self.dst + count * dst_stride;
        if !continues || count * src_stride.max(dst_stride) + len > limits.chunk {
            return false;
        }
        *shape = PieceShape {
            len,
            count: count + 1,
            src_stride,
            dst_stride,
        };
        true
    }
}

/// How large a piece may grow, and how many there may be.
#[derive(Clone, Copy, Debug)]
struct PieceLimits {
    /// Most bytes a piece spans, on either side.
    chunk: usize,
    /// Most runs in a piece.
    runs: usize,
    /// Most pieces.
    pieces: usize,
}

/// The reshape as every rank sees it: the layouts, element size, and each rank's
/// staging budget in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a> {
    /// How the input and the output are spread (in-place scheduling needs an input
    /// that is split).
    pub layouts: &'a Redistribution,
    /// Bytes per element.
    pub elem_size: usize,
    /// Each rank's memory budget in bytes: its staging, and the scheduling state
    /// every rank holds while the schedule is made.
    pub budgets: &'a [usize],
    /// Bytes of scheduling state per piece counted against the budgets
    /// ([`SCHEDULING_BYTES_PER_PIECE`](super::thresholds::SCHEDULING_BYTES_PER_PIECE); 0 leaves all of them to the staging).
    pub scheduling_bytes_per_piece: usize,
}

impl Problem<'_> {
    /// The largest piece: an eighth of the smallest budget, at most
    /// `MAX_PIECE_BYTES`, at least one element, a whole number of elements.
    pub fn chunk(&self) -> usize {
        let smallest = self.budgets.iter().copied().min().unwrap_or(0);
        let bytes = (smallest / 8).clamp(self.elem_size, MAX_PIECE_BYTES);
        bytes / self.elem_size * self.elem_size
    }

    /// Every piece that moves, by source rank then source offset; pieces already in
    /// place are left out. Runs longer than the chunk are cut into pieces of one run;
    /// shorter ones that follow one another at the same strides on both sides join
    /// one piece of at most `runs_per_piece` runs, spanning at most the chunk.
    /// Fails beyond `most` pieces, or once it has read `runs_left` runs (counted
    /// down across calls).
    pub(super) fn pieces(
        &self,
        most: usize,
        runs_per_piece: usize,
        runs_left: &mut usize,
    ) -> Result<Vec<Piece>, Unscheduled> {
        let mut pieces = Vec::new();
        self.cut(most, runs_per_piece, runs_left, &mut |p| pieces.push(p))?;
        pieces.sort_unstable_by_key(|p| (p.from, p.src, p.to));
        Ok(pieces)
    }

    /// Cuts the pieces as [`Problem::pieces`] does, handing each to `emit`, and
    /// counts them.
    pub(super) fn cut(
        &self,
        most: usize,
        runs_per_piece: usize,
        runs_left: &mut usize,
        emit: &mut dyn FnMut(Piece),
    ) -> Result<usize, Unscheduled> {
        let nranks = self.budgets.len();
        if nranks.saturating_mul(nranks) > most {
            return Err(Unscheduled::TooManyPieces);
        }
        let limits = PieceLimits {
            chunk: self.chunk(),
            runs: runs_per_piece,
            pieces: most,
        };
        let mut cut = 0;
        for from in 0..nranks {
            let receivers = self.layouts.sends(from).into_iter().map(|t| t.peer);
            for to in std::iter::once(from).chain(receivers) {
                let mut pair = PairCut {
                    limits,
                    emit: &mut *emit,
                    cut: &mut cut,
                    runs_left: &mut *runs_left,
                };
                self.pair_pieces(from, to, &mut pair)?;
            }
        }
        Ok(cut)
    }

    /// Cuts the pieces `from` sends `to` (its local moves when the same rank).
    fn pair_pieces(&self, from: usize, to: usize, pair: &mut PairCut) -> Result<(), Unscheduled> {
        let (size, chunk) = (self.elem_size, pair.limits.chunk);
        let (source, target) = (
            self.layouts.input_region(from),
            self.layouts.output_region(to),
        );
        let mut open: Option<Piece> = None;
        for run in self.layouts.runs(from, to) {
            *pair.runs_left = (pair.runs_left.checked_sub(1)).ok_or(Unscheduled::TooIntricate)?;
            let src = source.local_offset(run.global) as usize * size;
            let dst = target.local_offset(run.global) as usize * size;
            let len = run.len as usize * size;
            if from == to && src == dst {
                continue;
            }
            if let Some(piece) = &mut open
                && piece.extend(src, dst, len, pair.limits)
            {
                continue;
            }
            if let Some(piece) = open.take() {
                pair.emit(piece)?;
            }
            let piece = |at: usize| Piece {
                from,
                src: src + at,
                to,
                dst: dst + at,
                shape: PieceShape::contiguous(chunk.min(len - at)),
            };
            match len < chunk {
                true => open = Some(piece(0)),
                false => (0..len)
                    .step_by(chunk)
                    .try_for_each(|at| pair.emit(piece(at)))?,
            }
        }
        open.map_or(Ok(()), |piece| pair.emit(piece))
    }
}

/// Where the pieces of one pair of ranks go while they are cut, and what bounds
/// them.
struct PairCut<'a> {
    limits: PieceLimits,
    emit: &'a mut dyn FnMut(Piece),
    /// Pieces cut so far, of every pair.
    cut: &'a mut usize,
    /// Runs still to be read, over every cut.
    runs_left: &'a mut usize,
}

impl PairCut<'_> {
    /// Hands `piece` on; fails beyond the most pieces.
    fn emit(&mut self, piece: Piece) -> Result<(), Unscheduled> {
        *self.cut += 1;
        if *self.cut > self.limits.pieces {
            return Err(Unscheduled::TooManyPieces);
        }
        (self.emit)(piece);
        Ok(())
    }
}
