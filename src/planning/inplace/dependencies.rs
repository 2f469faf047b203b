//! What each piece waits for: the pieces whose source shares a byte with its
//! destination, found once before the rounds are scheduled.

use std::ops::Range;

use super::Unscheduled;
use super::pieces::Piece;
use super::thresholds::MAX_OVERLAP_TESTS;

/// What each piece waits for, found once: the pieces whose source shares a byte
/// with its destination, itself only when it cannot move over its own source
/// ([`Piece::moves_over_itself`]); a staged copy breaks that wait.
pub(super) struct Dependencies {
    /// Piece `p`'s blockers are `blockers[starts[p]..starts[p + 1]]`.
    starts: Vec<usize>,
    blockers: Vec<usize>,
}

impl Dependencies {
    /// The dependencies of `pieces` (each rank's range of them in `by_rank`, sorted
    /// by source offset); fails beyond [`MAX_OVERLAP_TESTS`].
    pub(super) fn new(
        pieces: &[Piece],
        by_rank: &[Range<usize>],
    ) -> Result<Dependencies, Unscheduled> {
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
    pub(super) fn of(&self, p: usize) -> &[usize] {
        &self.blockers[self.starts[p]..self.starts[p + 1]]
    }
}
