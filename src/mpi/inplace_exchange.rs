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
use crate::mpi::comm::{Comm, check, count};
use crate::mpi::p2p::{Typed, cancel_all, complete_all, start};
use crate::mpi::transport::{Channel, Envelope};
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
        let block_lens = try_vec(schedule.most_pieces, "the message blocks", rank)?;
        let block_offsets = try_vec(schedule.most_pieces, "the message blocks", rank)?;
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
                unsafe {
                    std::ptr::copy_nonoverlapping(buffers.source(t, false), buffers.slot(t), t.len)
                };
            }
        }
        let mut posted = 0;
        let mut lists = BlockLists {
            lens: &mut self.block_lens,
            offsets: &mut self.block_offsets,
        };
        let mut post = |message: &[PieceMove], side: Side| -> Result<()> {
            let message = Message {
                envelope: channel.envelope(side, message[0].peer),
                base: buffers.base(side),
                blocks: message.iter().map(|t| Block {
                    at: buffers.block(t, side),
                    len: t.len,
                }),
            };
            // SAFETY: every block lies in the buffer or the staging, which nothing
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
                // round touches it; in place a move may overlap its own source.
                unsafe {
                    std::ptr::copy(buffers.source(t, true), buffers.output.add(t.dst), t.len)
                };
            }
        }
        complete_all(&mut self.requests[..posted], true).map(drop)
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
    /// Where piece `t` is read: its staging slot when it was staged and `staged`
    /// copies count (in place), else its place in the input.
    fn source(&self, t: &PieceMove, staged: bool) -> *const u8 {
        match (t.staged, staged && self.in_place) {
            // SAFETY: staging offsets lie within the staging (schedule invariant).
            (Some(at), true) => unsafe { self.staging.add(at) }.cast_const(),
            // SAFETY: sources lie within the input (planner invariant).
            _ => unsafe { self.input.add(t.src) },
        }
    }

    /// The staging slot of a staged piece.
    fn slot(&self, t: &PieceMove) -> *mut u8 {
        // SAFETY: staging offsets lie within the staging (schedule invariant).
        unsafe { self.staging.add(t.staged.unwrap_or(0)) }
    }

    /// What the block offsets of a message on `side` are relative to.
    fn base(&self, side: Side) -> *const u8 {
        match side {
            Side::Send => self.input,
            Side::Receive => self.output,
        }
    }

    /// Where piece `t` is read (sends) or lands (receives).
    fn block(&self, t: &PieceMove, side: Side) -> *const u8 {
        match side {
            Side::Send => self.source(t, true),
            // SAFETY: destinations lie within the output (planner invariant).
            Side::Receive => unsafe { self.output.add(t.dst) },
        }
    }
}

/// One piece of a message: `len` bytes at `at`.
struct Block {
    at: *const u8,
    len: usize,
}

/// The block lengths and offsets of a multi-piece message's MPI datatype, in
/// lists allocated once with the schedule.
struct BlockLists<'a> {
    lens: &'a mut Vec<c_int>,
    offsets: &'a mut Vec<ffi::MPI_Aint>,
}

/// One message of a round: its pieces as blocks, sent from or received into
/// memory addressed relative to `base`.
struct Message<I> {
    envelope: Envelope,
    base: *const u8,
    blocks: I,
}

impl<I: ExactSizeIterator<Item = Block>> Message<I> {
    /// Posts the message: one block directly, several through an MPI hindexed
    /// datatype (no copy), built in `lists` and freed once posted (MPI keeps what
    /// the pending operation needs).
    ///
    /// # Safety
    /// Every block readable (sends) or writable (receives) until the request
    /// completes.
    unsafe fn post(self, comm: &Comm, lists: &mut BlockLists<'_>) -> Result<ffi::MPI_Request> {
        let (envelope, base, mut blocks) = (self.envelope, self.base, self.blocks);
        // SAFETY: reading an MPI constant handle.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        if blocks.len() == 1
            && let Some(Block { at, len }) = blocks.next()
        {
            let data = Typed {
                at: at.cast_mut(),
                count: count(len)?,
                // SAFETY: reading an MPI constant handle.
                datatype: unsafe { ffi::RSMPI_UINT8_T },
            };
            // SAFETY: as documented.
            unsafe { start(comm, envelope, data, &mut request) }?;
            return Ok(request);
        }
        let BlockLists { lens, offsets } = lists;
        lens.clear();
        offsets.clear();
        for Block { at, len } in blocks {
            lens.push(count(len)?);
            offsets.push((at as isize - base as isize) as ffi::MPI_Aint);
        }
        // SAFETY: the block lists hold `lens.len()` entries; reading MPI constants.
        unsafe {
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
            let committed = check(ffi::MPI_Type_commit(&mut datatype), "MPI_Type_commit");
            let started = committed.and_then(|()| {
                let data = Typed {
                    at: base.cast_mut(),
                    count: 1,
                    datatype,
                };
                start(comm, envelope, data, &mut request)
            });
            ffi::MPI_Type_free(&mut datatype);
            started?;
            Ok(request)
        }
    }
}
