//! Schedules of in-place execution on the exchange path under a memory budget.
//! Pure: every rank computes the same global schedule from the layouts, keeps its
//! own part, and the all-ranks simulations in the tests run it on every rank's
//! real in-place engine over the in-memory network.
//!
//! In place, a rank's buffer holds its input and must end holding its output, so
//! an element may land only where the elements that were there have left. The data
//! is cut into pieces (runs of elements between two buffers that follow one another
//! at fixed strides, spanning at most `chunk` bytes on both sides) and moved in
//! rounds. A piece is *ready* when every piece whose source shares a byte with its
//! destination has departed: then it moves, in one message or local copy, in this
//! round. The pieces waiting for one another form chains and cycles (two
//! ranks swapping, or the long cycles of a transpose); copying a piece to its
//! source rank's staging, while the budget allows, vacates its source and breaks
//! them, and a staged piece moves from the staging once its own destination is
//! vacated. Breakers are spread along the chains (`Scheduler::break_chains`), so
//! that each round moves one piece of every segment between them. Each round every
//! rank posts its messages of the round and completes them, so the rounds match
//! across ranks one for one: nothing can wait for a message another rank posts
//! later.
//!
//! Invariants the simulations check on every rank (counting, per byte, the pieces
//! that read it and the writes): a byte is written only after every piece reading
//! it has departed, each piece arrives exactly once, and the staging never holds
//! more than the budget.

use std::ops::Range;

use crate::distribution::peers::Redistribution;

/// Most rounds a schedule may take: each round costs every rank a synchronization.
pub(crate) const MAX_ROUNDS: usize = 1 << 12;

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
    fn end(&self) -> usize {
        self.start + (self.count - 1) * self.stride + self.len
    }

    /// The byte ranges of the runs, in order.
    #[cfg(feature = "testing")]
    pub fn ranges(&self) -> impl Iterator<Item = Range<usize>> + use<> {
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
    fn meets(&self, other: &RunSet) -> bool {
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
    fn destination(&self) -> RunSet {
        self.shape.runs_at(self.dst, self.shape.dst_stride)
    }

    /// True when a local move may copy it over its own source run by run, in the
    /// order of [`PieceMove::forward`]: a run lands only on source runs already
    /// read (or on its own, as `memmove` allows). Forward holds when the
    /// destination starts no later and its runs lie no farther apart; backward
    /// when both hold the other way.
    fn moves_over_itself(&self) -> bool {
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

/// The staging keeps at least the smaller of its budget and this many bytes,
/// whatever the scheduling state takes: a budget too small for both still gets
/// rounds (at the default budgets, of 64 MiB or more, the state of the most
/// pieces a schedule may have takes 42 MB and the staging the rest).
const MIN_STAGING_BYTES: usize = 1 << 20;

/// Bytes of scheduling state per piece, every rank holding the whole schedule
/// while it is made (measured: 147 bytes with the grid_bench pencil transpose's
/// 131 000 pieces).
pub const SCHEDULING_BYTES_PER_PIECE: usize = 160;

/// One copy or message of a piece, as one rank sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceMove {
    /// The other rank (this rank for local moves and staging copies).
    pub peer: usize,
    /// The piece's byte offset in its source rank's buffer.
    pub src: usize,
    /// Its byte offset in the staging when it was staged (read from there in place).
    pub staged: Option<usize>,
    /// Its byte offset in its destination rank's buffer.
    pub dst: usize,
    /// Its runs.
    pub shape: PieceShape,
}

impl PieceMove {
    /// The byte ranges of its runs in the source buffer.
    #[cfg(feature = "testing")]
    pub fn src_ranges(&self) -> impl Iterator<Item = Range<usize>> + use<> {
        self.shape.runs_at(self.src, self.shape.src_stride).ranges()
    }

    /// The byte ranges of its runs in the destination buffer.
    #[cfg(feature = "testing")]
    pub fn dst_ranges(&self) -> impl Iterator<Item = Range<usize>> + use<> {
        self.shape.runs_at(self.dst, self.shape.dst_stride).ranges()
    }

    /// True when a local move copies its runs first to last (its destination
    /// starts no later than its source), false when last to first.
    pub fn forward(&self) -> bool {
        self.dst <= self.src
    }

    /// The byte ranges of its runs in the staging, when staged.
    #[cfg(feature = "testing")]
    pub fn staged_ranges(&self) -> Option<impl Iterator<Item = Range<usize>> + use<>> {
        let at = self.staged?;
        Some(self.shape.runs_at(at, self.shape.len).ranges())
    }
}

/// What one rank does in one round, in this order: copy `stage` from the buffer to
/// the staging, post the [`round_messages`] of `receives` and `sends` (each sorted by
/// peer, then source offset: the same order on both sides), copy `moves`, complete
/// the messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Pieces copied to the staging at the start of the round.
    pub stage: Vec<PieceMove>,
    /// Messages received.
    pub receives: Vec<PieceMove>,
    /// Messages sent.
    pub sends: Vec<PieceMove>,
    /// Pieces moved within this rank.
    pub moves: Vec<PieceMove>,
}

/// One rank's part of an in-place schedule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankSchedule {
    /// The rounds, the same number on every rank.
    pub rounds: Vec<Round>,
    /// The staging this rank needs: the end of the highest slot it uses (at most
    /// its budget).
    pub staging_bytes: usize,
    /// Most messages this rank has in flight in one round.
    pub most_messages: usize,
}

/// Pieces of at least this many bytes travel as messages of their own, straight
/// between the buffers; smaller ones to the same peer are grouped into one message
/// (an MPI datatype over them, no copy): on MPICH large grouped messages are slow
/// and small pieces alone are slower (docs/src/performance/analysis.md, "In
/// place with data to move").
pub(crate) const ALONE_BYTES: usize = 1 << 10;

/// Most bytes in one grouped message (MPICH's eager size on shared memory).
pub(crate) const GROUPED_BYTES: usize = 32 << 10;

/// The messages of a round's sends or receives (sorted by peer, then source offset,
/// the same order on both sides): each piece of [`ALONE_BYTES`] or more alone (a
/// piece of several runs as one strided message), the smaller ones to one peer
/// grouped in order, up to [`GROUPED_BYTES`].
pub fn round_messages(transfers: &[PieceMove]) -> impl Iterator<Item = &[PieceMove]> {
    let mut rest = transfers;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let mut bytes = 0;
        let grouped = |t: &&PieceMove| {
            bytes += t.shape.bytes();
            t.peer == first.peer && t.shape.bytes() < ALONE_BYTES && bytes <= GROUPED_BYTES
        };
        let (message, tail) = rest.split_at(rest.iter().take_while(grouped).count().max(1));
        rest = tail;
        Some(message)
    })
}

/// Most bytes every rank may send for executions in place on the exchange path to
/// pack them all and move them in one round rather than follow a schedule
/// (`Unscheduled::Small`, when also within every rank's budget): copying that
/// little costs less than the schedule's rounds (docs/src/performance/analysis.md,
/// "In place with data to move").
pub(crate) const PACK_ALL_BYTES: usize = 1 << 20;

/// Most bytes in one piece of a schedule ([`Problem::chunk`]).
pub(crate) const MAX_PIECE_BYTES: usize = 4 << 20;

/// Why executions in place pack everything each rank sends instead of following
/// a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unscheduled {
    /// Every rank sends so little (at most [`PACK_ALL_BYTES`] and its budget) that
    /// packing it all and moving it in one round is faster.
    Small,
    /// More pieces than the plan's run budget.
    TooManyPieces,
    /// More than [`MAX_ROUNDS`] rounds.
    TooManyRounds,
    /// More runs than [`MAX_RUNS_READ`], or pieces whose sources and destinations
    /// interleave too finely to find what each waits for within
    /// [`MAX_OVERLAP_TESTS`].
    TooIntricate,
    /// Every rank's staging is full of pieces that wait for one another.
    Stuck,
    /// A rank could not allocate its part.
    OutOfMemory,
}

impl std::fmt::Display for Unscheduled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unscheduled::Small => {
                let mib = PACK_ALL_BYTES >> 20;
                return write!(
                    f,
                    "every rank sends at most {mib} MiB: packed, in one round"
                );
            }
            Unscheduled::TooManyPieces => "no bounded schedule: more pieces than the run budget",
            Unscheduled::TooManyRounds => "no bounded schedule: too many rounds",
            Unscheduled::TooIntricate => {
                "no bounded schedule: too many runs, or too finely interleaved"
            }
            Unscheduled::Stuck => "no bounded schedule within the staging budget",
            Unscheduled::OutOfMemory => "no bounded schedule: a rank could not allocate it",
        })
    }
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
    /// ([`SCHEDULING_BYTES_PER_PIECE`]; 0 leaves all of them to the staging).
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
    fn pieces(
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
    fn cut(
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

/// First-fit allocation of byte ranges within a budget.
#[derive(Clone, Debug)]
struct Staging {
    /// Free ranges, sorted and separated.
    free: Vec<Range<usize>>,
    capacity: usize,
    used: usize,
    /// The end of the highest range ever allocated: the staging's size.
    high_water: usize,
}

impl Staging {
    fn new(budget: usize) -> Staging {
        Staging {
            free: std::iter::once(0..budget).collect(),
            capacity: budget,
            used: 0,
            high_water: 0,
        }
    }

    fn allocate(&mut self, len: usize) -> Option<usize> {
        let i = self.free.iter().position(|r| r.len() >= len)?;
        let at = self.free[i].start;
        self.free[i].start += len;
        if self.free[i].is_empty() {
            self.free.remove(i);
        }
        self.used += len;
        self.high_water = self.high_water.max(at + len);
        Some(at)
    }

    fn release(&mut self, at: usize, len: usize) {
        let i = self.free.partition_point(|r| r.start < at);
        self.free.insert(i, at..at + len);
        if i + 1 < self.free.len() && self.free[i].end == self.free[i + 1].start {
            self.free[i].end = self.free.remove(i + 1).end;
        }
        if i > 0 && self.free[i - 1].end == self.free[i].start {
            self.free[i - 1].end = self.free.remove(i).end;
        }
        self.used -= len;
    }
}

/// Where and when a piece was staged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Staged {
    /// The round it was staged in.
    pub round: usize,
    /// Its byte offset in its rank's staging.
    pub offset: usize,
}

/// What became of each piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fate {
    /// The round it moved in.
    moved: Option<usize>,
    /// When staged, where and when.
    staged: Option<Staged>,
}

/// One piece of a finished schedule with the round it moves in and, when it is
/// staged, where and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduledPiece {
    /// The piece.
    pub piece: Piece,
    /// The round it moves in.
    pub moved: usize,
    /// When staged, where and when.
    pub staged: Option<Staged>,
}

/// The global schedule: which round each piece is staged and moved in.
#[derive(Clone, Debug)]
pub struct Schedule {
    pieces: Vec<Piece>,
    fates: Vec<Fate>,
    rounds: usize,
    staging_bytes: Vec<usize>,
}

impl Schedule {
    /// Schedules `problem` in rounds, with at most `most_pieces` pieces: a piece
    /// per run when they fit, with their scheduling state within three quarters of
    /// the smallest budget ([`SCHEDULING_BYTES_PER_PIECE`]), else pieces of as many
    /// runs as their spans allow. The staging gets each budget less the scheduling
    /// state, which is freed only once the schedule is made (but at least
    /// [`MIN_STAGING_BYTES`] of it).
    ///
    /// A piece moves only once all of its destination is vacated, so coarse pieces
    /// wait longer: a slab split change takes 13 rounds with a piece per run and
    /// 130 with pieces of 5.
    pub fn new(problem: &Problem, most_pieces: usize) -> Result<Schedule, Unscheduled> {
        let per_piece = problem.scheduling_bytes_per_piece;
        let smallest = problem.budgets.iter().copied().min().unwrap_or(0);
        let most_fine = match per_piece {
            0 => most_pieces,
            bytes => most_pieces.min(smallest / 4 * 3 / bytes),
        };
        let mut runs_left = MAX_RUNS_READ;
        // Counted before they are kept: a cut that does not fit allocates nothing.
        let runs_per_piece = match problem.cut(most_fine, 1, &mut runs_left, &mut drop) {
            Err(Unscheduled::TooManyPieces) => usize::MAX,
            counted => counted.map(|_| 1)?,
        };
        let pieces = problem.pieces(most_pieces, runs_per_piece, &mut runs_left)?;
        let reserve = pieces.len().saturating_mul(per_piece);
        Schedule::of_pieces(problem, pieces, reserve)
    }

    /// Schedules `pieces` in rounds, staging within each budget less `reserve`.
    fn of_pieces(
        problem: &Problem,
        pieces: Vec<Piece>,
        reserve: usize,
    ) -> Result<Schedule, Unscheduled> {
        let mut scheduler = Scheduler::new(problem, pieces, reserve)?;
        while !scheduler.pending.is_empty() {
            if scheduler.round == MAX_ROUNDS {
                return Err(Unscheduled::TooManyRounds);
            }
            scheduler.next_round()?;
        }
        Ok(Schedule {
            staging_bytes: scheduler.staging.iter().map(|s| s.high_water).collect(),
            rounds: scheduler.round,
            pieces: scheduler.pieces,
            fates: scheduler.fates,
        })
    }

    /// The number of rounds.
    #[cfg(feature = "testing")]
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Every piece with the round it moves in and, when staged, where and when.
    pub fn moves(&self) -> impl Iterator<Item = ScheduledPiece> + '_ {
        self.pieces
            .iter()
            .zip(&self.fates)
            .map(|(p, f)| ScheduledPiece {
                piece: *p,
                moved: f.moved.expect("a finished schedule moves every piece"),
                staged: f.staged,
            })
    }

    /// `rank`'s part of the schedule.
    pub fn for_rank(&self, rank: usize) -> RankSchedule {
        let mut rounds = vec![Round::default(); self.rounds];
        for ScheduledPiece {
            piece: p,
            moved,
            staged,
        } in self.moves()
        {
            let transfer = |peer| PieceMove {
                peer,
                src: p.src,
                staged: staged.map(|s| s.offset),
                dst: p.dst,
                shape: p.shape,
            };
            if let (Some(Staged { round, .. }), true) = (staged, p.from == rank) {
                rounds[round].stage.push(transfer(rank));
            }
            let round = &mut rounds[moved];
            match (p.from == rank, p.to == rank) {
                (true, true) => round.moves.push(transfer(rank)),
                (true, false) => round.sends.push(transfer(p.to)),
                (false, true) => round.receives.push(transfer(p.from)),
                (false, false) => {}
            }
        }
        for round in &mut rounds {
            round.sends.sort_by_key(|t| (t.peer, t.src));
        }
        let most_messages = rounds
            .iter()
            .map(|r| round_messages(&r.sends).count() + round_messages(&r.receives).count())
            .max()
            .unwrap_or(0);
        RankSchedule {
            rounds,
            staging_bytes: self.staging_bytes[rank],
            most_messages,
        }
    }
}

/// The state of the scheduling, round after round.
struct Scheduler {
    pieces: Vec<Piece>,
    /// What each piece waits for.
    dependencies: Dependencies,
    fates: Vec<Fate>,
    /// True once a piece no longer needs its source (moved or staged).
    departed: Vec<bool>,
    staging: Vec<Staging>,
    pending: Vec<usize>,
    round: usize,
}

impl Scheduler {
    fn new(
        problem: &Problem,
        pieces: Vec<Piece>,
        reserve: usize,
    ) -> Result<Scheduler, Unscheduled> {
        let nranks = problem.budgets.len();
        let by_rank: Vec<Range<usize>> = (0..nranks)
            .map(|r| {
                pieces.partition_point(|p| p.from < r)..pieces.partition_point(|p| p.from <= r)
            })
            .collect();
        let n = pieces.len();
        Ok(Scheduler {
            dependencies: Dependencies::new(&pieces, &by_rank)?,
            fates: vec![
                Fate {
                    moved: None,
                    staged: None
                };
                n
            ],
            departed: vec![false; n],
            staging: problem
                .budgets
                .iter()
                .map(|&b| Staging::new(b.saturating_sub(reserve).max(b.min(MIN_STAGING_BYTES))))
                .collect(),
            pending: (0..n).collect(),
            round: 0,
            pieces,
        })
    }

    /// The pieces `p` waits for (see [`Dependencies`]).
    fn blockers(&self, p: usize) -> impl Iterator<Item = usize> + '_ {
        self.dependencies.of(p).iter().copied()
    }

    /// Moves every ready piece and stages cycle breakers within the budgets (see
    /// [`Scheduler::break_chains`]), or when that stages nothing and nothing is
    /// ready, every blocker that fits; fails when neither is possible.
    fn next_round(&mut self) -> Result<(), Unscheduled> {
        let (ready, waiting): (Vec<usize>, Vec<usize>) = self
            .pending
            .iter()
            .partition(|&&p| self.blockers(p).all(|q| self.departed[q]));
        let mut is_ready = vec![false; self.pieces.len()];
        ready.iter().for_each(|&p| is_ready[p] = true);
        let mut staged = self.break_chains(&waiting, &is_ready);
        if ready.is_empty() && staged.is_empty() {
            for &w in &waiting {
                let blockers: Vec<usize> = self.blockers(w).collect();
                for q in blockers {
                    if self.may_stage(q, &is_ready) && self.stage(q) {
                        staged.push(q);
                    }
                }
            }
        }
        if ready.is_empty() && staged.is_empty() {
            return Err(Unscheduled::Stuck);
        }
        for &p in &ready {
            self.fates[p].moved = Some(self.round);
            self.departed[p] = true;
            if let Some(Staged { offset, .. }) = self.fates[p].staged {
                let Piece { from, shape, .. } = self.pieces[p];
                self.staging[from].release(offset, shape.bytes());
            }
        }
        staged.iter().for_each(|&q| self.departed[q] = true);
        self.pending = waiting;
        self.round += 1;
        Ok(())
    }

    /// Walks from every waiting piece along what it waits for (the first blocker
    /// still in place) until the walk reaches a piece that will move without help
    /// (ready, departed, or already resolved this round): that resolves the walk.
    /// A walk that closes a cycle stages the piece that closes it, and every
    /// `spacing`-th piece of a walk is staged too, so the staged pieces split the
    /// cycles and chains into segments that move one piece per round each: the
    /// budget buys fewer rounds, and no more copies than that takes.
    fn break_chains(&mut self, waiting: &[usize], is_ready: &[bool]) -> Vec<usize> {
        let free: usize = self.staging.iter().map(|s| s.capacity - s.used).sum();
        let pending: usize = waiting.iter().map(|&w| self.pieces[w].shape.bytes()).sum();
        let spacing = (2 * pending).div_ceil(free.max(1)).max(2);
        let mut walked = vec![Walk::Unvisited; self.pieces.len()];
        let mut staged = Vec::new();
        for &start in waiting {
            let mut path = Vec::new();
            let mut at = Some(start);
            while let Some(x) = at {
                if self.departed[x] || is_ready[x] || walked[x] == Walk::Resolved {
                    break;
                }
                let closes_cycle = walked[x] == Walk::OnPath;
                if (closes_cycle || (path.len() + 1) % spacing == 0)
                    && self.may_stage(x, is_ready)
                    && self.stage(x)
                {
                    staged.push(x);
                }
                if closes_cycle {
                    break;
                }
                walked[x] = Walk::OnPath;
                path.push(x);
                at = self.blockers(x).find(|&q| !self.departed[q]);
            }
            path.iter().for_each(|&x| walked[x] = Walk::Resolved);
        }
        staged
    }

    /// True when `q` still holds its source and is not about to move.
    fn may_stage(&self, q: usize, is_ready: &[bool]) -> bool {
        !self.departed[q] && !is_ready[q] && self.fates[q].staged.is_none()
    }

    /// Stages `q` in its rank's staging this round, if the budget allows.
    fn stage(&mut self, q: usize) -> bool {
        let Piece { from, shape, .. } = self.pieces[q];
        let Some(at) = self.staging[from].allocate(shape.bytes()) else {
            return false;
        };
        self.fates[q].staged = Some(Staged {
            round: self.round,
            offset: at,
        });
        true
    }
}

/// Most runs read in cutting the pieces, over every granularity tried: beyond it a
/// reshape has too many runs to schedule in bounded time, and executions in place
/// pack what they send.
const MAX_RUNS_READ: usize = 1 << 24;

/// Most overlap tests (pieces compared, weighted by the runs compared) in finding
/// what the pieces wait for: beyond it, pieces interleave too finely to schedule
/// in bounded time, and executions in place pack what they send.
const MAX_OVERLAP_TESTS: usize = 1 << 24;

/// What each piece waits for, found once: the pieces whose source shares a byte
/// with its destination, itself only when it cannot move over its own source
/// ([`Piece::moves_over_itself`]); a staged copy breaks that wait.
struct Dependencies {
    /// Piece `p`'s blockers are `blockers[starts[p]..starts[p + 1]]`.
    starts: Vec<usize>,
    blockers: Vec<usize>,
}

impl Dependencies {
    /// The dependencies of `pieces` (each rank's range of them in `by_rank`, sorted
    /// by source offset); fails beyond [`MAX_OVERLAP_TESTS`].
    fn new(pieces: &[Piece], by_rank: &[Range<usize>]) -> Result<Dependencies, Unscheduled> {
        // No piece starting this far before a byte reaches it.
        let widest = pieces
            .iter()
            .map(|p| p.source().end() - p.src)
            .max()
            .unwrap_or(0);
        let mut tests = 0usize;
        let mut found = Dependencies {
            starts: vec![0],
            blockers: Vec::new(),
        };
        for (p, piece) in pieces.iter().enumerate() {
            let destination = piece.destination();
            let range = by_rank[piece.to].clone();
            let first = range.start
                + pieces[range.clone()].partition_point(|q| q.src + widest <= piece.dst);
            for q in (first..range.end).take_while(|&q| pieces[q].src < destination.end()) {
                tests += 1 + pieces[q].shape.count.min(piece.shape.count);
                let meets = pieces[q].source().meets(&destination);
                if meets && (q != p || !piece.moves_over_itself()) {
                    found.blockers.push(q);
                }
            }
            if tests > MAX_OVERLAP_TESTS {
                return Err(Unscheduled::TooIntricate);
            }
            found.starts.push(found.blockers.len());
        }
        Ok(found)
    }

    /// The pieces `p` waits for.
    fn of(&self, p: usize) -> &[usize] {
        &self.blockers[self.starts[p]..self.starts[p + 1]]
    }
}

/// How far the walks of [`Scheduler::break_chains`] have come at a piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    Unvisited,
    OnPath,
    Resolved,
}
