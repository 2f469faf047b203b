//! Executes one rank's plan over MPI: the local copy, then rounds of point-to-point
//! messages, one per peer, direction and round (no all-to-all). Sender and receiver
//! cut the same global runs into the same messages, so the k-th message of a pair is
//! posted in round k on both sides, which keeps the rounds deadlock-free.
//!
//! Every shared run is contiguous in both buffers, so a large run travels as a
//! message of its own, straight from the sender's buffer into the receiver's. Small
//! runs are packed together: a packed message that is scattered in the local buffer
//! goes through this stream's slot of a staging buffer (packed before the send,
//! unpacked after the receive). MPI derived datatypes would avoid that copy, but
//! MPICH moves scattered datatypes several times slower than a pack and a contiguous
//! send. Packed messages are capped so the staging stays within the plan's budget
//! however large the array.
//!
//! In place, everything this rank sends is first packed (its only other extra
//! memory: exactly the bytes that leave), the kept elements are moved to their
//! output positions, and the receives then land in the buffer.

use std::ops::Range;
use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::comm::{Comm, check, count};
use crate::error::Result;
use crate::faults::try_vec;
use crate::planner::{RankPlan, Transfer};
use crate::runs::{MessageCutter, MessageKind, MessageLimits, Placement, Segment};

/// Which way a stream's messages go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Send,
    Receive,
}

/// Most messages one stream posts in one round.
const MESSAGES_PER_ROUND: usize = 1024;

/// Most messages in flight on one rank, over all its streams: bounds the requests.
const MESSAGES_IN_FLIGHT: usize = 1 << 16;

/// How many messages each stream posts per round when the busiest rank has `peers`
/// streams per direction: the same on every rank, so both sides of a pair agree.
pub fn messages_per_round(peers: usize) -> usize {
    (MESSAGES_IN_FLIGHT / (2 * peers.max(1))).clamp(1, MESSAGES_PER_ROUND)
}

/// One direction of the traffic with one peer.
struct Stream {
    peer: c_int,
    side: Side,
    cutter: MessageCutter,
    /// The message being cut, as segments of the local buffer.
    segments: Vec<Segment>,
    /// This stream's slot in the staging buffer.
    slot: Range<usize>,
    /// True while a received packed message waits in the slot to be unpacked.
    staged: bool,
    /// True once every message has been posted.
    done: bool,
    /// Messages of the current round not yet completed.
    pending: usize,
}

impl Stream {
    fn new(
        transfer: &Transfer,
        side: Side,
        placement: Placement,
        plan: &RankPlan,
        limits: MessageLimits,
        slot_start: usize,
    ) -> Result<Stream> {
        let runs = match side {
            Side::Send => plan.send_runs(transfer.peer),
            Side::Receive => plan.recv_runs(transfer.peer),
        };
        let elems = usize::try_from(transfer.elems).unwrap_or(usize::MAX);
        let slot_len = limits
            .packed_bytes
            .min(elems.saturating_mul(plan.elem_size));
        Ok(Stream {
            peer: transfer.peer as c_int,
            side,
            cutter: MessageCutter::new(runs, placement, plan.elem_size, limits),
            segments: try_vec(
                limits.max_runs.min(elems),
                "the message segments",
                plan.rank,
            )?,
            slot: slot_start..slot_start + slot_len,
            staged: false,
            done: false,
            pending: 0,
        })
    }

    /// Posts this round's messages into `slots` (one request each): up to
    /// `slots.len()`, ending early after a packed one (its slot is in use until the
    /// round completes). Both sides cut the same messages, so a stream's k-th round
    /// holds the same messages on both sides.
    ///
    /// # Safety
    /// The messages must lie inside `buffer`.
    unsafe fn post_round(
        &mut self,
        comm: &Comm,
        buffer: *mut u8,
        staging: *mut u8,
        slots: &mut [ffi::MPI_Request],
    ) -> Result<()> {
        for slot in slots.iter_mut() {
            let Some(kind) = self.cutter.next_message(&mut self.segments) else {
                self.done = true;
                return Ok(());
            };
            // SAFETY: forwarded from the caller.
            *slot = unsafe { self.post(comm, buffer, staging) }?;
            self.pending += 1;
            if kind == MessageKind::Packed {
                break;
            }
        }
        Ok(())
    }

    /// Posts the current message: in place in `buffer` when it is one segment on this
    /// side, otherwise through the stream's slot of `staging` (packed first for a send).
    ///
    /// # Safety
    /// The segments must lie inside `buffer`.
    unsafe fn post(
        &mut self,
        comm: &Comm,
        buffer: *mut u8,
        staging: *mut u8,
    ) -> Result<ffi::MPI_Request> {
        let bytes: usize = self.segments.iter().map(|s| s.len).sum();
        let at = match self.segments[..] {
            // SAFETY: the segment lies inside buffer.
            [only] => unsafe { buffer.add(only.offset) },
            _ => {
                // SAFETY: the slot lies inside the staging capacity.
                let slot = unsafe { staging.add(self.slot.start) };
                if self.side == Side::Send {
                    // SAFETY: the segments lie inside buffer; the slot holds `bytes`.
                    unsafe { pack(&self.segments, buffer, slot) };
                }
                self.staged = self.side == Side::Receive;
                slot
            }
        };
        // SAFETY: reading MPI constant handles.
        let (byte, mut request) = unsafe { (ffi::RSMPI_UINT8_T, ffi::RSMPI_REQUEST_NULL) };
        let n = count(bytes)?;
        // SAFETY: `at` is valid for `bytes` bytes until the request completes.
        let (code, call) = unsafe {
            let at = at.cast::<c_void>();
            match self.side {
                Side::Send => (
                    ffi::MPI_Isend(at, n, byte, self.peer, 0, comm.raw(), &mut request),
                    "MPI_Isend",
                ),
                Side::Receive => (
                    ffi::MPI_Irecv(at, n, byte, self.peer, 0, comm.raw(), &mut request),
                    "MPI_Irecv",
                ),
            }
        };
        check(code, call)?;
        Ok(request)
    }

    /// Unpacks a received packed message once its round has completed.
    ///
    /// # Safety
    /// The segments must lie inside `buffer`.
    unsafe fn unpack(&mut self, buffer: *mut u8, staging: *const u8) {
        if !std::mem::take(&mut self.staged) {
            return;
        }
        let mut at = self.slot.start;
        for s in &self.segments {
            // SAFETY: the segment lies inside buffer; the slot, written by the receive,
            // is separate memory.
            unsafe { std::ptr::copy_nonoverlapping(staging.add(at), buffer.add(s.offset), s.len) };
            at += s.len;
        }
    }
}

/// Copies the segments of `buffer` back to back into `slot`.
///
/// # Safety
/// The segments must lie inside `buffer`, and `slot` must hold their total length
/// without overlapping `buffer`.
unsafe fn pack(segments: &[Segment], buffer: *const u8, slot: *mut u8) {
    let mut at = 0;
    for s in segments {
        // SAFETY: as documented.
        unsafe { std::ptr::copy_nonoverlapping(buffer.add(s.offset), slot.add(at), s.len) };
        at += s.len;
    }
}

/// How one execution uses its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Separate input and output buffers.
    OutOfPlace,
    /// One buffer, any plan: everything this rank sends is packed first (extra
    /// memory: exactly those bytes), the kept elements move, then all messages flow.
    InPlaceStaged,
    /// One buffer, for plans where rows flow one way between any two ranks and the
    /// flows form no cycle (the split-preserving balance: slabs stay in rank order):
    /// every rank first completes its sends straight from the buffer, then moves its
    /// kept elements, then receives into the freed places. No extra memory; a rank
    /// waits only for ranks further along the direction it sends in, so no cycle of
    /// waits can form.
    InPlaceOrdered,
}

/// One execution of a plan on this rank, with every buffer it needs allocated up
/// front (so an allocation failure is found, and agreed, before any message).
pub struct Exchange<'a> {
    plan: &'a RankPlan,
    mode: Mode,
    /// Receive streams, then send streams.
    streams: Vec<Stream>,
    /// `per_round` request slots per stream, in stream order.
    requests: Vec<ffi::MPI_Request>,
    /// Indices of completed requests, filled by MPI_Waitsome.
    completed: Vec<c_int>,
    /// Messages each stream posts per round.
    per_round: usize,
    /// One slot per stream for scattered messages.
    staging: Vec<u8>,
    /// Everything this rank sends, packed; in [`Mode::InPlaceStaged`] only.
    packed_sends: Option<Vec<u8>>,
}

impl<'a> Exchange<'a> {
    /// Allocates the message descriptions and staging of `plan` within `limits`
    /// (`per_round` messages per stream and round), and in [`Mode::InPlaceStaged`]
    /// the buffer of the packed sends.
    pub fn prepare(
        plan: &'a RankPlan,
        limits: MessageLimits,
        per_round: usize,
        mode: Mode,
    ) -> Result<Exchange<'a>> {
        let staged = mode == Mode::InPlaceStaged;
        let count = plan.recvs.len() + plan.sends.len();
        let mut streams = try_vec(count, "the message streams", plan.rank)?;
        let (mut slots, mut packed) = (0, 0);
        for t in &plan.recvs {
            let placement = Placement::Pattern(plan.output_pattern());
            streams.push(Stream::new(
                t,
                Side::Receive,
                placement,
                plan,
                limits,
                slots,
            )?);
            slots = streams[streams.len() - 1].slot.end;
        }
        for t in &plan.sends {
            let placement = match staged {
                true => Placement::Packed { next: packed },
                false => Placement::Pattern(plan.input_pattern()),
            };
            streams.push(Stream::new(t, Side::Send, placement, plan, limits, slots)?);
            // Staged sends come packed and contiguous: they never need a slot.
            if !staged {
                slots = streams[streams.len() - 1].slot.end;
            }
            packed += t.elems as usize * plan.elem_size;
        }
        let packed_sends = staged
            .then(|| try_vec(packed, "the in-place packed sends", plan.rank))
            .transpose()?;
        let mut requests = try_vec(count * per_round, "the MPI requests", plan.rank)?;
        // SAFETY: reading an MPI constant handle.
        requests.resize(count * per_round, unsafe { ffi::RSMPI_REQUEST_NULL });
        Ok(Exchange {
            plan,
            mode,
            streams,
            completed: try_vec(count * per_round, "the completed requests", plan.rank)?,
            requests,
            per_round,
            // Only its capacity is used (through raw pointers), so pages no message
            // needs are never touched.
            staging: try_vec(slots, "the message staging", plan.rank)?,
            packed_sends,
        })
    }

    /// Runs the local copy and every message (collective over `comm`).
    ///
    /// # Safety
    /// `input` must be readable for the plan's input size and `output` writable for
    /// its output size. Out of place (as prepared) they must not overlap; in place they
    /// must be equal and the buffer hold the larger of both sizes. Every rank of `comm`
    /// must run its own plan of the same reshape. Ranks may run in different modes
    /// (in place is each rank's own choice): only [`Mode::InPlaceOrdered`] waits before
    /// posting its receives, and only for ranks it sends to, which never form a cycle.
    pub unsafe fn run(mut self, comm: &Comm, input: *const u8, output: *mut u8) -> Result<()> {
        let plan = self.plan;
        let both = |_: Side| true;
        match self.mode {
            // SAFETY (all arms): forwarded from the caller.
            Mode::OutOfPlace => unsafe { self.progress(comm, input, output, both, Some(input)) },
            Mode::InPlaceStaged => {
                let mut packed = self.packed_sends.take().unwrap_or_default();
                let send_base = unsafe { stage_in_place(plan, &mut packed, output) };
                unsafe { self.progress(comm, send_base, output, both, None) }
            }
            Mode::InPlaceOrdered => {
                let sends = |side| side == Side::Send;
                unsafe { self.progress(comm, input, output, sends, None) }?;
                unsafe { plan.move_kept_in_place(in_place_buffer(plan, output)) };
                let receives = |side| side == Side::Receive;
                unsafe { self.progress(comm, input, output, receives, None) }
            }
        }
    }

    /// Runs the streams of the `selected` sides to completion, each independently of
    /// the others: a stream posts its next round as soon as its previous one has
    /// completed, so no stream waits for another's peer. Out of place, the kept
    /// elements are copied from `local_copy` while the first messages are in flight.
    ///
    /// # Safety
    /// As [`Exchange::run`], with sends read from `send_base`.
    unsafe fn progress(
        &mut self,
        comm: &Comm,
        send_base: *const u8,
        output: *mut u8,
        selected: impl Fn(Side) -> bool,
        mut local_copy: Option<*const u8>,
    ) -> Result<()> {
        let (staging, per_round) = (self.staging.as_mut_ptr(), self.per_round);
        loop {
            let mut in_flight = 0;
            for (stream, slots) in self
                .streams
                .iter_mut()
                .zip(self.requests.chunks_mut(per_round))
            {
                if !selected(stream.side) {
                    continue;
                }
                if stream.pending == 0 && !stream.done {
                    let base = match stream.side {
                        Side::Send => send_base.cast_mut(),
                        Side::Receive => output,
                    };
                    // SAFETY: the messages lie inside their buffer (planner invariant).
                    unsafe { stream.post_round(comm, base, staging, slots) }?;
                }
                in_flight += stream.pending;
            }
            if let Some(input) = local_copy.take() {
                // SAFETY: forwarded from the caller.
                unsafe { copy_local(self.plan, input, output) };
            }
            if in_flight == 0 {
                return Ok(());
            }
            // SAFETY: forwarded from the caller.
            unsafe { self.complete_some(output) }?;
        }
    }

    /// Waits for at least one message; unpacks the receive rounds that completed.
    ///
    /// # Safety
    /// As [`Exchange::run`].
    unsafe fn complete_some(&mut self, output: *mut u8) -> Result<()> {
        let mut done: c_int = 0;
        self.completed.resize(self.requests.len(), 0);
        // SAFETY: both arrays hold requests.len() entries; finished requests become
        // MPI_REQUEST_NULL, which later calls skip.
        check(
            unsafe {
                ffi::MPI_Waitsome(
                    count(self.requests.len())?,
                    self.requests.as_mut_ptr(),
                    &mut done,
                    self.completed.as_mut_ptr(),
                    ffi::RSMPI_STATUSES_IGNORE,
                )
            },
            "MPI_Waitsome",
        )?;
        let staging = self.staging.as_ptr();
        for &index in &self.completed[..done.max(0) as usize] {
            let stream = &mut self.streams[index as usize / self.per_round];
            stream.pending -= 1;
            if stream.pending == 0 {
                // SAFETY: the round's messages lie inside the output buffer.
                unsafe { stream.unpack(output, staging) };
            }
        }
        Ok(())
    }
}

/// Packs the sends into `packed` and moves the kept elements within `buffer`;
/// returns where the sends are read from.
///
/// # Safety
/// `buffer` must hold the larger of the plan's input and output sizes.
unsafe fn stage_in_place(plan: &RankPlan, packed: &mut Vec<u8>, buffer: *mut u8) -> *const u8 {
    let in_bytes = plan.input_elems() as usize * plan.elem_size;
    // SAFETY: as documented.
    let buffer = unsafe { in_place_buffer(plan, buffer) };
    plan.pack_sends(&buffer[..in_bytes], packed);
    plan.move_kept_in_place(buffer);
    packed.as_ptr()
}

/// The one buffer of an in-place execution, as long as the larger of input and output.
///
/// # Safety
/// `buffer` must hold the larger of the plan's input and output sizes, unaliased.
unsafe fn in_place_buffer<'a>(plan: &RankPlan, buffer: *mut u8) -> &'a mut [u8] {
    let len = plan.input_elems().max(plan.output_elems()) as usize * plan.elem_size;
    // SAFETY: as documented.
    unsafe { slice_or_empty_mut(buffer, len) }
}

/// # Safety
/// As [`Exchange::run`], out of place.
unsafe fn copy_local(plan: &RankPlan, input: *const u8, output: *mut u8) {
    let size = plan.elem_size;
    let in_bytes = plan.input_elems() as usize * size;
    let out_bytes = plan.output_elems() as usize * size;
    // SAFETY: the caller guarantees both buffers' sizes and that they are disjoint.
    let (from, to) = unsafe {
        (
            slice_or_empty(input, in_bytes),
            slice_or_empty_mut(output, out_bytes),
        )
    };
    plan.copy_local(from, to);
}

/// The slice at `ptr` of `len` bytes; `ptr` may be null when `len` is 0.
///
/// # Safety
/// `ptr` must be readable for `len` bytes.
unsafe fn slice_or_empty<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// The mutable slice at `ptr` of `len` bytes; `ptr` may be null when `len` is 0.
///
/// # Safety
/// `ptr` must be writable for `len` bytes and not aliased.
unsafe fn slice_or_empty_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        &mut []
    } else {
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}
