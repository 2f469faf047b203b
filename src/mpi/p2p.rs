//! Point-to-point MPI shared by both exchange engines, on the plan's private
//! communicator: starting one send or receive (of contiguous bytes, of blocks at a
//! stride through the plan's hvector datatype for them, or of a list of blocks
//! through its indexed datatype, made once per plan, for the in-place schedule's
//! messages of several pieces), completing requests, and cancelling them after a
//! failure. Both engines reach it through [`Transport`].

use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::core::error::{Error, Result};
use crate::core::faults::injected_exchange_fault;
use crate::mpi::comm::Comm;
use crate::mpi::datatypes::{IndexedDatatype, with_fields, with_joined};
use crate::mpi::status::{check, count};
use crate::mpi::transport::{
    Between, Block, Bytes, ControlTags, Envelope, FieldBytes, ListPart, MAX_LIST_PARTS, ReadRows,
    Transport,
};
use crate::mpi::waiting::{Waits, poll_giving_way};
use crate::mpi::world_handler::WorldErrorsReturned;
use crate::planning::schedule::Side;

/// The data of one MPI message: `count` items of `datatype` from `at`.
#[derive(Clone, Copy, Debug)]
struct Typed {
    /// Where the datatype's displacements start.
    at: *mut u8,
    /// How many items.
    count: c_int,
    /// The items' MPI datatype.
    datatype: ffi::MPI_Datatype,
}

/// Starts the send (`MPI_Isend`) or receive (`MPI_Irecv`) of `data` over
/// `comm` as `envelope` says.
///
/// # Safety
/// `data` valid for the message (readable for a send, writable for a receive)
/// until `request` completes.
unsafe fn start(
    comm: &Comm,
    envelope: Envelope,
    data: Typed,
    request: &mut ffi::MPI_Request,
) -> Result<()> {
    let Typed {
        at,
        count,
        datatype,
    } = data;
    let (at, peer, tag) = (at.cast::<c_void>(), envelope.peer as c_int, envelope.tag);
    // SAFETY: as documented.
    let (code, call) = unsafe {
        match envelope.side {
            Side::Send => (
                ffi::MPI_Isend(at, count, datatype, peer, tag, comm.raw(), request),
                "MPI_Isend",
            ),
            Side::Receive => (
                ffi::MPI_Irecv(at, count, datatype, peer, tag, comm.raw(), request),
                "MPI_Irecv",
            ),
        }
    };
    check(code, call)
}

/// Starts the send or receive of `bytes`: as bytes when contiguous, else through
/// the plan's hvector datatype for its blocks (made at the first message of that
/// shape, [`crate::mpi::datatypes`]).
///
/// # Safety
/// Every block of `bytes` valid for the message (readable for a send, writable
/// for a receive) until `request` completes.
unsafe fn start_bytes(
    comm: &Comm,
    envelope: Envelope,
    bytes: Bytes,
    request: &mut ffi::MPI_Request,
) -> Result<()> {
    if bytes.shape.is_contiguous() {
        let data = Typed {
            at: bytes.at,
            count: count(bytes.total_bytes())?,
            // SAFETY: reading an MPI constant handle.
            datatype: unsafe { ffi::RSMPI_UINT8_T },
        };
        // SAFETY: as documented.
        return unsafe { start(comm, envelope, data, request) };
    }
    comm.strided_datatypes()
        .with_datatype(bytes.shape, |datatype| {
            let data = Typed {
                at: bytes.at,
                count: 1,
                datatype,
            };
            // SAFETY: as documented; the datatype's displacements start at the first
            // block.
            unsafe { start(comm, envelope, data, request) }
        })
}

/// Starts the send or receive of every field's blocks of `fields` as one
/// message: through an hindexed datatype of one item per field, the item the
/// field's bytes (contiguous) or the plan's hvector datatype for its blocks.
///
/// # Safety
/// Every block of every field valid for the message until `request` completes.
unsafe fn start_fields(
    comm: &Comm,
    envelope: Envelope,
    fields: FieldBytes<'_>,
    request: &mut ffi::MPI_Request,
) -> Result<()> {
    let at = fields.field(0).at;
    let start_typed = |datatype| {
        let data = Typed {
            at,
            count: 1,
            datatype,
        };
        // SAFETY: as documented; the datatype's displacements start at the
        // first field's first block.
        unsafe { start(comm, envelope, data, request) }
    };
    let shape = fields.shape;
    if shape.is_contiguous() {
        // SAFETY: reading an MPI constant handle.
        let byte = unsafe { ffi::RSMPI_UINT8_T };
        return with_fields(fields.bases, (shape.total_bytes(), byte), start_typed);
    }
    comm.strided_datatypes().with_datatype(shape, |hvector| {
        with_fields(fields.bases, (1, hvector), start_typed)
    })
}

/// Completes every request of `requests` (see [`Transport::complete_all`]),
/// waiting as [`poll_giving_way`] does where `waits` are
/// [`Waits::polling`], errors returned as `waits` say.
fn complete_all(requests: &mut [ffi::MPI_Request], blocking: bool, waits: Waits) -> Result<bool> {
    injected_exchange_fault()?;
    let _returned = WorldErrorsReturned::during(waits.world_errors_returned);
    let (n, all) = (count(requests.len())?, requests.as_mut_ptr());
    let mut done: c_int = 1;
    // SAFETY: the slice holds requests.len() valid (or null) requests.
    let (code, call) = unsafe {
        let statuses = ffi::RSMPI_STATUSES_IGNORE;
        match blocking {
            true if waits.polling() => (
                poll_giving_way(
                    || {
                        let code = ffi::MPI_Testall(n, all, &mut done, statuses);
                        (code, done != 0)
                    },
                    waits,
                ),
                "MPI_Testall",
            ),
            true => (wait_each(requests), "MPI_Wait"),
            false => (ffi::MPI_Testall(n, all, &mut done, statuses), "MPI_Testall"),
        }
    };
    check(code, call)?;
    Ok(done != 0)
}

/// Waits for each request of `requests` in turn (`MPI_Wait`), up to the first
/// that fails; returns its code, or 0. Not `MPI_Waitall`: Open MPI 4.1's, above
/// `MPI_THREAD_SINGLE`, never returns once a request fails (a truncated
/// receive), where its `MPI_Wait` returns the error.
fn wait_each(requests: &mut [ffi::MPI_Request]) -> c_int {
    for request in requests {
        // SAFETY: a valid or null request (a null one returns at once).
        let code = unsafe { ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE) };
        if code != 0 {
            return code;
        }
    }
    0
}

/// Cancels every active request of `requests` and waits for it (MPI guarantees that
/// a cancelled request's wait returns, whatever the other ranks do), errors
/// returned as `waits` say.
fn cancel_all(requests: &mut [ffi::MPI_Request], waits: Waits) {
    let _returned = WorldErrorsReturned::during(waits.world_errors_returned);
    for request in requests {
        // SAFETY: reading an MPI constant handle.
        if *request == unsafe { ffi::RSMPI_REQUEST_NULL } {
            continue;
        }
        // SAFETY: an active request; errors are moot here, the execution has
        // already failed.
        unsafe {
            ffi::MPI_Cancel(request);
            ffi::MPI_Wait(request, ffi::RSMPI_STATUS_IGNORE);
        }
    }
}

impl Transport for Comm {
    type Request = ffi::MPI_Request;

    fn null_request() -> ffi::MPI_Request {
        // SAFETY: reading an MPI constant handle.
        unsafe { ffi::RSMPI_REQUEST_NULL }
    }

    fn tag(&self, execution: u64) -> c_int {
        Comm::tag(self, execution)
    }

    fn control_tags(&self, execution: u64) -> ControlTags {
        Comm::control_tags(self, execution)
    }

    unsafe fn read(&self, peer: usize, runs: &[ReadRows], between: Between) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.node_reads().read(peer, runs, between) }
    }

    type BlockList = IndexedDatatype;

    fn block_list(&self, blocks: &[Block]) -> Result<IndexedDatatype> {
        IndexedDatatype::new(blocks)
    }

    unsafe fn start_lists(
        &self,
        envelope: Envelope,
        parts: &[ListPart<'_, IndexedDatatype>],
        request: &mut ffi::MPI_Request,
    ) -> Result<()> {
        let typed = |at, datatype| Typed {
            at,
            count: 1,
            datatype,
        };
        match parts {
            // SAFETY: forwarded from the caller; the list's offsets count from its
            // base.
            [one] => unsafe { start(self, envelope, typed(one.base, one.list.raw()), request) },
            [first, second] => {
                let distance = (second.base as isize).wrapping_sub(first.base as isize);
                with_joined(first.list, (distance as _, second.list), |datatype| {
                    // SAFETY: forwarded from the caller; the second part lies
                    // `distance` bytes from the first's base.
                    unsafe { start(self, envelope, typed(first.base, datatype), request) }
                })
            }
            _ => Err(Error::Internal(format!(
                "{} block lists in one message, more than {MAX_LIST_PARTS}",
                parts.len()
            ))),
        }
    }

    unsafe fn start(
        &self,
        envelope: Envelope,
        bytes: Bytes,
        request: &mut ffi::MPI_Request,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { start_bytes(self, envelope, bytes, request) }
    }

    unsafe fn start_fields(
        &self,
        envelope: Envelope,
        fields: FieldBytes<'_>,
        request: &mut ffi::MPI_Request,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { start_fields(self, envelope, fields, request) }
    }

    fn complete_all(&self, requests: &mut [ffi::MPI_Request], blocking: bool) -> Result<bool> {
        complete_all(requests, blocking, self.waits())
    }

    fn complete_some(
        &self,
        requests: &mut [ffi::MPI_Request],
        completed: &mut [c_int],
        blocking: bool,
    ) -> Result<usize> {
        injected_exchange_fault()?;
        assert!(completed.len() >= requests.len(), "room for every index");
        let _returned = WorldErrorsReturned::during(self.waits().world_errors_returned);
        let (n, all, indices) = (
            count(requests.len())?,
            requests.as_mut_ptr(),
            completed.as_mut_ptr(),
        );
        let mut done: c_int = 0;
        // SAFETY: both arrays hold requests.len() entries (checked above); finished
        // requests become MPI_REQUEST_NULL, which later calls skip.
        let code = unsafe {
            let statuses = ffi::RSMPI_STATUSES_IGNORE;
            match blocking {
                // Until a request completes, or none is active (MPI_UNDEFINED).
                true if self.waits().polling() => poll_giving_way(
                    || {
                        let code = ffi::MPI_Testsome(n, all, &mut done, indices, statuses);
                        (code, done != 0)
                    },
                    self.waits(),
                ),
                true => ffi::MPI_Waitsome(n, all, &mut done, indices, statuses),
                false => ffi::MPI_Testsome(n, all, &mut done, indices, statuses),
            }
        };
        let call = if blocking {
            "MPI_Waitsome"
        } else {
            "MPI_Testsome"
        };
        check(code, call)?;
        // MPI_UNDEFINED (negative) when no request was active.
        Ok(done.max(0) as usize)
    }

    fn cancel_all(&self, requests: &mut [ffi::MPI_Request]) {
        cancel_all(requests, self.waits());
    }
}
