//! The strided MPI datatypes of one plan's messages: an hvector of bytes for each
//! shape of blocks, made and committed the first time a message of that shape
//! starts, kept for the plan's later executions (which then make no datatype), and
//! freed with the plan. A plan keeps at most `KEPT_DATATYPES` shapes (a pencil
//! transpose or a slab split change has one or two); a message of another shape
//! gets a datatype of its own, freed as soon as the message has started (MPI keeps
//! what the pending operation needs).
//!
//! The in-place schedule's grouped messages each get an indexed datatype over
//! their blocks ([`IndexedDatatype`]), made with the plan's in-place schedule and
//! freed with it; a message that also reads from the staging joins two of them
//! in a struct datatype of two entries ([`with_joined`]), made for the message
//! and freed once it has started, as the two lie a distance apart that only the
//! execution knows.
//!
//! Every datatype is made, committed and freed with `MPI_COMM_WORLD`'s error
//! handler returning errors where it may be swapped ([`made`], [`free`]): MPI
//! hands the errors of these calls, on no communicator, to that handler, which
//! would abort the caller's job on exhausted resources.

use std::os::raw::c_int;
use std::sync::{Mutex, PoisonError};

use mpi::ffi;

use crate::core::error::Result;
use crate::core::faults::injected_datatype_fault;
use crate::mpi::status::{check, count, mpi_is_usable};
use crate::mpi::transport::{Block, BlockShape};
use crate::mpi::world_handler::{WorldErrorsReturned, world_swappable};

/// Most datatype shapes one plan keeps.
const KEPT_DATATYPES: usize = 16;

/// A committed datatype and the shape it describes.
#[derive(Clone, Copy, Debug)]
struct KeptDatatype {
    shape: BlockShape,
    datatype: ffi::MPI_Datatype,
}

/// One plan's kept datatypes (none at first), in a fixed array allocated with the
/// plan.
#[derive(Debug, Default)]
pub struct StridedDatatypes {
    kept: Mutex<[Option<KeptDatatype>; KEPT_DATATYPES]>,
}

// SAFETY: the handles are only used through MPI calls, made by the plan on the
// threads its thread level allows (as for the plan's communicator), and the array
// is behind a mutex.
unsafe impl Send for StridedDatatypes {}
// SAFETY: as above.
unsafe impl Sync for StridedDatatypes {}

impl StridedDatatypes {
    /// Calls `start` with a committed datatype describing `shape`: the one kept
    /// for it, else a new one, kept while there is room, otherwise freed once
    /// `start` has returned.
    pub fn with_datatype(
        &self,
        shape: BlockShape,
        start: impl FnOnce(ffi::MPI_Datatype) -> Result<()>,
    ) -> Result<()> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = kept.iter().flatten().find(|k| k.shape == shape) {
            let datatype = found.datatype;
            drop(kept);
            return start(datatype);
        }
        let mut datatype = committed_hvector(shape)?;
        if let Some(room) = kept.iter_mut().find(|k| k.is_none()) {
            *room = Some(KeptDatatype { shape, datatype });
            drop(kept);
            return start(datatype);
        }
        drop(kept);
        let started = start(datatype);
        // SAFETY: our own datatype, freed once; the started operation keeps what
        // it needs.
        unsafe { free(&mut datatype) };
        started
    }
}

impl Drop for StridedDatatypes {
    /// Frees the kept datatypes while MPI is usable (after `MPI_Finalize` they are
    /// gone with it). The plan drops its communicator, and these with it, only on
    /// a thread that may call MPI.
    fn drop(&mut self) {
        if !mpi_is_usable() {
            return;
        }
        let kept = self.kept.get_mut().unwrap_or_else(PoisonError::into_inner);
        for mut k in kept.iter_mut().filter_map(Option::take) {
            // SAFETY: a datatype this plan committed, freed exactly once.
            unsafe { free(&mut k.datatype) };
        }
    }
}

/// A committed hvector datatype of bytes describing `shape`.
fn committed_hvector(shape: BlockShape) -> Result<ffi::MPI_Datatype> {
    let (blocks, block) = (count(shape.blocks)?, count(shape.block)?);
    let stride = shape.stride as ffi::MPI_Aint;
    // SAFETY: reading an MPI constant handle; the constructor writes the new
    // datatype.
    unsafe {
        made("MPI_Type_create_hvector", |datatype| {
            ffi::MPI_Type_create_hvector(blocks, block, stride, ffi::RSMPI_UINT8_T, datatype)
        })
    }
}

/// A datatype made by `create` (MPI's constructor `name`) and committed, or
/// the error of either call (the datatype then freed), with
/// `MPI_COMM_WORLD`'s error handler returning errors meanwhile where it may
/// be swapped. When the test hook asks for it, MPI is handed a count of -1
/// in place of the constructor, which it refuses.
///
/// # Safety
/// `create` makes a datatype at the pointer it is given, or returns an error
/// code.
unsafe fn made(
    name: &str,
    create: impl FnOnce(*mut ffi::MPI_Datatype) -> c_int,
) -> Result<ffi::MPI_Datatype> {
    let _returned = WorldErrorsReturned::during(world_swappable());
    // SAFETY: as documented; reading MPI constant handles; the injected
    // constructor is refused whole (a negative count) and makes nothing.
    unsafe {
        let mut datatype = ffi::RSMPI_DATATYPE_NULL;
        let code = match injected_datatype_fault() {
            true => ffi::MPI_Type_contiguous(-1, ffi::RSMPI_UINT8_T, &mut datatype),
            false => create(&mut datatype),
        };
        check(code, name)?;
        let done = check(ffi::MPI_Type_commit(&mut datatype), "MPI_Type_commit");
        if done.is_err() {
            ffi::MPI_Type_free(&mut datatype);
        }
        done.map(|()| datatype)
    }
}

/// Frees `datatype`, with `MPI_COMM_WORLD`'s error handler returning errors
/// meanwhile where it may be swapped.
///
/// # Safety
/// `datatype` a committed datatype of ours, freed once.
unsafe fn free(datatype: &mut ffi::MPI_Datatype) {
    let _returned = WorldErrorsReturned::during(world_swappable());
    // SAFETY: as documented.
    unsafe { ffi::MPI_Type_free(datatype) };
}

/// Calls `start` with a committed struct datatype of `first` then `second`, each
/// an indexed datatype, the second `distance` bytes after the first; frees it
/// once `start` has returned (the started operation keeps what it needs).
pub fn with_joined(
    first: &IndexedDatatype,
    (distance, second): (ffi::MPI_Aint, &IndexedDatatype),
    start: impl FnOnce(ffi::MPI_Datatype) -> Result<()>,
) -> Result<()> {
    let (lens, displacements, types) = ([1, 1], [0, distance], [first.raw(), second.raw()]);
    // SAFETY: the arrays hold two entries each; the constructor writes the new
    // datatype, freed once, after `start`.
    unsafe {
        let (lens, at, types) = (lens.as_ptr(), displacements.as_ptr(), types.as_ptr());
        let mut datatype = made("MPI_Type_create_struct", |datatype| {
            ffi::MPI_Type_create_struct(2, lens, at, types, datatype)
        })?;
        let started = start(datatype);
        free(&mut datatype);
        started
    }
}

/// Most fields of a batch whose displacements a message lists on the stack; a
/// message of more fields lists them on the heap.
const STACK_FIELDS: usize = 16;

/// Calls `start` with a committed hindexed datatype of one `item` per field
/// (`blocklength` of them), each at its field's base's distance from the first
/// base (the message then starts at the first field's blocks); frees it once
/// `start` has returned (the started operation keeps what it needs).
pub fn with_fields(
    bases: &[*mut u8],
    (blocklength, item): (usize, ffi::MPI_Datatype),
    start: impl FnOnce(ffi::MPI_Datatype) -> Result<()>,
) -> Result<()> {
    let distance =
        |base: &*mut u8| (*base as isize).wrapping_sub(bases[0] as isize) as ffi::MPI_Aint;
    let mut stack = [0 as ffi::MPI_Aint; STACK_FIELDS];
    let heap: Vec<ffi::MPI_Aint>;
    let displacements = match bases.len() <= STACK_FIELDS {
        true => {
            bases
                .iter()
                .zip(&mut stack)
                .for_each(|(b, d)| *d = distance(b));
            &stack[..bases.len()]
        }
        false => {
            heap = bases.iter().map(distance).collect();
            &heap[..]
        }
    };
    let (fields, blocklength) = (count(bases.len())?, count(blocklength)?);
    // SAFETY: the displacements hold `fields` entries; the constructor writes
    // the new datatype, freed once, after `start`.
    unsafe {
        let at = displacements.as_ptr();
        let mut datatype = made("MPI_Type_create_hindexed_block", |datatype| {
            ffi::MPI_Type_create_hindexed_block(fields, blocklength, at, item, datatype)
        })?;
        let started = start(datatype);
        free(&mut datatype);
        started
    }
}

/// A committed hindexed datatype of bytes over a list of blocks, each at its
/// offset from where a message of it starts: a grouped message of an in-place
/// schedule, or the part of it in one buffer, made once per plan, freed when
/// dropped.
#[derive(Debug)]
pub struct IndexedDatatype(ffi::MPI_Datatype);

// SAFETY: the handle is only used through MPI calls, made by the plan on the
// threads its thread level allows, one execution at a time.
unsafe impl Send for IndexedDatatype {}

impl IndexedDatatype {
    /// The datatype of `blocks`, in this order.
    pub fn new(blocks: &[Block]) -> Result<IndexedDatatype> {
        let lens = blocks
            .iter()
            .map(|b| count(b.len))
            .collect::<Result<Vec<c_int>>>()?;
        let offsets: Vec<ffi::MPI_Aint> = blocks.iter().map(|b| b.offset as _).collect();
        let n = count(blocks.len())?;
        // SAFETY: both lists hold `blocks.len()` entries; reading an MPI
        // constant; the constructor writes the new datatype.
        unsafe {
            let (lens, offsets, byte) = (lens.as_ptr(), offsets.as_ptr(), ffi::RSMPI_UINT8_T);
            made("MPI_Type_create_hindexed", |datatype| {
                ffi::MPI_Type_create_hindexed(n, lens, offsets, byte, datatype)
            })
            .map(IndexedDatatype)
        }
    }

    /// The MPI handle.
    pub fn raw(&self) -> ffi::MPI_Datatype {
        self.0
    }
}

impl Drop for IndexedDatatype {
    /// Frees the datatype while MPI is usable (after `MPI_Finalize` it is gone
    /// with it). The plan drops its in-place schedule only on a thread that may
    /// call MPI.
    fn drop(&mut self) {
        if mpi_is_usable() {
            // SAFETY: a datatype this plan committed, freed exactly once.
            unsafe { free(&mut self.0) };
        }
    }
}
