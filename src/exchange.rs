//! Executes one rank's plan over MPI: the local copy, then rounds of point-to-point
//! messages, one per peer and round, each described in place by an MPI datatype (no
//! staging copy, no all-to-all). Sender and receiver cut the same global runs into
//! the same messages, so the k-th message of a pair is posted in round k on both
//! sides, which keeps the rounds deadlock-free.

use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::comm::{Comm, check, count};
use crate::error::Result;
use crate::layout::Pattern;
use crate::planner::RankPlan;
use crate::runs::{MessageCutter, MessageLimits, Segment, SharedRuns};

/// One direction of the traffic with one peer.
struct Stream {
    peer: c_int,
    cutter: MessageCutter,
    local: Pattern,
    segments: Vec<Segment>,
    lengths: Vec<c_int>,
    displacements: Vec<ffi::MPI_Aint>,
}

impl Stream {
    fn new(
        peer: usize,
        runs: SharedRuns,
        local: Pattern,
        plan: &RankPlan,
        limits: MessageLimits,
    ) -> Stream {
        Stream {
            peer: peer as c_int,
            cutter: MessageCutter::new(runs, plan.elem_size, limits),
            local,
            segments: Vec::new(),
            lengths: Vec::new(),
            displacements: Vec::new(),
        }
    }

    /// Cuts the next message; false when the stream is exhausted.
    fn advance(&mut self) -> bool {
        self.cutter.next_message(&self.local, &mut self.segments)
    }

    /// The current message as (offset, count, datatype); the datatype must be freed
    /// with [`free_datatype`] after the message completes.
    fn describe(&mut self) -> Result<(usize, c_int, ffi::MPI_Datatype)> {
        // SAFETY: reading an MPI constant handle.
        let byte = unsafe { ffi::RSMPI_UINT8_T };
        if let [only] = self.segments[..] {
            return Ok((only.offset, count(only.len)?, byte));
        }
        self.lengths.clear();
        self.displacements.clear();
        for s in &self.segments {
            self.lengths.push(count(s.len)?);
            self.displacements.push(s.offset as ffi::MPI_Aint);
        }
        let mut datatype = byte;
        // SAFETY: both arrays hold segments.len() entries; datatype is a local handle.
        check(
            unsafe {
                ffi::MPI_Type_create_hindexed(
                    count(self.lengths.len())?,
                    self.lengths.as_ptr(),
                    self.displacements.as_ptr(),
                    byte,
                    &mut datatype,
                )
            },
            "MPI_Type_create_hindexed",
        )?;
        // SAFETY: datatype was just created.
        check(
            unsafe { ffi::MPI_Type_commit(&mut datatype) },
            "MPI_Type_commit",
        )?;
        Ok((0, 1, datatype))
    }
}

/// The requests and derived datatypes of one round.
#[derive(Default)]
struct Round {
    requests: Vec<ffi::MPI_Request>,
    datatypes: Vec<ffi::MPI_Datatype>,
}

impl Round {
    fn keep(&mut self, datatype: ffi::MPI_Datatype) {
        // SAFETY: reading an MPI constant handle.
        if datatype != unsafe { ffi::RSMPI_UINT8_T } {
            self.datatypes.push(datatype);
        }
    }

    fn wait(&mut self) -> Result<()> {
        // SAFETY: the requests were started by this round and are completed here.
        let waited = check(
            unsafe {
                ffi::MPI_Waitall(
                    count(self.requests.len())?,
                    self.requests.as_mut_ptr(),
                    ffi::RSMPI_STATUSES_IGNORE,
                )
            },
            "MPI_Waitall",
        );
        self.requests.clear();
        self.free_datatypes();
        waited
    }

    fn free_datatypes(&mut self) {
        for mut datatype in self.datatypes.drain(..) {
            // SAFETY: each datatype was committed by this round and is freed once.
            unsafe { ffi::MPI_Type_free(&mut datatype) };
        }
    }
}

impl Drop for Round {
    fn drop(&mut self) {
        self.free_datatypes();
    }
}

/// Runs `plan` on this rank: the local copy and every message.
///
/// # Safety
/// `input` and `output` must be valid for the plan's input and output sizes and must
/// not overlap; every rank of `comm` must run its own plan of the same reshape.
pub unsafe fn execute(
    plan: &RankPlan,
    comm: &Comm,
    limits: MessageLimits,
    input: *const u8,
    output: *mut u8,
) -> Result<()> {
    let mut recvs: Vec<Stream> = plan
        .recvs
        .iter()
        .map(|t| {
            Stream::new(
                t.peer,
                plan.recv_runs(t.peer),
                plan.output_pattern(),
                plan,
                limits,
            )
        })
        .collect();
    let mut sends: Vec<Stream> = plan
        .sends
        .iter()
        .map(|t| {
            Stream::new(
                t.peer,
                plan.send_runs(t.peer),
                plan.input_pattern(),
                plan,
                limits,
            )
        })
        .collect();
    let mut round = Round::default();
    let mut first = true;
    loop {
        recvs.retain_mut(Stream::advance);
        sends.retain_mut(Stream::advance);
        for stream in &mut recvs {
            let (offset, n, datatype) = stream.describe()?;
            round.keep(datatype);
            let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
            // SAFETY: the message lies inside the output buffer (planner invariant).
            check(
                unsafe {
                    ffi::MPI_Irecv(
                        output.add(offset).cast::<c_void>(),
                        n,
                        datatype,
                        stream.peer,
                        0,
                        comm.raw(),
                        &mut request,
                    )
                },
                "MPI_Irecv",
            )?;
            round.requests.push(request);
        }
        for stream in &mut sends {
            let (offset, n, datatype) = stream.describe()?;
            round.keep(datatype);
            let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
            // SAFETY: the message lies inside the input buffer (planner invariant).
            check(
                unsafe {
                    ffi::MPI_Isend(
                        input.add(offset).cast::<c_void>(),
                        n,
                        datatype,
                        stream.peer,
                        0,
                        comm.raw(),
                        &mut request,
                    )
                },
                "MPI_Isend",
            )?;
            round.requests.push(request);
        }
        if first {
            let in_bytes = plan.input_elems() as usize * plan.elem_size;
            let out_bytes = plan.output_elems() as usize * plan.elem_size;
            // SAFETY: the caller guarantees both buffers' sizes and that they are disjoint.
            let (from, to) = unsafe {
                (
                    slice_or_empty(input, in_bytes),
                    slice_or_empty_mut(output, out_bytes),
                )
            };
            plan.copy_local(from, to);
            first = false;
        }
        if round.requests.is_empty() {
            return Ok(());
        }
        round.wait()?;
    }
}

/// The slice at `ptr` of `len` bytes; `ptr` may be null when `len` is 0.
///
/// # Safety
/// `ptr` must be readable for `len` bytes.
unsafe fn slice_or_empty<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// The mutable slice at `ptr` of `len` bytes; `ptr` may be null when `len` is 0.
///
/// # Safety
/// `ptr` must be writable for `len` bytes and not aliased.
unsafe fn slice_or_empty_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        &mut []
    } else {
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}
