//! Direct reads between the ranks of one node: a receiver copies long runs straight
//! from the sender's buffer into its own with Linux's cross-memory attach
//! (`process_vm_readv`), the single copy MPI libraries make for a large contiguous
//! message within a node, here for runs at any stride and one system call per
//! 1024 runs. MPICH 4.0 moves a message that is contiguous at both ends in one
//! copy, but a strided one (a datatype, or packed through a slot) in two, and a
//! message per run pays a rendezvous per run; on a crowded node reading directly
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
use crate::mpi::transport::ReadRun;
use crate::mpi::waiting::Waits;

/// Most runs one `process_vm_readv` reads (Linux's `IOV_MAX`).
const RUNS_PER_CALL: usize = 1024;

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

    /// Reads `runs` from `rank`'s memory, `RUNS_PER_CALL` per system call.
    ///
    /// # Safety
    /// As [`crate::mpi::transport::Transport::read`].
    pub unsafe fn read(&self, rank: usize, runs: &[ReadRun]) -> Result<()> {
        let pid = self.pid_of(rank).ok_or_else(|| {
            Error::Internal(format!("rank {rank} is not read directly from this rank"))
        })?;
        for chunk in runs.chunks(RUNS_PER_CALL) {
            // SAFETY: forwarded from the caller.
            unsafe { read_chunk(pid, chunk) }.map_err(|errno| {
                Error::Mpi(format!(
                    "process_vm_readv of {} runs from rank {rank} (pid {pid}) failed: {}",
                    chunk.len(),
                    std::io::Error::from_raw_os_error(errno)
                ))
            })?;
        }
        Ok(())
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
        let read = unsafe { read_chunk(self.peer.pid, &[run]) };
        read.is_ok() && value == PROBE
    }
}

/// Reads `runs` (at most [`RUNS_PER_CALL`]) from process `pid` in one call;
/// returns the error number when it fails or reads less.
///
/// # Safety
/// As [`NodeReads::read`].
#[cfg(direct_reads)]
unsafe fn read_chunk(pid: libc::pid_t, runs: &[ReadRun]) -> std::result::Result<(), c_int> {
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let (mut local, mut remote) = ([empty; RUNS_PER_CALL], [empty; RUNS_PER_CALL]);
    let mut total = 0;
    for ((run, l), r) in runs.iter().zip(&mut local).zip(&mut remote) {
        *l = libc::iovec {
            iov_base: run.local.cast::<libc::c_void>(),
            iov_len: run.len,
        };
        *r = libc::iovec {
            iov_base: run.remote as *mut libc::c_void,
            iov_len: run.len,
        };
        total += run.len;
    }
    let n = runs.len() as libc::c_ulong;
    // SAFETY: the first `n` local iovecs are writable (caller's contract); the
    // kernel checks the remote ones against the peer's mappings.
    let read = unsafe { libc::process_vm_readv(pid, local.as_ptr(), n, remote.as_ptr(), n, 0) };
    match usize::try_from(read) {
        Ok(done) if done == total => Ok(()),
        Ok(_) => Err(libc::EFAULT),
        Err(_) => Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)),
    }
}

/// Without cross-memory attach nothing is read: [`NodeReads::establish`] finds
/// no readable peer, so this is never called.
///
/// # Safety
/// As [`NodeReads::read`] (this one reads nothing).
#[cfg(not(direct_reads))]
unsafe fn read_chunk(_pid: libc::pid_t, _runs: &[ReadRun]) -> std::result::Result<(), c_int> {
    Err(libc::ENOSYS)
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
