//! Schedules of in-place execution on the exchange path under a staging budget.
//! Pure: every rank computes the same global schedule from the layouts, keeps its
//! own part, and the all-ranks simulation in the tests replays it.
//!
//! In place, a rank's buffer holds its input and must end holding its output, so
//! an element may land only where the elements that were there have left. The data
//! is cut into pieces (runs of elements between two buffers, at most `chunk` bytes)
//! and moved in rounds. A piece is *ready* when every piece whose source overlaps
//! its destination has departed: then it moves, in one message or local copy, in
//! this round. The pieces waiting for one another form chains and cycles (two
//! ranks swapping, or the long cycles of a transpose); copying a piece to its
//! source rank's staging, while the budget allows, vacates its source and breaks
//! them, and a staged piece moves from the staging once its own destination is
//! vacated. Breakers are spread along the chains (`Scheduler::break_chains`), so
//! that each round moves one piece of every segment between them. Each round every
//! rank posts its messages of the round and completes them, so the rounds match
//! across ranks one for one: nothing can wait for a message another rank posts
//! later.
//!
//! Invariants the simulation checks on every rank: a byte is written only after
//! every piece reading it has departed, each piece arrives exactly once, and the
//! staging never holds more than the budget.

use std::ops::Range;

use crate::distribution::peers::Redistribution;

/// Most rounds a schedule may take: each round costs every rank a synchronization.
pub(crate) const MAX_ROUNDS: usize = 1 << 12;

/// One piece of the data: `len` bytes at `src` in rank `from`'s buffer go to `dst`
/// in rank `to`'s buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The rank holding the piece on input.
    pub from: usize,
    /// Byte offset in `from`'s buffer.
    pub src: usize,
    /// The rank the piece belongs to on output.
    pub to: usize,
    /// Byte offset in `to`'s buffer.
    pub dst: usize,
    /// Bytes (at most the schedule's chunk).
    pub len: usize,
}

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
    /// Bytes.
    pub len: usize,
}

/// What one rank does in one round, in this order: copy `stage` from the buffer to
/// the staging, post the [`messages`] of `receives` and `sends` (each sorted by
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
    /// Most staging bytes this rank uses at once (at most its budget).
    pub staging_bytes: usize,
    /// Most messages this rank has in flight in one round.
    pub most_messages: usize,
    /// Most pieces in one message.
    pub most_pieces: usize,
}

/// Pieces of at least this many bytes travel as messages of their own, straight
/// between the buffers; smaller ones to the same peer are grouped into one message
/// (an MPI datatype over them, no copy). Measured on MPICH 4.0 (shared memory):
/// grouping 4 KiB pieces scattered over the buffer into 16 MiB messages took 20
/// times as long as sending them one by one, while 256-byte pieces one by one took
/// 4 times as long as grouped in 32 KiB.
pub(crate) const DIRECT_BYTES: usize = 1 << 10;

/// Most bytes in one grouped message (MPICH's eager size on shared memory: larger
/// noncontiguous messages were several times slower).
pub(crate) const GROUPED_BYTES: usize = 32 << 10;

/// The messages of a round's sends or receives (sorted by peer, then source offset,
/// the same order on both sides): each piece of [`DIRECT_BYTES`] or more alone, the
/// smaller ones to one peer grouped in order, up to [`GROUPED_BYTES`].
pub fn messages(transfers: &[PieceMove]) -> impl Iterator<Item = &[PieceMove]> {
    let mut rest = transfers;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let mut bytes = 0;
        let grouped = |t: &&PieceMove| {
            bytes += t.len;
            t.peer == first.peer && t.len < DIRECT_BYTES && bytes <= GROUPED_BYTES
        };
        let (message, tail) = rest.split_at(rest.iter().take_while(grouped).count().max(1));
        rest = tail;
        Some(message)
    })
}

/// Most bytes every rank may send for executions in place on the exchange path to
/// pack them all and move them in one round rather than follow a schedule
/// (`Unscheduled::Small`, when also within every rank's budget): copying that
/// little costs less than the schedule's rounds (`small_latency`, 0.5 MiB per
/// rank: 0.33 ms in three rounds against 0.15 ms out of place).
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
    /// Each rank's staging budget in bytes.
    pub budgets: &'a [usize],
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
    /// place are left out. `None` beyond `most` pieces.
    pub fn pieces(&self, most: usize) -> Option<Vec<Piece>> {
        let (nranks, size, chunk) = (self.budgets.len(), self.elem_size, self.chunk());
        if nranks.saturating_mul(nranks) > most {
            return None;
        }
        let mut pieces = Vec::new();
        for from in 0..nranks {
            let mut own = Vec::new();
            let source = self.layouts.input_region(from);
            let receivers = self.layouts.sends(from).into_iter().map(|t| t.peer);
            for to in std::iter::once(from).chain(receivers) {
                let target = self.layouts.output_region(to);
                for run in self.layouts.runs(from, to) {
                    let src = source.local_offset(run.global) as usize * size;
                    let dst = target.local_offset(run.global) as usize * size;
                    if from == to && src == dst {
                        continue;
                    }
                    let len = run.len as usize * size;
                    for at in (0..len).step_by(chunk) {
                        let len = chunk.min(len - at);
                        own.push(Piece {
                            from,
                            src: src + at,
                            to,
                            dst: dst + at,
                            len,
                        });
                    }
                    if pieces.len() + own.len() > most {
                        return None;
                    }
                }
            }
            own.sort_unstable_by_key(|p| (p.src, p.to));
            pieces.extend(own);
        }
        Some(pieces)
    }
}

/// First-fit allocation of byte ranges within a budget.
#[derive(Clone, Debug)]
struct Staging {
    /// Free ranges, sorted and separated.
    free: Vec<Range<usize>>,
    capacity: usize,
    used: usize,
    most_used: usize,
}

impl Staging {
    fn new(budget: usize) -> Staging {
        Staging {
            free: std::iter::once(0..budget).collect(),
            capacity: budget,
            used: 0,
            most_used: 0,
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
        self.most_used = self.most_used.max(self.used);
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
    /// Schedules `problem` in rounds, with at most `most_pieces` pieces.
    pub fn new(problem: &Problem, most_pieces: usize) -> Result<Schedule, Unscheduled> {
        let pieces = problem
            .pieces(most_pieces)
            .ok_or(Unscheduled::TooManyPieces)?;
        let mut scheduler = Scheduler::new(problem, pieces);
        while !scheduler.pending.is_empty() {
            if scheduler.round == MAX_ROUNDS {
                return Err(Unscheduled::TooManyRounds);
            }
            scheduler.next_round()?;
        }
        Ok(Schedule {
            staging_bytes: scheduler.staging.iter().map(|s| s.most_used).collect(),
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
                len: p.len,
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
            .map(|r| messages(&r.sends).count() + messages(&r.receives).count())
            .max()
            .unwrap_or(0);
        let most_pieces = rounds
            .iter()
            .flat_map(|r| messages(&r.sends).chain(messages(&r.receives)))
            .map(<[PieceMove]>::len)
            .max()
            .unwrap_or(0);
        RankSchedule {
            rounds,
            staging_bytes: self.staging_bytes[rank],
            most_messages,
            most_pieces,
        }
    }
}

/// The state of the scheduling, round after round.
struct Scheduler {
    pieces: Vec<Piece>,
    /// Each rank's pieces: a range of `pieces`, sorted by source offset.
    by_rank: Vec<Range<usize>>,
    chunk: usize,
    fates: Vec<Fate>,
    /// True once a piece no longer needs its source (moved or staged).
    departed: Vec<bool>,
    staging: Vec<Staging>,
    pending: Vec<usize>,
    round: usize,
}

impl Scheduler {
    fn new(problem: &Problem, pieces: Vec<Piece>) -> Scheduler {
        let nranks = problem.budgets.len();
        let by_rank = (0..nranks)
            .map(|r| {
                pieces.partition_point(|p| p.from < r)..pieces.partition_point(|p| p.from <= r)
            })
            .collect();
        let n = pieces.len();
        Scheduler {
            by_rank,
            chunk: problem.chunk(),
            fates: vec![
                Fate {
                    moved: None,
                    staged: None
                };
                n
            ],
            departed: vec![false; n],
            staging: problem.budgets.iter().map(|&b| Staging::new(b)).collect(),
            pending: (0..n).collect(),
            round: 0,
            pieces,
        }
    }

    /// The pieces (other than `p`) whose source overlaps `p`'s destination.
    fn blockers(&self, p: usize) -> impl Iterator<Item = usize> + '_ {
        let Piece { to, dst, len, .. } = self.pieces[p];
        let range = self.by_rank[to].clone();
        let first =
            range.start + self.pieces[range.clone()].partition_point(|q| q.src + self.chunk <= dst);
        (first..range.end)
            .take_while(move |&q| self.pieces[q].src < dst + len)
            .filter(move |&q| q != p && self.pieces[q].src + self.pieces[q].len > dst)
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
                let Piece { from, len, .. } = self.pieces[p];
                self.staging[from].release(offset, len);
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
        let pending: usize = waiting.iter().map(|&w| self.pieces[w].len).sum();
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
        let Piece { from, len, .. } = self.pieces[q];
        let Some(at) = self.staging[from].allocate(len) else {
            return false;
        };
        self.fates[q].staged = Some(Staged {
            round: self.round,
            offset: at,
        });
        true
    }
}

/// How far the walks of [`Scheduler::break_chains`] have come at a piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    Unvisited,
    OnPath,
    Resolved,
}
