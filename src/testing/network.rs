//! An in-memory network implementing [`Transport`], so that the tests run every
//! rank's real exchange engines (out of place, and the in-place schedule's rounds)
//! in one process, one thread per rank.
//!
//! It keeps MPI's semantics where the engine's correctness depends on them, and
//! the strictest choice where MPI leaves one: messages match by (source, tag) in
//! the order they were started (MPI's non-overtaking rule), and a send completes
//! only once its matching receive is posted (rendezvous, as MPI does for large
//! messages: no buffering ever hides a missing receive). The bytes move when the
//! two sides match.
//!
//! Pairs of ranks may be made to read each other's memory directly
//! ([`Network::with_direct_reads`]): a read copies the bytes at once, and the
//! report counts them apart from the messages.
//!
//! Every rank's next wait may be made to panic ([`Network::panic_at_next_waits`]),
//! as a bug inside the engine would, once its first messages are posted.
//!
//! A rank that waits for a completion that no rank can cause any more is a
//! deadlock: when every rank that has not finished waits, no rank can post, so the
//! network fails every wait with an error instead of hanging.

use std::collections::{HashMap, VecDeque};
use std::os::raw::c_int;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use crate::core::error::{Error, Result};
use crate::mpi::cross_memory::gap_lands_here;
use crate::mpi::transport::{
    Between, Block, Bytes, ControlTags, Envelope, FieldBytes, ListPart, MAX_LIST_PARTS, ReadRows,
    ReadRun, Transport, copy_runs,
};
use crate::planning::schedule::Side;

/// The request handle of no operation.
const NULL: usize = usize::MAX;

/// Tags per kind of message: data, announcements, acknowledgements.
const TAGS_PER_LANE: u64 = 1 << 16;

/// Kinds of message, each with its lane of tags.
const LANES: u64 = 3;

/// Plans with tags of their own ([`Network::plan_endpoint`]).
pub const PLAN_SLOTS: u64 = 8;

/// How the message of a panic asked for by [`Network::panic_at_next_waits`]
/// begins, so that tests can tell it from a real one.
pub const INJECTED_PANIC: &str = "panic injected by the test network";

/// Messages between the ranks of one simulated communicator.
#[derive(Debug)]
pub struct Network {
    state: Mutex<State>,
    /// Signalled whenever messages match, a rank finishes, or a deadlock is found.
    changed: Condvar,
    /// Row-major over pairs of ranks: whether the two read each other directly.
    direct_reads: Vec<bool>,
    /// True when every direct read fails, as one the kernel refuses.
    reads_fail: bool,
}

/// What the tests check after a simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkReport {
    /// Bytes each rank received in messages.
    pub received: Vec<u64>,
    /// Bytes each rank read directly from other ranks' memory.
    pub read: Vec<u64>,
    /// Data messages matched from each rank to each rank: `messages[from][to]`
    /// (the direct reads' control messages, 8 bytes each, included).
    pub messages: Vec<Vec<usize>>,
    /// Messages started and never matched nor cancelled.
    pub unmatched: usize,
    /// True when the ranks deadlocked.
    pub deadlocked: bool,
    /// Sends and receives that matched with different sizes.
    pub size_mismatches: Vec<String>,
}

/// A message's bytes, moved between the ranks' threads under the network's lock:
/// blocks of one shape, or the blocks of lists (copied when the message starts).
#[derive(Clone, Debug)]
enum Blocks {
    /// Blocks of one shape ([`Transport::start`]).
    Shaped(Bytes),
    /// Each block's first byte and length ([`Transport::start_lists`]).
    Listed(Vec<(*mut u8, usize)>),
}

// SAFETY: the blocks are only dereferenced under the network's lock, while the
// operation is active: its owner keeps them valid and untouched until the
// request completes (the contract of `Transport::start` and
// `Transport::start_lists`).
unsafe impl Send for Blocks {}

impl Blocks {
    /// Each block's first byte and length, in order.
    fn runs(&self) -> Box<dyn Iterator<Item = (*mut u8, usize)> + '_> {
        match self {
            Blocks::Shaped(bytes) => Box::new(bytes.runs()),
            Blocks::Listed(runs) => Box::new(runs.iter().copied()),
        }
    }

    /// How many bytes the message moves.
    fn total_bytes(&self) -> usize {
        self.runs().map(|(_, len)| len).sum()
    }
}

/// One send or receive.
#[derive(Debug)]
struct Operation {
    blocks: Blocks,
    /// The (source, destination, tag) it matches on.
    key: Key,
    side: Side,
    done: bool,
}

/// Who sends to whom, with which tag.
type Key = (usize, usize, c_int);

/// The operations started so far and what waits on what.
#[derive(Debug, Default)]
struct State {
    operations: Vec<Operation>,
    /// Per key, the unmatched sends and receives (indices of `operations`), in the
    /// order they were started: one of the two is always empty.
    unmatched: HashMap<Key, [VecDeque<usize>; 2]>,
    /// Bumped whenever messages match.
    epoch: u64,
    /// Per rank, whether it waits for the epoch to change.
    waiting: Vec<bool>,
    /// Per rank, whether it is done with the network.
    finished: Vec<bool>,
    /// Per rank, the epoch its first completion test since it last waited for
    /// progress saw (`None`: no test since).
    seen: Vec<Option<u64>>,
    /// Per rank, whether its next completion call panics.
    panic_at_wait: Vec<bool>,
    report: NetworkReport,
}

impl Network {
    /// A network of `nranks` ranks, none of which reads another's memory.
    pub fn new(nranks: usize) -> Network {
        Network::with_direct_reads(nranks, |_, _| false)
    }

    /// A network of `nranks` ranks where ranks `a` and `b` read each other's
    /// memory directly when `direct(min(a, b), max(a, b))`.
    pub fn with_direct_reads(nranks: usize, direct: impl Fn(usize, usize) -> bool) -> Network {
        let direct_reads = (0..nranks * nranks)
            .map(|i| {
                let (a, b) = (i / nranks, i % nranks);
                a != b && direct(a.min(b), a.max(b))
            })
            .collect();
        let state = State {
            waiting: vec![false; nranks],
            finished: vec![false; nranks],
            seen: vec![None; nranks],
            panic_at_wait: vec![false; nranks],
            report: NetworkReport::for_ranks(nranks),
            ..State::default()
        };
        Network {
            state: Mutex::new(state),
            changed: Condvar::new(),
            direct_reads,
            reads_fail: false,
        }
    }

    /// The same network with every direct read failing.
    pub fn with_failing_reads(mut self) -> Network {
        self.reads_fail = true;
        self
    }

    /// Rank `rank`'s end of the network.
    pub fn endpoint(&self, rank: usize) -> Endpoint<'_> {
        self.plan_endpoint(rank, 0)
    }

    /// Rank `rank`'s end of the network for the plan in tag slot `slot` (below
    /// [`PLAN_SLOTS`]): plans of one communicator have tags of their own, as
    /// they do on MPI, so that several run at once (a fused execution).
    pub fn plan_endpoint(&self, rank: usize, slot: u64) -> Endpoint<'_> {
        assert!(slot < PLAN_SLOTS, "tag slot {slot} beyond {PLAN_SLOTS}");
        Endpoint {
            network: self,
            rank,
            first_tag: slot * LANES * TAGS_PER_LANE,
        }
    }

    /// Starts another execution on every rank: no rank has finished it, and the
    /// report starts afresh (the messages of earlier executions stay: each
    /// execution has its own tag, so they never match a later one's).
    pub fn start_execution(&self) {
        let mut state = self.lock();
        state.finished.fill(false);
        let nranks = state.finished.len();
        state.report = NetworkReport::for_ranks(nranks);
    }

    /// Makes every rank's next completion call (of messages or of direct reads'
    /// control messages) panic, as a bug inside the engine would once the rank's
    /// first messages are posted.
    pub fn panic_at_next_waits(&self) {
        self.lock().panic_at_wait.fill(true);
    }

    /// What happened in this execution, once every rank has finished it.
    pub fn report(&self) -> NetworkReport {
        let state = self.lock();
        let mut report = state.report.clone();
        report.unmatched = state.unmatched.values().flatten().map(VecDeque::len).sum();
        report
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until the epoch differs from `since` (`Ok`), or fails when every rank
    /// that has not finished waits too: a deadlock.
    fn wait_for_change<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        rank: usize,
        since: u64,
    ) -> Result<MutexGuard<'a, State>> {
        state.waiting[rank] = true;
        loop {
            if state.epoch != since {
                state.waiting[rank] = false;
                return Ok(state);
            }
            let stuck = (0..state.waiting.len()).all(|r| state.waiting[r] || state.finished[r]);
            if stuck || state.report.deadlocked {
                state.report.deadlocked = true;
                state.waiting[rank] = false;
                self.changed.notify_all();
                return Err(Error::Internal(format!(
                    "deadlock: rank {rank} waits and no rank can make progress"
                )));
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl NetworkReport {
    /// The report of nothing yet, for `nranks` ranks.
    fn for_ranks(nranks: usize) -> NetworkReport {
        NetworkReport {
            received: vec![0; nranks],
            read: vec![0; nranks],
            messages: vec![vec![0; nranks]; nranks],
            ..NetworkReport::default()
        }
    }
}

impl State {
    /// Matches the operation `index` with the first unmatched one of the other side
    /// and the same key, moving the bytes; else queues it.
    fn post(&mut self, index: usize) -> bool {
        let (key, side) = (self.operations[index].key, self.operations[index].side);
        let queues = self.unmatched.entry(key).or_default();
        let (mine, theirs) = match side {
            Side::Send => (0, 1),
            Side::Receive => (1, 0),
        };
        let Some(other) = queues[theirs].pop_front() else {
            queues[mine].push_back(index);
            return false;
        };
        let (send, receive) = match side {
            Side::Send => (index, other),
            Side::Receive => (other, index),
        };
        let (from, to) = (
            &self.operations[send].blocks,
            &self.operations[receive].blocks,
        );
        let (sent, received) = (from.total_bytes(), to.total_bytes());
        if sent != received {
            let mismatch = format!("{key:?}: sent {sent} B, receive of {received} B");
            self.report.size_mismatches.push(mismatch);
        } else {
            // SAFETY: both operations are active, so their owners keep the blocks
            // valid (the send's readable, the receive's writable) and untouched;
            // they belong to different ranks' buffers, which do not overlap.
            unsafe { copy_runs(from.runs(), to.runs()) };
        }
        self.report.received[key.1] += received as u64;
        self.report.messages[key.0][key.1] += 1;
        self.operations[send].done = true;
        self.operations[receive].done = true;
        self.epoch += 1;
        self.waiting.fill(false);
        true
    }

    /// True when request `request` is null or its operation has completed.
    fn completed(&self, request: usize) -> bool {
        request == NULL || self.operations[request].done
    }
}

/// One rank's end of a [`Network`].
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<'a> {
    network: &'a Network,
    rank: usize,
    /// The first tag of the plan's slot.
    first_tag: u64,
}

impl Endpoint<'_> {
    /// This endpoint's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// True when this rank and `peer` read each other's memory directly.
    pub fn reads_from(&self, peer: usize) -> bool {
        let nranks = self.network.direct_reads.len().isqrt();
        self.network.direct_reads[self.rank * nranks + peer]
    }

    /// Waits until messages have matched since this rank's first completion test
    /// after its last wait (a non-blocking step that could not complete may test
    /// several sets of requests, and a match between two of its tests can complete
    /// a request the earlier test found pending), or fails on a deadlock. Returns
    /// at once when the rank has tested nothing since its last wait.
    pub fn wait_for_progress(&self) -> Result<()> {
        let mut state = self.network.lock();
        let Some(since) = state.seen[self.rank].take() else {
            return Ok(());
        };
        self.network
            .wait_for_change(state, self.rank, since)
            .map(drop)
    }

    /// Leaves the network: the other ranks no longer wait for this one.
    pub fn finish(&self) {
        let mut state = self.network.lock();
        state.finished[self.rank] = true;
        state.seen[self.rank] = None;
        self.network.changed.notify_all();
    }

    /// Starts the send or receive of `blocks` as `envelope` says, matching it
    /// with the other side when that is already posted.
    fn post(&self, envelope: Envelope, blocks: Blocks, request: &mut usize) {
        let key = match envelope.side {
            Side::Send => (self.rank, envelope.peer, envelope.tag),
            Side::Receive => (envelope.peer, self.rank, envelope.tag),
        };
        let mut state = self.network.lock();
        *request = state.operations.len();
        state.operations.push(Operation {
            blocks,
            key,
            side: envelope.side,
            done: false,
        });
        if state.post(*request) {
            self.network.changed.notify_all();
        }
    }

    /// Runs `body` on the state until it returns `Some`, waiting for progress in
    /// between when `blocking` (else returning `none` at once). Panics instead
    /// when asked to ([`Network::panic_at_next_waits`]), outside the network's lock.
    fn complete<R>(
        &self,
        blocking: bool,
        none: R,
        mut body: impl FnMut(&mut State) -> Option<R>,
    ) -> Result<R> {
        let panic_asked = std::mem::take(&mut self.network.lock().panic_at_wait[self.rank]);
        if panic_asked {
            panic!("{INJECTED_PANIC} in rank {}'s wait", self.rank);
        }
        let mut state = self.network.lock();
        loop {
            let epoch = state.epoch;
            state.seen[self.rank].get_or_insert(epoch);
            if let Some(done) = body(&mut state) {
                return Ok(done);
            }
            if !blocking {
                return Ok(none);
            }
            let since = state.epoch;
            state = self.network.wait_for_change(state, self.rank, since)?;
        }
    }
}

impl Transport for Endpoint<'_> {
    type Request = usize;

    fn null_request() -> usize {
        NULL
    }

    fn tag(&self, execution: u64) -> c_int {
        (self.first_tag + execution % TAGS_PER_LANE) as c_int
    }

    fn control_tags(&self, execution: u64) -> ControlTags {
        let tag = self.tag(execution) as u64;
        ControlTags {
            announcement: (TAGS_PER_LANE + tag) as c_int,
            acknowledgement: (2 * TAGS_PER_LANE + tag) as c_int,
        }
    }

    unsafe fn read(&self, peer: usize, runs: &[ReadRows], between: Between) -> Result<()> {
        if !self.reads_from(peer) {
            return Err(Error::Internal(format!(
                "rank {} does not read rank {peer} directly",
                self.rank
            )));
        }
        if self.network.reads_fail {
            return Err(Error::Mpi(format!(
                "rank {}: the read from rank {peer} failed (simulated)",
                self.rank
            )));
        }
        let mut state = self.network.lock();
        let mut before: Option<ReadRun> = None;
        for run in runs.iter().flat_map(ReadRows::each) {
            if let (Between::Scratch, Some(before)) = (between, &before) {
                // SAFETY: the caller's contract: the bytes between two rows are
                // its scratch under `Between::Scratch`.
                unsafe { spoil_kept_gap(before, &run) };
            }
            // SAFETY: the caller's contract: the local bytes are writable, the
            // peer's readable and unchanged until it learns the read is done; the
            // two are different ranks' buffers.
            unsafe { std::ptr::copy_nonoverlapping(run.remote as *const u8, run.local, run.len) };
            state.report.read[self.rank] += run.len as u64;
            before = Some(run);
        }
        Ok(())
    }

    type BlockList = Vec<Block>;

    fn block_list(&self, blocks: &[Block]) -> Result<Vec<Block>> {
        Ok(blocks.to_vec())
    }

    unsafe fn start_lists(
        &self,
        envelope: Envelope,
        parts: &[ListPart<'_, Vec<Block>>],
        request: &mut usize,
    ) -> Result<()> {
        if parts.len() > MAX_LIST_PARTS {
            let n = parts.len();
            let more = format!("{n} block lists in one message, more than {MAX_LIST_PARTS}");
            return Err(Error::Internal(more));
        }
        let runs = parts.iter().flat_map(|part| {
            let base = part.base;
            (part.list.iter()).map(move |b| (base.wrapping_add(b.offset), b.len))
        });
        self.post(envelope, Blocks::Listed(runs.collect()), request);
        Ok(())
    }

    unsafe fn start(&self, envelope: Envelope, bytes: Bytes, request: &mut usize) -> Result<()> {
        self.post(envelope, Blocks::Shaped(bytes), request);
        Ok(())
    }

    unsafe fn start_fields(
        &self,
        envelope: Envelope,
        fields: FieldBytes<'_>,
        request: &mut usize,
    ) -> Result<()> {
        let runs = (0..fields.bases.len()).flat_map(|i| fields.field(i).runs());
        self.post(envelope, Blocks::Listed(runs.collect()), request);
        Ok(())
    }

    fn complete_all(&self, requests: &mut [usize], blocking: bool) -> Result<bool> {
        self.complete(blocking, false, |state| {
            if !requests.iter().all(|&r| state.completed(r)) {
                return None;
            }
            requests.fill(NULL);
            Some(true)
        })
    }

    fn complete_some(
        &self,
        requests: &mut [usize],
        completed: &mut [c_int],
        blocking: bool,
    ) -> Result<usize> {
        self.complete(blocking, 0, |state| {
            let mut done = 0;
            let mut active = false;
            for (index, request) in requests.iter_mut().enumerate() {
                if *request == NULL {
                    continue;
                }
                active = true;
                if state.operations[*request].done {
                    *request = NULL;
                    completed[done] = index as c_int;
                    done += 1;
                }
            }
            (done > 0 || !active).then_some(done)
        })
    }

    fn cancel_all(&self, requests: &mut [usize]) {
        let mut state = self.network.lock();
        for request in requests.iter_mut().filter(|r| **r != NULL) {
            let operation = &mut state.operations[*request];
            if !operation.done {
                operation.done = true;
                let (key, index) = (operation.key, *request);
                for queue in state.unmatched.get_mut(&key).into_iter().flatten() {
                    queue.retain(|&i| i != index);
                }
            }
            *request = NULL;
        }
    }
}

/// Writes junk where a cross-memory read may put a short gap's bytes
/// ([`Between::Scratch`]): between `run` and the run before it, when the gap
/// between them may land there ([`gap_lands_here`]), so that a reader that
/// keeps anything there is caught.
///
/// # Safety
/// Those bytes writable (the reader's scratch).
unsafe fn spoil_kept_gap(before: &ReadRun, run: &ReadRun) {
    let remote_gap = run.remote.checked_sub(before.remote + before.len);
    let local_end = before.local.wrapping_add(before.len);
    let local_gap = (run.local as usize).checked_sub(local_end as usize);
    match (remote_gap, local_gap) {
        (Some(gap), Some(local)) if gap_lands_here(gap, local, Between::Scratch) => {
            // SAFETY: as documented.
            unsafe { std::ptr::write_bytes(local_end, 0xA5, gap) }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tags of the test's messages: the peer's announcement, its data, and
    /// the stepping rank's acknowledgement of the announcement.
    const ANNOUNCEMENT: c_int = 1;
    const DATA: c_int = 2;
    const ACKNOWLEDGEMENT: c_int = 3;

    /// Starts the message `payload` of `side` between `endpoint` and `peer` with
    /// `tag`; returns its request.
    fn start(endpoint: &Endpoint, side: Side, peer: usize, tag: c_int, payload: &mut u64) -> usize {
        let bytes = Bytes::contiguous((payload as *mut u64).cast(), size_of::<u64>());
        let mut request = NULL;
        // SAFETY: the test declares every payload before its ranks' threads start
        // and keeps it until they have ended, so no match outlives one.
        unsafe { endpoint.start(Envelope { side, peer, tag }, bytes, &mut request) }
            .expect("start");
        request
    }

    /// Rank 1 of the test: receives the acknowledgement of its announcement
    /// (`announce`) into `ack`, then sends `data`.
    fn peer(endpoint: Endpoint, announce: usize, ack: &mut u64, data: &mut u64) -> Result<()> {
        let acknowledged = start(&endpoint, Side::Receive, 0, ACKNOWLEDGEMENT, ack);
        endpoint.complete_all(&mut [announce, acknowledged], true)?;
        let send = start(&endpoint, Side::Send, 0, DATA, data);
        endpoint.complete_all(&mut [send], true).map(drop)
    }

    /// Rank 0 of the test, its receives `announcement` and `message` posted and
    /// the first tested once: tests the second (after the announcement matched),
    /// waits for progress, then steps again: tests the announcement, acknowledges
    /// it (sending `ack`) and receives. Returns the two tests' outcomes (panicking
    /// here would leave the peer waiting).
    fn stepping(
        endpoint: Endpoint,
        announcement: usize,
        message: usize,
        ack: &mut u64,
    ) -> Result<[bool; 2]> {
        let second = endpoint.complete_all(&mut [message], false)?;
        endpoint.wait_for_progress()?;
        let again = endpoint.complete_all(&mut [announcement], false)?;
        let acknowledge = start(&endpoint, Side::Send, 1, ACKNOWLEDGEMENT, ack);
        endpoint.complete_all(&mut [acknowledge, message], true)?;
        Ok([second, again])
    }

    /// A non-blocking step tests two sets of requests, and a message of the
    /// first set matches between the two tests (as a direct read's announcement
    /// may between the reads and the messages): the rank can progress by itself,
    /// so its wait for progress returns, and it completes the exchange with a peer
    /// that waits for it.
    #[test]
    fn a_match_between_two_tests_of_one_step_ends_its_wait() {
        let network = Network::new(2);
        let (rank0, rank1) = (network.endpoint(0), network.endpoint(1));
        let (mut announced, mut received, mut sent_ack, mut got_ack) = (0, 0, 0, 1);
        let (mut address, mut data) = (7, 9);
        let announcement = start(&rank0, Side::Receive, 1, ANNOUNCEMENT, &mut announced);
        let message = start(&rank0, Side::Receive, 1, DATA, &mut received);
        let tested = rank0.complete_all(&mut [announcement], false);
        assert!(!tested.expect("first test"));
        let announce = start(&rank1, Side::Send, 0, ANNOUNCEMENT, &mut address);
        let (stepped, served) = std::thread::scope(|scope| {
            let served = scope.spawn(|| {
                let served = peer(rank1, announce, &mut got_ack, &mut data);
                rank1.finish();
                served
            });
            let stepped = stepping(rank0, announcement, message, &mut sent_ack);
            rank0.finish();
            (stepped, served.join().expect("rank 1"))
        });
        assert_eq!(stepped.expect("rank 0"), [false, true]);
        served.expect("rank 1");
        assert!(!network.report().deadlocked);
        assert_eq!((announced, received, got_ack), (7, 9, 0));
    }
}
