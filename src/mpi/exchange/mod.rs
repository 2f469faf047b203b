//! Executes one rank's plan: the local copy and the message streams, one per peer
//! and direction, in the order of the pure [`schedule`](crate::planning::schedule)
//! (pairwise windows on the exchange path, independent streams on the local path),
//! over a [`Transport`] (MPI in the library, an in-memory network in the tests).
//! Everything an execution needs (streams, requests, the streams' message slots) is
//! allocated once, when the plan is created, and reused by every execution, which
//! allocates nothing; except that an execution in place with everything sent packed
//! ([`Mode::InPlacePacked`]) is handed its pack buffer, which the plan allocates
//! for that execution.
//!
//! The messages are cut from joint runs (stretches contiguous in both buffers, which
//! may span many global runs), so a long one travels straight from the sender's
//! buffer into the receiver's: alone (on MPICH with at most two ranks per core,
//! [`crate::mpi::library`]), or with the runs as long that follow it back to back
//! in the sender's buffer and at one stride in the receiver's, which receives them
//! through a strided datatype (a pencil transpose: one message per peer), or, where
//! the MPI library's strided sends were measured to pay, back to back in the
//! receiver's buffer and at one stride in the sender's, which sends them through
//! one (bricks to pencils, a slab split change). Short ones are packed together: a
//! packed message that is scattered in the local buffer goes through the stream's
//! slot (packed before the send, unpacked after the receive). Measured
//! (docs/src/performance/analysis.md), a datatype on the sending side of long runs
//! pays on Open MPI 4.1, not on MPICH 4.0, where one
//! on the receiving side is fast only while both ends share a core and a message
//! per run is not slower; over short runs neither datatype beats a pack and a
//! contiguous message (`bench/datatypes.c`). Packed messages are capped so the
//! slots stay within the plan's budget
//! ([`PlanOptions::slot_bytes`](crate::PlanOptions::slot_bytes)) however large the
//! array.
//!
//! In place, when the plan has no in-place schedule for it
//! ([`crate::mpi::inplace_exchange`], which the plan runs instead), everything this
//! rank sends is first copied into the pack buffer (its only other extra memory:
//! exactly the bytes that leave), the kept elements are moved to their output
//! positions, and the receives then land in the buffer; on the local path the ranks
//! instead complete their sends before their receives, needing no extra memory.
//!
//! Where the ranks of a node read one another's memory, a stream of long runs
//! between two of them moves no message when every rank executes out of place:
//! the receiver reads the runs straight from the sender's input ([`direct`]).
//!
//! A rank whose input or output box is strided (halos, padding, an axis order)
//! packs and unpacks every message of that side through its slot, run by run
//! through the memory layer's copier, which joins a message's rows into blocked
//! copies; every rank of such a plan packs every message
//! ([`MessageLimits::all_packed`]). A strided output reads directly through a
//! bounce buffer; where some input is strided, only streams whose elements are
//! one box read directly, gathered by the sender's storage.
//!
//! A batch (k fields in separate buffers, [`Exchange::run_batch`]) cuts the
//! messages of one array: a message whose part of one field is shorter than
//! [`MessageLimits::field_message_bytes`] carries every field's part (through
//! one datatype over the fields' buffers, or back to back in the slot), a
//! longer one travels as one message per field, since MPICH moves a contiguous
//! message in one copy but packs a datatype spanning several buffers; direct
//! streams are read field by field.
//!
//! The jobs, a module each: [`stream`] (one peer and direction), [`progress`] (the
//! progress loops), [`direct`] (the direct reads) and [`local`] (the local
//! copies, the slots and the pack buffer).

mod direct;
mod fused;
mod local;
mod progress;
mod stream;

use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use self::direct::DirectReads;
pub use self::direct::ReadPeers;
#[cfg(feature = "testing")]
pub use self::fused::FRAMED_BYTES;
pub use self::fused::{FusedExchange, FusedPlan, FusedRun, FusedRuns};
use self::local::{
    LocalCopies, in_place_buffer, kept_send_order, pack_in_place, packed_starts, slots,
};
use self::progress::{Active, Fields, Messaging, Sides};
use self::stream::{Memory, Stream};
use crate::core::error::Result;
use crate::core::fallible::try_vec;
use crate::distribution::storage::{Storage, Storages};
use crate::mpi::transport::{Channel, Transport};
use crate::planning::messages::MessageLimits;
use crate::planning::planner::RankPlan;
use crate::planning::schedule::{Progress, Side, schedule};

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

/// How one execution uses its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Separate input and output buffers.
    OutOfPlace,
    /// Separate input and output buffers on every rank (agreed): the streams
    /// between ranks that read each other's memory move by direct reads.
    AllOutOfPlace,
    /// One buffer, any plan: everything this rank sends is first copied into the
    /// pack buffer (extra memory: exactly those bytes), the kept elements move, then
    /// all messages flow.
    InPlacePacked,
    /// One buffer, for plans where rows flow one way between any two ranks and the
    /// flows form no cycle (the split-preserving balance: slabs stay in rank order):
    /// every rank first completes its sends straight from the buffer, then moves its
    /// kept elements, then receives into the freed places. No extra memory; a rank
    /// waits only for ranks further along the direction it sends in, so no cycle of
    /// waits can form. Needs [`Progress::Independent`].
    InPlaceOrdered,
}

/// The streams of one rank that move by direct reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectStreams {
    /// How many (each end of a stream counts on its rank).
    pub count: usize,
    /// How many of them this rank reads (the others it is read in).
    pub reads: usize,
    /// The bytes this rank reads in them, of one field.
    pub bytes_read: u64,
}

impl DirectStreams {
    /// The bytes of control messages this rank receives in an execution of
    /// `fields` fields: an announcement of 8 bytes per field for each stream it
    /// reads, an acknowledgement of 8 bytes for each stream it is read in.
    #[cfg(feature = "testing")]
    pub fn control_bytes_received(&self, fields: usize) -> u64 {
        let announced = (self.reads * fields) as u64;
        8 * (announced + (self.count - self.reads) as u64)
    }
}

/// This rank's plan and the transport to the other ranks, whose plans are of the
/// same reshape: what an execution runs on.
#[derive(Debug)]
pub struct Participant<'a, T> {
    /// This rank's plan.
    pub plan: &'a RankPlan,
    /// The messaging between the plan's ranks.
    pub transport: &'a T,
}

impl<T> Clone for Participant<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Participant<'_, T> {}

/// Everything one rank needs to execute its plan, allocated when the plan is created
/// (so an allocation failure is agreed there) and reused by every execution. An
/// execution in flight must be abandoned ([`Exchange::abandon`]) before the exchange
/// is dropped (the plan's drop does so): the transport may still use its memory.
pub struct Exchange<T: Transport> {
    /// The streams, their requests and slots.
    messaging: Messaging<T>,
    /// The local copies, listed once when they fit the plan's budget.
    kept: LocalCopies,
    /// The send streams in the order of the packed sends, when they all kept
    /// their messages (an execution in place packs through them).
    send_order: Option<Vec<usize>>,
    /// Executions started so far, by either engine: the same count on every rank,
    /// which gives every execution its tag ([`Transport::tag`]).
    executions: u64,
    /// The streams that move by direct reads when every rank is out of place.
    direct: DirectReads<T>,
    /// The execution in flight, between [`Exchange::begin`] and its completion.
    active: Option<Active>,
    /// The buffers of the execution in flight (or the last one).
    fields: Fields,
}

impl<T: Transport> std::fmt::Debug for Exchange<T> {
    /// A summary: the lists an exchange keeps can hold millions of entries.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("progress", &self.messaging.progress)
            .field("per_round", &self.messaging.per_round)
            .field("streams", &self.messaging.streams.len())
            .field("kept_copies", &self.kept.listed())
            .field("slot_bytes", &self.messaging.slots.capacity())
            .field("direct_streams", &self.direct.len())
            .finish_non_exhaustive()
    }
}

// SAFETY: the request handles are null between executions, and an execution uses
// them and the buffers of `active` from one thread at a time (the plan holds the
// exchange in a mutex, and checks that MPI's thread level allows the thread).
unsafe impl<T: Transport> Send for Exchange<T> {}

impl<T: Transport> Exchange<T> {
    /// Allocates the streams of `plan` (one rank of `nranks`), driven by `progress`,
    /// with messages cut within `limits`, `per_round` per stream and round. The local
    /// copies, then the streams' messages in schedule order, are listed once and kept
    /// for every execution until `keep_budget` entries are spent. Streams of long
    /// runs with the peers this rank reads directly (`peers`) move by direct
    /// reads when every rank executes out of place; where some rank's input is
    /// strided, `peers` holds every rank's input storage. `storages` place this
    /// rank's boxes in its buffers: when either is strided, its side packs and
    /// unpacks every message through the slots, which `limits` must allow on
    /// every rank ([`MessageLimits::all_packed`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new<F: Fn(usize) -> bool>(
        plan: &RankPlan,
        nranks: usize,
        limits: MessageLimits,
        per_round: usize,
        progress: Progress,
        keep_budget: usize,
        peers: ReadPeers<'_, F>,
        storages: Storages,
    ) -> Result<Exchange<T>> {
        let specs = schedule(plan, nranks, progress)?;
        let mut streams = try_vec(specs.len(), "the message streams", plan.rank)?;
        let strided = (!storages.are_dense()).then_some(storages);
        let kept = LocalCopies::new(plan, keep_budget, strided.clone())?;
        let mut budget = keep_budget - kept.listed().unwrap_or(keep_budget);
        let packed_starts = packed_starts(plan)?;
        let mut slot_bytes = 0;
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
            let side_strided = strided.as_ref().is_some_and(|s| match stream.spec.side {
                Side::Send => !s.input.is_dense(),
                Side::Receive => !s.output.is_dense(),
            });
            stream.place_slot(slot_bytes, limits, side_strided);
            slot_bytes = stream.slot.end;
            streams.push(stream);
        }
        let slots = slots(&streams, slot_bytes, plan.rank)?;
        let send_order = kept_send_order(plan, &streams)?;
        let output = strided.as_ref().map_or_else(
            || Storage::dense(&plan.layouts.output().rank_box(plan.rank).extents),
            |s| s.output.clone(),
        );
        let direct = DirectReads::new(plan, &mut streams, limits, peers, &output)?;
        let count = streams.len() * per_round;
        let mut requests = try_vec(count, "the message requests", plan.rank)?;
        requests.resize(count, T::null_request());
        let mut completed = try_vec(count, "the completed requests", plan.rank)?;
        completed.resize(count, 0);
        Ok(Exchange {
            messaging: Messaging {
                progress,
                per_round,
                streams,
                requests,
                completed,
                slots,
                slot_fields: 1,
                limits,
                strided,
                elem_size: plan.elem_size,
            },
            kept,
            send_order,
            executions: 0,
            direct,
            active: None,
            fields: Fields::new(plan.rank)?,
        })
    }

    /// Runs the local copy and every message of `on.plan` (collective over the
    /// transport) to completion. In [`Mode::InPlacePacked`], `packed` (the pack
    /// buffer, otherwise unused) must have room for every byte this rank sends.
    ///
    /// # Safety
    /// `input` must be readable for the plan's input size and `output` writable for
    /// its output size. Out of place they must not overlap; in place they must be
    /// equal and the buffer hold the larger of both sizes. Every rank of the
    /// transport must run its own plan of the same reshape. Ranks may run in different modes (in
    /// place is each rank's own choice): they post the same messages in the same
    /// rounds, and only [`Mode::InPlaceOrdered`] waits before posting its receives,
    /// and only for ranks it sends to, which never form a cycle.
    pub unsafe fn run(
        &mut self,
        on: Participant<'_, T>,
        mode: Mode,
        packed: Vec<u8>,
        input: *const u8,
        output: *mut u8,
    ) -> Result<()> {
        let plan = on.plan;
        let buffers = FieldBuffers {
            inputs: &[input],
            outputs: &[output],
        };
        if mode != Mode::InPlaceOrdered {
            // SAFETY: forwarded from the caller.
            unsafe { self.start(on, mode, packed, buffers) }?;
            return self.advance(on, true).map(drop);
        }
        self.prepare_fields(1, plan.rank)?;
        self.next_execution(mode);
        self.fields.set(buffers.inputs, buffers.outputs);
        let sides = |exchange: &mut Self, sides: Sides| {
            exchange.active = Some(Active::new(false, Vec::new(), sides));
            exchange.advance(on, true)
        };
        sides(self, Sides::Sends)?;
        // SAFETY: every send has completed, so the buffer is ours (caller's contract).
        let buffer = unsafe { in_place_buffer(plan, output) };
        self.kept.move_in_place(plan, buffer);
        sides(self, Sides::Receives).map(drop)
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
        on: Participant<'_, T>,
        mode: Mode,
        packed: Vec<u8>,
        input: *const u8,
        output: *mut u8,
    ) -> Result<bool> {
        if mode == Mode::InPlaceOrdered {
            // SAFETY: forwarded from the caller.
            return unsafe { self.run(on, mode, packed, input, output) }.map(|()| true);
        }
        let buffers = FieldBuffers {
            inputs: &[input],
            outputs: &[output],
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.start(on, mode, packed, buffers) }?;
        self.advance(on, false)
    }

    /// Makes room for executions of `fields` fields (a batch; 1 for one array):
    /// the fields' buffers, the slots their packed messages need, within the
    /// plan's slot budget, and the direct reads' announcements. Allocates only for a batch of more fields, or larger
    /// slots, than any before, and keeps it; fails, changing nothing, when that
    /// allocation fails. Executions call it themselves; calling it first lets a
    /// failure be agreed before any message moves.
    pub fn prepare_fields(&mut self, fields: usize, rank: usize) -> Result<()> {
        self.fields.reserve(fields, rank)?;
        self.direct.reserve(fields, rank)?;
        self.messaging.place_slots(fields, rank)
    }

    /// Runs a batch out of place to completion, as [`Exchange::run`] runs one
    /// array: the same messages (at most as many per peer as one array's, each
    /// carrying every field's part, cut within the caps shrunk by the fields:
    /// [`MessageLimits::per_field`]; those whose part of one field reaches
    /// [`MessageLimits::field_message_bytes`] one message per field), the kept
    /// elements copied field by field. `mode` is [`Mode::OutOfPlace`] or
    /// [`Mode::AllOutOfPlace`] (the direct streams then read every field).
    ///
    /// # Safety
    /// As [`Exchange::run`] out of place, for every field's input and output; no
    /// two of the buffers overlap. Every rank runs a batch of as many fields.
    pub unsafe fn run_batch(
        &mut self,
        on: Participant<'_, T>,
        mode: Mode,
        buffers: FieldBuffers<'_>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.start(on, mode, Vec::new(), buffers) }?;
        self.advance(on, true).map(drop)
    }

    /// Starts a batch out of place as [`Exchange::begin`] starts one array's
    /// execution (see [`Exchange::run_batch`]); returns whether it completed.
    ///
    /// # Safety
    /// As [`Exchange::run_batch`], and the buffers must stay valid until the
    /// execution completes or fails.
    pub unsafe fn begin_batch(
        &mut self,
        on: Participant<'_, T>,
        mode: Mode,
        buffers: FieldBuffers<'_>,
    ) -> Result<bool> {
        // SAFETY: forwarded from the caller.
        unsafe { self.start(on, mode, Vec::new(), buffers) }?;
        self.advance(on, false)
    }

    /// Starts a batch out of place as [`Exchange::begin_batch`] does, except
    /// that the streams `framed` (indices among this exchange's streams) post
    /// nothing (a fused execution moves them in its frames,
    /// [`FusedExchange`]), and that it returns once the first round is posted,
    /// without testing for its completion (the fused execution waits in each
    /// plan in turn). Returns whether it completed.
    ///
    /// # Safety
    /// As [`Exchange::begin_batch`].
    pub(super) unsafe fn begin_fused(
        &mut self,
        on: Participant<'_, T>,
        mode: Mode,
        buffers: FieldBuffers<'_>,
        framed: &[usize],
    ) -> Result<bool> {
        // SAFETY: forwarded from the caller.
        unsafe { self.start(on, mode, Vec::new(), buffers) }?;
        for &stream in framed {
            self.messaging.streams[stream].done = true;
        }
        if let Some(active) = &mut self.active {
            active.posting_only = true;
        }
        self.advance(on, false)
    }

    /// The fields' buffers at `bases` as this exchange's streams of `side`
    /// see them (with the side's storage when it is strided).
    fn memory<'a>(&'a self, bases: &'a [*mut u8], side: Side) -> Memory<'a> {
        let m = &self.messaging;
        progress::memory(&m.strided, m.elem_size, bases, side)
    }

    /// How many streams move by direct reads when every rank is out of place, and
    /// how many bytes this rank then reads.
    pub fn direct_streams(&self) -> DirectStreams {
        DirectStreams {
            count: self.direct.len(),
            reads: self.direct.receives(),
            bytes_read: self.direct.bytes_read(),
        }
    }

    /// True while an execution started by [`Exchange::begin`] is unfinished.
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }

    /// Sets up an execution of every message in `mode`, of one field or (out of
    /// place) a batch's.
    ///
    /// # Safety
    /// As [`Exchange::begin`], or [`Exchange::begin_batch`].
    unsafe fn start(
        &mut self,
        on: Participant<'_, T>,
        mode: Mode,
        mut packed: Vec<u8>,
        buffers: FieldBuffers<'_>,
    ) -> Result<()> {
        let fields = buffers.outputs.len();
        self.prepare_fields(fields, on.plan.rank)?;
        self.next_execution(mode);
        let out_of_place = matches!(mode, Mode::OutOfPlace | Mode::AllOutOfPlace);
        match out_of_place {
            true => self.fields.set(buffers.inputs, buffers.outputs),
            // SAFETY: forwarded from the caller.
            false => unsafe {
                let (streams, order) = (&self.messaging.streams, self.send_order.as_deref());
                let output = buffers.outputs[0];
                let sends = pack_in_place(on.plan, streams, order, &self.kept, &mut packed, output);
                self.fields.set(&[sends], buffers.outputs);
            },
        }
        let mut active = Active::new(out_of_place, packed, Sides::All);
        if mode == Mode::AllOutOfPlace && self.direct.len() > 0 {
            // SAFETY: the input stays unchanged until the execution completes
            // (caller's contract).
            let direct = unsafe {
                self.direct
                    .start(on.transport, self.executions, buffers.inputs)
            };
            active.direct = direct.inspect_err(|_| self.direct.abandon(on.transport))?;
        }
        self.active = Some(active);
        Ok(())
    }

    /// Counts the execution and rewinds every stream for the fields placed.
    fn next_execution(&mut self, mode: Mode) {
        self.executions += 1;
        let (fields, limits) = (self.messaging.slot_fields, self.messaging.limits);
        self.messaging
            .streams
            .iter_mut()
            .for_each(|s| s.reset(mode, fields, limits));
    }

    /// The tag of the current execution's messages.
    fn tag(&self, transport: &T) -> c_int {
        transport.tag(self.executions)
    }

    /// Counts an execution that the in-place schedule runs instead, and returns its
    /// tag: every execution takes the plan's next tag, whichever engine runs it.
    pub fn take_tag(&mut self, transport: &T) -> c_int {
        self.executions += 1;
        self.tag(transport)
    }

    /// Copies the elements this rank keeps from `input` to `output`, for an
    /// execution out of place that the in-place schedule ran.
    ///
    /// # Safety
    /// As [`Exchange::run`] out of place, with every message completed.
    pub unsafe fn copy_kept(&mut self, plan: &RankPlan, input: *const u8, output: *mut u8) {
        // SAFETY: forwarded from the caller.
        unsafe { self.kept.copy(plan, input, output) };
    }

    /// Carries the active execution on as the schedule says: until it completes
    /// when `blocking`, else as far as it goes without waiting. Returns whether it
    /// completed (no execution active counts as completed). On failure every
    /// message in flight is cancelled and completed before returning; so it is
    /// on a panic, which then carries on unwinding: whoever catches it (the C
    /// ABI's boundary) finds the exchange idle, ready for the next execution.
    pub fn advance(&mut self, on: Participant<'_, T>, blocking: bool) -> Result<bool> {
        let Some(mut active) = self.active.take() else {
            return Ok(true);
        };
        // Unwind safe: on a panic the exchange is made idle (abandoned) before
        // the panic carries on, so nothing half done is seen again.
        let driven = catch_unwind(AssertUnwindSafe(|| self.drive(on, &mut active, blocking)));
        let result = driven.unwrap_or_else(|panic| {
            self.abandon(on.transport);
            resume_unwind(panic)
        });
        match result {
            Ok(false) => self.active = Some(active),
            Ok(true) => {}
            Err(_) => self.abandon(on.transport),
        }
        result
    }

    /// Carries `active` on: with direct reads, the local copy (which waits for no
    /// one) and the reads as their announcements arrive; the messages; then the
    /// acknowledgements of the reads. Returns whether it completed.
    fn drive(
        &mut self,
        on: Participant<'_, T>,
        active: &mut Active,
        blocking: bool,
    ) -> Result<bool> {
        let (plan, transport) = (on.plan, on.transport);
        let read = match active.direct.active {
            // SAFETY: the buffers of `active` are valid until it completes
            // (contract of begin / run).
            true => unsafe {
                copy_kept_once(&mut self.kept, plan, (active, &self.fields));
                let storage = self.messaging.strided.as_ref().map(|s| &s.output);
                let output = Memory {
                    bases: &self.fields.output,
                    strided: storage.filter(|s| !s.is_dense()),
                    elem_size: plan.elem_size,
                };
                let (execution, direct) = (self.executions, &mut active.direct);
                self.direct
                    .serve(transport, execution, direct, output, blocking)
            }?,
            false => true,
        };
        let moved = self.move_messages(on, active, blocking)?;
        if !(read && moved && active.direct.active) {
            return Ok(read && moved);
        }
        self.direct.finish(transport, &mut active.direct, blocking)
    }

    /// Carries the messages of `active` on, with the local copy; returns whether
    /// they completed.
    fn move_messages(
        &mut self,
        on: Participant<'_, T>,
        active: &mut Active,
        blocking: bool,
    ) -> Result<bool> {
        let channel = Channel {
            transport: on.transport,
            tag: self.tag(on.transport),
        };
        let (kept, plan, fields) = (&mut self.kept, on.plan, &self.fields);
        // SAFETY: the buffers of `active` are valid until it completes (contract
        // of begin / run).
        let mut copy_once =
            |active: &mut Active| unsafe { copy_kept_once(kept, plan, (active, fields)) };
        let copy_once: &mut dyn FnMut(&mut Active) = &mut copy_once;
        let messaging = &mut self.messaging;
        // SAFETY: as above.
        let result = unsafe {
            match messaging.progress {
                Progress::Pairwise { .. } => {
                    messaging.pairwise(channel, (active, fields), blocking, copy_once)
                }
                Progress::Independent => {
                    messaging.independent(channel, (active, fields), blocking, copy_once)
                }
            }
        };
        if matches!(result, Ok(true)) {
            copy_once(active);
        }
        result
    }

    /// Cancels every message still in flight and completes it (after a failure
    /// mid-exchange, or before the exchange is dropped), so that no buffer is
    /// released while the transport may still use it.
    pub fn abandon(&mut self, transport: &T) {
        self.messaging.abandon(transport);
        self.direct.abandon(transport);
        self.active = None;
    }
}

/// Copies the elements `plan` keeps from every field's input into its output
/// (`fields`, the buffers of `active`), unless that is done (only out of place
/// has a local copy to make).
///
/// # Safety
/// The buffers of `active` valid.
unsafe fn copy_kept_once(
    kept: &mut LocalCopies,
    plan: &RankPlan,
    (active, fields): (&mut Active, &Fields),
) {
    if std::mem::take(&mut active.copy_pending) {
        for (&input, &output) in fields.send.iter().zip(&fields.output) {
            // SAFETY: forwarded from the caller.
            unsafe { kept.copy(plan, input, output) };
        }
    }
}

/// The buffers of one execution's fields, as raw pointers: field `i` reads
/// `inputs[i]` and writes `outputs[i]` (one each for one array).
#[derive(Clone, Copy, Debug)]
pub struct FieldBuffers<'a> {
    /// Each field's input.
    pub inputs: &'a [*const u8],
    /// Each field's output, as many.
    pub outputs: &'a [*mut u8],
}

impl<'a> FieldBuffers<'a> {
    /// The inputs as the bases a stream's memory takes (which it only reads
    /// from on the sending side).
    fn inputs_as_bases(&self) -> &'a [*mut u8] {
        // SAFETY: `*const u8` and `*mut u8` have one layout; the pointers are
        // only read through (the sends gather from them).
        unsafe { std::slice::from_raw_parts(self.inputs.as_ptr().cast(), self.inputs.len()) }
    }
}
