//! One rank's view of a schedule: its moves ([`PieceMove`]) round by round
//! ([`Round`], [`RankSchedule`]), and how a round's transfers make messages
//! ([`round_messages`]).

use super::pieces::PieceShape;
use super::scheduler::{Schedule, ScheduledPiece};
use super::staging::Staged;
use super::thresholds::{ALONE_BYTES, GROUPED_BYTES};

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
    pub fn src_ranges(&self) -> impl Iterator<Item = std::ops::Range<usize>> + use<> {
        self.shape.runs_at(self.src, self.shape.src_stride).ranges()
    }

    /// The byte ranges of its runs in the destination buffer.
    #[cfg(feature = "testing")]
    pub fn dst_ranges(&self) -> impl Iterator<Item = std::ops::Range<usize>> + use<> {
        self.shape.runs_at(self.dst, self.shape.dst_stride).ranges()
    }

    /// True when a local move copies its runs first to last (its destination
    /// starts no later than its source), false when last to first.
    pub fn forward(&self) -> bool {
        self.dst <= self.src
    }

    /// The byte ranges of its runs in the staging, when staged.
    #[cfg(feature = "testing")]
    pub fn staged_ranges(&self) -> Option<impl Iterator<Item = std::ops::Range<usize>> + use<>> {
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

impl Schedule {
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
