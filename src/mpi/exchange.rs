//! Executes one rank's plan over MPI: the local copy and the message streams, one
//! per peer and direction, in the order of the pure [`schedule`](crate::schedule)
//! (pairwise windows on the exchange path, independent streams on the local path).
//! Everything an execution needs (streams, requests, staging) is allocated once,
//! when the plan is created, and reused by every execution.
//!
//! Every shared run is contiguous in both buffers, so a large run travels as a
//! message of its own, straight from the sender's buffer into the receiver's. Small
//! runs are packed together: a packed message that is scattered in the local buffer
//! goes through this stream's slot of a staging buffer (packed before the send,
//! unpacked after the receive). MPI derived datatypes would avoid that copy, but
//! measured with `bench/datatypes.c` a vector datatype is no faster than a pack and a
//! contiguous send on MPICH 4.0 (up to 1.25x slower for small runs), and at most 10 %
//! faster on Open MPI 4.1 (README, "Performance").
//! Packed messages are capped so the staging stays within the plan's budget however
//! large the array.
//!
//! In place on the exchange path, executions follow the plan's in-place schedule
//! ([`crate::inplace_exchange`]); when it has none, everything this rank sends is
//! first packed (its only other extra memory: exactly the bytes that leave), the
//! kept elements are moved to their output positions, and the receives then land
//! in the buffer.

use std::ops::Range;
use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;
use crate::core::faults::injected_exchange_failure;
use crate::mpi::comm::{Comm, check, count};
use crate::mpi::inplace_exchange::ScheduledExchange;
use crate::planning::inplace::Unscheduled;
use crate::planning::messages::{
    CutMessages, MessageCutter, MessageLimits, Messages, Placement, Segment,
};
use crate::planning::planner::{KeptCopy, RankPlan};
use crate::planning::schedule::{Progress, ScheduledStream, Side, schedule};

/// Most messages one stream posts in one round.
const MESSAGES_PER_ROUND: usize = 1024;

/// Most messages in flight on one rank, over all its streams: bounds the requests a
/// plan keeps (a few bytes each).
const MESSAGES_IN_FLIGHT: usize = 1 << 12;

/// How many messages each stream posts per round when the busiest rank has `peers`
/// streams per direction: the same on every rank, so both sides of a pair agree.
pub fn messages_per_round(peers: usize) -> usize {
    (MESSAGES_IN_FLIGHT / (2 * peers.max(1))).clamp(1, MESSAGES_PER_ROUND)
}

/// One direction of the traffic with one peer.
struct Stream {
    spec: ScheduledStream,
    /// The messages cut once when the plan was created, if they fit its budget.
    cut: Option<CutMessages>,
    /// How many messages of `cut` this execution has posted.
    replayed: usize,
    /// Cuts the messages during this execution when they are not replayed from `cut`.
    cutter: Option<MessageCutter>,
    /// The message being cut, as segments of the local buffer.
    segments: Vec<Segment>,
    /// This stream's slot in the staging buffer.
    slot: Range<usize>,
    /// Where this stream's bytes start among the packed sends of an in-place
    /// execution (sends only).
    packed_at: usize,
    /// True while a received packed message waits in the slot to be unpacked.
    staged: bool,
    /// True once every message has been posted.
    done: bool,
    /// Messages of the current round not yet completed.
    pending: usize,
}

impl Stream {
    fn new(
        spec: ScheduledStream,
        plan: &RankPlan,
        limits: MessageLimits,
        packed_at: usize,
    ) -> Result<Stream> {
        let elems = usize::try_from(spec.elems).unwrap_or(usize::MAX);
        Ok(Stream {
            spec,
            cut: None,
            replayed: 0,
            cutter: None,
            segments: try_vec(
                limits.max_runs.min(elems),
                "the message segments",
                plan.rank,
            )?,
            slot: 0..0,
            packed_at,
            staged: false,
            done: false,
            pending: 0,
        })
    }

    /// Cuts every message now, to replay them in every execution, unless they hold
    /// more than `budget` segments; returns the segments kept.
    fn keep_messages(
        &mut self,
        plan: &RankPlan,
        limits: MessageLimits,
        budget: usize,
    ) -> Result<usize> {
        let cutter = stream_cutter(plan, self.spec, Mode::OutOfPlace, 0, limits);
        self.cut = CutMessages::cut(cutter, budget, &mut self.segments).map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot keep the cut messages on rank {}",
                plan.rank
            ))
        })?;
        Ok(self.cut.as_ref().map_or(0, CutMessages::segment_count))
    }

    /// Places this stream's staging slot at `start`: as large as its largest
    /// scattered message when its messages are kept, otherwise as large as a packed
    /// message can be.
    fn place_slot(&mut self, start: usize, plan: &RankPlan, limits: MessageLimits) {
        let elems = usize::try_from(self.spec.elems).unwrap_or(usize::MAX);
        let len = match &self.cut {
            Some(cut) => cut.largest_scattered_bytes(),
            None => limits
                .packed_bytes
                .min(elems.saturating_mul(plan.elem_size)),
        };
        self.slot = start..start + len;
    }

    /// Rewinds the stream for an execution in `mode`: the kept messages are replayed,
    /// except for sends read from the packed buffer of an in-place execution.
    fn reset(&mut self, plan: &RankPlan, mode: Mode, limits: MessageLimits) {
        let repacked = self.spec.side == Side::Send && mode == Mode::InPlaceStaged;
        let replay = self.cut.is_some() && !repacked;
        self.cutter =
            (!replay).then(|| stream_cutter(plan, self.spec, mode, self.packed_at, limits));
        self.replayed = 0;
        self.staged = false;
        self.done = false;
        self.pending = 0;
    }

    /// Posts this stream's next round into `slots` (one request each, at most
    /// `slots.len()` messages); marks the stream done when nothing is left.
    ///
    /// # Safety
    /// The messages must lie inside `buffer`, the slot inside `staging`.
    unsafe fn post_round(
        &mut self,
        channel: (&Comm, c_int),
        buffer: *mut u8,
        staging: *mut u8,
        slots: &mut [ffi::MPI_Request],
    ) -> Result<()> {
        let (peer, side, per_round) = (self.spec.peer as c_int, self.spec.side, slots.len());
        // SAFETY: the slot lies inside the staging capacity.
        let slot = unsafe { staging.add(self.slot.start) };
        let (mut posted, mut staged) = (0, false);
        let mut post_one = |segments: &[Segment]| {
            // SAFETY: forwarded from the caller.
            let (request, packed) = unsafe { post(channel, peer, side, segments, buffer, slot) }?;
            slots[posted] = request;
            posted += 1;
            staged |= packed && side == Side::Receive;
            Ok(())
        };
        let segments = &mut self.segments;
        let cut = match (&mut self.cutter, &self.cut) {
            (Some(cutter), _) => cutter.next_round(segments, per_round, &mut post_one),
            (None, Some(cut)) => {
                let mut replay = cut.replay(self.replayed);
                let round = replay.next_round(segments, per_round, &mut post_one);
                self.replayed = replay.position();
                round
            }
            (None, None) => Ok(0),
        };
        self.pending = posted;
        self.staged = staged;
        self.done = matches!(cut, Ok(0));
        cut.map(drop)
    }

    /// True when every message of this execution has been posted.
    fn is_exhausted(&mut self) -> bool {
        match (&mut self.cutter, &self.cut) {
            (Some(cutter), _) => cutter.is_exhausted(),
            (None, Some(cut)) => cut.replay(self.replayed).is_exhausted(),
            (None, None) => true,
        }
    }

    /// Unpacks a received packed message once its round has completed (the packed
    /// message is always the last of its round, so `segments` still describes it).
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

/// The message cutter of `spec` for an execution in `mode`: receives are placed by the
/// output pattern, sends by the input pattern or, in place with staging, back to back
/// from `packed_at` in the packed sends.
fn stream_cutter(
    plan: &RankPlan,
    spec: ScheduledStream,
    mode: Mode,
    packed_at: usize,
    limits: MessageLimits,
) -> MessageCutter {
    let (runs, placement) = match (spec.side, mode) {
        (Side::Receive, _) => (
            plan.recv_runs(spec.peer),
            Placement::Pattern(plan.output_pattern()),
        ),
        (Side::Send, Mode::InPlaceStaged) => (
            plan.send_runs(spec.peer),
            Placement::Packed { next: packed_at },
        ),
        (Side::Send, _) => (
            plan.send_runs(spec.peer),
            Placement::Pattern(plan.input_pattern()),
        ),
    };
    MessageCutter::new(runs, placement, plan.elem_size, limits)
}

/// Posts one message: straight from or into `buffer` when it is one segment there,
/// otherwise through `slot` (packed first for a send). Returns the request and
/// whether the message went through the slot.
///
/// # Safety
/// The segments must lie inside `buffer`; `slot` must hold their total length and be
/// unused until the request completes.
unsafe fn post(
    (comm, tag): (&Comm, c_int),
    peer: c_int,
    side: Side,
    segments: &[Segment],
    buffer: *mut u8,
    slot: *mut u8,
) -> Result<(ffi::MPI_Request, bool)> {
    let bytes: usize = segments.iter().map(|s| s.len).sum();
    let (at, packed) = match segments {
        // SAFETY: the segment lies inside buffer.
        [only] => (unsafe { buffer.add(only.offset) }, false),
        _ => {
            if side == Side::Send {
                // SAFETY: the segments lie inside buffer; the slot holds `bytes`.
                unsafe { pack(segments, buffer, slot) };
            }
            (slot, true)
        }
    };
    // SAFETY: reading MPI constant handles.
    let (byte, mut request) = unsafe { (ffi::RSMPI_UINT8_T, ffi::RSMPI_REQUEST_NULL) };
    let n = count(bytes)?;
    // SAFETY: `at` is valid for `bytes` bytes until the request completes.
    unsafe { start(side, (at, n, byte), (comm, peer, tag), &mut request) }?;
    Ok((request, packed))
}

/// Starts the send (`MPI_Isend`) or receive (`MPI_Irecv`) of `count` items of
/// `datatype` at `at`, with `peer` over `comm`, tagged `tag`.
///
/// # Safety
/// `at` valid for the message (readable for a send, writable for a receive) until
/// `request` completes.
pub(crate) unsafe fn start(
    side: Side,
    (at, count, datatype): (*mut u8, c_int, ffi::MPI_Datatype),
    (comm, peer, tag): (&Comm, c_int, c_int),
    request: &mut ffi::MPI_Request,
) -> Result<()> {
    let at = at.cast::<c_void>();
    // SAFETY: as documented.
    let (code, call) = unsafe {
        match side {
            Side::Send => (
                ffi::MPI_Isend(at, count, datatype, peer, tag, comm.raw(), request),
                "MPI_Isend",
            ),
            Side::Receive => (
                ffi::MPI_Irecv(at, count, datatype, peer, tag, comm.raw(), request),
                "MPI_Irecv",
            ),
        }
    };
    check(code, call)
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
    /// waits can form. Needs [`Progress::Independent`].
    InPlaceOrdered,
    /// The rounds of the plan's in-place schedule ([`crate::inplace`]), followed by
    /// every rank when any rank executes in place on the exchange path (in place or
    /// not, each on its own buffers), staging at most the budget.
    Scheduled,
}

/// How a plan executes in place on the exchange path, decided (the same on every
/// rank) at its first such execution.
#[derive(Debug)]
pub enum InPlaceRoute {
    /// No execution in place yet.
    Undecided,
    /// The bounded rounds of an in-place schedule.
    Scheduled(ScheduledExchange),
    /// Everything sent is staged first ([`Mode::InPlaceStaged`]), for the reason
    /// given: little to send, or no bounded schedule.
    Staged(Unscheduled),
}

/// Everything one rank needs to execute its plan, allocated when the plan is created
/// (so an allocation failure is agreed there) and reused by every execution.
pub struct Exchange {
    progress: Progress,
    limits: MessageLimits,
    /// Messages each stream posts per round.
    per_round: usize,
    /// The streams in schedule order.
    streams: Vec<Stream>,
    /// The local copies, listed once when they fit the plan's budget.
    kept: Option<Vec<KeptCopy>>,
    /// `per_round` request slots per stream.
    requests: Vec<ffi::MPI_Request>,
    /// Indices of completed requests, filled by MPI_Waitsome.
    completed: Vec<c_int>,
    /// One slot per stream for scattered messages, used through raw pointers.
    staging: Vec<u8>,
    /// Executions started so far: the same count on every rank.
    executions: u64,
    /// The tag of this execution's messages: every execution takes the plan's next
    /// one ([`Comm::tag`]), on every rank alike.
    tag: c_int,
    /// The execution in flight, between [`Exchange::begin`] and its completion.
    active: Option<Active>,
    /// How executions in place on the exchange path run.
    pub in_place: InPlaceRoute,
}

impl std::fmt::Debug for Exchange {
    /// A summary: the lists an exchange keeps can hold millions of entries.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("progress", &self.progress)
            .field("per_round", &self.per_round)
            .field("streams", &self.streams.len())
            .field("kept_copies", &self.kept.as_ref().map(Vec::len))
            .field("staging_bytes", &self.staging.capacity())
            .finish_non_exhaustive()
    }
}

// SAFETY: the request handles are MPI_REQUEST_NULL between executions, and an
// execution uses them from one thread only (the plan holds the exchange in a mutex).
unsafe impl Send for Exchange {}

impl Exchange {
    /// Allocates the streams of `plan` (one rank of `nranks`), driven by `progress`,
    /// with messages cut within `limits`, `per_round` per stream and round. The local
    /// copies, then the streams' messages in schedule order, are listed once and kept
    /// for every execution until `keep_budget` entries are spent.
    pub fn new(
        plan: &RankPlan,
        nranks: usize,
        limits: MessageLimits,
        per_round: usize,
        progress: Progress,
        keep_budget: usize,
    ) -> Result<Exchange> {
        let specs = schedule(plan, nranks, progress)?;
        let mut streams = try_vec(specs.len(), "the message streams", plan.rank)?;
        let kept = keep_copies(plan, keep_budget)?;
        let mut budget = keep_budget - kept.as_ref().map_or(keep_budget, Vec::len);
        let packed_starts = packed_starts(plan)?;
        let mut slots = 0;
        for spec in specs {
            let packed_at = match spec.side {
                Side::Send => packed_starts[plan.sends.partition_point(|t| t.peer < spec.peer)],
                Side::Receive => 0,
            };
            let mut stream = Stream::new(spec, plan, limits, packed_at)?;
            budget -= stream.keep_messages(plan, limits, budget)?.min(budget);
            if stream.cut.is_none() {
                budget = 0;
            }
            stream.place_slot(slots, plan, limits);
            slots = stream.slot.end;
            streams.push(stream);
        }
        let staging = staging(&streams, slots, plan.rank)?;
        let count = streams.len() * per_round;
        let mut requests = try_vec(count, "the MPI requests", plan.rank)?;
        // SAFETY: reading an MPI constant handle.
        requests.resize(count, unsafe { ffi::RSMPI_REQUEST_NULL });
        let mut completed = try_vec(count, "the completed requests", plan.rank)?;
        completed.resize(count, 0);
        Ok(Exchange {
            progress,
            limits,
            per_round,
            streams,
            kept,
            executions: 0,
            tag: 0,
            requests,
            completed,
            staging,
            active: None,
            in_place: InPlaceRoute::Undecided,
        })
    }

    /// Runs the local copy and every message of `plan` (collective over `comm`) to
    /// completion. In [`Mode::InPlaceStaged`], `packed` (otherwise unused) must have
    /// room for every byte this rank sends.
    ///
    /// # Safety
    /// `input` must be readable for the plan's input size and `output` writable for
    /// its output size. Out of place they must not overlap; in place they must be
    /// equal and the buffer hold the larger of both sizes. Every rank of `comm` must
    /// run its own plan of the same reshape. Ranks may run in different modes (in
    /// place is each rank's own choice) except [`Mode::Scheduled`], which every rank
    /// runs when one does: the other modes post the same messages in the same
    /// rounds, and only [`Mode::InPlaceOrdered`] waits before posting its receives,
    /// and only for ranks it sends to, which never form a cycle.
    pub unsafe fn run(
        &mut self,
        (plan, comm): (&RankPlan, &Comm),
        mode: Mode,
        packed: Vec<u8>,
        input: *const u8,
        output: *mut u8,
    ) -> Result<()> {
        if mode == Mode::Scheduled {
            let tag = self.next_tag(comm);
            let InPlaceRoute::Scheduled(scheduled) = &mut self.in_place else {
                return Err(Error::Internal("no in-place schedule to run".into()));
            };
            // SAFETY: forwarded from the caller.
            unsafe { scheduled.run((comm, tag), input, output) }?;
            if !std::ptr::eq(input, output) {
                // SAFETY: forwarded from the caller; every message has completed.
                unsafe { copy_local(plan, self.kept.as_deref(), input, output) };
            }
            return Ok(());
        }
        if mode != Mode::InPlaceOrdered {
            // SAFETY: forwarded from the caller.
            unsafe { self.start((plan, comm), mode, packed, input, output) };
            return self.advance(plan, comm, true).map(drop);
        }
        self.next_execution(plan, comm, mode);
        let mut sides = |sides: Sides| {
            self.active = Some(Active::new(
                input.cast_mut(),
                output,
                None,
                Vec::new(),
                sides,
            ));
            self.advance(plan, comm, true)
        };
        sides(Sides::Sends)?;
        // SAFETY: every send has completed, so the buffer is ours (caller's contract).
        unsafe { plan.move_kept_in_place(in_place_buffer(plan, output)) };
        sides(Sides::Receives).map(drop)
    }

    /// Starts an execution and progresses it as far as it goes without waiting;
    /// returns whether it completed. [`Exchange::advance`] carries it on; until it
    /// completes, the buffers stay in use. [`Mode::InPlaceOrdered`] runs to
    /// completion here: its receives may only start once its sends are done.
    ///
    /// # Safety
    /// As [`Exchange::run`], and the buffers must stay valid until the execution
    /// completes or fails.
    pub unsafe fn begin(
        &mut self,
        (plan, comm): (&RankPlan, &Comm),
        mode: Mode,
        packed: Vec<u8>,
        input: *const u8,
        output: *mut u8,
    ) -> Result<bool> {
        if matches!(mode, Mode::InPlaceOrdered | Mode::Scheduled) {
            // SAFETY: forwarded from the caller.
            return unsafe { self.run((plan, comm), mode, packed, input, output) }.map(|()| true);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.start((plan, comm), mode, packed, input, output) };
        self.advance(plan, comm, false)
    }

    /// True while an execution started by [`Exchange::begin`] is unfinished.
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// Sets up an execution of every message in `mode`.
    ///
    /// # Safety
    /// As [`Exchange::begin`].
    unsafe fn start(
        &mut self,
        (plan, comm): (&RankPlan, &Comm),
        mode: Mode,
        mut packed: Vec<u8>,
        input: *const u8,
        output: *mut u8,
    ) {
        self.next_execution(plan, comm, mode);
        let (send_base, local_copy) = match mode {
            Mode::OutOfPlace => (input, Some(input)),
            // SAFETY: forwarded from the caller.
            _ => (unsafe { stage_in_place(plan, &mut packed, output) }, None),
        };
        let active = Active::new(send_base.cast_mut(), output, local_copy, packed, Sides::All);
        self.active = Some(active);
    }

    /// Takes the next tag and rewinds every stream.
    fn next_execution(&mut self, plan: &RankPlan, comm: &Comm, mode: Mode) {
        let limits = self.limits;
        self.next_tag(comm);
        self.streams
            .iter_mut()
            .for_each(|s| s.reset(plan, mode, limits));
    }

    /// Takes the next execution's tag (every rank counts its executions alike).
    fn next_tag(&mut self, comm: &Comm) -> c_int {
        self.executions += 1;
        self.tag = comm.tag(self.executions);
        self.tag
    }

    /// Carries the active execution on as the schedule says: until it completes
    /// when `blocking`, else as far as it goes without waiting. Returns whether it
    /// completed (no execution active counts as completed). On failure every
    /// message in flight is cancelled and completed before returning.
    pub fn advance(&mut self, plan: &RankPlan, comm: &Comm, blocking: bool) -> Result<bool> {
        let Some(mut active) = self.active.take() else {
            return Ok(true);
        };
        let kept = self.kept.take();
        let mut copy_once = |active: &mut Active| {
            if let Some(input) = active.local_copy.take() {
                // SAFETY: the buffers of `active` are valid until it completes
                // (contract of begin / run); only out of place has a local copy.
                unsafe { copy_local(plan, kept.as_deref(), input, active.output) };
            }
        };
        let copy_once: &mut dyn FnMut(&mut Active) = &mut copy_once;
        // SAFETY: as above.
        let result = unsafe {
            match self.progress {
                Progress::Pairwise { .. } => self.pairwise(comm, &mut active, blocking, copy_once),
                Progress::Independent => self.independent(comm, &mut active, blocking, copy_once),
            }
        };
        if matches!(result, Ok(true)) {
            copy_once(&mut active);
        }
        self.kept = kept;
        match result {
            Ok(false) => self.active = Some(active),
            Ok(true) => {}
            Err(_) => self.abandon(),
        }
        result
    }

    /// After a failure mid-exchange: cancels every message still in flight and waits
    /// for it (MPI guarantees that a cancelled request's wait returns, whatever the
    /// other ranks do), so that no buffer is released while MPI may still use it.
    fn abandon(&mut self) {
        cancel_all(&mut self.requests);
        for stream in &mut self.streams {
            stream.pending = 0;
        }
        self.active = None;
    }

    /// Pairwise progress: window after window, every stream of the window posts its
    /// next round and the rank completes the whole step (see [`crate::schedule`]).
    /// The local copy runs once the first step is posted.
    ///
    /// # Safety
    /// The buffers of `active` valid (see [`Exchange::advance`]).
    unsafe fn pairwise(
        &mut self,
        comm: &Comm,
        active: &mut Active,
        blocking: bool,
        copy_once: &mut dyn FnMut(&mut Active),
    ) -> Result<bool> {
        let (staging, per_round, tag) = (self.staging.as_mut_ptr(), self.per_round, self.tag);
        loop {
            let window = self.window_at(active.window_start);
            if active.posted > 0 {
                if !complete_all(&mut self.requests[..active.posted], blocking)? {
                    return Ok(false);
                }
                active.posted = 0;
                // SAFETY: the rounds' messages lie inside the output buffer.
                unsafe { finish_rounds(&mut self.streams[window.clone()], active.output, staging) };
            }
            if window.is_empty() {
                return Ok(true);
            }
            for stream in self.streams[window.clone()].iter_mut().filter(|s| !s.done) {
                let base = active.base(stream.spec.side);
                let slots = &mut self.requests[active.posted..active.posted + per_round];
                // SAFETY: the messages lie inside their buffer (planner invariant).
                unsafe { stream.post_round((comm, tag), base, staging, slots) }?;
                active.posted += stream.pending;
            }
            copy_once(active);
            if active.posted == 0 {
                active.window_start = window.end;
            }
        }
    }

    /// The streams of the window starting at stream `start` (empty at the end).
    fn window_at(&self, start: usize) -> std::ops::Range<usize> {
        let rest = &self.streams[start..];
        let len = rest.first().map_or(0, |first| {
            rest.iter()
                .take_while(|s| s.spec.window == first.spec.window)
                .count()
        });
        start..start + len
    }

    /// Independent progress: a stream posts its next round as soon as its previous one
    /// has completed, so no stream waits for another's peer. Once every stream in
    /// flight is on its last round there is nothing more to post, and one
    /// `MPI_Waitall` completes them all.
    ///
    /// # Safety
    /// As [`Exchange::pairwise`].
    unsafe fn independent(
        &mut self,
        comm: &Comm,
        active: &mut Active,
        blocking: bool,
        copy_once: &mut dyn FnMut(&mut Active),
    ) -> Result<bool> {
        let (staging, tag) = (self.staging.as_mut_ptr(), self.tag);
        loop {
            let mut in_flight = 0;
            for (stream, slots) in self
                .streams
                .iter_mut()
                .zip(self.requests.chunks_mut(self.per_round))
                .filter(|(s, _)| active.sides.includes(s.spec.side))
            {
                if stream.pending == 0 && !stream.done {
                    let base = active.base(stream.spec.side);
                    // SAFETY: the messages lie inside their buffer (planner invariant).
                    unsafe { stream.post_round((comm, tag), base, staging, slots) }?;
                }
                in_flight += stream.pending;
            }
            copy_once(active);
            if in_flight == 0 {
                return Ok(true);
            }
            let last_rounds = self
                .streams
                .iter_mut()
                .all(|s| s.pending == 0 || s.is_exhausted());
            let progressed = match last_rounds {
                // SAFETY: the rounds' messages lie inside the output buffer.
                true => unsafe { self.complete_rounds(active.output, blocking) }?,
                // SAFETY: as above.
                false => unsafe { self.complete_some(active.output, blocking) }?,
            };
            if !progressed {
                return Ok(false);
            }
        }
    }

    /// Completes every message in flight (or, not `blocking`, returns false unless
    /// they all have) and unpacks the receive rounds.
    ///
    /// # Safety
    /// The rounds' messages lie inside `output`.
    unsafe fn complete_rounds(&mut self, output: *mut u8, blocking: bool) -> Result<bool> {
        if !complete_all(&mut self.requests, blocking)? {
            return Ok(false);
        }
        // SAFETY: forwarded from the caller.
        unsafe { finish_rounds(&mut self.streams, output, self.staging.as_ptr()) };
        Ok(true)
    }

    /// Completes at least one message (or, not `blocking`, those that have
    /// completed, returning false when none has) and unpacks the receive rounds
    /// that completed.
    ///
    /// # Safety
    /// The rounds' messages lie inside `output`.
    unsafe fn complete_some(&mut self, output: *mut u8, blocking: bool) -> Result<bool> {
        injected_exchange_failure()?;
        let mut done: c_int = 0;
        let (n, requests, completed) = (
            count(self.requests.len())?,
            self.requests.as_mut_ptr(),
            self.completed.as_mut_ptr(),
        );
        // SAFETY: both arrays hold requests.len() entries; finished requests become
        // MPI_REQUEST_NULL, which later calls skip.
        let code = unsafe {
            let statuses = ffi::RSMPI_STATUSES_IGNORE;
            match blocking {
                true => ffi::MPI_Waitsome(n, requests, &mut done, completed, statuses),
                false => ffi::MPI_Testsome(n, requests, &mut done, completed, statuses),
            }
        };
        check(
            code,
            if blocking {
                "MPI_Waitsome"
            } else {
                "MPI_Testsome"
            },
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
        Ok(done > 0)
    }
}

impl Drop for Exchange {
    /// An execution still in flight is cancelled and completed: MPI must not write
    /// the staging (or the caller's buffers) after this.
    fn drop(&mut self) {
        if self.active.is_some() && crate::mpi::comm::mpi_is_usable() {
            self.abandon();
        }
    }
}

/// Which streams an execution drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sides {
    All,
    Sends,
    Receives,
}

impl Sides {
    fn includes(self, side: Side) -> bool {
        match self {
            Sides::All => true,
            Sides::Sends => side == Side::Send,
            Sides::Receives => side == Side::Receive,
        }
    }
}

/// An execution in flight: its buffers and how far the schedule has come.
struct Active {
    /// Where sends are read.
    send_base: *mut u8,
    /// Where receives land (the output).
    output: *mut u8,
    /// Out of place, the input the kept elements are copied from, once the first
    /// messages are posted.
    local_copy: Option<*const u8>,
    /// In place with staging, everything this rank sends, read by the sends.
    _packed: Vec<u8>,
    sides: Sides,
    /// Pairwise progress: the first stream of the current window.
    window_start: usize,
    /// Pairwise progress: requests of the step in flight.
    posted: usize,
}

impl Active {
    fn new(
        send_base: *mut u8,
        output: *mut u8,
        local_copy: Option<*const u8>,
        packed: Vec<u8>,
        sides: Sides,
    ) -> Active {
        Active {
            send_base,
            output,
            local_copy,
            _packed: packed,
            sides,
            window_start: 0,
            posted: 0,
        }
    }

    /// The buffer a stream of `side` works on.
    fn base(&self, side: Side) -> *mut u8 {
        match side {
            Side::Send => self.send_base,
            Side::Receive => self.output,
        }
    }
}

/// Marks the rounds of `streams` in flight as completed, unpacking received packed
/// messages from `staging`.
///
/// # Safety
/// Every round in flight must have completed, its messages inside `output`.
unsafe fn finish_rounds(streams: &mut [Stream], output: *mut u8, staging: *const u8) {
    for stream in streams.iter_mut().filter(|s| s.pending > 0) {
        stream.pending = 0;
        // SAFETY: forwarded from the caller.
        unsafe { stream.unpack(output, staging) };
    }
}

/// Cancels every active request of `requests` and waits for it (MPI guarantees that
/// a cancelled request's wait returns, whatever the other ranks do), so that no
/// buffer is released while MPI may still use it.
pub(crate) fn cancel_all(requests: &mut [ffi::MPI_Request]) {
    for request in requests {
        // SAFETY: reading an MPI constant handle.
        if *request == unsafe { ffi::RSMPI_REQUEST_NULL } {
            continue;
        }
        // SAFETY: an active request; errors are moot here, the execution has
        // already failed.
        unsafe {
            ffi::MPI_Cancel(request);
            ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
        }
    }
}

/// Completes every request of `requests`: waits when `blocking`, else only tests,
/// returning whether they have all completed.
pub(crate) fn complete_all(requests: &mut [ffi::MPI_Request], blocking: bool) -> Result<bool> {
    injected_exchange_failure()?;
    let (n, all) = (count(requests.len())?, requests.as_mut_ptr());
    let mut done: c_int = 1;
    // SAFETY: the slice holds requests.len() valid (or null) requests.
    let code = unsafe {
        let statuses = ffi::RSMPI_STATUSES_IGNORE;
        match blocking {
            true => ffi::MPI_Waitall(n, all, statuses),
            false => ffi::MPI_Testall(n, all, &mut done, statuses),
        }
    };
    check(
        code,
        if blocking {
            "MPI_Waitall"
        } else {
            "MPI_Testall"
        },
    )?;
    Ok(done != 0)
}

/// The staging of `slots` bytes for `streams`. When every stream's messages are kept,
/// each slot is exactly as large as its largest scattered message, so the staging is
/// touched now and executions take no page faults; otherwise only its capacity is
/// reserved, and pages no message needs are never touched.
fn staging(streams: &[Stream], slots: usize, rank: usize) -> Result<Vec<u8>> {
    let mut staging = try_vec(slots, "the message staging", rank)?;
    if streams.iter().all(|s| s.cut.is_some()) {
        staging.resize(slots, 0);
    }
    Ok(staging)
}

/// Where each send's bytes start among the packed sends of an in-place execution
/// (peer after peer in the order of `plan.sends`), in that order.
fn packed_starts(plan: &RankPlan) -> Result<Vec<usize>> {
    let mut starts = try_vec(plan.sends.len(), "the packed send offsets", plan.rank)?;
    let mut at = 0;
    for t in &plan.sends {
        starts.push(at);
        at += t.elems as usize * plan.elem_size;
    }
    Ok(starts)
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

/// Copies the elements `plan` keeps, from the `kept` copies listed at plan creation
/// when there are. Through raw pointers: receives in flight write other parts of
/// `output`, so no reference may cover it.
///
/// # Safety
/// As [`Exchange::run`], out of place.
unsafe fn copy_local(
    plan: &RankPlan,
    kept: Option<&[KeptCopy]>,
    input: *const u8,
    output: *mut u8,
) {
    let copy = |c: &KeptCopy| {
        // SAFETY: every kept copy lies inside both buffers (planner invariant), which
        // do not overlap, and no message touches the bytes it writes.
        unsafe {
            std::ptr::copy_nonoverlapping(input.add(c.from.start), output.add(c.to), c.from.len())
        }
    };
    match kept {
        Some(kept) => kept.iter().for_each(copy),
        None => plan.kept_copies().for_each(|c| copy(&c)),
    }
}

/// The local copies of `plan`, or `None` when there are more than `budget`.
fn keep_copies(plan: &RankPlan, budget: usize) -> Result<Option<Vec<KeptCopy>>> {
    let mut kept = Vec::new();
    for copy in plan.kept_copies() {
        if kept.len() == budget {
            return Ok(None);
        }
        kept.try_reserve(1).map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot keep the local copies on rank {}",
                plan.rank
            ))
        })?;
        kept.push(copy);
    }
    Ok(Some(kept))
}

/// The mutable slice at `ptr` of `len` bytes; `ptr` may be null when `len` is 0.
///
/// # Safety
/// `ptr` must be writable for `len` bytes and not aliased.
unsafe fn slice_or_empty_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        &mut []
    } else {
        // SAFETY: as documented, ptr is writable for len bytes and not aliased.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}
