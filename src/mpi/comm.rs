//! The library's private communicator: one duplicate of each caller communicator
//! with MPI_ERRORS_RETURN, cached on it as an attribute and shared by its plans,
//! and the few collectives the planner needs, each checked.

use std::os::raw::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use mpi::ffi;

use crate::core::error::{Error, Result};
use crate::mpi::collective::{allgather_i64, allreduce_i64};
use crate::mpi::cross_memory::{Node, NodeReads};
use crate::mpi::datatypes::StridedDatatypes;
use crate::mpi::library::is_smpi;
use crate::mpi::node::oversubscribed;
use crate::mpi::status::{check, count, mpi_is_usable, require_mpi};
use crate::mpi::transport::ControlTags;
use crate::mpi::waiting::{Waits, complete_collective};
use crate::mpi::world_handler::swapped_for_completions;

/// The raw MPI communicator handle type (`MPI_Comm` of the MPI library we were built with).
pub type RawComm = ffi::MPI_Comm;

/// Most values [`Comm::allreduce_max`] reduces in one call.
pub(crate) const MAX_REDUCED: usize = 256;

/// Plans on one communicator share its private duplicate; each takes the tags of
/// one of this many slots (plan `i` slot `i % PLAN_SLOTS`), so that up to this many
/// plans can have messages in flight at once without matching each other's.
const PLAN_SLOTS: u64 = 1024;

/// A plan's tags are in three lanes, one for each kind of message: data, and the
/// two control messages of direct reads ([`ControlTags`]).
const TAG_LANES: u64 = 3;

/// The private duplicate of one caller communicator, cached on it as an MPI
/// attribute (so it is made once, however many plans use it) and shared by its
/// plans. Freed when the caller's communicator is freed and no plan uses it.
#[derive(Debug)]
struct Shared {
    raw: RawComm,
    rank: usize,
    size: usize,
    /// This process's rank in MPI_COMM_WORLD (which process runs a plan's
    /// executions, also under SimGrid's SMPI, where every rank runs in one).
    process: i32,
    /// Tags each plan has: `(MPI_TAG_UB + 1) / PLAN_SLOTS`, at least 32, in
    /// [`TAG_LANES`] lanes that its executions cycle through.
    tags_per_plan: u64,
    /// The ranks of this node that this rank reads directly, once the first plan
    /// that proposed direct reads has decided it.
    node_reads: OnceLock<NodeReads>,
    /// Plans made so far on this communicator: the same count on every rank,
    /// since plans are made collectively in the same order.
    plans: AtomicU64,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if mpi_is_usable() {
            // SAFETY: raw is our own duplicate, freed exactly once (by the last owner).
            unsafe { ffi::MPI_Comm_free(&mut self.raw) };
        }
    }
}

/// One plan's use of the private duplicate of a caller's communicator. Messages on
/// it never mix with the caller's, nor with other plans' (each plan has its own
/// tags), and MPI errors on it are returned rather than fatal.
#[derive(Debug)]
pub struct Comm {
    shared: Arc<Shared>,
    /// Which plan this is on the communicator: plans made before it there (the
    /// same number on every rank).
    number: u64,
    /// The first of this plan's `shared.tags_per_plan` tags.
    first_tag: u64,
    /// The datatypes of this plan's strided messages, kept for its executions.
    strided_datatypes: StridedDatatypes,
    /// How this plan's waits go: whose running executions they carry on, and
    /// whether they sleep between polls once they have yielded a while (its
    /// option `sleeping_waits`).
    waits: Waits,
}

// SAFETY: the handle is only used through MPI calls, made by the plans only on
// threads that MPI's thread level allows (`crate::mpi::threads`: below
// MPI_THREAD_SERIALIZED the main thread only, and a plan dropped elsewhere leaks
// its reference rather than free the duplicate there); calls on one communicator
// from several threads at once need MPI_THREAD_MULTIPLE, as documented.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Comm {
    /// The private duplicate of `caller` (collective over it the first time, local
    /// afterwards) with this plan's tags. Fails without communicating when MPI is
    /// not usable or `caller` is MPI_COMM_NULL or an intercommunicator. Every MPI
    /// call on `caller` runs with MPI_ERRORS_RETURN as its error handler. The
    /// plan's waits sleep between polls after a while when `sleeping`.
    pub fn for_plan(caller: RawComm, sleeping: bool) -> Result<Comm> {
        require_mpi()?;
        // SAFETY: reading an MPI constant handle.
        if caller == unsafe { ffi::RSMPI_COMM_NULL } {
            return Err(Error::InvalidCommunicator(format!(
                "comm is MPI_COMM_NULL (on rank {} of MPI_COMM_WORLD)",
                world_rank()
            )));
        }
        let shared = with_errors_returned(caller, || {
            require_intracommunicator(caller)?;
            cached_duplicate(caller)
        })?;
        // Decided now, so that executions, which must not allocate, only read it.
        oversubscribed();
        Ok(Comm::numbered(shared, sleeping))
    }

    /// The next plan's use of `shared`.
    fn numbered(shared: Arc<Shared>, sleeping: bool) -> Comm {
        let number = shared.plans.fetch_add(1, Ordering::Relaxed);
        let waits = Waits {
            process: shared.process,
            sleeping,
            world_errors_returned: swapped_for_completions(),
        };
        Comm {
            first_tag: (number % PLAN_SLOTS) * shared.tags_per_plan,
            number,
            shared,
            strided_datatypes: StridedDatatypes::default(),
            waits,
        }
    }

    /// Another use of this plan's private communicator, with tags of its own
    /// (the next plan's), for an object made collectively from plans on it
    /// (a fused execution): local, numbered alike on every rank when every
    /// rank makes it at the same point.
    pub fn sibling(&self) -> Comm {
        Comm::numbered(Arc::clone(&self.shared), self.waits.sleeping)
    }

    /// True when `other` is a use of the same private communicator (plans made
    /// on one caller communicator).
    pub fn shares_communicator(&self, other: &Comm) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Which plan this is on its communicator: the same number on every rank
    /// for one collective plan, different for two plans of one rank.
    pub fn plan_number(&self) -> u64 {
        self.number
    }

    /// The tag of this plan's `execution`-th execution: executions cycle through
    /// the plan's tags, so the messages of a failed execution that MPI could not
    /// cancel never match a later one's.
    pub fn tag(&self, execution: u64) -> c_int {
        self.tag_in_lane(0, execution)
    }

    /// The tags of the control messages of the plan's `execution`-th execution.
    pub fn control_tags(&self, execution: u64) -> ControlTags {
        ControlTags {
            announcement: self.tag_in_lane(1, execution),
            acknowledgement: self.tag_in_lane(2, execution),
        }
    }

    /// The tag of the `execution`-th execution in lane `lane`.
    fn tag_in_lane(&self, lane: u64, execution: u64) -> c_int {
        let per_lane = self.shared.tags_per_plan / TAG_LANES;
        (self.first_tag + lane * per_lane + execution % per_lane) as c_int
    }

    /// Decides which ranks of this node this rank reads directly, unless an
    /// earlier plan did ([`NodeReads::establish`], this rank `proposed` direct
    /// reads or not): collective, to be called at the same plan creation on every
    /// rank.
    pub fn establish_node_reads(&self, proposed: bool) -> Result<()> {
        if self.shared.node_reads.get().is_none() {
            let node = Node {
                rank: self.rank(),
                smpi: is_smpi(),
                proposed,
                waits: self.waits,
            };
            let reads = NodeReads::establish(self.raw(), node)?;
            let _ = self.shared.node_reads.set(reads);
        }
        Ok(())
    }

    /// The ranks of this node that this rank reads directly (none until decided).
    pub fn node_reads(&self) -> &NodeReads {
        static NONE: NodeReads = NodeReads::none();
        self.shared.node_reads.get().unwrap_or(&NONE)
    }

    /// The raw handle of the duplicate.
    pub fn raw(&self) -> RawComm {
        self.shared.raw
    }

    /// The datatypes of this plan's strided messages.
    pub fn strided_datatypes(&self) -> &StridedDatatypes {
        &self.strided_datatypes
    }

    /// How the plan's waits go.
    pub fn waits(&self) -> Waits {
        self.waits
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.shared.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Element-wise maximum of `values` (at most [`MAX_REDUCED`]) over all ranks, in
    /// place, without allocating.
    pub fn allreduce_max(&self, values: &mut [i64]) -> Result<()> {
        let mut send = [0i64; MAX_REDUCED];
        let send = send.get_mut(..values.len()).ok_or_else(|| {
            Error::Internal(format!(
                "{} values to reduce, at most {MAX_REDUCED}",
                values.len()
            ))
        })?;
        send.copy_from_slice(values);
        // SAFETY: reading an MPI constant handle.
        let max = unsafe { ffi::RSMPI_MAX };
        allreduce_i64(self.raw(), self.waits, max, send, values)
    }

    /// Gathers `mine` (the same length on every rank) from every rank, in rank order,
    /// into `all`, whose capacity must already hold them (so nothing allocates here).
    pub fn allgather_into(&self, mine: &[i64], all: &mut Vec<i64>) -> Result<()> {
        let n = mine.len() * self.size();
        if all.capacity() < n {
            return Err(Error::Internal(format!(
                "allgather buffer holds {} < {n}",
                all.capacity()
            )));
        }
        all.resize(n, 0);
        allgather_i64(self.raw(), self.waits, mine, all)
    }

    /// The dimensions of the communicator's Cartesian topology (the caller's: the
    /// duplicate keeps it), or `None` when it has none. `MPI_Cartdim_get` fails
    /// exactly on a communicator without one (`MPI_ERR_TOPOLOGY`, returned: the
    /// duplicate has MPI_ERRORS_RETURN); it is asked rather than `MPI_Topo_test`,
    /// which SimGrid's SMPI does not implement.
    pub fn cartesian_dims(&self) -> Result<Option<Vec<i64>>> {
        let mut ndims: c_int = 0;
        // SAFETY: a valid communicator and a writable int.
        let code = unsafe { ffi::MPI_Cartdim_get(self.raw(), &mut ndims) };
        if check(code, "MPI_Cartdim_get").is_err() {
            return Ok(None);
        }
        let n = usize::try_from(ndims).unwrap_or(0);
        let (mut dims, mut periods, mut coords) = (vec![0; n], vec![0; n], vec![0; n]);
        // SAFETY: the three arrays hold ndims ints each.
        let code = unsafe {
            ffi::MPI_Cart_get(
                self.raw(),
                ndims,
                dims.as_mut_ptr(),
                periods.as_mut_ptr(),
                coords.as_mut_ptr(),
            )
        };
        check(code, "MPI_Cart_get")?;
        Ok(Some(dims.into_iter().map(i64::from).collect()))
    }

    /// Broadcasts `bytes` from `root`.
    pub fn broadcast(&self, bytes: &mut [u8], root: usize) -> Result<()> {
        let (at, n, comm) = (bytes.as_mut_ptr().cast(), count(bytes.len())?, self.raw());
        let root = root as c_int;
        // SAFETY: every rank passes a buffer of the same length, which outlives the
        // collective, completed before the call returns; the type is an MPI constant.
        let code = unsafe {
            let uint8 = ffi::RSMPI_UINT8_T;
            complete_collective(
                self.waits,
                || ffi::MPI_Bcast(at, n, uint8, root, comm),
                |request| ffi::MPI_Ibcast(at, n, uint8, root, comm, request),
            )
        };
        check(code, "MPI_Bcast")
    }
}

/// This process's rank in MPI_COMM_WORLD, to name it in messages about a
/// communicator that cannot be used.
fn world_rank() -> c_int {
    let mut rank: c_int = -1;
    // SAFETY: MPI is initialized (checked by the caller); MPI_COMM_WORLD is valid.
    unsafe { ffi::MPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut rank) };
    rank
}

/// Runs `body` with MPI_ERRORS_RETURN as `caller`'s error handler and restores the
/// caller's handler afterwards, so that no MPI call of ours on the caller's
/// communicator can abort the job.
fn with_errors_returned<R>(caller: RawComm, body: impl FnOnce() -> Result<R>) -> Result<R> {
    // SAFETY: reading an MPI constant handle.
    let mut saved = unsafe { ffi::RSMPI_ERRORS_RETURN };
    // SAFETY: caller is a non-null communicator handle supplied by the user.
    let read = unsafe { ffi::MPI_Comm_get_errhandler(caller, &mut saved) };
    check(read, "MPI_Comm_get_errhandler")?;
    // SAFETY: as above; ERRORS_RETURN is a predefined handler.
    let swapped = unsafe { ffi::MPI_Comm_set_errhandler(caller, ffi::RSMPI_ERRORS_RETURN) };
    let result = check(swapped, "MPI_Comm_set_errhandler").and_then(|()| body());
    // SAFETY: restoring the handler read above, then releasing our reference to it.
    // An MPI that reports the default handler as a null handle (SimGrid's SMPI)
    // refuses it back: the default, MPI_ERRORS_ARE_FATAL, is restored instead.
    let restored = unsafe {
        match ffi::MPI_Comm_set_errhandler(caller, saved) {
            0 => ffi::MPI_Errhandler_free(&mut saved),
            _ => ffi::MPI_Comm_set_errhandler(caller, ffi::RSMPI_ERRORS_ARE_FATAL),
        }
    };
    result.and_then(|r| check(restored, "MPI_Comm_set_errhandler").map(|()| r))
}

/// Fails when `caller` is not an intracommunicator.
fn require_intracommunicator(caller: RawComm) -> Result<()> {
    let mut inter: c_int = 0;
    check(
        // SAFETY: caller is a non-null communicator handle supplied by the user.
        unsafe { ffi::MPI_Comm_test_inter(caller, &mut inter) },
        "MPI_Comm_test_inter",
    )
    .map_err(|e| Error::InvalidCommunicator(e.detail().to_string()))?;
    if inter != 0 {
        return Err(Error::InvalidCommunicator(format!(
            "comm is an intercommunicator; DistReshape needs an intracommunicator (on rank {} of MPI_COMM_WORLD)",
            world_rank()
        )));
    }
    Ok(())
}

/// The duplicate cached on `caller`, made (collectively) and cached if there is none.
fn cached_duplicate(caller: RawComm) -> Result<Arc<Shared>> {
    let keyval = keyval()?;
    let mut value: *mut Shared = null_mut();
    let mut found: c_int = 0;
    check(
        // SAFETY: an attribute of our keyval is a pointer from Arc::into_raw; MPI
        // writes the pointer into `value`.
        unsafe { ffi::MPI_Comm_get_attr(caller, keyval, (&raw mut value).cast(), &mut found) },
        "MPI_Comm_get_attr",
    )?;
    if found != 0 {
        // SAFETY: the attribute owns one count of this Arc until its delete callback
        // runs, which cannot happen during this call; we take a count of our own.
        return Ok(unsafe {
            Arc::increment_strong_count(value);
            Arc::from_raw(value)
        });
    }
    let shared = Arc::new(duplicate(caller)?);
    let attribute = Arc::into_raw(Arc::clone(&shared)).cast_mut();
    // SAFETY: the attribute takes the count made by into_raw, given back by
    // `release` when MPI deletes the attribute.
    let stored = unsafe { ffi::MPI_Comm_set_attr(caller, keyval, attribute.cast()) };
    if stored != 0 {
        // SAFETY: MPI did not take the attribute, so its count is still ours.
        drop(unsafe { Arc::from_raw(attribute) });
    }
    check(stored, "MPI_Comm_set_attr")?;
    Ok(shared)
}

/// Duplicates `caller` (collective over it) with MPI_ERRORS_RETURN, carrying
/// the process's executions in flight on while it waits (the first plan on a
/// communicator may be made between a begin and its wait).
fn duplicate(caller: RawComm) -> Result<Shared> {
    let mut raw = caller;
    let process = world_rank();
    let waits = Waits {
        process,
        sleeping: false,
        world_errors_returned: swapped_for_completions(),
    };
    let duplicate: *mut RawComm = &mut raw;
    let code = complete_collective(
        waits,
        // SAFETY: duplicating a valid intracommunicator into a local handle.
        || unsafe { ffi::MPI_Comm_dup(caller, duplicate) },
        // SAFETY: as above; MPI sets the handle by the time the request
        // completes, before `complete_collective` returns.
        |request| unsafe { ffi::MPI_Comm_idup(caller, duplicate, request) },
    );
    check(code, "MPI_Comm_dup")?;
    let mut shared = Shared {
        raw,
        rank: 0,
        size: 1,
        process,
        tags_per_plan: 0,
        node_reads: OnceLock::new(),
        plans: AtomicU64::new(0),
    };
    check(
        // SAFETY: raw is our own valid communicator.
        unsafe { ffi::MPI_Comm_set_errhandler(raw, ffi::RSMPI_ERRORS_RETURN) },
        "MPI_Comm_set_errhandler",
    )?;
    let (mut rank, mut size): (c_int, c_int) = (0, 0);
    // SAFETY: raw is our own valid communicator.
    let code = unsafe { ffi::MPI_Comm_rank(raw, &mut rank) };
    check(code, "MPI_Comm_rank")?;
    // SAFETY: raw is our own valid communicator.
    let code = unsafe { ffi::MPI_Comm_size(raw, &mut size) };
    check(code, "MPI_Comm_size")?;
    shared.rank = rank as usize;
    shared.size = size as usize;
    shared.tags_per_plan = (tag_upper_bound(raw)? as u64 + 1) / PLAN_SLOTS;
    Ok(shared)
}

/// The largest tag `comm` allows (MPI_TAG_UB, at least 32767 by the standard).
fn tag_upper_bound(comm: RawComm) -> Result<c_int> {
    let mut value: *mut c_int = null_mut();
    let mut found: c_int = 0;
    check(
        // SAFETY: MPI_TAG_UB's attribute is a pointer to an int, written into `value`.
        unsafe {
            ffi::MPI_Comm_get_attr(
                comm,
                ffi::MPI_TAG_UB as c_int,
                (&raw mut value).cast(),
                &mut found,
            )
        },
        "MPI_Comm_get_attr(MPI_TAG_UB)",
    )?;
    if found == 0 || value.is_null() {
        return Ok(32767);
    }
    // SAFETY: when found, MPI points `value` at the predefined attribute's int.
    Ok(unsafe { *value }.max(32767))
}

/// The keyval of our cached duplicates, created on first use.
fn keyval() -> Result<c_int> {
    static KEYVAL: Mutex<Option<c_int>> = Mutex::new(None);
    let mut keyval = KEYVAL.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(k) = *keyval {
        return Ok(k);
    }
    let mut k: c_int = 0;
    check(
        // SAFETY: both callbacks match MPI's signatures; no extra state.
        unsafe { ffi::MPI_Comm_create_keyval(Some(not_copied), Some(release), &mut k, null_mut()) },
        "MPI_Comm_create_keyval",
    )?;
    *keyval = Some(k);
    Ok(k)
}

/// A duplicate of the caller's communicator (made by the caller) does not inherit
/// our attribute: it gets its own private duplicate when a plan first uses it.
unsafe extern "C" fn not_copied(
    _comm: RawComm,
    _keyval: c_int,
    _extra: *mut c_void,
    _value_in: *mut c_void,
    _value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: MPI passes a valid flag pointer.
    unsafe { *flag = 0 };
    0
}

/// Gives back the attribute's count of the cached duplicate when the caller frees
/// its communicator (or MPI finalizes): the duplicate is freed once no plan uses it.
unsafe extern "C" fn release(
    _comm: RawComm,
    _keyval: c_int,
    value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    // SAFETY: the value was stored from Arc::into_raw by cached_duplicate, and MPI
    // deletes each attribute once.
    let shared = unsafe { Arc::from_raw(value.cast::<Shared>()) };
    // No panic may cross into MPI.
    let _ = catch_unwind(AssertUnwindSafe(|| drop(shared)));
    0
}
