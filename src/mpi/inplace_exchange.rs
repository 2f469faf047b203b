//! Executes one rank's part of an in-place schedule ([`crate::planning::inplace`])
//! over MPI:
//! round after round, the staging copies, then the round's messages (posted, then
//! completed together with `MPI_Waitall`) with the local moves done while they
//! flow. The staging and the requests are allocated once and reused by every
//! execution.
//!
//! A rank executing out of place while another executes in place follows the same
//! rounds (the messages must match): it reads every piece from its input, which it
//! never overwrites, so it stages nothing, and copies the elements it keeps
//! separately.

use std::os::raw::c_int;

use mpi::ffi;

use crate::core::error::Result;
use crate::core::fallible::try_vec;
use crate::mpi::comm::Comm;
use crate::mpi::p2p::{cancel_all, complete_all, start_bytes, start_datatype};
use crate::mpi::status::{check, count};
use crate::mpi::transport::{BlockShape, Bytes, Channel, Envelope, copy_blocks};
use crate::planning::inplace::{PieceMove, RankSchedule, messages};
use crate::planning::schedule::Side;

/// One rank's in-place schedule with its staging, requests, and the block lists
/// of its multi-piece messages.
pub struct ScheduledExchange {
    schedule: RankSchedule,
    staging: Vec<u8>,
    requests: Vec<ffi::MPI_Request>,
    block_lens: Vec<c_int>,
    block_offsets: Vec<ffi::MPI_Aint>,
}

impl std::fmt::Debug for ScheduledExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduledExchange")
            .field("rounds", &self.schedule.rounds.len())
            .field("staging_bytes", &self.staging.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: the requests are MPI_REQUEST_NULL between executions, and an execution
// uses them from one thread only (the plan holds the exchange in a mutex).
unsafe impl Send for ScheduledExchange {}

impl ScheduledExchange {
    /// Allocates the staging (touched now, so executions take no page faults) and
    /// the requests of `schedule`, this rank's part.
    pub fn new(schedule: RankSchedule, rank: usize) -> Result<ScheduledExchange> {
        let mut staging = try_vec(schedule.staging_bytes, "the in-place staging", rank)?;
        staging.resize(schedule.staging_bytes, 0);
        let mut requests = try_vec(schedule.most_messages, "the MPI requests", rank)?;
        // SAFETY: reading an MPI constant handle.
        requests.resize(schedule.most_messages, unsafe { ffi::RSMPI_REQUEST_NULL });
        let block_lens = try_vec(schedule.most_blocks, "the message blocks", rank)?;
        let block_offsets = try_vec(schedule.most_blocks, "the message blocks", rank)?;
        Ok(ScheduledExchange {
            schedule,
            staging,
            requests,
            block_lens,
            block_offsets,
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

    /// Runs every round over the channel's communicator with its tag. In place
    /// when `input == output`.
    ///
    /// # Safety
    /// `input` readable for the plan's input size and `output` writable for its
    /// output size; out of place they do not overlap; in place the buffer holds the
    /// larger of both. Every rank of `comm` runs its part of the same schedule.
    pub unsafe fn run(
        &mut self,
        channel: Channel<'_, Comm>,
        input: *const u8,
        output: *mut u8,
    ) -> Result<()> {
        let buffers = Buffers {
            input,
            output,
            staging: self.staging.as_mut_ptr(),
            in_place: std::ptr::eq(input, output),
        };
        for round in 0..self.schedule.rounds.len() {
            // SAFETY: forwarded from the caller.
            let completed = unsafe { self.run_round(round, channel, buffers) };
            if let Err(e) = completed {
                cancel_all(&mut self.requests);
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
        channel: Channel<'_, Comm>,
        buffers: Buffers,
    ) -> Result<()> {
        let round = &self.schedule.rounds[round];
        if buffers.in_place {
            for t in &round.stage {
                // SAFETY: the piece lies in the buffer, its slot in the staging.
                unsafe { buffers.stage(t) };
            }
        }
        let mut posted = 0;
        let mut lists = BlockLists {
            lens: &mut self.block_lens,
            offsets: &mut self.block_offsets,
        };
        let mut post = |pieces: &[PieceMove], side: Side| -> Result<()> {
            let message = Message {
                envelope: channel.envelope(side, pieces[0].peer),
                base: buffers.base(side),
                pieces: pieces.iter().map(|t| buffers.runs(t, side)),
            };
            // SAFETY: every run lies in the buffer or the staging, which nothing
            // else touches until the round completes (schedule invariant: nothing
            // writes a byte that a piece in flight reads or lands on).
            self.requests[posted] = unsafe { message.post(channel.transport, &mut lists) }?;
            posted += 1;
            Ok(())
        };
        messages(&round.receives).try_for_each(|m| post(m, Side::Receive))?;
        messages(&round.sends).try_for_each(|m| post(m, Side::Send))?;
        if buffers.in_place {
            for t in &round.moves {
                // SAFETY: the destination lies in the output and no message of the
                // round touches it.
                unsafe { buffers.move_piece(t) };
            }
        }
        let sleeping = channel.transport.sleeping();
        complete_all(&mut self.requests[..posted], true, sleeping).map(drop)
    }
}

/// The memory of one execution: the caller's buffers and the staging.
#[derive(Clone, Copy)]
struct Buffers {
    input: *const u8,
    output: *mut u8,
    staging: *mut u8,
    in_place: bool,
}

impl Buffers {
    /// Where the runs of piece `t` are read: its staging slot (contiguous) when it
    /// was staged and the execution is in place, else its place in the input.
    fn source(&self, t: &PieceMove) -> Bytes {
        match (t.staged, self.in_place) {
            // SAFETY: staging offsets lie within the staging (schedule invariant).
            (Some(at), true) => piece_runs(unsafe { self.staging.add(at) }, t, t.shape.len),
            _ => self.in_input(t),
        }
    }

    /// Where the runs of piece `t` lie in the input.
    fn in_input(&self, t: &PieceMove) -> Bytes {
        // SAFETY: sources lie within the input (planner invariant).
        let at = unsafe { self.input.add(t.src) }.cast_mut();
        piece_runs(at, t, t.shape.src_stride)
    }

    /// Where the runs of piece `t` land in the output.
    fn destination(&self, t: &PieceMove) -> Bytes {
        // SAFETY: destinations lie within the output (planner invariant).
        let at = unsafe { self.output.add(t.dst) };
        piece_runs(at, t, t.shape.dst_stride)
    }

    /// What the block offsets of a message on `side` are relative to.
    fn base(&self, side: Side) -> *const u8 {
        match side {
            Side::Send => self.input,
            Side::Receive => self.output,
        }
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

/// The block lengths and offsets of a multi-piece message's MPI datatype, in
/// lists allocated once with the schedule.
struct BlockLists<'a> {
    lens: &'a mut Vec<c_int>,
    offsets: &'a mut Vec<ffi::MPI_Aint>,
}

/// One message of a round: its pieces' runs, sent from or received into memory
/// addressed relative to `base`.
struct Message<I> {
    envelope: Envelope,
    base: *const u8,
    pieces: I,
}

impl<I: ExactSizeIterator<Item = Bytes>> Message<I> {
    /// Posts the message: one contiguous piece as bytes, one strided piece through
    /// an MPI hvector datatype, several pieces through an MPI hindexed datatype
    /// over all their runs, built in `lists` (no copy); a datatype is freed once
    /// posted (MPI keeps what the pending operation needs).
    ///
    /// # Safety
    /// Every run readable (sends) or writable (receives) until the request
    /// completes.
    unsafe fn post(self, comm: &Comm, lists: &mut BlockLists<'_>) -> Result<ffi::MPI_Request> {
        let (envelope, base, mut pieces) = (self.envelope, self.base, self.pieces);
        // SAFETY: reading an MPI constant handle.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        if pieces.len() == 1
            && let Some(runs) = pieces.next()
        {
            // SAFETY: as documented.
            unsafe { start_bytes(comm, envelope, runs, &mut request) }?;
            return Ok(request);
        }
        let BlockLists { lens, offsets } = lists;
        lens.clear();
        offsets.clear();
        for runs in pieces {
            for i in 0..runs.shape.blocks {
                lens.push(count(runs.shape.block)?);
                offsets.push((runs.block_at(i) as isize - base as isize) as ffi::MPI_Aint);
            }
        }
        // SAFETY: the block lists hold `lens.len()` entries; reading MPI constants.
        let datatype = unsafe {
            let mut datatype = ffi::RSMPI_DATATYPE_NULL;
            let (n, byte) = (count(lens.len())?, ffi::RSMPI_UINT8_T);
            let code = ffi::MPI_Type_create_hindexed(
                n,
                lens.as_ptr(),
                offsets.as_ptr(),
                byte,
                &mut datatype,
            );
            check(code, "MPI_Type_create_hindexed")?;
            datatype
        };
        // SAFETY: as documented; the datatype's displacements start at `base`.
        unsafe { start_datatype(comm, envelope, base.cast_mut(), datatype, &mut request) }?;
        Ok(request)
    }
}
