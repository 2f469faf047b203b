//! The messages of several pieces of one rank's in-place schedule, made ready once
//! per plan over its transport (MPI: an indexed datatype each), so that executions
//! make none. A message carries its unstaged pieces first, then its staged ones,
//! on both sides: a receive's blocks lie in the output, a send's in the input; a
//! send executed in place reads its staged pieces from the staging, so it also
//! keeps its blocks as two lists, those in the input and those in the staging,
//! which the transport joins at the execution's distance between the two.

use crate::core::error::Result;
use crate::mpi::transport::{Block, Envelope, ListPart, Transport};
use crate::planning::inplace::{PieceMove, RankSchedule, round_messages};
use crate::planning::schedule::Side;

/// Every round's messages of several pieces, each round's receives then its sends
/// in the order of [`round_messages`].
pub struct GroupedMessages<L> {
    rounds: Vec<Vec<Grouped<L>>>,
}

impl<L> GroupedMessages<L> {
    /// The block lists of the messages of several pieces of `schedule`, made over
    /// `transport`.
    pub fn new<T: Transport<BlockList = L>>(
        schedule: &RankSchedule,
        transport: &T,
    ) -> Result<GroupedMessages<L>> {
        let rounds = schedule.rounds.iter().map(|round| {
            let receives = round_messages(&round.receives).map(|m| (m, Side::Receive));
            let sends = round_messages(&round.sends).map(|m| (m, Side::Send));
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
    pub fn round(&self, round: usize) -> std::slice::Iter<'_, Grouped<L>> {
        self.rounds[round].iter()
    }
}

/// One message of several pieces.
pub struct Grouped<L> {
    /// Its blocks in the buffer, counted from the buffer's start.
    in_buffer: L,
    /// For a send with staged pieces: its blocks when executed in place.
    staged: Option<StagedSend<L>>,
}

/// The blocks of a send with staged pieces, executed in place.
struct StagedSend<L> {
    /// Its unstaged pieces' blocks, counted from the input (none when every piece
    /// is staged).
    in_input: Option<L>,
    /// Its staged pieces' blocks, counted from the staging.
    in_staging: L,
}

impl<L> Grouped<L> {
    /// The message of `pieces` on `side`.
    fn new<T: Transport<BlockList = L>>(
        pieces: &[PieceMove],
        side: Side,
        transport: &T,
    ) -> Result<Grouped<L>> {
        let (unstaged, staged): (Vec<&PieceMove>, Vec<&PieceMove>) =
            pieces.iter().partition(|t| t.staged.is_none());
        let in_buffer = blocks(unstaged.iter().chain(&staged), side, false);
        let staged = match (side, staged.is_empty()) {
            (Side::Send, false) => Some(StagedSend {
                in_input: match unstaged.is_empty() {
                    true => None,
                    false => Some(transport.block_list(&blocks(&unstaged, side, false))?),
                },
                in_staging: transport.block_list(&blocks(&staged, side, true))?,
            }),
            _ => None,
        };
        Ok(Grouped {
            in_buffer: transport.block_list(&in_buffer)?,
            staged,
        })
    }

    /// Starts the message as `envelope` says over `transport`: its blocks in
    /// `buffer` (the input of a send, the output of a receive), but for a send
    /// with staged pieces executed in place (`staging` given), its staged pieces
    /// from `staging`.
    ///
    /// # Safety
    /// Every block valid (readable for a send, writable for a receive) and not
    /// touched by anything else until `request` completes.
    pub unsafe fn start<T: Transport<BlockList = L>>(
        &self,
        transport: &T,
        envelope: Envelope,
        (buffer, staging): (*mut u8, Option<*mut u8>),
        request: &mut T::Request,
    ) -> Result<()> {
        let part = |base, list| ListPart { base, list };
        // SAFETY: forwarded from the caller.
        unsafe {
            match (&self.staged, staging) {
                (
                    Some(StagedSend {
                        in_input,
                        in_staging,
                    }),
                    Some(staging),
                ) => {
                    let staged = part(staging, in_staging);
                    match in_input {
                        Some(list) => {
                            let parts = [part(buffer, list), staged];
                            transport.start_lists(envelope, &parts, request)
                        }
                        None => transport.start_lists(envelope, &[staged], request),
                    }
                }
                _ => transport.start_lists(envelope, &[part(buffer, &self.in_buffer)], request),
            }
        }
    }
}

/// The blocks of `pieces`, run by run, counted from the start of the buffer they
/// lie in on `side`, or of the staging when `staged` (their slots).
fn blocks<'a>(
    pieces: impl IntoIterator<Item = &'a &'a PieceMove>,
    side: Side,
    staged: bool,
) -> Vec<Block> {
    let first = |t: &PieceMove| -> (usize, usize) {
        match (side, t.staged) {
            (Side::Receive, _) => (t.dst, t.shape.dst_stride),
            (Side::Send, Some(slot)) if staged => (slot, t.shape.len),
            (Side::Send, _) => (t.src, t.shape.src_stride),
        }
    };
    (pieces.into_iter())
        .flat_map(|t| {
            let ((at, stride), len) = (first(t), t.shape.len);
            (0..t.shape.count).map(move |i| Block {
                offset: at + i * stride,
                len,
            })
        })
        .collect()
}
