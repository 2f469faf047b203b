//! The messages of several pieces of one rank's in-place schedule, made ready once
//! per plan over its transport (MPI: an indexed datatype each), so that executions
//! make none: each message's blocks counted from the buffer they lie in (the output
//! for receives, the input for sends). A send some of whose pieces are staged reads
//! those from the staging when executed in place: its blocks are then counted from
//! the input with the staged ones in the staging, made for one distance from the
//! input to the staging and made again only when an execution's buffer lies
//! elsewhere (the staging stays put).

use crate::core::error::Result;
use crate::mpi::transport::{Block, Transport};
use crate::planning::inplace::{PieceMove, RankSchedule, messages};
use crate::planning::schedule::Side;

/// Every round's messages of several pieces, each round's receives then its sends
/// in the order of [`messages`].
pub struct GroupedMessages<L> {
    rounds: Vec<Vec<Grouped<L>>>,
}

/// One message of several pieces.
pub struct Grouped<L> {
    /// Its blocks in the buffer, counted from the buffer's start.
    in_buffer: L,
    /// For a send with staged pieces: its blocks when executed in place, with the
    /// distance from the input to the staging they were made for.
    staged: Option<Option<(isize, L)>>,
}

impl<L> GroupedMessages<L> {
    /// The block lists of the messages of several pieces of `schedule`, made over
    /// `transport`.
    pub fn new<T: Transport<BlockList = L>>(
        schedule: &RankSchedule,
        transport: &T,
    ) -> Result<GroupedMessages<L>> {
        let rounds = schedule.rounds.iter().map(|round| {
            let receives = messages(&round.receives).map(|m| (m, Side::Receive));
            let sends = messages(&round.sends).map(|m| (m, Side::Send));
            receives
                .chain(sends)
                .filter(|(pieces, _)| pieces.len() > 1)
                .map(|(pieces, side)| Grouped::new(pieces, side, transport))
                .collect()
        });
        Ok(GroupedMessages {
            rounds: rounds.collect::<Result<_>>()?,
        })
    }

    /// Round `round`'s messages of several pieces, in the order they are posted.
    pub fn round(&mut self, round: usize) -> std::slice::IterMut<'_, Grouped<L>> {
        self.rounds[round].iter_mut()
    }
}

impl<L> Grouped<L> {
    /// The message of `pieces` on `side`.
    fn new<T: Transport<BlockList = L>>(
        pieces: &[PieceMove],
        side: Side,
        transport: &T,
    ) -> Result<Grouped<L>> {
        let staged = side == Side::Send && pieces.iter().any(|t| t.staged.is_some());
        Ok(Grouped {
            in_buffer: transport.block_list(&blocks(pieces, side, None))?,
            staged: staged.then_some(None),
        })
    }

    /// The blocks of the message of `pieces` (those it was made of) for an
    /// execution whose staging lies `staging` bytes from its input when in place
    /// (`None` out of place): counted from the buffer's start.
    pub fn list<T: Transport<BlockList = L>>(
        &mut self,
        pieces: &[PieceMove],
        staging: Option<isize>,
        transport: &T,
    ) -> Result<&L> {
        let (Some(made), Some(distance)) = (&mut self.staged, staging) else {
            return Ok(&self.in_buffer);
        };
        let entry = match made.take().filter(|(at, _)| *at == distance) {
            Some(entry) => entry,
            None => (
                distance,
                transport.block_list(&blocks(pieces, Side::Send, staging))?,
            ),
        };
        Ok(&made.insert(entry).1)
    }
}

/// The blocks of `pieces`, run by run, counted from the start of the buffer they
/// lie in on `side`: a send's staged pieces `staging` bytes from it when given.
fn blocks(pieces: &[PieceMove], side: Side, staging: Option<isize>) -> Vec<Block> {
    let run = |t: &PieceMove| -> (isize, usize) {
        let shape = t.shape;
        match (side, t.staged, staging) {
            (Side::Receive, _, _) => (t.dst as isize, shape.dst_stride),
            (Side::Send, Some(slot), Some(distance)) => (distance + slot as isize, shape.len),
            (Side::Send, _, _) => (t.src as isize, shape.src_stride),
        }
    };
    pieces
        .iter()
        .flat_map(|t| {
            let (first, stride) = run(t);
            (0..t.shape.count).map(move |i| Block {
                offset: first + (i * stride) as isize,
                len: t.shape.len,
            })
        })
        .collect()
}
