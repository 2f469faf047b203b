//! The global schedule ([`Schedule`]) and its making, round after round
//! ([`Scheduler`]): ready pieces move, and staged pieces break the chains and
//! cycles of pieces waiting for one another.

use std::ops::Range;

use super::Unscheduled;
use super::dependencies::Dependencies;
use super::pieces::{Piece, Problem};
use super::staging::{Staged, Staging};
use super::thresholds::{MAX_ROUNDS, MAX_RUNS_READ, MIN_STAGING_BYTES};

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
    pub(super) rounds: usize,
    pub(super) staging_bytes: Vec<usize>,
}

impl Schedule {
    /// Schedules `problem` in rounds, with at most `most_pieces` pieces: a piece
    /// per run when they fit, with their scheduling state within three quarters of
    /// the smallest budget ([`SCHEDULING_BYTES_PER_PIECE`](super::thresholds::SCHEDULING_BYTES_PER_PIECE)), else pieces of as many
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

/// How far the walks of [`Scheduler::break_chains`] have come at a piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    Unvisited,
    OnPath,
    Resolved,
}
