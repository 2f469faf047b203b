//! Direct reads in an execution: a stream between two ranks that read each other's
//! memory (as the exchange was told when it was made) and whose joint runs are
//! long (at least half the direct message size on average) moves no message.
//! When every rank executes out of place, the sender announces the address of its
//! input (one 8-byte message; a batch's announces every field's input, 8 bytes
//! each, in one message), the receiver reads the stream's joint runs straight
//! from it into its output (field by field) as soon as the announcement arrives
//! ([`Transport::read`]), and acknowledges (8 bytes: 0, or 1 when a read
//! failed); the sender completes its execution only once acknowledged, so its
//! inputs stay unchanged while they are read. Executions with a rank in place
//! send these streams' messages as usual.
//!
//! Where some rank's input is strided, a stream moves by direct reads only when
//! its elements are one box (the overlap of the sender's input box and the
//! receiver's output box, in a plan that keeps the shape): the reader gathers
//! the box's rows from the sender's input, by its storage (every rank's input
//! strides are gathered when the plan is made), into the bounce buffer laid out
//! as in the sender's input with its gaps longer than [`SKIPPED_GAP_BYTES`]
//! closed (rows a shorter gap apart are then read as one run on both sides,
//! the gap along), and copies them into its output with the memory layer, a
//! blocked transpose where the two orders differ. Nothing reads the
//! output before the execution ends, so the copies out of the bounce buffer
//! choose their stores for all the bytes the reads write, not for one bounce
//! (non-temporal when those are many).
//!
//! No cycle of waits can form: every rank posts its announcements and its
//! acknowledgement receives before it waits for anything, a receiver waits only for
//! announcements before it reads and acknowledges, and the acknowledgements are
//! awaited last. A failed read is acknowledged as failed, so both ends fail, and no
//! other stream is left waiting.

use std::os::raw::c_int;

use super::stream::{Memory, Stream};
use crate::core::error::{Error, Result};
use crate::core::fallible::{try_push, try_vec};
use crate::distribution::grid::GridBox;
use crate::distribution::joint_runs::{JointRun, JointRuns};
use crate::distribution::layout::MAX_DIMS;
use crate::distribution::storage::{InputStorages, Piece, Storage, Window};
use crate::memory::Host;
use crate::memory::strided::{Copier, Direction, RunAt};
use crate::mpi::cross_memory::SKIPPED_GAP_BYTES;
use crate::mpi::transport::{Between, Bytes, Envelope, Pitch, ReadRows, ReadRun, Transport};
use crate::planning::messages::MessageLimits;
use crate::planning::planner::RankPlan;
use crate::planning::schedule::{ScheduledStream, Side};

/// Streams whose joint runs average at least the direct message size
/// ([`MessageLimits::direct_bytes`], 64 KiB) over this move by direct reads:
/// long runs gain from being read, short ones lose (docs/src/performance/analysis.md,
/// "Direct reads on a crowded node").
const READ_BYTES_DIVISOR: u64 = 2;

/// Most runs (or rows of runs) read in one call of [`Transport::read`].
const RUNS_PER_READ: usize = 1024;

/// Bytes read at a time into a strided output's bounce buffer, then scattered:
/// small enough to stay in cache between the two.
const BOUNCE_BYTES: usize = 256 << 10;

/// The bytes of the bounce buffer for elements of `elem_size` bytes.
fn bounce_bytes(elem_size: usize) -> usize {
    BOUNCE_BYTES.max(elem_size)
}

/// The streams of one rank's plan that move by direct reads, with what their
/// executions need, allocated when the plan is created.
pub(super) struct DirectReads<T: Transport> {
    /// The direct streams: receives first, then sends.
    streams: Vec<DirectStream>,
    /// How many of `streams` are receives.
    receives: usize,
    /// Per direct stream, the announced input addresses, one per field (received
    /// by a receive stream, sent by a send stream): stream `i`'s are
    /// `announced[i * fields..][..fields]`. Room for one field is made with the
    /// exchange, for more by the first batch of more fields, and kept.
    announced: Vec<u64>,
    /// Per direct stream its acknowledgement.
    acknowledged: Vec<u64>,
    /// Per direct stream its announcement's request, then per direct stream its
    /// acknowledgement's.
    requests: Vec<T::Request>,
    /// Indices of completed announcements, filled by [`Transport::complete_some`].
    completed: Vec<c_int>,
    /// The runs (or rows of runs) of one read.
    runs: Vec<ReadRows>,
    /// Where the runs are read before they are scattered into a strided output
    /// (empty when every stream reads straight into the output).
    bounce: Vec<u8>,
    /// The bytes of the direct receive streams.
    bytes_read: u64,
}

/// One stream that moves by direct reads.
struct DirectStream {
    peer: usize,
    /// Where a receive reads; `None` for a send.
    runs: Option<ReadFrom>,
}

/// Where a receive stream finds its elements in the sender's input.
enum ReadFrom {
    /// Its joint runs (their source offsets in the sender's dense input),
    /// listed once: walking them from the global runs took as much processor
    /// time as reading them (a pencil transpose joins 1 KiB global runs into
    /// 64 KiB joint runs).
    Runs(Vec<JointRun>),
    /// One box, where some input is strided.
    Box(BoxRead),
}

/// The box a receive stream reads, its axes ordered by the sender's strides
/// (outermost first), in the sender's input, in this rank's output, and in
/// the bounce buffer (the sender's storage with only its short gaps kept); and
/// the chunks it is read in, one bounce each ([`fitting_len`]), found when the
/// plan is made.
struct BoxRead {
    remote: Window,
    local: Window,
    bounce: Storage,
    chunks: Vec<Chunk>,
}

/// A chunk of a box read: `len` elements in C order from the end of the chunk
/// before, whose first lies `base` elements into the bounce storage (which
/// the chunk is read to the start of the bounce buffer from).
#[derive(Clone, Copy, Debug)]
struct Chunk {
    len: u64,
    base: u64,
}

/// The direct reads of the execution in flight.
#[derive(Debug, Default)]
pub(super) struct DirectExecution {
    /// True when this execution moves the direct streams by reads.
    pub(super) active: bool,
    /// Receive streams not yet read.
    reads_left: usize,
    /// The first failed read.
    failure: Option<Error>,
}

/// What a rank reads directly from: the peers it may read (`reads_from`, a
/// property of the pair) and, when some rank's input is strided, every rank's
/// input storage.
pub struct ReadPeers<'a, F: Fn(usize) -> bool> {
    /// Whether this rank reads `peer` directly (and `peer` this rank).
    pub reads_from: F,
    /// Every rank's input storage, when some rank's input is strided.
    pub inputs: Option<&'a InputStorages>,
}

impl<T: Transport> DirectReads<T> {
    /// Picks the streams of `streams` that move by direct reads when the ranks
    /// allow it (`peers`) and their joint runs average at least half
    /// `limits.direct_bytes` ([`READ_BYTES_DIVISOR`]), and, where some input is
    /// strided, their elements are one box; marks them. Into a strided `output`
    /// or from a strided input, reads land in a bounce buffer first.
    pub(super) fn new<F: Fn(usize) -> bool>(
        plan: &RankPlan,
        streams: &mut [Stream],
        limits: MessageLimits,
        peers: ReadPeers<'_, F>,
        output: &Storage,
    ) -> Result<DirectReads<T>> {
        let (mut direct, mut bytes_read) = (Vec::new(), 0);
        for side in [Side::Receive, Side::Send] {
            for stream in streams.iter_mut().filter(|s| s.spec.side == side) {
                let peer = stream.spec.peer;
                if !(peers.reads_from)(peer) {
                    continue;
                }
                let Some(runs) = long_runs(plan, stream.spec, limits)? else {
                    continue;
                };
                let receive = side == Side::Receive;
                let read_from = match peers.inputs {
                    None => ReadFrom::Runs(runs),
                    Some(inputs) => match stream_box(plan, stream.spec) {
                        Some(one) if receive => {
                            ReadFrom::Box(one.read(inputs.of(peer), output, plan)?)
                        }
                        Some(_) => ReadFrom::Runs(runs),
                        None => continue,
                    },
                };
                stream.direct = true;
                if receive {
                    bytes_read += stream.spec.elems * plan.elem_size as u64;
                }
                let runs = receive.then_some(read_from);
                direct.push(DirectStream { peer, runs });
            }
        }
        let receives = direct.iter().filter(|d| d.runs.is_some()).count();
        let n = direct.len();
        let rank = plan.rank;
        let mut announced = try_vec(n, "the direct reads' announcements", rank)?;
        announced.resize(n, 0);
        let mut acknowledged = try_vec(n, "the direct reads' acknowledgements", rank)?;
        acknowledged.resize(n, 0);
        let mut requests = try_vec(2 * n, "the direct reads' requests", rank)?;
        requests.resize(2 * n, T::null_request());
        let mut completed = try_vec(n, "the direct reads' completions", rank)?;
        completed.resize(n, 0);
        let runs = try_vec(if n > 0 { RUNS_PER_READ } else { 0 }, "the read runs", rank)?;
        let bounced = !output.is_dense() || peers.inputs.is_some();
        let bounce_bytes = match bounced && receives > 0 {
            true => bounce_bytes(plan.elem_size),
            false => 0,
        };
        let mut bounce = try_vec(bounce_bytes, "the direct reads' bounce buffer", rank)?;
        bounce.resize(bounce_bytes, 0);
        Ok(DirectReads {
            bounce,
            streams: direct,
            receives,
            announced,
            acknowledged,
            requests,
            completed,
            runs,
            bytes_read,
        })
    }

    /// How many streams move by direct reads.
    pub(super) fn len(&self) -> usize {
        self.streams.len()
    }

    /// The bytes of the direct receive streams, of one field.
    pub(super) fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// How many of the direct streams this rank reads.
    pub(super) fn receives(&self) -> usize {
        self.receives
    }

    /// Makes room for the announcements of executions of `fields` fields
    /// (allocating only for more fields than any before, and keeping it);
    /// fails, changing nothing, when that allocation fails.
    pub(super) fn reserve(&mut self, fields: usize, rank: usize) -> Result<()> {
        let len = self.streams.len() * fields;
        let more = len.saturating_sub(self.announced.len());
        self.announced.try_reserve_exact(more).map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot list the direct reads' announcements of {fields} fields on rank {rank}"
            ))
        })
    }

    /// Starts an execution's direct reads of the fields whose inputs are
    /// `inputs`: announces them to every direct receiver and posts every
    /// announcement and acknowledgement receive. Allocates nothing once
    /// [`DirectReads::reserve`] has made room for as many fields.
    ///
    /// # Safety
    /// Every input must stay readable and unchanged until the execution
    /// completes.
    pub(super) unsafe fn start(
        &mut self,
        transport: &T,
        execution: u64,
        inputs: &[*const u8],
    ) -> Result<DirectExecution> {
        let tags = transport.control_tags(execution);
        let (n, fields) = (self.streams.len(), inputs.len());
        self.announced.resize(n * fields, 0);
        for i in 0..n {
            let (peer, receives) = (self.streams[i].peer, self.streams[i].runs.is_some());
            let side = if receives { Side::Receive } else { Side::Send };
            let announced = &mut self.announced[i * fields..(i + 1) * fields];
            if !receives {
                (announced.iter_mut().zip(inputs)).for_each(|(a, &input)| *a = input as u64);
            }
            // SAFETY: the payloads live in the plan until the execution completes.
            unsafe {
                let envelope = Envelope {
                    side,
                    peer,
                    tag: tags.announcement,
                };
                let bytes = payload_bytes(announced);
                transport.start(envelope, bytes, &mut self.requests[i])?;
                if !receives {
                    self.acknowledge(transport, i, Side::Receive, tags.acknowledgement)?;
                }
            }
        }
        Ok(DirectExecution {
            active: true,
            reads_left: self.receives,
            failure: None,
        })
    }

    /// Reads every stream whose announcement has arrived into `output` (every
    /// field's), and acknowledges it: until every stream is read when
    /// `blocking`. Returns whether every stream is read.
    ///
    /// # Safety
    /// `output` the execution's output buffer, valid until it completes.
    pub(super) unsafe fn serve(
        &mut self,
        transport: &T,
        execution: u64,
        state: &mut DirectExecution,
        output: Memory<'_>,
        blocking: bool,
    ) -> Result<bool> {
        let tag = transport.control_tags(execution).acknowledgement;
        while state.reads_left > 0 {
            let requests = &mut self.requests[..self.receives];
            let done = transport.complete_some(requests, &mut self.completed, blocking)?;
            if done == 0 {
                return Ok(false);
            }
            for k in 0..done {
                let i = self.completed[k] as usize;
                // SAFETY: forwarded from the caller; the sender keeps its input
                // until acknowledged.
                let read = unsafe { self.read(transport, i, output) };
                self.acknowledged[i] = u64::from(read.is_err());
                if let Err(e) = read {
                    state.failure.get_or_insert(e);
                }
                // SAFETY: the payload lives in the plan until the execution completes.
                unsafe { self.acknowledge(transport, i, Side::Send, tag) }?;
                state.reads_left -= 1;
            }
        }
        Ok(true)
    }

    /// Starts direct stream `i`'s acknowledgement (its payload and request) on
    /// `side`.
    ///
    /// # Safety
    /// The payloads must stay in place until the message completes.
    unsafe fn acknowledge(
        &mut self,
        transport: &T,
        i: usize,
        side: Side,
        tag: c_int,
    ) -> Result<()> {
        let peer = self.streams[i].peer;
        let envelope = Envelope { side, peer, tag };
        let bytes = payload_bytes(std::slice::from_mut(&mut self.acknowledged[i]));
        let request = &mut self.requests[self.streams.len() + i];
        // SAFETY: forwarded from the caller.
        unsafe { transport.start(envelope, bytes, request) }
    }

    /// Reads direct receive stream `i` from its sender's announced inputs, field
    /// by field (`output` holds every field's buffer).
    ///
    /// # Safety
    /// As [`DirectReads::serve`].
    unsafe fn read(&mut self, transport: &T, i: usize, output: Memory<'_>) -> Result<()> {
        let fields = output.bases.len();
        for f in 0..fields {
            let remote_base = self.announced[i * fields + f] as usize;
            let field = Memory {
                bases: &output.bases[f..=f],
                ..output
            };
            // SAFETY: forwarded from the caller.
            unsafe { self.read_field(transport, i, remote_base, field) }?;
        }
        Ok(())
    }

    /// Reads direct receive stream `i` of one field from its sender's input at
    /// `remote_base` into `output` (that field's buffer).
    ///
    /// # Safety
    /// As [`DirectReads::serve`].
    unsafe fn read_field(
        &mut self,
        transport: &T,
        i: usize,
        remote_base: usize,
        output: Memory<'_>,
    ) -> Result<()> {
        let runs = match self.streams[i].runs.as_ref() {
            Some(ReadFrom::Runs(runs)) => runs,
            Some(ReadFrom::Box(_)) => {
                // SAFETY: forwarded from the caller.
                return unsafe { self.read_box(transport, (i, remote_base), output) };
            }
            None => unreachable!("a receive stream reads"),
        };
        if let Some(storage) = output.strided {
            // SAFETY: forwarded from the caller.
            return unsafe { self.read_strided(transport, (i, remote_base), output, storage) };
        }
        let size = output.elem_size;
        let stream = &self.streams[i];
        for chunk in runs.chunks(RUNS_PER_READ) {
            self.runs.clear();
            self.runs.extend(chunk.iter().map(|run| {
                ReadRows::one(ReadRun {
                    remote: remote_base + run.source as usize * size,
                    local: output.bases[0].wrapping_add(run.target as usize * size),
                    len: run.len as usize * size,
                })
            }));
            // SAFETY: forwarded from the caller: the runs lie in the output, which
            // nothing else writes there, and in the sender's input.
            unsafe { transport.read(stream.peer, &self.runs, Between::Untouched) }?;
        }
        Ok(())
    }

    /// Reads direct receive stream `i` of one field from the sender's input at
    /// `remote_base` into the bounce buffer a bounce at a time, each scattered
    /// into the output's `storage` once read.
    ///
    /// # Safety
    /// As [`DirectReads::serve`].
    unsafe fn read_strided(
        &mut self,
        transport: &T,
        (i, remote_base): (usize, usize),
        output: Memory<'_>,
        storage: &Storage,
    ) -> Result<()> {
        let size = output.elem_size;
        let stream = &self.streams[i];
        let Some(ReadFrom::Runs(runs)) = stream.runs.as_ref() else {
            unreachable!("read by runs")
        };
        let room = (self.bounce.len() / size) as u64;
        let bounce = self.bounce.as_mut_ptr();
        let mut pieces = runs
            .iter()
            .flat_map(|&run| bounce_pieces(run, room))
            .peekable();
        while pieces.peek().is_some() {
            let (batch, mut filled, mut taken) = (pieces.clone(), 0, 0);
            self.runs.clear();
            while let Some(run) =
                pieces.next_if(|r| filled + r.len <= room && self.runs.len() < RUNS_PER_READ)
            {
                self.runs.push(ReadRows::one(ReadRun {
                    remote: remote_base + run.source as usize * size,
                    local: bounce.wrapping_add(filled as usize * size),
                    len: run.len as usize * size,
                }));
                (filled, taken) = (filled + run.len, taken + 1);
            }
            // SAFETY: forwarded from the caller: the runs lie in the bounce
            // buffer and in the sender's input.
            unsafe { transport.read(stream.peer, &self.runs, Between::Untouched) }?;
            let (copier, mut at) = (Copier::new(&Host, size, bounce, output.bases[0]), 0);
            let mut copier = copier.within(self.bytes_read as usize);
            for run in batch.take(taken) {
                let target = RunAt {
                    start: run.target,
                    len: run.len,
                };
                // SAFETY: the run lies in the output box (planner invariant) and,
                // read, in the bounce at `at`.
                unsafe { copier.run(storage, target, at, Direction::Scatter) };
                at += run.len as usize;
            }
            // SAFETY: as above.
            unsafe { copier.finish() };
        }
        Ok(())
    }

    /// Reads direct receive stream `i` of one field, one box, from the sender's
    /// input at `remote_base` into the bounce buffer a bounce at a time, laid
    /// out as in the sender's input with its long gaps closed (so that rows
    /// a short gap apart are read as one run on both sides), each copied into
    /// the output once read.
    ///
    /// # Safety
    /// As [`DirectReads::serve`].
    unsafe fn read_box(
        &mut self,
        transport: &T,
        (i, remote_base): (usize, usize),
        output: Memory<'_>,
    ) -> Result<()> {
        let size = output.elem_size;
        let stream = &self.streams[i];
        let Some(ReadFrom::Box(read)) = stream.runs.as_ref() else {
            unreachable!("read as a box")
        };
        let bounce = self.bounce.as_mut_ptr();
        let remote_at = remote_base + read.remote.offset as usize * size;
        let local_base = output.bases[0].wrapping_add(read.local.offset as usize * size);
        let mut start = 0;
        for &Chunk { len, base } in &read.chunks {
            let bounce_at = bounce.wrapping_sub(base as usize * size);
            self.runs.clear();
            let pieces = read.remote.storage.pieces(start, len);
            for (remote, kept) in pieces.zip(read.bounce.pieces(start, len)) {
                let (remote_strides, kept_strides) =
                    (read.remote.storage.strides(), read.bounce.strides());
                let by_rows = contiguous_rows(&remote, remote_strides);
                let planes = piece_planes(&remote, remote_strides, by_rows);
                let kept_planes = piece_planes(&kept, kept_strides, by_rows);
                debug_assert_eq!(planes.rows, kept_planes.rows, "one box, two storages");
                let rows = planes.rows as usize;
                let pitch = Pitch {
                    remote: planes.pitch as usize * size,
                    local: kept_planes.pitch as usize * size,
                };
                for (plane, at) in planes.zip(kept_planes) {
                    let first = ReadRun {
                        remote: remote_at + plane.start as usize * size,
                        local: bounce_at.wrapping_add(at.start as usize * size),
                        len: plane.len as usize * size,
                    };
                    let plane = ReadRows::new(first, rows, pitch);
                    if joins(self.runs.last_mut(), plane) {
                        continue;
                    }
                    if self.runs.len() == RUNS_PER_READ {
                        // SAFETY: forwarded from the caller: the rows lie in the
                        // bounce buffer and in the sender's input.
                        unsafe { transport.read(stream.peer, &self.runs, Between::Scratch) }?;
                        self.runs.clear();
                    }
                    self.runs.push(plane);
                }
            }
            // SAFETY: as above.
            unsafe { transport.read(stream.peer, &self.runs, Between::Scratch) }?;
            let copier = Copier::new(&Host, size, bounce_at, local_base);
            let mut copier = copier.within(self.bytes_read as usize);
            // SAFETY: the box lies in the output (planner invariant) and, read, in
            // the bounce as `read.bounce` places it, from `base`.
            unsafe {
                copier.copy_alike((&read.bounce, start), (&read.local.storage, start), len);
                copier.finish();
            }
            start += len;
        }
        Ok(())
    }

    /// Completes the execution's control messages once every stream is read (or,
    /// not `blocking`, returns false unless they have completed); fails when a read
    /// of this rank's or of its input failed.
    pub(super) fn finish(
        &mut self,
        transport: &T,
        state: &mut DirectExecution,
        blocking: bool,
    ) -> Result<bool> {
        if !transport.complete_all(&mut self.requests, blocking)? {
            return Ok(false);
        }
        state.active = false;
        if let Some(e) = state.failure.take() {
            return Err(e);
        }
        let n = self.streams.len();
        let failed = (self.receives..n).find(|&i| self.acknowledged[i] != 0);
        match failed {
            Some(i) => Err(Error::Mpi(format!(
                "rank {} could not read this rank's input directly",
                self.streams[i].peer
            ))),
            None => Ok(true),
        }
    }

    /// Cancels every control message in flight (after a failure).
    pub(super) fn abandon(&mut self, transport: &T) {
        transport.cancel_all(&mut self.requests);
    }
}

/// The bytes of control message `payload`.
fn payload_bytes(payload: &mut [u64]) -> Bytes {
    Bytes::contiguous(payload.as_mut_ptr().cast(), size_of_val(payload))
}

/// Extends `last` by `next` when both are one run and `next` follows `last`
/// in both memories; returns whether it did.
fn joins(last: Option<&mut ReadRows>, next: ReadRows) -> bool {
    match last {
        Some(last)
            if last.rows == 1
                && next.rows == 1
                && last.first.remote + last.first.len == next.first.remote
                && last.first.local.wrapping_add(last.first.len) == next.first.local =>
        {
            last.first.len += next.first.len;
            true
        }
        _ => false,
    }
}

/// The most of the `left` elements from C-order position `start` whose span
/// in `storage` fits in `room` elements (at least one element), ending, short
/// of the last, where the largest slab of whole inner axes that fits ends: a
/// chunk of whole slabs is copied out as one box, not as a box and a part.
fn fitting_len(storage: &Storage, start: u64, left: u64, room: u64) -> u64 {
    let fits = |len| storage.range_span(start, len) <= room;
    let mut len = left.min(room);
    if !fits(len) {
        // One element fits; `len` does not. The span grows with the length.
        let (mut fitting, mut too_long) = (1, len);
        while too_long - fitting > 1 {
            let middle = fitting + (too_long - fitting) / 2;
            match fits(middle) {
                true => fitting = middle,
                false => too_long = middle,
            }
        }
        len = fitting;
    }
    if len == left {
        return len;
    }
    let extents = storage.extents();
    let slab = (1..=extents.len())
        .map(|k| extents[k..].iter().product::<u64>())
        .find(|&slab| slab <= len)
        .unwrap_or(1);
    match (start + len) / slab * slab {
        end if end > start => end - start,
        _ => len,
    }
}

/// Whether the rows of `piece` at `strides` run along its last axis (which is
/// contiguous or of extent 1), rather than as rows of one element along it.
fn contiguous_rows(piece: &Piece, strides: &[u64]) -> bool {
    let inner = piece.ndims - 1;
    strides[inner] == 1 || piece.extents[inner] == 1
}

/// The first row of a plane of a piece: `len` elements from `start`,
/// contiguous in its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Row {
    start: u64,
    len: u64,
}

/// The planes of `piece` at `strides`, in its C order: with `by_rows`
/// ([`contiguous_rows`]) and two axes or more, all its rows at one index of
/// the axes before its last two, `pitch` elements apart; with `by_rows` and one
/// axis, the one row; else the elements along its last axis, as rows of one
/// element that axis's stride apart (which a read spans, gaps along, where
/// they are short: the real part of a complex array is not read element by
/// element).
fn piece_planes(piece: &Piece, strides: &[u64], by_rows: bool) -> PiecePlanes {
    let n = piece.ndims;
    let mut axes = [Axis::default(); MAX_DIMS];
    for k in 0..n {
        axes[k] = Axis {
            extent: piece.extents[k],
            stride: strides[k],
        };
    }
    let (len, dims, rows, pitch) = match (by_rows, n) {
        (true, 2..) => (
            piece.extents[n - 1],
            n - 2,
            piece.extents[n - 2],
            strides[n - 2],
        ),
        (true, _) => (piece.extents[n - 1], n - 1, 1, 0),
        (false, _) => (1, n - 1, piece.extents[n - 1], strides[n - 1]),
    };
    PiecePlanes {
        axes,
        dims,
        index: [0; MAX_DIMS],
        at: piece.offset,
        len,
        rows,
        pitch,
        left: piece.elements() / (len * rows),
    }
}

/// An axis the planes of a piece step along.
#[derive(Clone, Copy, Debug, Default)]
struct Axis {
    extent: u64,
    stride: u64,
}

/// The planes of a piece ([`piece_planes`]), each found from the last by one
/// step along its axes, innermost first (no division per plane).
struct PiecePlanes {
    /// The piece's axes; the first `dims` are the ones planes step along.
    axes: [Axis; MAX_DIMS],
    dims: usize,
    /// The next plane's index along each of those axes.
    index: [u64; MAX_DIMS],
    /// The next plane's first element.
    at: u64,
    /// Elements in a row.
    len: u64,
    /// Rows in a plane.
    rows: u64,
    /// Elements from one row of a plane to the next.
    pitch: u64,
    /// Planes not yet given.
    left: u64,
}

impl Iterator for PiecePlanes {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        self.left = self.left.checked_sub(1)?;
        let row = Row {
            start: self.at,
            len: self.len,
        };
        for k in (0..self.dims).rev() {
            let axis = self.axes[k];
            self.index[k] += 1;
            if self.index[k] < axis.extent {
                self.at += axis.stride;
                break;
            }
            self.at -= (axis.extent - 1) * axis.stride;
            self.index[k] = 0;
        }
        Some(row)
    }
}

/// The elements of stream `spec` as one box, when they are: the overlap of the
/// sender's input box and the receiver's output box, in a plan that keeps the
/// shape, holding every element of the stream. Both ends of a stream decide
/// alike, from the layouts.
fn stream_box(plan: &RankPlan, spec: ScheduledStream) -> Option<StreamBox> {
    let (input, output) = (plan.layouts.input(), plan.layouts.output());
    if input.shape() != output.shape() {
        return None;
    }
    let (sender, receiver) = match spec.side {
        Side::Receive => (spec.peer, plan.rank),
        Side::Send => (plan.rank, spec.peer),
    };
    let (source, target) = (input.rank_box(sender), output.rank_box(receiver));
    let shared = source.intersection(&target)?;
    (shared.len() == spec.elems).then_some(StreamBox {
        source,
        target,
        shared,
    })
}

/// A stream whose elements are one box ([`stream_box`]).
struct StreamBox {
    /// The sender's input box.
    source: GridBox,
    /// The receiver's output box.
    target: GridBox,
    /// The stream's elements.
    shared: GridBox,
}

impl StreamBox {
    /// How the receiver reads the box from the sender's `input` into its
    /// `output`: both windows with the axes in the order of the sender's
    /// strides, those of extent 1 outermost, so that the innermost is the
    /// sender's contiguous axis wherever it has one.
    fn read(&self, input: &Storage, output: &Storage, plan: &RankPlan) -> Result<BoxRead> {
        let extents = &self.shared.extents;
        let mut order: Vec<usize> = (0..extents.len()).collect();
        order.sort_by_key(|&k| (extents[k] > 1, std::cmp::Reverse(input.strides()[k])));
        let window = |storage: &Storage, outer| {
            storage.window(&self.shared.offsets_within(outer), extents, &order)
        };
        let remote = window(input, &self.source);
        let size = plan.elem_size;
        let bounce = remote
            .storage
            .keeping_gaps((SKIPPED_GAP_BYTES / size) as u64);
        let (total, room) = (self.shared.len(), (bounce_bytes(size) / size) as u64);
        let (mut chunks, mut start) = (Vec::new(), 0);
        while start < total {
            let len = fitting_len(&bounce, start, total - start, room);
            let base = bounce.range_span(0, start + 1) - 1;
            let chunk = Chunk { len, base };
            try_push(&mut chunks, chunk, "the direct reads' chunks", plan.rank)?;
            start += len;
        }
        Ok(BoxRead {
            bounce,
            remote,
            local: window(output, &self.target),
            chunks,
        })
    }
}

/// `run` cut into pieces of at most `room` elements (at least one).
fn bounce_pieces(run: JointRun, room: u64) -> impl Iterator<Item = JointRun> + Clone {
    let mut rest = Some(run);
    std::iter::from_fn(move || {
        let (head, tail) = rest?.split(room.max(1));
        rest = tail;
        Some(head)
    })
}

/// The joint runs of `stream` when they average at least `limits.direct_bytes /
/// READ_BYTES_DIVISOR` (both ends of the stream see the same runs): listed for a
/// receive, whose reads replay them, empty for a send; `None` when they are
/// shorter. One walk, reading at most one run more than the stream's bytes allow
/// at that average, so a list holds at most one run per 32 KiB by default.
fn long_runs(
    plan: &RankPlan,
    stream: ScheduledStream,
    limits: MessageLimits,
) -> Result<Option<Vec<JointRun>>> {
    let receive = stream.side == Side::Receive;
    let runs = match receive {
        true => plan.recv_runs(stream.peer),
        false => plan.send_runs(stream.peer),
    };
    let bytes = stream.elems.saturating_mul(plan.elem_size as u64);
    let most = bytes / (limits.direct_bytes as u64 / READ_BYTES_DIVISOR).max(1);
    let mut listed = Vec::new();
    for (count, run) in JointRuns::new(runs).enumerate() {
        if count as u64 == most {
            return Ok(None);
        }
        if receive {
            try_push(&mut listed, run, "the direct reads' runs", plan.rank)?;
        }
    }
    Ok(Some(listed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::groups::ReshapeSide;

    /// The offset of C-order position `flat` of `storage`.
    fn address(storage: &Storage, flat: u64) -> u64 {
        let (mut rest, mut at) = (flat, 0);
        for (&extent, &stride) in storage.extents().iter().zip(storage.strides()).rev() {
            at += rest % extent * stride;
            rest /= extent;
        }
        at
    }

    #[test]
    fn chunks_fit_the_room_and_end_on_whole_slabs() {
        // Planes of 4 rows of 5, rows 6 apart, planes 40 apart.
        let halo = Storage::new(&[3, 4, 5], &[40, 6, 1], ReshapeSide::Input, 8, 0).unwrap();
        let kept = halo.keeping_gaps(2);
        assert_eq!(kept.strides(), [23, 6, 1]);
        // Room for a plane and a half: one plane.
        assert_eq!(fitting_len(&kept, 0, 60, 35), 20);
        // Room for two rows and a bit, from the second row: two rows.
        assert_eq!(fitting_len(&kept, 5, 55, 13), 10);
        // Room for less than a row: what fits.
        assert_eq!(fitting_len(&kept, 0, 60, 3), 3);
        // Rows of 10 with a closed gap, room for one row and a bit: the row
        // (a proportional guess would have taken half of it).
        let rows = Storage::new(&[2, 10], &[20, 1], ReshapeSide::Input, 8, 0).unwrap();
        assert_eq!(fitting_len(&rows.keeping_gaps(0), 0, 20, 11), 10);
        assert_eq!(fitting_len(&rows.keeping_gaps(0), 0, 20, 9), 9);
        // The last chunk takes what is left.
        assert_eq!(fitting_len(&kept, 40, 20, 60), 20);
        let mut start = 0;
        while start < 60 {
            let len = fitting_len(&kept, start, 60 - start, 30);
            assert!(len > 0 && kept.range_span(start, len) <= 30);
            start += len;
        }
    }

    #[test]
    fn piece_planes_give_every_element_of_the_range_in_order() {
        // Halo'd and strided boxes of 3, 2 and 1 axes, and a last axis of one
        // element at a stride of 3.
        let storages = [
            (vec![3, 4, 5], vec![40, 6, 1]),
            (vec![3, 4, 5], vec![90, 22, 2]),
            (vec![6, 10], vec![13, 1]),
            (vec![6, 10], vec![1, 7]),
            (vec![60], vec![1]),
            (vec![60], vec![2]),
            (vec![20, 3, 1], vec![10, 3, 3]),
        ];
        for (extents, strides) in &storages {
            let s = &Storage::new(extents, strides, ReshapeSide::Input, 8, 0).unwrap();
            let last = extents.len() - 1;
            for (start, len) in [(0, 60), (7, 1), (3, 29), (13, 40), (59, 1)] {
                let mut seen = Vec::new();
                for piece in s.pieces(start, len) {
                    let by_rows = contiguous_rows(&piece, s.strides());
                    assert_eq!(by_rows, strides[last] == 1 || piece.extents[last] == 1);
                    let planes = piece_planes(&piece, s.strides(), by_rows);
                    let (rows, pitch) = (planes.rows, planes.pitch);
                    for row in planes {
                        for r in 0..rows {
                            let start = row.start + r * pitch;
                            seen.extend(start..start + row.len);
                        }
                    }
                }
                let want: Vec<u64> = (start..start + len).map(|f| address(s, f)).collect();
                assert_eq!(seen, want, "{start}+{len} at {:?}", s.strides());
            }
        }
    }
}
