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

use std::os::raw::c_int;
use std::sync::{Mutex, PoisonError};

use mpi::ffi;

use crate::core::error::Result;
use crate::mpi::status::{check, count, mpi_is_usable};
use crate::mpi::transport::{Block, BlockShape};

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
        unsafe { ffi::MPI_Type_free(&mut datatype) };
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
            unsafe { ffi::MPI_Type_free(&mut k.datatype) };
        }
    }
}

/// A committed hvector datatype of bytes describing `shape`.
fn committed_hvector(shape: BlockShape) -> Result<ffi::MPI_Datatype> {
    let (blocks, block) = (count(shape.blocks)?, count(shape.block)?);
    let stride = shape.stride as ffi::MPI_Aint;
    // SAFETY: reading MPI constant handles; the datatype is created before it is
    // committed.
    unsafe {
        let mut datatype = ffi::RSMPI_DATATYPE_NULL;
        let code =
            ffi::MPI_Type_create_hvector(blocks, block, stride, ffi::RSMPI_UINT8_T, &mut datatype);
        check(code, "MPI_Type_create_hvector")?;
        committed(datatype)
    }
}

/// Commits `datatype`, a datatype just created, or frees it when that fails.
///
/// # Safety
/// `datatype` is a created datatype owned by the caller.
unsafe fn committed(mut datatype: ffi::MPI_Datatype) -> Result<ffi::MPI_Datatype> {
    // SAFETY: as documented; freed once if committing fails.
    unsafe {
        let done = check(ffi::MPI_Type_commit(&mut datatype), "MPI_Type_commit");
        if done.is_err() {
            ffi::MPI_Type_free(&mut datatype);
        }
        done.map(|()| datatype)
    }
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
    // SAFETY: the arrays hold two entries each; reading an MPI constant handle;
    // the datatype is created before it is committed, and freed once, after
    // `start`.
    unsafe {
        let mut datatype = ffi::RSMPI_DATATYPE_NULL;
        let (lens, at, types) = (lens.as_ptr(), displacements.as_ptr(), types.as_ptr());
        let code = ffi::MPI_Type_create_struct(2, lens, at, types, &mut datatype);
        check(code, "MPI_Type_create_struct")?;
        let mut datatype = committed(datatype)?;
        let started = start(datatype);
        ffi::MPI_Type_free(&mut datatype);
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
    // SAFETY: the displacements hold `fields` entries; the datatype is created
    // before it is committed, and freed once, after `start`.
    unsafe {
        let mut datatype = ffi::RSMPI_DATATYPE_NULL;
        let at = displacements.as_ptr();
        let code =
            ffi::MPI_Type_create_hindexed_block(fields, blocklength, at, item, &mut datatype);
        check(code, "MPI_Type_create_hindexed_block")?;
        let mut datatype = committed(datatype)?;
        let started = start(datatype);
        ffi::MPI_Type_free(&mut datatype);
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
        // SAFETY: both lists hold `blocks.len()` entries; reading MPI constants;
        // the datatype is created before it is committed.
        unsafe {
            let mut datatype = ffi::RSMPI_DATATYPE_NULL;
            let (n, byte) = (count(blocks.len())?, ffi::RSMPI_UINT8_T);
            let (lens, offsets) = (lens.as_ptr(), offsets.as_ptr());
            let code = ffi::MPI_Type_create_hindexed(n, lens, offsets, byte, &mut datatype);
            check(code, "MPI_Type_create_hindexed")?;
            committed(datatype).map(IndexedDatatype)
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
            unsafe { ffi::MPI_Type_free(&mut self.0) };
        }
    }
}
