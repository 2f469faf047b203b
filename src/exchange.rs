//! Executes one rank's plan over MPI: the local copy, then rounds of point-to-point
//! messages, one per peer and round, each described in place by an MPI datatype (no
//! staging copy, no all-to-all). Sender and receiver cut the same global runs into
//! the same messages, so the k-th message of a pair is posted in round k on both
//! sides, which keeps the rounds deadlock-free.
//!
//! In place, the data this rank sends is first packed into a staging buffer (its
//! only extra memory: exactly the bytes that leave), the kept elements are moved to
//! their output positions, and the receives then land directly in the buffer.

use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::comm::{Comm, check, count};
use crate::error::Result;
use crate::faults::try_vec;
use crate::planner::{RankPlan, Transfer};
use crate::runs::{MessageCutter, MessageLimits, Placement, Segment};

/// One direction of the traffic with one peer.
struct Stream {
    peer: c_int,
    cutter: MessageCutter,
    segments: Vec<Segment>,
    lengths: Vec<c_int>,
    displacements: Vec<ffi::MPI_Aint>,
}

/// Which way a stream's messages go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Send,
    Receive,
}

impl Stream {
    fn new(
        transfer: &Transfer,
        side: Side,
        placement: Placement,
        plan: &RankPlan,
        limits: MessageLimits,
    ) -> Result<Stream> {
        let runs = match side {
            Side::Send => plan.send_runs(transfer.peer),
            Side::Receive => plan.recv_runs(transfer.peer),
        };
        let most = limits
            .max_runs
            .min(usize::try_from(transfer.elems).unwrap_or(usize::MAX));
        Ok(Stream {
            peer: transfer.peer as c_int,
            cutter: MessageCutter::new(runs, placement, plan.elem_size, limits),
            segments: try_vec(most, "the message segments", plan.rank)?,
            lengths: try_vec(most, "the datatype block lengths", plan.rank)?,
            displacements: try_vec(most, "the datatype displacements", plan.rank)?,
        })
    }

    /// Cuts the next message; false when the stream is exhausted.
    fn advance(&mut self) -> bool {
        self.cutter.next_message(&mut self.segments)
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
struct Round {
    requests: Vec<ffi::MPI_Request>,
    datatypes: Vec<ffi::MPI_Datatype>,
}

impl Round {
    /// Posts the current message of `stream` on `buffer`.
    ///
    /// # Safety
    /// The message must lie inside `buffer`.
    unsafe fn post(
        &mut self,
        stream: &mut Stream,
        comm: &Comm,
        buffer: *mut u8,
        side: Side,
    ) -> Result<()> {
        let (offset, n, datatype) = stream.describe()?;
        // SAFETY: reading an MPI constant handle.
        if datatype != unsafe { ffi::RSMPI_UINT8_T } {
            self.datatypes.push(datatype);
        }
        // SAFETY: reading an MPI constant handle.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: the caller guarantees the message lies inside buffer.
        let (code, call) = unsafe {
            let at = buffer.add(offset).cast::<c_void>();
            match side {
                Side::Send => (
                    ffi::MPI_Isend(at, n, datatype, stream.peer, 0, comm.raw(), &mut request),
                    "MPI_Isend",
                ),
                Side::Receive => (
                    ffi::MPI_Irecv(at, n, datatype, stream.peer, 0, comm.raw(), &mut request),
                    "MPI_Irecv",
                ),
            }
        };
        check(code, call)?;
        self.requests.push(request);
        Ok(())
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

/// One execution of a plan on this rank, with every buffer it needs allocated up
/// front (so an allocation failure is found, and agreed, before any message).
pub struct Exchange<'a> {
    plan: &'a RankPlan,
    recvs: Vec<Stream>,
    sends: Vec<Stream>,
    round: Round,
    /// The packed sends, in place only.
    staging: Option<Vec<u8>>,
}

impl<'a> Exchange<'a> {
    /// Allocates the message descriptions of `plan` within `limits`, and for an
    /// in-place execution the staging buffer of the sends.
    pub fn prepare(
        plan: &'a RankPlan,
        limits: MessageLimits,
        in_place: bool,
    ) -> Result<Exchange<'a>> {
        let size = plan.elem_size;
        let mut recvs = try_vec(plan.recvs.len(), "the receive streams", plan.rank)?;
        for t in &plan.recvs {
            recvs.push(Stream::new(
                t,
                Side::Receive,
                Placement::Pattern(plan.output_pattern()),
                plan,
                limits,
            )?);
        }
        let mut sends = try_vec(plan.sends.len(), "the send streams", plan.rank)?;
        let mut packed = 0;
        for t in &plan.sends {
            let placement = match in_place {
                true => Placement::Packed { next: packed },
                false => Placement::Pattern(plan.input_pattern()),
            };
            sends.push(Stream::new(t, Side::Send, placement, plan, limits)?);
            packed += t.elems as usize * size;
        }
        let staging = in_place
            .then(|| try_vec(packed, "the in-place send staging", plan.rank))
            .transpose()?;
        let peers = plan.recvs.len() + plan.sends.len();
        Ok(Exchange {
            plan,
            recvs,
            sends,
            round: Round {
                requests: try_vec(peers, "the MPI requests", plan.rank)?,
                datatypes: try_vec(peers, "the MPI datatypes", plan.rank)?,
            },
            staging,
        })
    }

    /// Runs the local copy and every message (collective over `comm`).
    ///
    /// # Safety
    /// `input` must be readable for the plan's input size and `output` writable for
    /// its output size. Out of place (as prepared) they must not overlap; in place they
    /// must be equal and the buffer hold the larger of both sizes. Every rank of `comm`
    /// must run its own plan of the same reshape.
    pub unsafe fn run(mut self, comm: &Comm, input: *const u8, output: *mut u8) -> Result<()> {
        let plan = self.plan;
        let send_base = match self.staging.as_mut() {
            // SAFETY: forwarded from the caller.
            Some(staging) => unsafe { stage_in_place(plan, staging, output) },
            None => input,
        };
        let mut first = true;
        loop {
            self.recvs.retain_mut(Stream::advance);
            self.sends.retain_mut(Stream::advance);
            for stream in &mut self.recvs {
                // SAFETY: the message lies inside the output buffer (planner invariant).
                unsafe { self.round.post(stream, comm, output, Side::Receive) }?;
            }
            for stream in &mut self.sends {
                // SAFETY: the message lies inside the send buffer (planner invariant).
                unsafe {
                    self.round
                        .post(stream, comm, send_base.cast_mut(), Side::Send)
                }?;
            }
            if first && self.staging.is_none() {
                // SAFETY: forwarded from the caller.
                unsafe { self.copy_local(input, output) };
            }
            first = false;
            if self.round.requests.is_empty() {
                return Ok(());
            }
            self.round.wait()?;
        }
    }

    /// # Safety
    /// As [`Exchange::run`], out of place.
    unsafe fn copy_local(&self, input: *const u8, output: *mut u8) {
        let size = self.plan.elem_size;
        let in_bytes = self.plan.input_elems() as usize * size;
        let out_bytes = self.plan.output_elems() as usize * size;
        // SAFETY: the caller guarantees both buffers' sizes and that they are disjoint.
        let (from, to) = unsafe {
            (
                slice_or_empty(input, in_bytes),
                slice_or_empty_mut(output, out_bytes),
            )
        };
        self.plan.copy_local(from, to);
    }
}

/// Packs the sends into `staging` and moves the kept elements within `buffer`;
/// returns where the sends are read from.
///
/// # Safety
/// `buffer` must hold the larger of the plan's input and output sizes.
unsafe fn stage_in_place(plan: &RankPlan, staging: &mut Vec<u8>, buffer: *mut u8) -> *const u8 {
    let size = plan.elem_size;
    let in_bytes = plan.input_elems() as usize * size;
    let len = in_bytes.max(plan.output_elems() as usize * size);
    staging.resize(staging.capacity(), 0);
    // SAFETY: as documented.
    let buffer = unsafe { slice_or_empty_mut(buffer, len) };
    plan.pack_sends(&buffer[..in_bytes], staging);
    plan.move_kept_in_place(buffer);
    staging.as_ptr()
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
