//! Fused executions: several plans of one communicator executed in one round,
//! each plan with its own fields (one, or a batch when the same plan is fused
//! several times). Each plan keeps its exchange, its runs and its local copy;
//! what the plans share is the framing of the traffic between two ranks. Where
//! the pair's bytes, summed over the plans and fields, are latency-bound (below
//! [`FRAMED_BYTES`]) and at least two plans move some, the pair's messages of
//! every plan travel as one message: each plan's part packed by its own
//! segments and storage, back to back in the order of the plans and their
//! fields. The other pairs move in each plan's own messages, every plan's
//! first round posted before any waits. Both ends of a pair frame it alike:
//! the bytes a plan sends one way between them are the bytes the other end
//! receives, and both know which streams read directly (never framed).
//!
//! The frames live in one buffer, made when the fused execution is: exactly
//! the bytes of the framed traffic this rank sends and receives, each pair
//! below [`FRAMED_BYTES`].

use std::ops::Range;
use std::os::raw::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use super::stream::{Memory, stream_cutter};
use super::{Exchange, FieldBuffers, Mode, Participant};
use crate::core::error::{Error, Result};
use crate::core::fallible::try_vec;
use crate::memory::strided::Direction;
use crate::mpi::transport::{Bytes, Envelope, Transport};
use crate::planning::messages::{CutMessages, Segment};
use crate::planning::planner::RankPlan;
use crate::planning::schedule::Side;

/// Bytes of a pair's traffic (one direction, summed over the fused plans and
/// their fields) below which it travels framed in one message.
pub const FRAMED_BYTES: usize = 32 << 10;

/// One plan of a fused execution as its framing is decided: its exchange, its
/// per-rank plan, and how many fields it moves.
pub struct FusedPlan<'a, T: Transport> {
    /// The plan's exchange.
    pub exchange: &'a Exchange<T>,
    /// This rank's plan.
    pub plan: &'a RankPlan,
    /// Fields of the plan in each execution.
    pub fields: usize,
}

/// One plan of a fused execution as it runs: its exchange, the participant
/// (plan and transport) and its fields' buffers.
pub struct FusedRun<'a, T: Transport> {
    /// The plan's exchange.
    pub exchange: &'a mut Exchange<T>,
    /// This rank's plan and the plan's transport.
    pub on: Participant<'a, T>,
    /// The plan's fields, as many as it was fused with.
    pub buffers: FieldBuffers<'a>,
}

/// The plans of a fused execution as it runs, by their index in the order the
/// fused exchange was made for.
pub trait FusedRuns<T: Transport> {
    /// Plan `plan`'s run.
    fn run(&mut self, plan: usize) -> FusedRun<'_, T>;

    /// How many plans.
    fn plans(&self) -> usize;
}

impl<T: Transport> FusedRuns<T> for [FusedRun<'_, T>] {
    fn run(&mut self, plan: usize) -> FusedRun<'_, T> {
        let run = &mut self[plan];
        FusedRun {
            exchange: &mut *run.exchange,
            on: run.on,
            buffers: run.buffers,
        }
    }

    fn plans(&self) -> usize {
        self.len()
    }
}

/// One plan's part of a frame: its segments of the pair's traffic.
#[derive(Clone, Debug)]
struct FramePart {
    /// Which plan of the fused execution.
    plan: usize,
    /// Its segments (in the plan's buffers) among the frames' segments.
    segments: Range<usize>,
    /// Bytes of one field's part.
    field_bytes: usize,
}

/// The framed traffic with one peer in one direction.
#[derive(Clone, Debug)]
struct Frame {
    side: Side,
    peer: usize,
    /// The plans' parts, among the frames' parts.
    parts: Range<usize>,
    /// Where the frame lies in the frames' buffer.
    bytes: Range<usize>,
}

/// What a fused execution frames on this rank, and the frames' buffer and
/// requests, made once and reused by every execution.
pub struct FusedExchange<T: Transport> {
    frames: Vec<Frame>,
    parts: Vec<FramePart>,
    segments: Vec<Segment>,
    /// For each plan, its streams that travel framed (their own messages are
    /// not posted in a fused execution).
    framed_streams: Vec<Vec<usize>>,
    buffer: Vec<u8>,
    requests: Vec<T::Request>,
    /// Fused executions started so far: the same count on every rank.
    executions: u64,
}

impl<T: Transport> std::fmt::Debug for FusedExchange<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FusedExchange")
            .field("frames", &self.frames.len())
            .field("buffer_bytes", &self.buffer.len())
            .finish_non_exhaustive()
    }
}

/// The stream of one plan with one peer in one direction.
struct PlanStream {
    plan: usize,
    stream: usize,
    /// Its bytes over the plan's fields.
    bytes: usize,
    direct: bool,
}

impl<T: Transport> FusedExchange<T> {
    /// Decides what the fused execution of `plans` (this rank's, in the order
    /// every rank fuses them) frames, cuts the framed streams' segments and
    /// allocates the frames' buffer and requests.
    pub fn new(plans: &[FusedPlan<'_, T>], rank: usize) -> Result<FusedExchange<T>> {
        let mut fused = FusedExchange {
            frames: Vec::new(),
            parts: Vec::new(),
            segments: Vec::new(),
            framed_streams: try_vec(plans.len(), "the framed streams", rank)?,
            buffer: Vec::new(),
            requests: Vec::new(),
            executions: 0,
        };
        fused.framed_streams.resize_with(plans.len(), Vec::new);
        let mut pairs: Vec<(Side, usize)> = plans
            .iter()
            .flat_map(|p| p.exchange.messaging.streams.iter())
            .map(|s| (s.spec.side, s.spec.peer))
            .collect();
        pairs.sort_unstable_by_key(|&(side, peer)| (side == Side::Send, peer));
        pairs.dedup();
        for (side, peer) in pairs {
            let streams = pair_streams(plans, side, peer);
            if frames_pair(&streams) {
                fused.add_frame(plans, side, peer, &streams)?;
            }
        }
        let bytes = fused.frames.last().map_or(0, |f| f.bytes.end);
        fused.buffer = try_vec(bytes, "the fused frames", rank)?;
        fused.buffer.resize(bytes, 0);
        fused.requests = try_vec(fused.frames.len(), "the fused frames' requests", rank)?;
        fused.requests.resize(fused.frames.len(), T::null_request());
        Ok(fused)
    }

    /// Adds the frame of the streams of `plans` with `peer` on `side`: cuts
    /// each stream's segments and places the frame after the others.
    fn add_frame(
        &mut self,
        plans: &[FusedPlan<'_, T>],
        side: Side,
        peer: usize,
        streams: &[PlanStream],
    ) -> Result<()> {
        let first_part = self.parts.len();
        let start = self.frames.last().map_or(0, |f| f.bytes.end);
        let mut scratch = Vec::new();
        for s in streams {
            let FusedPlan { exchange, plan, .. } = &plans[s.plan];
            let messaging = &exchange.messaging;
            let spec = messaging.streams[s.stream].spec;
            let cutter = stream_cutter(plan, spec, messaging.limits);
            let cut = CutMessages::cut(cutter, usize::MAX, &mut scratch)
                .ok()
                .flatten();
            let cut = cut.ok_or_else(|| {
                Error::OutOfMemory(format!(
                    "cannot cut the fused frames' segments on rank {}",
                    plan.rank
                ))
            })?;
            let first = self.segments.len();
            self.segments.extend_from_slice(cut.segments());
            self.parts.push(FramePart {
                plan: s.plan,
                segments: first..self.segments.len(),
                field_bytes: s.bytes / plans[s.plan].fields,
            });
            self.framed_streams[s.plan].push(s.stream);
        }
        let bytes: usize = streams.iter().map(|s| s.bytes).sum();
        self.frames.push(Frame {
            side,
            peer,
            parts: first_part..self.parts.len(),
            bytes: start..start + bytes,
        });
        Ok(())
    }

    /// Bytes of the frames' buffer: the framed traffic this rank sends and
    /// receives.
    pub fn framed_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// How many pairs (peer and direction) travel framed on this rank.
    pub fn frames(&self) -> usize {
        self.frames.len()
    }

    /// Runs one fused execution of `runs` (this rank's plans, in the order the
    /// exchange was made for, each with as many fields) to completion, every
    /// rank out of place in `mode`: the frames over `transport`, every plan's
    /// other messages over its own. On failure or a panic every message in
    /// flight is cancelled and completed first.
    ///
    /// # Safety
    /// As [`Exchange::run_batch`] for every plan's fields; no two buffers of
    /// any plans overlap. Every rank runs the same plans in the same order.
    pub unsafe fn run(
        &mut self,
        transport: &T,
        mode: Mode,
        runs: &mut (impl FusedRuns<T> + ?Sized),
    ) -> Result<()> {
        // Unwind safe: on a panic everything in flight is abandoned before the
        // panic carries on.
        // SAFETY: forwarded from the caller.
        let ran = catch_unwind(AssertUnwindSafe(|| unsafe {
            self.run_unguarded(transport, mode, runs)
        }));
        let result = ran.unwrap_or_else(|panic| {
            self.abandon(transport, runs);
            resume_unwind(panic)
        });
        if result.is_err() {
            self.abandon(transport, runs);
        }
        result
    }

    /// [`FusedExchange::run`] without the clean-up on failure.
    ///
    /// # Safety
    /// As [`FusedExchange::run`].
    unsafe fn run_unguarded(
        &mut self,
        transport: &T,
        mode: Mode,
        runs: &mut (impl FusedRuns<T> + ?Sized),
    ) -> Result<()> {
        self.executions += 1;
        let tag = transport.tag(self.executions);
        // SAFETY: forwarded from the caller.
        unsafe { self.post_frames(transport, tag, runs) }?;
        for (plan, framed) in self.framed_streams.iter().enumerate() {
            let run = runs.run(plan);
            // SAFETY: forwarded from the caller.
            unsafe { run.exchange.begin_fused(run.on, mode, run.buffers, framed) }?;
        }
        // Every rank completes the plans in the same order, and a plan's
        // progress waits only for its own messages: a rank waiting in one plan
        // waits for ranks that are in it too, or past it.
        for plan in 0..runs.plans() {
            let run = runs.run(plan);
            run.exchange.advance(run.on, true)?;
        }
        transport.complete_all(&mut self.requests, true)?;
        // SAFETY: every frame received; the parts lie inside the outputs.
        unsafe { self.transfer_frames(Side::Receive, runs) };
        Ok(())
    }

    /// Posts every frame's receive, then packs and posts every frame's send.
    ///
    /// # Safety
    /// As [`FusedExchange::run`].
    unsafe fn post_frames(
        &mut self,
        transport: &T,
        tag: c_int,
        runs: &mut (impl FusedRuns<T> + ?Sized),
    ) -> Result<()> {
        // SAFETY: the sends' parts lie inside the inputs (caller's contract).
        unsafe { self.transfer_frames(Side::Send, runs) };
        let base = self.buffer.as_mut_ptr();
        for (frame, request) in self.frames.iter().zip(self.requests.iter_mut()) {
            let envelope = Envelope {
                side: frame.side,
                peer: frame.peer,
                tag,
            };
            let at = base.wrapping_add(frame.bytes.start);
            let bytes = Bytes::contiguous(at, frame.bytes.len());
            // SAFETY: the frame lies inside the buffer, untouched until the
            // request completes.
            unsafe { transport.start(envelope, bytes, request) }?;
        }
        Ok(())
    }

    /// Packs every frame on `side` from the plans' inputs (sends), or unpacks
    /// it into their outputs (receives): each part's fields back to back.
    ///
    /// # Safety
    /// Every part's segments lie inside its plan's buffers on that side.
    unsafe fn transfer_frames(&mut self, side: Side, runs: &mut (impl FusedRuns<T> + ?Sized)) {
        let direction = match side {
            Side::Send => Direction::Gather,
            Side::Receive => Direction::Scatter,
        };
        let base = self.buffer.as_mut_ptr();
        for frame in self.frames.iter().filter(|f| f.side == side) {
            let mut at = frame.bytes.start;
            for part in &self.parts[frame.parts.clone()] {
                let run = runs.run(part.plan);
                let bases = match side {
                    Side::Send => run.buffers.inputs_as_bases(),
                    Side::Receive => run.buffers.outputs,
                };
                let memory: Memory<'_> = run.exchange.memory(bases, side);
                let segments = &self.segments[part.segments.clone()];
                // SAFETY: the part's fields lie back to back from `at`, inside
                // the frame; the segments inside the buffers (caller's contract).
                unsafe { memory.transfer(segments, base.add(at), direction) };
                at += part.field_bytes * bases.len();
            }
        }
    }

    /// Cancels and completes every frame and every plan's messages in flight.
    fn abandon(&mut self, transport: &T, runs: &mut (impl FusedRuns<T> + ?Sized)) {
        transport.cancel_all(&mut self.requests);
        for plan in 0..runs.plans() {
            let run = runs.run(plan);
            run.exchange.abandon(run.on.transport);
        }
    }
}

/// The streams of `plans` with `peer` on `side`.
fn pair_streams<T: Transport>(
    plans: &[FusedPlan<'_, T>],
    side: Side,
    peer: usize,
) -> Vec<PlanStream> {
    let mut streams = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        let all = p.exchange.messaging.streams.iter().enumerate();
        for (stream, s) in all.filter(|(_, s)| s.spec.side == side && s.spec.peer == peer) {
            let bytes = usize::try_from(s.spec.elems).unwrap_or(usize::MAX);
            streams.push(PlanStream {
                plan: i,
                stream,
                bytes: bytes
                    .saturating_mul(p.plan.elem_size)
                    .saturating_mul(p.fields),
                direct: s.direct,
            });
        }
    }
    streams
}

/// True when a pair's `streams` travel framed: two plans at least move some
/// bytes, none reads directly, and their bytes stay below [`FRAMED_BYTES`].
fn frames_pair(streams: &[PlanStream]) -> bool {
    let moving = streams.iter().filter(|s| s.bytes > 0);
    let bytes: usize = moving
        .clone()
        .map(|s| s.bytes)
        .fold(0, usize::saturating_add);
    moving.count() >= 2 && bytes < FRAMED_BYTES && !streams.iter().any(|s| s.direct)
}
