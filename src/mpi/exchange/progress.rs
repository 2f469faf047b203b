//! The two progress loops of an execution in flight: pairwise windows (the
//! exchange path) and independent streams (the local path), with the messaging
//! state they carry on, the buffers of the execution's fields and the state of
//! the execution.

use std::os::raw::c_int;

use super::direct::DirectExecution;
use super::stream::{FieldMessages, Memory, Stream};
use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;
use crate::distribution::storage::Storages;
use crate::mpi::transport::{Channel, Transport};
use crate::planning::messages::MessageLimits;
use crate::planning::schedule::{Progress, Side};

/// Fields whose buffers an exchange keeps room for when it is made, so that
/// batches of up to this many fields start without allocating.
const KEPT_FIELDS: usize = 8;

/// The streams with their requests and slots: what the progress loops carry on.
/// Apart from the exchange's local copies, so that a loop can make them (through
/// its `copy_once`) while it holds this.
pub(super) struct Messaging<T: Transport> {
    /// Pairwise windows or independent streams.
    pub(super) progress: Progress,
    /// Messages each stream posts per round.
    pub(super) per_round: usize,
    /// The streams in schedule order.
    pub(super) streams: Vec<Stream>,
    /// `per_round` request slots per stream.
    pub(super) requests: Vec<T::Request>,
    /// Indices of completed requests, filled by [`Transport::complete_some`].
    pub(super) completed: Vec<c_int>,
    /// The slots: one per stream, for its packed messages, used through raw
    /// pointers; placed for one field, or for a batch's fields.
    pub(super) slots: Vec<u8>,
    /// How many fields the streams' slots are placed for.
    pub(super) slot_fields: usize,
    /// How the streams' messages are cut, for one field.
    pub(super) limits: MessageLimits,
    /// This rank's storages when either is strided (its streams then pack and
    /// unpack every message through their slots).
    pub(super) strided: Option<Storages>,
    /// Bytes per element.
    pub(super) elem_size: usize,
}

/// The fields' buffers at `bases` that streams of `side` work on, as they see
/// them.
pub(super) fn memory<'a>(
    strided: &'a Option<Storages>,
    elem_size: usize,
    bases: &'a [*mut u8],
    side: Side,
) -> Memory<'a> {
    let storage = strided.as_ref().map(|s| match side {
        Side::Send => &s.input,
        Side::Receive => &s.output,
    });
    let storage = storage.filter(|s| !s.is_dense());
    Memory {
        bases,
        strided: storage,
        elem_size,
    }
}

impl<T: Transport> Messaging<T> {
    /// Places every stream's slot for executions of `fields` fields, the slots
    /// grown to hold them when a batch needs more than any execution before
    /// (kept for later ones); fails, changing nothing, when that allocation
    /// fails.
    pub(super) fn place_slots(&mut self, fields: usize, rank: usize) -> Result<()> {
        if fields == self.slot_fields {
            return Ok(());
        }
        let (limits, size) = (self.limits, self.elem_size);
        let bytes: usize = (self.streams.iter())
            .map(|s| s.slot_bytes(fields, limits, size))
            .sum();
        let more = bytes.saturating_sub(self.slots.len());
        self.slots.try_reserve_exact(more).map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot grow the message slots to {bytes} bytes for {fields} fields on rank {rank}"
            ))
        })?;
        let mut start = 0;
        for stream in &mut self.streams {
            let len = stream.slot_bytes(fields, limits, size);
            stream.slot = start..start + len;
            start += len;
        }
        self.slot_fields = fields;
        Ok(())
    }

    /// Which messages of an execution of `fields` travel as one message per
    /// field.
    fn field_messages(&self, fields: &Fields) -> FieldMessages {
        FieldMessages::new(self.limits, fields.output.len(), self.per_round)
    }

    /// Cancels every message in flight and completes it, and marks every stream
    /// idle.
    pub(super) fn abandon(&mut self, transport: &T) {
        transport.cancel_all(&mut self.requests);
        for stream in &mut self.streams {
            stream.pending = 0;
        }
    }

    /// Pairwise progress: window after window, every stream of the window posts its
    /// next round and the rank completes the whole step (see
    /// [`crate::planning::schedule`]).
    /// The local copy runs once the first step is posted.
    ///
    /// # Safety
    /// The buffers of `active` valid (see [`Exchange::advance`](super::Exchange::advance)).
    pub(super) unsafe fn pairwise(
        &mut self,
        channel: Channel<'_, T>,
        (active, fields): (&mut Active, &Fields),
        blocking: bool,
        copy_once: &mut dyn FnMut(&mut Active),
    ) -> Result<bool> {
        let (slots, per_round) = (self.slots.as_mut_ptr(), self.per_round);
        let transport = channel.transport;
        loop {
            let window = self.window_at(active.window_start);
            if active.posted > 0 {
                if !transport.complete_all(&mut self.requests[..active.posted], blocking)? {
                    return Ok(false);
                }
                active.posted = 0;
                let output = memory(&self.strided, self.elem_size, &fields.output, Side::Receive);
                // SAFETY: the rounds' messages lie inside the output buffers.
                unsafe { finish_rounds(&mut self.streams[window.clone()], output, slots) };
            }
            if window.is_empty() {
                return Ok(true);
            }
            let apart = self.field_messages(fields);
            for stream in self.streams[window.clone()].iter_mut().filter(|s| !s.done) {
                let side = stream.spec.side;
                let base = memory(&self.strided, self.elem_size, fields.bases(side), side);
                let requests = &mut self.requests[active.posted..active.posted + per_round];
                // SAFETY: the messages lie inside their buffer (planner invariant).
                unsafe { stream.post_round(channel, (base, apart), slots, requests) }?;
                active.posted += stream.pending;
            }
            copy_once(active);
            if active.posted == 0 {
                active.window_start = window.end;
            } else if std::mem::take(&mut active.posting_only) {
                return Ok(false);
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
    /// wait for all of them completes them.
    ///
    /// # Safety
    /// As [`Messaging::pairwise`].
    pub(super) unsafe fn independent(
        &mut self,
        channel: Channel<'_, T>,
        (active, fields): (&mut Active, &Fields),
        blocking: bool,
        copy_once: &mut dyn FnMut(&mut Active),
    ) -> Result<bool> {
        let (slots, transport) = (self.slots.as_mut_ptr(), channel.transport);
        let apart = self.field_messages(fields);
        loop {
            let mut in_flight = 0;
            for (stream, requests) in self
                .streams
                .iter_mut()
                .zip(self.requests.chunks_mut(self.per_round))
                .filter(|(s, _)| active.sides.includes(s.spec.side))
            {
                if stream.pending == 0 && !stream.done {
                    let side = stream.spec.side;
                    let base = memory(&self.strided, self.elem_size, fields.bases(side), side);
                    // SAFETY: the messages lie inside their buffers (planner invariant).
                    unsafe { stream.post_round(channel, (base, apart), slots, requests) }?;
                }
                in_flight += stream.pending;
            }
            copy_once(active);
            if in_flight == 0 {
                return Ok(true);
            }
            if std::mem::take(&mut active.posting_only) {
                return Ok(false);
            }
            let last_rounds = self
                .streams
                .iter_mut()
                .all(|s| s.pending == 0 || s.is_exhausted());
            let progressed = match last_rounds {
                // SAFETY: the rounds' messages lie inside the output buffer.
                true => unsafe { self.complete_rounds(transport, &fields.output, blocking) }?,
                // SAFETY: as above.
                false => unsafe { self.complete_some(transport, &fields.output, blocking) }?,
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
    /// The rounds' messages lie inside the `output` buffers.
    unsafe fn complete_rounds(
        &mut self,
        transport: &T,
        output: &[*mut u8],
        blocking: bool,
    ) -> Result<bool> {
        if !transport.complete_all(&mut self.requests, blocking)? {
            return Ok(false);
        }
        let output = memory(&self.strided, self.elem_size, output, Side::Receive);
        // SAFETY: forwarded from the caller.
        unsafe { finish_rounds(&mut self.streams, output, self.slots.as_ptr()) };
        Ok(true)
    }

    /// Completes at least one message (or, not `blocking`, those that have
    /// completed, returning false when none has) and unpacks the receive rounds
    /// that completed.
    ///
    /// # Safety
    /// The rounds' messages lie inside the `output` buffers.
    unsafe fn complete_some(
        &mut self,
        transport: &T,
        output: &[*mut u8],
        blocking: bool,
    ) -> Result<bool> {
        let done = transport.complete_some(&mut self.requests, &mut self.completed, blocking)?;
        let slots = self.slots.as_ptr();
        let output = memory(&self.strided, self.elem_size, output, Side::Receive);
        for &index in &self.completed[..done] {
            let stream = &mut self.streams[index as usize / self.per_round];
            stream.pending -= 1;
            if stream.pending == 0 {
                // SAFETY: the round's messages lie inside the output buffer.
                unsafe { stream.unpack(output, slots) };
            }
        }
        Ok(done > 0)
    }
}

/// Which streams an execution drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sides {
    All,
    Sends,
    Receives,
}

impl Sides {
    pub(super) fn includes(self, side: Side) -> bool {
        match self {
            Sides::All => true,
            Sides::Sends => side == Side::Send,
            Sides::Receives => side == Side::Receive,
        }
    }
}

/// The buffers of an execution's fields (one, or a batch's), kept by the
/// exchange between executions so that starting one allocates nothing: room
/// for [`KEPT_FIELDS`] is made with the exchange, more only by the first batch
/// of more fields, and kept.
pub(super) struct Fields {
    /// Where each field's sends are read: its input, or the pack buffer in place.
    pub(super) send: Vec<*mut u8>,
    /// Where each field's receives land: its output.
    pub(super) output: Vec<*mut u8>,
}

impl Fields {
    /// Room for [`KEPT_FIELDS`] fields.
    pub(super) fn new(rank: usize) -> Result<Fields> {
        Ok(Fields {
            send: try_vec(KEPT_FIELDS, "the fields' buffers", rank)?,
            output: try_vec(KEPT_FIELDS, "the fields' buffers", rank)?,
        })
    }

    /// Makes room for `fields` fields (allocating only beyond the room kept).
    pub(super) fn reserve(&mut self, fields: usize, rank: usize) -> Result<()> {
        let grown = (self.send.try_reserve(fields)).and_then(|()| self.output.try_reserve(fields));
        grown.map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot list the buffers of {fields} fields on rank {rank}"
            ))
        })
    }

    /// Sets the fields' buffers: sends read from `send`, receives land in
    /// `output`, field by field.
    pub(super) fn set(&mut self, send: &[*const u8], output: &[*mut u8]) {
        self.send.clear();
        self.send.extend(send.iter().map(|b| b.cast_mut()));
        self.output.clear();
        self.output.extend_from_slice(output);
    }

    /// The buffers streams of `side` work on.
    pub(super) fn bases(&self, side: Side) -> &[*mut u8] {
        match side {
            Side::Send => &self.send,
            Side::Receive => &self.output,
        }
    }
}

/// An execution in flight: how far the schedule has come (its buffers are the
/// exchange's [`Fields`]).
pub(super) struct Active {
    /// Out of place, true until the kept elements are copied from the inputs
    /// (the fields' send buffers), once the first messages are posted.
    pub(super) copy_pending: bool,
    /// In place with everything sent packed, the pack buffer the sends read.
    pub(super) _packed: Vec<u8>,
    pub(super) sides: Sides,
    /// Pairwise progress: the first stream of the current window.
    pub(super) window_start: usize,
    /// Pairwise progress: requests of the step in flight.
    pub(super) posted: usize,
    /// The direct reads of this execution.
    pub(super) direct: DirectExecution,
    /// True until the first round is posted, when the execution is to post it
    /// and return without testing for completion (a fused execution posts
    /// every plan's first round before it waits in any).
    pub(super) posting_only: bool,
}

impl Active {
    pub(super) fn new(copy_pending: bool, packed: Vec<u8>, sides: Sides) -> Active {
        Active {
            copy_pending,
            _packed: packed,
            sides,
            window_start: 0,
            posted: 0,
            direct: DirectExecution::default(),
            posting_only: false,
        }
    }
}

/// Marks the rounds of `streams` in flight as completed, unpacking received packed
/// messages from their slots in `slots`.
///
/// # Safety
/// Every round in flight must have completed, its messages inside `output`.
pub(super) unsafe fn finish_rounds(streams: &mut [Stream], output: Memory<'_>, slots: *const u8) {
    for stream in streams.iter_mut().filter(|s| s.pending > 0) {
        stream.pending = 0;
        // SAFETY: forwarded from the caller.
        unsafe { stream.unpack(output, slots) };
    }
}
