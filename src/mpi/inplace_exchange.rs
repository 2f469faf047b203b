//! Executes one rank's part of an in-place schedule ([`crate::planning::inplace`])
//! over a [`Transport`] (MPI in the library, an in-memory network in the tests):
//! round after round, the staging copies, then the round's messages (posted, then
//! completed together) with the local moves done while they flow. The staging,
//! the requests and the block lists of the messages of several pieces
//! ([`crate::mpi::inplace_messages`]) are made once and reused by every execution.
//!
//! A rank executing out of place while another executes in place follows the same
//! rounds (the messages must match): it reads every piece from its input, which it
//! never overwrites, so it stages nothing, and copies the elements it keeps
//! separately.

use crate::core::error::Result;
use crate::core::fallible::try_vec;
use crate::mpi::buffers::Buffers;
use crate::mpi::inplace_messages::{Grouped, GroupedMessages};
use crate::mpi::transport::{BlockShape, Bytes, Channel, Transport, copy_blocks};
use crate::planning::inplace::{PieceMove, RankSchedule, round_messages};
use crate::planning::schedule::Side;

/// One rank's in-place schedule with its staging, requests, and the block lists
/// of its messages of several pieces, over transport `T`.
pub struct ScheduledExchange<T: Transport> {
    schedule: RankSchedule,
    staging: Vec<u8>,
    requests: Vec<T::Request>,
    grouped: GroupedMessages<T::BlockList>,
}

impl<T: Transport> std::fmt::Debug for ScheduledExchange<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduledExchange")
            .field("rounds", &self.schedule.rounds.len())
            .field("staging_bytes", &self.staging.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: the requests are null between executions, and an execution uses them
// and the block lists from one thread only (the plan holds the exchange in a
// mutex; each simulated rank owns its own).
unsafe impl<T: Transport> Send for ScheduledExchange<T> {}

impl<T: Transport> ScheduledExchange<T> {
    /// Allocates the staging (touched now, so executions take no page faults) and
    /// the requests of `schedule`, this rank's part, and makes the block lists of
    /// its messages of several pieces over `transport`.
    pub fn new(schedule: RankSchedule, rank: usize, transport: &T) -> Result<Self> {
        let mut staging = try_vec(schedule.staging_bytes, "the in-place staging", rank)?;
        staging.resize(schedule.staging_bytes, 0);
        let mut requests = try_vec(schedule.most_messages, "the requests", rank)?;
        requests.resize(schedule.most_messages, T::null_request());
        let grouped = GroupedMessages::new(&schedule, transport)?;
        Ok(ScheduledExchange {
            schedule,
            staging,
            requests,
            grouped,
        })
    }

    /// The number of rounds.
    pub fn rounds(&self) -> usize {
        self.schedule.rounds.len()
    }

    /// Bytes of staging this rank holds.
    pub fn staging_bytes(&self) -> usize {
        self.staging.len()
    }

    /// Runs every round over the channel. In place when the input is the output.
    ///
    /// # Safety
    /// `buffers.input` readable for the plan's input size and `buffers.output`
    /// writable for its output size; out of place they do not overlap; in place
    /// the buffer holds the larger of both. Every rank of the channel runs its part
    /// of the same schedule.
    pub unsafe fn run(&mut self, channel: Channel<'_, T>, buffers: &Buffers) -> Result<()> {
        let memory = Memory {
            buffers: *buffers,
            staging: self.staging.as_mut_ptr(),
        };
        for round in 0..self.schedule.rounds.len() {
            // SAFETY: forwarded from the caller.
            let completed = unsafe { self.run_round(round, channel, memory) };
            if let Err(e) = completed {
                channel.transport.cancel_all(&mut self.requests);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Runs round `round`: stages, posts the messages, moves the local pieces while
    /// they flow, completes them. On failure some requests may still be active.
    ///
    /// # Safety
    /// As [`ScheduledExchange::run`].
    unsafe fn run_round(
        &mut self,
        round: usize,
        channel: Channel<'_, T>,
        memory: Memory,
    ) -> Result<()> {
        let round_moves = &self.schedule.rounds[round];
        if memory.buffers.in_place() {
            for t in &round_moves.stage {
                // SAFETY: the piece lies in the buffer, its slot in the staging.
                unsafe { memory.stage(t) };
            }
        }
        let receives = round_messages(&round_moves.receives).map(|m| (m, Side::Receive));
        let sends = round_messages(&round_moves.sends).map(|m| (m, Side::Send));
        let mut grouped = self.grouped.round(round);
        let mut posted = 0;
        for (pieces, side) in receives.chain(sends) {
            let request = &mut self.requests[posted];
            // SAFETY: every run lies in the buffer or the staging, which nothing
            // else touches until the round completes (schedule invariant: nothing
            // writes a byte that a piece in flight reads or lands on).
            unsafe { memory.post(channel, pieces, side, &mut grouped, request) }?;
            posted += 1;
        }
        if memory.buffers.in_place() {
            for t in &round_moves.moves {
                // SAFETY: the destination lies in the output and no message of the
                // round touches it.
                unsafe { memory.move_piece(t) };
            }
        }
        let transport = channel.transport;
        transport
            .complete_all(&mut self.requests[..posted], true)
            .map(drop)
    }
}

/// The memory of one execution: the caller's buffers and the staging.
#[derive(Clone, Copy)]
struct Memory {
    buffers: Buffers,
    staging: *mut u8,
}

impl Memory {
    /// Where the runs of piece `t` are read: its staging slot (contiguous) when it
    /// was staged and the execution is in place, else its place in the input.
    fn source(&self, t: &PieceMove) -> Bytes {
        match (t.staged, self.buffers.in_place()) {
            // SAFETY: staging offsets lie within the staging (schedule invariant).
            (Some(at), true) => piece_runs(unsafe { self.staging.add(at) }, t, t.shape.len),
            _ => self.in_input(t),
        }
    }

    /// Where the runs of piece `t` lie in the input.
    fn in_input(&self, t: &PieceMove) -> Bytes {
        // SAFETY: sources lie within the input (planner invariant).
        let at = unsafe { self.buffers.input.add(t.src) }.cast_mut();
        piece_runs(at, t, t.shape.src_stride)
    }

    /// Where the runs of piece `t` land in the output.
    fn destination(&self, t: &PieceMove) -> Bytes {
        // SAFETY: destinations lie within the output (planner invariant).
        let at = unsafe { self.buffers.output.add(t.dst) };
        piece_runs(at, t, t.shape.dst_stride)
    }

    /// What the blocks of a message of several pieces on `side` count from.
    fn base(&self, side: Side) -> *mut u8 {
        match side {
            Side::Send => self.buffers.input.cast_mut(),
            Side::Receive => self.buffers.output,
        }
    }

    /// Starts the message of `pieces` on `side`: one piece as its runs, several
    /// through the next of `grouped`, the round's block lists.
    ///
    /// # Safety
    /// Every run of the pieces valid (readable for a send, writable for a
    /// receive) and untouched by anything else until `request` completes.
    unsafe fn post<T: Transport>(
        &self,
        channel: Channel<'_, T>,
        pieces: &[PieceMove],
        side: Side,
        grouped: &mut std::slice::Iter<'_, Grouped<T::BlockList>>,
        request: &mut T::Request,
    ) -> Result<()> {
        let (transport, envelope) = (channel.transport, channel.envelope(side, pieces[0].peer));
        if let [t] = pieces {
            // SAFETY: as documented.
            return unsafe { transport.start(envelope, self.runs(t, side), request) };
        }
        let message = grouped
            .next()
            .expect("block lists for every message of pieces");
        let staging = self.buffers.in_place().then_some(self.staging);
        // SAFETY: as documented.
        unsafe { message.start(transport, envelope, (self.base(side), staging), request) }
    }

    /// Where the runs of piece `t` are read (sends) or land (receives).
    fn runs(&self, t: &PieceMove, side: Side) -> Bytes {
        match side {
            Side::Send => self.source(t),
            Side::Receive => self.destination(t),
        }
    }

    /// Copies staged piece `t` from the buffer into its staging slot, contiguous.
    ///
    /// # Safety
    /// Execution in place; the piece lies in the buffer, its slot in the staging.
    unsafe fn stage(&self, t: &PieceMove) {
        // SAFETY: as documented: the runs in the buffer, their slot (the piece's
        // source once staged) in the staging, which no other piece uses meanwhile.
        unsafe { copy_blocks(self.in_input(t), self.source(t)) };
    }

    /// Moves local piece `t` run by run from its source to its destination, first
    /// to last or last to first as [`PieceMove::forward`] says.
    ///
    /// # Safety
    /// Execution in place; the destination runs are vacated, but for the piece's
    /// own source runs already read in that order (schedule invariant).
    unsafe fn move_piece(&self, t: &PieceMove) {
        let (from, to) = (self.source(t), self.destination(t));
        let count = t.shape.count;
        for k in 0..count {
            let i = if t.forward() { k } else { count - 1 - k };
            // SAFETY: as documented; `copy` allows a single run over its own source.
            unsafe { std::ptr::copy(from.block_at(i), to.block_at(i), t.shape.len) };
        }
    }
}

/// The runs of piece `t` from `at`, `stride` bytes apart.
fn piece_runs(at: *mut u8, t: &PieceMove, stride: usize) -> Bytes {
    let shape = BlockShape {
        block: t.shape.len,
        blocks: t.shape.count,
        stride,
    };
    Bytes { at, shape }
}
