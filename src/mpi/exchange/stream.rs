//! One message stream of the exchange: one direction of the traffic with one peer,
//! its messages (kept from plan creation or cut on the fly), its slot of the
//! slots for packed messages, and posting them round by round.

use std::ops::Range;

use super::Mode;
use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;
use crate::distribution::storage::Storage;
use crate::memory::Host;
use crate::memory::strided::{Copier, Direction, RunAt};
use crate::mpi::transport::{BlockShape, Bytes, Channel, Envelope, FieldBytes, Transport};
use crate::planning::messages::{
    CutMessages, MessageCutter, MessageKind, MessageLimits, Messages, Placement, Segment,
};
use crate::planning::planner::RankPlan;
use crate::planning::schedule::{ScheduledStream, Side};

/// One direction of the traffic with one peer.
pub(super) struct Stream {
    pub(super) spec: ScheduledStream,
    /// The stream's bytes, of one field.
    bytes: usize,
    /// The messages cut once when the plan was created, if they fit its budget.
    pub(super) cut: Option<CutMessages>,
    /// Bytes of the largest message of `cut` (0 when none was kept): a batch
    /// replays `cut` when its fields' parts of it fit one message.
    pub(super) largest: usize,
    /// Bytes of the largest packed message of `cut`, scattered or not (0 when
    /// none was kept): a batch packs every field's part of one through the
    /// slot.
    largest_packed: usize,
    /// How many messages of `cut` this execution has posted.
    pub(super) replayed: usize,
    /// Where the next message of `cut` starts in the pack buffer, when this
    /// execution replays the sends from there ([`Mode::InPlacePacked`]).
    pub(super) replayed_packed: Option<usize>,
    /// Cuts the messages during an execution that does not replay them from `cut`
    /// (none were kept, or a batch's parts of them do not fit one message): made
    /// when the plan is created, rewound by every execution, so executions
    /// allocate nothing.
    pub(super) cutter: Option<MessageCutter>,
    /// True when this execution replays `cut`.
    pub(super) replaying: bool,
    /// The message being cut, as segments of the local buffer.
    pub(super) segments: Vec<Segment>,
    /// This stream's slot of the slots, for the current execution's fields.
    pub(super) slot: Range<usize>,
    /// The slot's length for one field: as large as the largest scattered message
    /// when the messages are kept, else as large as a packed message can be.
    pub(super) field_slot: usize,
    /// Where this stream's bytes start in the pack buffer of an in-place execution
    /// (sends only).
    pub(super) packed_at: usize,
    /// True while a received packed message waits in the slot to be unpacked.
    pub(super) unpack_pending: bool,
    /// True once every message has been posted.
    pub(super) done: bool,
    /// True when the stream moves by direct reads in executions where every rank
    /// is out of place ([`super::direct`]).
    pub(super) direct: bool,
    /// Messages of the current round not yet completed.
    pub(super) pending: usize,
}

impl Stream {
    pub(super) fn new(
        spec: ScheduledStream,
        plan: &RankPlan,
        limits: MessageLimits,
        packed_at: usize,
    ) -> Result<Stream> {
        let elems = usize::try_from(spec.elems).unwrap_or(usize::MAX);
        Ok(Stream {
            spec,
            bytes: elems.saturating_mul(plan.elem_size),
            cut: None,
            largest: 0,
            largest_packed: 0,
            replayed: 0,
            replayed_packed: None,
            cutter: None,
            replaying: false,
            segments: try_vec(
                limits.max_runs.min(elems),
                "the message segments",
                plan.rank,
            )?,
            slot: 0..0,
            field_slot: 0,
            packed_at,
            unpack_pending: false,
            done: false,
            direct: false,
            pending: 0,
        })
    }

    /// Cuts every message now, to replay them in every execution, unless they hold
    /// more than `budget` segments; returns the segments kept.
    pub(super) fn keep_messages(
        &mut self,
        plan: &RankPlan,
        limits: MessageLimits,
        budget: usize,
    ) -> Result<usize> {
        let cutter = || stream_cutter(plan, self.spec, limits);
        self.cut = CutMessages::cut(cutter(), budget, &mut self.segments).map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot keep the cut messages on rank {}",
                plan.rank
            ))
        })?;
        self.largest = self
            .cut
            .as_ref()
            .map_or(0, CutMessages::largest_message_bytes);
        self.largest_packed = (self.cut.as_ref()).map_or(0, |cut| cut.largest_packed_bytes(true));
        // Any stream is cut again by a batch whose parts of its messages do not
        // fit one.
        self.cutter = Some(cutter());
        Ok(self.cut.as_ref().map_or(0, CutMessages::segment_count))
    }

    /// Sizes this stream's slot for one field and places it at `start`: as large
    /// as its largest scattered message (its largest packed one when its side is
    /// `strided`, which packs them all) when its messages are kept, otherwise as
    /// large as a packed message can be.
    pub(super) fn place_slot(&mut self, start: usize, limits: MessageLimits, strided: bool) {
        self.field_slot = match &self.cut {
            Some(cut) => cut.largest_packed_bytes(strided),
            None => limits.packed_bytes.min(self.bytes),
        };
        self.slot = start..start + self.field_slot;
    }

    /// True when an execution of `fields` fields replays the kept messages: one
    /// field, or every kept message's parts of `fields` fields fit one packed
    /// message ([`MessageLimits::per_field`] then cuts the same messages, so the
    /// other end, kept or not, sends or receives the same).
    fn replays(&self, fields: usize, limits: MessageLimits) -> bool {
        let fit = self.largest.saturating_mul(fields) <= limits.packed_bytes;
        self.cut.is_some() && (fields == 1 || fit)
    }

    /// The bytes of this stream's slot in an execution of `fields` fields (of
    /// `elem_size` bytes each): the fields' parts of its largest scattered
    /// message, for a batch of its largest packed one (a batch packs its
    /// fields' parts of a short message through the slot even where one
    /// field's part is one segment); when its messages are cut anew, a packed
    /// message (whose parts hold one element at least), within the stream's
    /// bytes.
    pub(super) fn slot_bytes(
        &self,
        fields: usize,
        limits: MessageLimits,
        elem_size: usize,
    ) -> usize {
        match self.replays(fields, limits) {
            true if fields == 1 => self.field_slot,
            true => self.field_slot.max(self.largest_packed) * fields,
            false => {
                (limits.packed_bytes.max(fields * elem_size)).min(self.bytes.saturating_mul(fields))
            }
        }
    }

    /// Rewinds the stream for an execution in `mode` of `fields` fields: the kept
    /// messages are replayed (sends read from the pack buffer of an in-place
    /// execution placed back to back there), except by a batch whose parts of them
    /// do not fit one message (cut anew within [`MessageLimits::per_field`]); a
    /// direct stream posts none when every rank is out of place.
    pub(super) fn reset(&mut self, mode: Mode, fields: usize, limits: MessageLimits) {
        let placement = match (self.spec.side, mode) {
            (Side::Receive, _) => Placement::Target,
            (Side::Send, Mode::InPlacePacked) => Placement::Packed {
                next: self.packed_at,
            },
            (Side::Send, _) => Placement::Source,
        };
        self.replaying = self.replays(fields, limits);
        if let (false, Some(cutter)) = (self.replaying, &mut self.cutter) {
            cutter.recut(placement, limits.per_field(fields));
        }
        self.replayed = 0;
        self.replayed_packed = match placement {
            Placement::Packed { next } => Some(next),
            _ => None,
        };
        self.unpack_pending = false;
        self.done = self.direct && mode == Mode::AllOutOfPlace;
        self.pending = 0;
    }

    /// Posts this stream's next round into `requests` (at most `requests.len()`
    /// requests: one per message, or one per field for a batch's messages that
    /// travel apart, [`FieldMessages`]); marks the stream done when nothing is
    /// left.
    ///
    /// # Safety
    /// The messages must lie inside `buffer`, this stream's slot inside `slots`.
    pub(super) unsafe fn post_round<T: Transport>(
        &mut self,
        channel: Channel<'_, T>,
        (memory, apart): (Memory<'_>, FieldMessages),
        slots: *mut u8,
        requests: &mut [T::Request],
    ) -> Result<()> {
        let side = self.spec.side;
        let per_round = requests.len() / apart.requests_per_message(memory.bases.len());
        let (transport, envelope) = (channel.transport, channel.envelope(side, self.spec.peer));
        // SAFETY: the slot lies inside the slots' capacity.
        let (slot, slot_len) = (unsafe { slots.add(self.slot.start) }, self.slot.len());
        let (mut posted, mut unpack) = (0, false);
        let mut post_one = |kind: MessageKind, segments: &[Segment]| {
            let message = Message {
                kind,
                segments,
                memory,
                slot,
                slot_len,
            };
            let requests = &mut requests[posted..];
            // SAFETY: forwarded from the caller.
            let started = unsafe { post(transport, envelope, (message, apart), requests) }?;
            posted += started.requests;
            unpack |= started.packed && side == Side::Receive;
            Ok(())
        };
        let segments = &mut self.segments;
        let cut = match (self.replaying, &mut self.cutter, &self.cut) {
            (true, _, Some(cut)) => {
                let mut replay = match self.replayed_packed {
                    Some(at) => cut.replay_packed(self.replayed, at),
                    None => cut.replay(self.replayed),
                };
                let round = replay.next_round(segments, per_round, &mut post_one);
                self.replayed = replay.position();
                self.replayed_packed = replay.packed_position();
                round
            }
            (false, Some(cutter), _) => cutter.next_round(segments, per_round, &mut post_one),
            _ => Ok(0),
        };
        self.pending = posted;
        self.unpack_pending = unpack;
        self.done = matches!(cut, Ok(0));
        cut.map(drop)
    }

    /// True when every message of this execution has been posted.
    pub(super) fn is_exhausted(&mut self) -> bool {
        match (self.replaying, &mut self.cutter, &self.cut) {
            (true, _, Some(cut)) => cut.replay(self.replayed).is_exhausted(),
            (false, Some(cutter), _) => cutter.is_exhausted(),
            _ => true,
        }
    }

    /// Appends the bytes this send stream moves to `packed`, read from `input`
    /// through its kept messages (in the order [`Mode::InPlacePacked`] reads
    /// them); nothing when it kept none.
    pub(super) fn pack_kept(&self, input: &[u8], packed: &mut Vec<u8>) {
        for s in self.cut.iter().flat_map(CutMessages::segments) {
            packed.extend_from_slice(&input[s.offset..s.offset + s.len]);
        }
    }

    /// Unpacks a received packed message once its round has completed (the packed
    /// message is always the last of its round, so `segments` still describes it).
    ///
    /// # Safety
    /// The segments must lie inside the output `memory`.
    pub(super) unsafe fn unpack(&mut self, memory: Memory<'_>, slots: *const u8) {
        if !std::mem::take(&mut self.unpack_pending) {
            return;
        }
        // SAFETY: the slot, written by the receive, is separate memory.
        let slot = unsafe { slots.add(self.slot.start) }.cast_mut();
        // SAFETY: forwarded from the caller.
        unsafe { memory.transfer(&self.segments, slot, Direction::Scatter) };
    }
}

/// The message cutter of `spec`: sends placed by the input region, receives by the
/// output region (rewinding it changes the placement for other modes).
pub(super) fn stream_cutter(
    plan: &RankPlan,
    spec: ScheduledStream,
    limits: MessageLimits,
) -> MessageCutter {
    let (runs, placement) = match spec.side {
        Side::Receive => (plan.recv_runs(spec.peer), Placement::Target),
        Side::Send => (plan.send_runs(spec.peer), Placement::Source),
    };
    MessageCutter::new(runs, placement, plan.elem_size, limits)
}

/// The local buffers of an execution's fields as a stream sees them (one for
/// a single array, `k` for a batch, each with the plan's box): where each
/// starts and, when the box is not stored in C order without gaps, its storage
/// (its segments are then runs of the box in C order, packed and unpacked
/// through the slot). A message carries the same segments of every field.
#[derive(Clone, Copy, Debug)]
pub(super) struct Memory<'a> {
    /// The fields' buffers (each at the box's first element).
    pub(super) bases: &'a [*mut u8],
    /// The box's storage when it is strided.
    pub(super) strided: Option<&'a Storage>,
    /// Bytes per element.
    pub(super) elem_size: usize,
}

impl Memory<'_> {
    /// Moves `segments` of every field to or from `packed`, back to back (the
    /// first field's, then the second's, ...), as `direction` says.
    ///
    /// # Safety
    /// The segments must lie inside every field's buffer (as runs of its box when
    /// strided), and `packed` must hold their total length times the fields
    /// without overlapping them.
    pub(super) unsafe fn transfer(
        &self,
        segments: &[Segment],
        packed: *mut u8,
        direction: Direction,
    ) {
        let len: usize = segments.iter().map(|s| s.len).sum();
        for (i, &base) in self.bases.iter().enumerate() {
            // SAFETY: as documented: field `i`'s part lies `i * len` bytes in.
            unsafe { self.transfer_field(base, segments, packed.add(i * len), direction) };
        }
    }

    /// Moves `segments` of the field at `base` to or from `packed`, back to back.
    ///
    /// # Safety
    /// As [`Memory::transfer`], for the one field.
    unsafe fn transfer_field(
        &self,
        base: *mut u8,
        segments: &[Segment],
        packed: *mut u8,
        direction: Direction,
    ) {
        let size = self.elem_size;
        let Some(storage) = self.strided else {
            let mut at = 0;
            for s in segments {
                // SAFETY: as documented.
                unsafe {
                    let (stored, bytes) = (base.add(s.offset), packed.add(at));
                    match direction {
                        Direction::Gather => std::ptr::copy_nonoverlapping(stored, bytes, s.len),
                        Direction::Scatter => std::ptr::copy_nonoverlapping(bytes, stored, s.len),
                    }
                }
                at += s.len;
            }
            return;
        };
        let (src, dst) = match direction {
            Direction::Gather => (base.cast_const(), packed),
            Direction::Scatter => (packed.cast_const(), base),
        };
        let mut copier = Copier::new(&Host, size, src, dst);
        let mut at = 0;
        for s in segments {
            let run = RunAt {
                start: (s.offset / size) as u64,
                len: (s.len / size) as u64,
            };
            // SAFETY: as documented.
            unsafe { copier.run(storage, run, at / size, direction) };
            at += s.len;
        }
        // SAFETY: as documented.
        unsafe { copier.finish() };
    }
}

/// One message of a round, as segments of the local buffers.
struct Message<'a> {
    kind: MessageKind,
    segments: &'a [Segment],
    memory: Memory<'a>,
    /// The stream's slot, for a packed message scattered in the buffers (or
    /// a batch's short packed message).
    slot: *mut u8,
    /// The slot's bytes.
    slot_len: usize,
}

impl Message<'_> {
    /// True when this message of several fields, `field_len` bytes of each,
    /// travelling as one message (not `apart`), is packed through the slot
    /// where one field's part is one segment: a packed message (the last of
    /// its round, so the slot is free until it completes) whose fields' parts
    /// fit the slot. A contiguous message then leaves instead of one datatype
    /// over the fields' buffers, made and freed for every message.
    fn packs_fields(&self, apart: bool, field_len: usize) -> bool {
        let fields = self.memory.bases.len();
        let fits = field_len.saturating_mul(fields) <= self.slot_len;
        fields > 1 && !apart && self.kind == MessageKind::Packed && fits
    }

    /// Its bytes in each field's buffer, from the buffer's start: one segment,
    /// or (direct) segments of one length at one stride; `None` for a packed
    /// message over several segments, or any message of a strided buffer.
    fn in_buffer(&self) -> Option<(usize, BlockShape)> {
        if self.memory.strided.is_some() {
            return None;
        }
        let first = self.segments.first()?;
        match self.segments {
            [_] => Some((first.offset, BlockShape::contiguous(first.len))),
            [_, second, ..] if self.kind == MessageKind::Direct => Some((
                first.offset,
                BlockShape {
                    block: first.len,
                    blocks: self.segments.len(),
                    stride: second.offset - first.offset,
                },
            )),
            _ => None,
        }
    }
}

/// From how many bytes of one field's part a batch's message travels as one
/// message per field ([`MessageLimits::field_message_bytes`]; `usize::MAX`:
/// never): the same at both ends of a stream, so that they post the same
/// messages in the same rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FieldMessages {
    pub(super) from_bytes: usize,
}

impl FieldMessages {
    /// Apart from [`MessageLimits::field_message_bytes`] in an execution of
    /// `fields` fields with `per_round` requests per stream and round; never
    /// for one field, nor when a round has no room for one message per field.
    pub(super) fn new(limits: MessageLimits, fields: usize, per_round: usize) -> FieldMessages {
        let from_bytes = match fields > 1 && fields <= per_round {
            true => limits.field_message_bytes,
            false => usize::MAX,
        };
        FieldMessages { from_bytes }
    }

    /// The requests a round keeps for each message of `fields` fields.
    fn requests_per_message(self, fields: usize) -> usize {
        match self.from_bytes {
            usize::MAX => 1,
            _ => fields,
        }
    }

    /// True when a message of `fields` fields, `field_bytes` of each, travels
    /// as one message per field.
    fn apart(self, fields: usize, field_bytes: usize) -> bool {
        fields > 1 && field_bytes >= self.from_bytes
    }
}

/// What posting one message started.
struct Started {
    /// Requests used.
    requests: usize,
    /// True when the message went through the slot.
    packed: bool,
}

/// Posts one message into `requests`: straight from or into the buffers when
/// it is one segment there, or direct (segments at one stride, through a
/// strided datatype); otherwise through the slot (packed first for a send),
/// every field's part back to back. A batch's message carries every field's
/// part in one message (one request), or, when `apart` says, one message per
/// field (one request each).
///
/// # Safety
/// The segments must lie inside every field's buffer; the slot must hold their
/// total length times the fields and be unused until the requests complete.
unsafe fn post<T: Transport>(
    transport: &T,
    envelope: Envelope,
    (message, apart): (Message<'_>, FieldMessages),
    requests: &mut [T::Request],
) -> Result<Started> {
    let bases = message.memory.bases;
    let field_len = message.segments.iter().map(|s| s.len).sum::<usize>();
    let apart = apart.apart(bases.len(), field_len);
    let started = |packed| Started {
        requests: if apart { bases.len() } else { 1 },
        packed,
    };
    let packs_fields = message.packs_fields(apart, field_len);
    let Some((offset, shape)) = message.in_buffer().filter(|_| !packs_fields) else {
        if envelope.side == Side::Send {
            let (memory, slot) = (message.memory, message.slot);
            // SAFETY: the segments lie inside the buffers; the slot holds their
            // bytes of every field.
            unsafe { memory.transfer(message.segments, slot, Direction::Gather) };
        }
        let parts = match apart {
            true => bases.len(),
            false => 1,
        };
        let part_len = field_len * bases.len() / parts;
        for (i, request) in requests[..parts].iter_mut().enumerate() {
            let bytes = Bytes::contiguous(message.slot.wrapping_add(i * part_len), part_len);
            // SAFETY: the slot is valid until the request completes.
            unsafe { transport.start(envelope, bytes, request) }?;
        }
        return Ok(started(true));
    };
    if bases.len() == 1 || apart {
        for (base, request) in bases.iter().zip(requests.iter_mut()) {
            let bytes = Bytes {
                at: base.wrapping_add(offset),
                shape,
            };
            // SAFETY: the bytes are valid until the request completes (no
            // dereference here: `post`'s contract makes them bytes of the
            // buffers).
            unsafe { transport.start(envelope, bytes, request) }?;
        }
        return Ok(started(false));
    }
    let fields = FieldBytes {
        offset,
        shape,
        bases,
    };
    // SAFETY: as above.
    unsafe { transport.start_fields(envelope, fields, &mut requests[0]) }?;
    Ok(started(false))
}
