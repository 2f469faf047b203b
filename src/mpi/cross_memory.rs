//! Direct reads between the ranks of one node: a receiver copies long runs straight
//! from the sender's buffer into its own with Linux's cross-memory attach
//! (`process_vm_readv`), the single copy MPI libraries make for a large contiguous
//! message within a node, here for runs at any stride, one system call per 1024
//! iovecs, runs a short gap apart in one iovec. MPICH 4.0 moves a message that
//! is contiguous at both ends in one copy, but a strided one (a datatype, or
//! packed through a slot) in two, and a message per run pays a rendezvous per
//! run; on a crowded node reading directly
//! beat every MPI way (docs/src/performance/analysis.md, "Direct reads on a
//! crowded node").
//!
//! Which ranks may read each other is decided once per private communicator, at
//! the first plan on it that reads directly (collective; see
//! [`crate::mpi::library::Switches::proposed_direct_reads`]): the ranks of each
//! node (`MPI_Comm_split_type`) gather one another's process ids and the address
//! of a probe word, each reads every other's probe, and the node agrees (a
//! minimum over its ranks, any rank that turned direct reads off vetoing) that
//! all its pairs read directly or none does. Ranks that share a process (SimGrid's SMPI runs
//! ranks as threads) never read each other, and neither do ranks the kernel does
//! not let read (Yama's ptrace scope, containers, another user). Reads only ever
//! copy into the reader's memory.
//!
//! Only Linux and Android have cross-memory attach: built for any other platform,
//! or with `--cfg distreshape_no_direct_reads`, the crate lacks the `direct_reads`
//! configuration (set by `build.rs`), no rank reads another directly, and every
//! byte travels through MPI.

use std::os::raw::c_int;

use mpi::ffi;

use crate::core::error::{Error, Result};
use crate::mpi::collective::{allgather_i64, allreduce_i64};
use crate::mpi::status::check;
use crate::mpi::transport::{Between, ReadRows, ReadRun};
use crate::mpi::waiting::Waits;

/// Most iovecs on either side of one `process_vm_readv` (Linux's `IOV_MAX`).
#[cfg(direct_reads)]
const IOVECS_PER_CALL: usize = 1024;

/// A gap of at most this many bytes between two runs of one read, in the
/// peer's memory, is read along with them into a scratch buffer and dropped,
/// so that one iovec covers both runs: the kernel pins the pages of each
/// remote iovec on its own, and runs shorter than a page (the rows of a halo'd
/// box) then had it pin each page several times. A gap shorter than a page
/// lies in pages that hold bytes of its two runs, so it is readable whenever
/// they are, and it costs less to copy than an iovec's pinning
/// (docs/src/performance/grids.md, "Reads across short gaps"). A reader that
/// leaves such gaps in its own scratch too ([`Between::Scratch`]) reads the
/// gap there, so that one iovec covers both runs on its side as well.
pub(crate) const SKIPPED_GAP_BYTES: usize = 1024;

/// Whether a read that takes a gap of `remote_gap` bytes of the peer's memory
/// along may put those bytes in the `local_gap` bytes between two runs here:
/// the gaps are as long, short ([`SKIPPED_GAP_BYTES`]), and empty or this
/// rank's scratch. The one rule of every transport that reads gaps along (the
/// simulated network writes junk wherever it allows).
#[cfg(any(direct_reads, feature = "testing"))]
pub(crate) fn gap_lands_here(remote_gap: usize, local_gap: usize, between: Between) -> bool {
    remote_gap == local_gap
        && remote_gap <= SKIPPED_GAP_BYTES
        && (remote_gap == 0 || between == Between::Scratch)
}

/// The value of the probe word the ranks of a node read from each other.
static PROBE: u64 = 0x4452_5f52_4541_4431;

/// The ranks of the communicator on this node that this rank reads directly.
#[derive(Debug)]
pub struct NodeReads {
    /// The readable ranks of the node, sorted by rank (this rank not among them).
    peers: Vec<NodePeer>,
}

/// One readable rank of the node.
#[derive(Clone, Copy, Debug)]
struct NodePeer {
    /// Its rank in the communicator.
    rank: usize,
    /// Its process.
    pid: libc::pid_t,
}

/// What each rank of a node tells the others: its rank in the communicator, its
/// process and the address of its probe word.
const ANNOUNCED: usize = 3;

impl NodeReads {
    /// Decides which ranks of `comm` this rank (`node.rank`) reads directly:
    /// collective over `comm`, whose error handler returns. None when the MPI
    /// library is SimGrid's SMPI (`node.smpi`, the same on every rank), whose
    /// ranks share one process, or when the platform has no cross-memory attach.
    pub fn establish(comm: ffi::MPI_Comm, node: Node) -> Result<NodeReads> {
        let rank = node.rank;
        if node.smpi || !cfg!(direct_reads) {
            return Ok(NodeReads::none());
        }
        let proposed = node.proposed;
        let node = NodeComm::split(comm, node)?;
        let members = node.gather(rank)?;
        let readable = proposed
            && members
                .iter()
                .all(|m| m.peer.rank == rank || m.answers_probe());
        if !node.all(readable)? {
            return Ok(NodeReads::none());
        }
        let mut peers: Vec<NodePeer> = members
            .iter()
            .map(|m| m.peer)
            .filter(|p| p.rank != rank)
            .collect();
        peers.sort_by_key(|p| p.rank);
        Ok(NodeReads { peers })
    }

    /// No rank read directly.
    pub const fn none() -> NodeReads {
        NodeReads { peers: Vec::new() }
    }

    /// The process of `rank` when this rank reads it directly.
    fn pid_of(&self, rank: usize) -> Option<libc::pid_t> {
        let at = self.peers.binary_search_by_key(&rank, |p| p.rank).ok()?;
        Some(self.peers[at].pid)
    }

    /// True when this rank reads `rank` directly (and `rank` this one).
    pub fn reads_from(&self, rank: usize) -> bool {
        self.pid_of(rank).is_some()
    }

    /// Reads the rows of `runs` from `rank`'s memory, up to [`IOVECS_PER_CALL`]
    /// iovecs per system call, reading short gaps between them along
    /// ([`SKIPPED_GAP_BYTES`]).
    ///
    /// # Safety
    /// As [`crate::mpi::transport::Transport::read`].
    pub unsafe fn read(&self, rank: usize, runs: &[ReadRows], between: Between) -> Result<()> {
        let pid = self.pid_of(rank).ok_or_else(|| {
            Error::Internal(format!("rank {rank} is not read directly from this rank"))
        })?;
        // SAFETY: forwarded from the caller.
        unsafe { read_runs(pid, runs, between) }.map_err(|errno| {
            Error::Mpi(format!(
                "process_vm_readv of {} runs from rank {rank} (pid {pid}) failed: {}",
                runs.len(),
                std::io::Error::from_raw_os_error(errno)
            ))
        })
    }
}

/// What one rank of the node announced to the others.
#[derive(Clone, Copy, Debug)]
struct NodeMember {
    /// Its rank in the communicator and its process.
    peer: NodePeer,
    /// The address of its probe word.
    probe: usize,
}

impl NodeMember {
    /// True when its probe word reads back as [`PROBE`] from this process (never
    /// when it is this process: ranks sharing one are threads, as in SMPI).
    fn answers_probe(&self) -> bool {
        // SAFETY: getpid only reads this process's id.
        if self.peer.pid == unsafe { libc::getpid() } {
            return false;
        }
        let mut value = 0u64;
        let run = ReadRun {
            remote: self.probe,
            local: (&raw mut value).cast(),
            len: size_of::<u64>(),
        };
        // SAFETY: `value` is ours and writable; the kernel checks the remote range.
        let read = unsafe { read_runs(self.peer.pid, &[ReadRows::one(run)], Between::Untouched) };
        read.is_ok() && value == PROBE
    }
}

/// Reads the rows of `runs` from process `pid`, those of one [`ReadRows`] as
/// one run with their gaps where [`spanned`] allows, in as few system calls as
/// the iovecs allow; returns the error number when one fails or reads less.
///
/// # Safety
/// As [`NodeReads::read`].
#[cfg(direct_reads)]
unsafe fn read_runs(
    pid: libc::pid_t,
    runs: &[ReadRows],
    between: Between,
) -> std::result::Result<(), c_int> {
    let mut scratch = [0u8; SKIPPED_GAP_BYTES];
    let mut call = Call::new();
    let mut push = |run: &ReadRun| -> std::result::Result<(), c_int> {
        if !call.has_room() {
            // SAFETY: forwarded from the caller; the gaps go to `scratch`, or
            // between the runs when the caller allows it.
            unsafe { call.read(pid) }?;
        }
        call.push(run, scratch.as_mut_ptr(), between);
        Ok(())
    };
    for rows in runs {
        match spanned(rows, between) {
            Some(run) => push(&run)?,
            None => rows.each().try_for_each(|run| push(&run))?,
        }
    }
    // SAFETY: as above.
    unsafe { call.read(pid) }
}

/// The rows of `rows` as one run with the gaps between them, when the gaps
/// may be read along and land here: as long on both sides, at most
/// [`SKIPPED_GAP_BYTES`], and this rank's scratch (or none). The rows of a
/// halo'd box then take one iovec a side however many they are.
#[cfg(direct_reads)]
fn spanned(rows: &ReadRows, between: Between) -> Option<ReadRun> {
    let (first, pitch) = (rows.first, rows.pitch);
    let gaps = (
        pitch.remote.checked_sub(first.len)?,
        pitch.local.checked_sub(first.len)?,
    );
    let joined = gap_lands_here(gaps.0, gaps.1, between);
    (rows.rows > 1 && joined).then(|| ReadRun {
        len: (rows.rows - 1) * pitch.remote + first.len,
        ..first
    })
}

/// Without cross-memory attach nothing is read: [`NodeReads::establish`] finds
/// no readable peer, so this is never called.
///
/// # Safety
/// As [`NodeReads::read`] (this one reads nothing).
#[cfg(not(direct_reads))]
unsafe fn read_runs(
    _pid: libc::pid_t,
    _runs: &[ReadRows],
    _between: Between,
) -> std::result::Result<(), c_int> {
    Err(libc::ENOSYS)
}

/// The iovecs of one `process_vm_readv`: the runs' ranges in the peer's memory,
/// joined across short gaps ([`SKIPPED_GAP_BYTES`]), and their ranges in this
/// rank's, joined where they follow one another, with each joined gap's bytes
/// going to a scratch buffer, or between the two runs when the caller allows
/// it ([`Between::Scratch`]).
#[cfg(direct_reads)]
struct Call {
    /// The ranges in this rank's memory.
    local: Iovecs,
    /// The ranges in the peer's memory.
    remote: Iovecs,
    /// The bytes the remote iovecs cover.
    bytes: usize,
}

#[cfg(direct_reads)]
impl Call {
    fn new() -> Call {
        Call {
            local: Iovecs::new_const(),
            remote: Iovecs::new_const(),
            bytes: 0,
        }
    }

    /// True when one more run fits: a gap's iovec and its own on this side, one
    /// on the peer's.
    fn has_room(&self) -> bool {
        self.local.len() + 2 <= IOVECS_PER_CALL && self.remote.len() < IOVECS_PER_CALL
    }

    /// Empties the iovecs.
    fn clear(&mut self) {
        self.local.clear();
        self.remote.clear();
        self.bytes = 0;
    }

    /// Adds `run`; when it starts at most [`SKIPPED_GAP_BYTES`] after the last
    /// run's end in the peer's memory, the peer's range grows over the gap and
    /// the gap's bytes land in `scratch`, or, when `between` allows it and the
    /// run follows the last after the same gap here, between the two (this
    /// side's range grows too).
    fn push(&mut self, run: &ReadRun, scratch: *mut u8, between: Between) {
        let gap = self
            .remote
            .last()
            .and_then(|last| {
                run.remote
                    .checked_sub(last.iov_base as usize + last.iov_len)
            })
            .filter(|&gap| gap <= SKIPPED_GAP_BYTES);
        match (gap, self.remote.last_mut()) {
            (Some(gap), Some(last)) => last.iov_len += gap + run.len,
            _ => self.remote.push(iovec(run.remote as *mut u8, run.len)),
        }
        let inserted = gap.unwrap_or(0);
        if !self.extend_local(run, inserted, between) {
            if inserted > 0 {
                self.local.push(iovec(scratch, inserted));
            }
            self.local.push(iovec(run.local, run.len));
        }
        self.bytes += inserted + run.len;
    }

    /// Extends the last local iovec over the `gap` bytes the peer's range
    /// grew by and over `run`, when those bytes may land here
    /// ([`gap_lands_here`]); returns whether it did.
    fn extend_local(&mut self, run: &ReadRun, gap: usize, between: Between) -> bool {
        let Some(last) = self.local.last_mut() else {
            return false;
        };
        let end = last.iov_base as usize + last.iov_len;
        let lands = (run.local as usize)
            .checked_sub(end)
            .is_some_and(|local_gap| gap_lands_here(gap, local_gap, between));
        if lands {
            last.iov_len += gap + run.len;
        }
        lands
    }

    /// Reads the iovecs in one system call, if there are any, and empties them.
    ///
    /// # Safety
    /// The local iovecs are writable ([`NodeReads::read`]'s contract).
    unsafe fn read(&mut self, pid: libc::pid_t) -> std::result::Result<(), c_int> {
        if self.remote.is_empty() {
            return Ok(());
        }
        let (locals, remotes, bytes) = (self.local.len(), self.remote.len(), self.bytes);
        self.clear();
        // SAFETY: the first `locals` local iovecs are written and writable
        // (caller's contract); the kernel checks the remote ones against the
        // peer's mappings.
        let read = unsafe {
            libc::process_vm_readv(
                pid,
                self.local.as_ptr(),
                locals as libc::c_ulong,
                self.remote.as_ptr(),
                remotes as libc::c_ulong,
                0,
            )
        };
        match usize::try_from(read) {
            Ok(done) if done == bytes => Ok(()),
            Ok(_) => Err(libc::EFAULT),
            Err(_) => Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)),
        }
    }
}

/// Up to [`IOVECS_PER_CALL`] iovecs, none written before it is pushed: a
/// call's are never cleared first, which cost more than most reads' own
/// iovecs.
#[cfg(direct_reads)]
type Iovecs = arrayvec::ArrayVec<libc::iovec, IOVECS_PER_CALL>;

/// The iovec of `len` bytes at `at`.
#[cfg(direct_reads)]
fn iovec(at: *mut u8, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: at.cast(),
        iov_len: len,
    }
}

/// What the decision of direct reads knows of this rank.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    /// This rank in the plan's communicator.
    pub rank: usize,
    /// The MPI library is SimGrid's SMPI.
    pub smpi: bool,
    /// This rank proposes direct reads (the plan's option `direct_reads`).
    pub proposed: bool,
    /// How its waits go.
    pub waits: Waits,
}

/// The ranks of one node, as a communicator of their own while the decision is
/// made.
struct NodeComm {
    raw: ffi::MPI_Comm,
    /// How its collectives' waits go.
    waits: Waits,
}

impl Drop for NodeComm {
    fn drop(&mut self) {
        // SAFETY: our own communicator, freed once.
        unsafe { ffi::MPI_Comm_free(&mut self.raw) };
    }
}

impl NodeComm {
    /// The ranks of `comm` that share this rank's node (collective over `comm`).
    fn split(comm: ffi::MPI_Comm, node: Node) -> Result<NodeComm> {
        let rank = node.rank;
        // SAFETY: reading MPI constant handles.
        let (mut raw, shared, info) = unsafe {
            (
                ffi::RSMPI_COMM_NULL,
                ffi::RSMPI_COMM_TYPE_SHARED,
                ffi::RSMPI_INFO_NULL,
            )
        };
        // SAFETY: a valid communicator and a writable handle.
        let code = unsafe { ffi::MPI_Comm_split_type(comm, shared, rank as c_int, info, &mut raw) };
        check(code, "MPI_Comm_split_type")?;
        Ok(NodeComm {
            raw,
            waits: node.waits,
        })
    }

    /// Gathers what every rank of the node announces.
    fn gather(&self, rank: usize) -> Result<Vec<NodeMember>> {
        let mut size: c_int = 0;
        // SAFETY: our own communicator and a writable int.
        let code = unsafe { ffi::MPI_Comm_size(self.raw, &mut size) };
        check(code, "MPI_Comm_size")?;
        // SAFETY: getpid only reads this process's id.
        let pid = unsafe { libc::getpid() };
        let mine = [rank as i64, i64::from(pid), &raw const PROBE as i64];
        let mut all = vec![0i64; ANNOUNCED * size as usize];
        allgather_i64(self.raw, self.waits, &mine, &mut all)?;
        Ok(all
            .chunks(ANNOUNCED)
            .map(|m| NodeMember {
                peer: NodePeer {
                    rank: m[0] as usize,
                    pid: m[1] as libc::pid_t,
                },
                probe: m[2] as usize,
            })
            .collect())
    }

    /// True on every rank of the node when `mine` is true on all of them.
    fn all(&self, mine: bool) -> Result<bool> {
        let mut all = [0];
        // SAFETY: reading an MPI constant handle.
        let min = unsafe { ffi::RSMPI_MIN };
        allreduce_i64(self.raw, self.waits, min, &[i64::from(mine)], &mut all)?;
        Ok(all[0] != 0)
    }
}

#[cfg(all(test, direct_reads))]
mod tests {
    use super::*;
    use crate::mpi::transport::Pitch;

    /// Runs of `len` bytes every `stride` bytes of `source`, read into `target`
    /// one after another.
    fn rows(source: &[u8], target: &mut [u8], len: usize, stride: usize) -> Vec<ReadRun> {
        (0..target.len() / len)
            .map(|r| ReadRun {
                remote: source[r * stride..].as_ptr() as usize,
                local: target[r * len..].as_mut_ptr(),
                len,
            })
            .collect()
    }

    /// Each of `runs` as rows of one.
    fn single(runs: &[ReadRun]) -> Vec<ReadRows> {
        runs.iter().copied().map(ReadRows::one).collect()
    }

    /// How many remote iovecs `runs` take, in calls of at most
    /// [`IOVECS_PER_CALL`] on each side.
    fn remote_iovecs(runs: &[ReadRun]) -> usize {
        let (mut call, mut scratch, mut total) = (Call::new(), [0u8; SKIPPED_GAP_BYTES], 0);
        for run in runs {
            if !call.has_room() {
                total += call.remote.len();
                call.clear();
            }
            call.push(run, scratch.as_mut_ptr(), Between::Untouched);
        }
        total + call.remote.len()
    }

    #[test]
    fn short_gaps_are_read_along_and_dropped() {
        let source: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
        // SAFETY: getpid only reads this process's id.
        let pid = unsafe { libc::getpid() };
        for (len, stride, joined) in [
            (1024, 1056, true),
            (8, 8 + SKIPPED_GAP_BYTES, true),
            (8, 9 + SKIPPED_GAP_BYTES, false),
            (3000, 3000, true),
            (24, 5000, false),
        ] {
            let rows_read = (source.len() - len) / stride;
            let mut target = vec![0xEEu8; rows_read * len + 64];
            let (read_into, sentinel) = target.split_at_mut(rows_read * len);
            let runs = rows(&source, read_into, len, stride);
            let want = if joined {
                runs.len().div_ceil(IOVECS_PER_CALL / 2)
            } else {
                runs.len()
            };
            assert_eq!(remote_iovecs(&runs), want, "runs of {len} every {stride}");
            // SAFETY: the local runs lie in `target`, the remote ones in `source`.
            unsafe { read_runs(pid, &single(&runs), Between::Untouched) }
                .expect("read from this process");
            assert!(sentinel.iter().all(|&b| b == 0xEE), "past the runs");
            for (r, row) in target.chunks(len).take(rows_read).enumerate() {
                assert_eq!(
                    row,
                    &source[r * stride..][..len],
                    "row {r} of {len} every {stride}"
                );
            }
        }
    }

    #[test]
    fn runs_going_back_are_not_joined() {
        let source: Vec<u8> = (0..8192).map(|i: u32| (i % 253) as u8).collect();
        let mut target = [0u8; 96];
        let (a, b) = target.split_at_mut(48);
        let runs = [
            ReadRun {
                remote: source[4096..].as_ptr() as usize,
                local: a.as_mut_ptr(),
                len: 48,
            },
            ReadRun {
                remote: source[100..].as_ptr() as usize,
                local: b.as_mut_ptr(),
                len: 48,
            },
        ];
        assert_eq!(remote_iovecs(&runs), 2);
        // SAFETY: as above; getpid only reads this process's id.
        unsafe { read_runs(libc::getpid(), &single(&runs), Between::Untouched) }
            .expect("read from this process");
        assert_eq!(&target[..48], &source[4096..4144]);
        assert_eq!(&target[48..], &source[100..148]);
    }

    #[test]
    fn rows_are_read_as_one_run_only_where_their_gaps_may_land() {
        // Rows of 100 bytes every 132 in this process's memory, read as rows
        // into a target every `pitch` bytes: as one run (the gaps along) when
        // the gaps are as long here, short and scratch; row by row otherwise.
        let source: Vec<u8> = (0..8192).map(|i: u32| (i % 251) as u8).collect();
        let (len, stride, rows) = (100, 132, 40);
        for (pitch, between, one) in [
            (132, Between::Scratch, true),
            (132, Between::Untouched, false),
            (140, Between::Scratch, false),
            (100, Between::Untouched, false),
        ] {
            let mut target = vec![0xEEu8; pitch * rows + 64];
            let read = ReadRows::new(
                ReadRun {
                    remote: source.as_ptr() as usize,
                    local: target.as_mut_ptr(),
                    len,
                },
                rows,
                Pitch {
                    remote: stride,
                    local: pitch,
                },
            );
            assert_eq!(
                spanned(&read, between).is_some(),
                one,
                "{pitch}, {between:?}"
            );
            // SAFETY: the rows (and, as scratch, the gaps between them) lie in
            // `target`, the remote ones in `source`.
            unsafe { read_runs(libc::getpid(), &[read], between) }.expect("read from this process");
            let unread: Vec<u8> = (0..8192).map(|i: u32| (i % 251) as u8).collect();
            assert!(source == unread, "the source unchanged");
            let last = (rows - 1) * pitch + len;
            for (at, &byte) in target.iter().enumerate() {
                let (row, column) = (at / pitch, at % pitch);
                let want = match (column < len && row < rows, one && at < last) {
                    (true, _) => source[row * stride + column],
                    (false, true) => source[at],
                    (false, false) => 0xEE,
                };
                assert_eq!(byte, want, "byte {at}, pitch {pitch}, {between:?}");
            }
        }
    }

    #[test]
    fn gaps_kept_in_scratch_are_read_there_in_one_iovec() {
        // Rows of 100 bytes every 132, read into a target that keeps the same
        // gaps: into the gaps as well when they are scratch, else around them.
        let source: Vec<u8> = (0..8192).map(|i: u32| (i % 251) as u8).collect();
        let (len, stride, rows) = (100, 132, 40);
        for between in [Between::Scratch, Between::Untouched] {
            let mut target = vec![0xEEu8; stride * rows];
            let runs: Vec<ReadRun> = (0..rows)
                .map(|r| ReadRun {
                    remote: source[r * stride..].as_ptr() as usize,
                    local: target[r * stride..].as_mut_ptr(),
                    len,
                })
                .collect();
            let (mut call, mut scratch) = (Call::new(), [0u8; SKIPPED_GAP_BYTES]);
            runs.iter()
                .for_each(|run| call.push(run, scratch.as_mut_ptr(), between));
            let locals = if between == Between::Scratch {
                1
            } else {
                2 * rows - 1
            };
            assert_eq!(
                (call.local.len(), call.remote.len()),
                (locals, 1),
                "{between:?}"
            );
            // SAFETY: the local runs (and the gaps between them) lie in
            // `target`, the remote ones in `source`.
            unsafe { read_runs(libc::getpid(), &single(&runs), between) }
                .expect("read from this process");
            let last = (rows - 1) * stride + len;
            for (at, &byte) in target.iter().enumerate() {
                let in_row = at % stride < len;
                let want = match (in_row, between, at < last) {
                    (true, _, _) | (false, Between::Scratch, true) => source[at],
                    _ => 0xEE,
                };
                assert_eq!(byte, want, "byte {at}, {between:?}");
            }
        }
    }
}
