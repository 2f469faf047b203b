//! Direct reads in an execution: a stream between two ranks that read each other's
//! memory (as the exchange was told when it was made) and whose joint runs are
//! long (at least half the direct message size on average) moves no message.
//! When every rank executes out of place, the sender announces the address of its
//! input (one 8-byte message), the receiver reads the stream's joint runs straight
//! from it into its output as soon as the announcement arrives
//! ([`Transport::read`]), and acknowledges (8 bytes: 0, or 1 when the read
//! failed); the sender completes its execution only once acknowledged, so its
//! input stays unchanged while it is read. Executions with a rank in place send
//! these streams' messages as usual.
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
use crate::distribution::joint_runs::{JointRun, JointRuns};
use crate::distribution::storage::Storage;
use crate::memory::Host;
use crate::memory::strided::{Copier, Direction, RunAt};
use crate::mpi::transport::{Bytes, Envelope, ReadRun, Transport};
use crate::planning::messages::MessageLimits;
use crate::planning::planner::RankPlan;
use crate::planning::schedule::{ScheduledStream, Side};

/// Streams whose joint runs average at least the direct message size
/// ([`MessageLimits::direct_bytes`], 64 KiB) over this move by direct reads:
/// long runs gain from being read, short ones lose (docs/src/performance/analysis.md,
/// "Direct reads on a crowded node").
const READ_BYTES_DIVISOR: u64 = 2;

/// Most runs read in one call of [`Transport::read`].
const RUNS_PER_READ: usize = 1024;

/// Bytes read at a time into a strided output's bounce buffer, then scattered:
/// small enough to stay in cache between the two.
const BOUNCE_BYTES: usize = 256 << 10;

/// The streams of one rank's plan that move by direct reads, with what their
/// executions need, allocated when the plan is created.
pub(super) struct DirectReads<T: Transport> {
    /// The direct streams: receives first, then sends.
    streams: Vec<DirectStream>,
    /// How many of `streams` are receives.
    receives: usize,
    /// Per direct stream, the announced input address (received by a receive
    /// stream, sent by a send stream), then per direct stream its acknowledgement.
    payloads: Vec<u64>,
    /// Per direct stream its announcement's request, then per direct stream its
    /// acknowledgement's.
    requests: Vec<T::Request>,
    /// Indices of completed announcements, filled by [`Transport::complete_some`].
    completed: Vec<c_int>,
    /// The runs of one read.
    runs: Vec<ReadRun>,
    /// Where the runs are read before they are scattered into a strided output
    /// (empty for a dense one).
    bounce: Vec<u8>,
    /// The bytes of the direct receive streams.
    bytes_read: u64,
}

/// One stream that moves by direct reads.
struct DirectStream {
    peer: usize,
    /// A receive's joint runs (its source offsets in the sender's input), listed
    /// once: walking them from the global runs took as much processor time as
    /// reading them (a pencil transpose joins 1 KiB global runs into 64 KiB joint
    /// runs); `None` for a send.
    runs: Option<Vec<JointRun>>,
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

impl<T: Transport> DirectReads<T> {
    /// Picks the streams of `streams` that move by direct reads when the ranks
    /// allow it (`reads_from`, a property of the pair) and their joint runs average
    /// at least half `limits.direct_bytes` ([`READ_BYTES_DIVISOR`]), and marks
    /// them. With a `strided_output`, reads land in a bounce buffer first.
    pub(super) fn new(
        plan: &RankPlan,
        streams: &mut [Stream],
        limits: MessageLimits,
        reads_from: impl Fn(usize) -> bool,
        strided_output: bool,
    ) -> Result<DirectReads<T>> {
        let (mut direct, mut bytes_read) = (Vec::new(), 0);
        for side in [Side::Receive, Side::Send] {
            for stream in streams.iter_mut().filter(|s| s.spec.side == side) {
                let peer = stream.spec.peer;
                if !reads_from(peer) {
                    continue;
                }
                let Some(runs) = long_runs(plan, stream.spec, limits)? else {
                    continue;
                };
                stream.direct = true;
                let receive = side == Side::Receive;
                if receive {
                    bytes_read += stream.spec.elems * plan.elem_size as u64;
                }
                let runs = receive.then_some(runs);
                direct.push(DirectStream { peer, runs });
            }
        }
        let receives = direct.iter().filter(|d| d.runs.is_some()).count();
        let n = direct.len();
        let rank = plan.rank;
        let mut payloads = try_vec(2 * n, "the direct reads' control messages", rank)?;
        payloads.resize(2 * n, 0);
        let mut requests = try_vec(2 * n, "the direct reads' requests", rank)?;
        requests.resize(2 * n, T::null_request());
        let mut completed = try_vec(n, "the direct reads' completions", rank)?;
        completed.resize(n, 0);
        let runs = try_vec(if n > 0 { RUNS_PER_READ } else { 0 }, "the read runs", rank)?;
        let bounce_bytes = match strided_output && receives > 0 {
            true => BOUNCE_BYTES.max(plan.elem_size),
            false => 0,
        };
        let mut bounce = try_vec(bounce_bytes, "the direct reads' bounce buffer", rank)?;
        bounce.resize(bounce_bytes, 0);
        Ok(DirectReads {
            bounce,
            streams: direct,
            receives,
            payloads,
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

    /// The bytes of the direct receive streams.
    pub(super) fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Starts an execution's direct reads: announces `input` to every direct
    /// receiver and posts every announcement and acknowledgement receive.
    ///
    /// # Safety
    /// `input` must stay readable and unchanged until the execution completes.
    pub(super) unsafe fn start(
        &mut self,
        transport: &T,
        execution: u64,
        input: *const u8,
    ) -> Result<DirectExecution> {
        let tags = transport.control_tags(execution);
        let n = self.streams.len();
        for i in 0..n {
            let (peer, receives) = (self.streams[i].peer, self.streams[i].runs.is_some());
            let side = if receives { Side::Receive } else { Side::Send };
            if !receives {
                self.payloads[i] = input as u64;
            }
            // SAFETY: the payloads live in the plan until the execution completes.
            unsafe {
                self.post(transport, i, side, peer, tags.announcement)?;
                if !receives {
                    self.post(transport, n + i, Side::Receive, peer, tags.acknowledgement)?;
                }
            }
        }
        Ok(DirectExecution {
            active: true,
            reads_left: self.receives,
            failure: None,
        })
    }

    /// Reads every stream whose announcement has arrived into `output` (one
    /// field: a batch's direct streams move by messages), and
    /// acknowledges it: until every stream is read when `blocking`. Returns
    /// whether every stream is read.
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
                let n = self.streams.len();
                self.payloads[n + i] = u64::from(read.is_err());
                if let Err(e) = read {
                    state.failure.get_or_insert(e);
                }
                let peer = self.streams[i].peer;
                // SAFETY: the payload lives in the plan until the execution completes.
                unsafe { self.post(transport, n + i, Side::Send, peer, tag) }?;
                state.reads_left -= 1;
            }
        }
        Ok(true)
    }

    /// Starts control message `index` (its payload and request) on `side` with
    /// `peer`.
    ///
    /// # Safety
    /// The payloads must stay in place until the message completes.
    unsafe fn post(
        &mut self,
        transport: &T,
        index: usize,
        side: Side,
        peer: usize,
        tag: c_int,
    ) -> Result<()> {
        let envelope = Envelope { side, peer, tag };
        let payload = &mut self.payloads[index];
        let bytes = Bytes::contiguous((payload as *mut u64).cast(), size_of::<u64>());
        // SAFETY: forwarded from the caller.
        unsafe { transport.start(envelope, bytes, &mut self.requests[index]) }
    }

    /// Reads direct receive stream `i` from its sender's announced input.
    ///
    /// # Safety
    /// As [`DirectReads::serve`].
    unsafe fn read(&mut self, transport: &T, i: usize, output: Memory<'_>) -> Result<()> {
        if let Some(storage) = output.strided {
            // SAFETY: forwarded from the caller.
            return unsafe { self.read_strided(transport, i, output, storage) };
        }
        let (remote_base, size) = (self.payloads[i] as usize, output.elem_size);
        let stream = &self.streams[i];
        let runs = stream.runs.as_deref().expect("a receive stream has runs");
        for chunk in runs.chunks(RUNS_PER_READ) {
            self.runs.clear();
            self.runs.extend(chunk.iter().map(|run| ReadRun {
                remote: remote_base + run.source as usize * size,
                local: output.bases[0].wrapping_add(run.target as usize * size),
                len: run.len as usize * size,
            }));
            // SAFETY: forwarded from the caller: the runs lie in the output, which
            // nothing else writes there, and in the sender's input.
            unsafe { transport.read(stream.peer, &self.runs) }?;
        }
        Ok(())
    }

    /// Reads direct receive stream `i` into the bounce buffer a bounce at a
    /// time, each scattered into the output's `storage` once read.
    ///
    /// # Safety
    /// As [`DirectReads::serve`].
    unsafe fn read_strided(
        &mut self,
        transport: &T,
        i: usize,
        output: Memory<'_>,
        storage: &Storage,
    ) -> Result<()> {
        let (remote_base, size) = (self.payloads[i] as usize, output.elem_size);
        let stream = &self.streams[i];
        let runs = stream.runs.as_deref().expect("a receive stream has runs");
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
                self.runs.push(ReadRun {
                    remote: remote_base + run.source as usize * size,
                    local: bounce.wrapping_add(filled as usize * size),
                    len: run.len as usize * size,
                });
                (filled, taken) = (filled + run.len, taken + 1);
            }
            // SAFETY: forwarded from the caller: the runs lie in the bounce
            // buffer and in the sender's input.
            unsafe { transport.read(stream.peer, &self.runs) }?;
            let (mut copier, mut at) = (Copier::new(&Host, size, bounce, output.bases[0]), 0);
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
        let failed = (self.receives..n).find(|&i| self.payloads[n + i] != 0);
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
