//! # DistReshape
//!
//! Reshapes distributed N-dimensional arrays across the ranks of an MPI communicator.
//!
//! An array of global shape `gshape` (C order) is split along one axis: each rank
//! holds a contiguous slab of that axis (any lengths, in rank order), or, with no
//! split, the whole array. A reshape gives the same elements with a new global shape
//! (NumPy semantics, one `-1` allowed), split along a new axis in the balanced
//! distribution (rank `r` of `p` gets `n/p + (r < n%p)` rows; see [`balanced_slab`])
//! or in row counts the caller chooses.
//!
//! When the split axis survives the reshape ([`Route::Local`]) no data moves for the
//! reshape itself, and only rows that change owner move, between the ranks whose
//! slabs overlap. Every other reshape ([`Route::Exchange`]) moves each element once,
//! straight to its owner, in pairwise rounds like the all-to-alls of MPI libraries:
//! large runs go directly between the caller's buffers and small ones through a
//! bounded staging slot, so the extra memory stays bounded whatever the array size.
//!
//! The layers, each a folder, from the bottom up (docs/src/contributing/code-layout.md); imports
//! only point down:
//! - `core`: the C ABI's tables (statuses, dtypes, paths), the [`Error`] type
//!   generated from them, [`Element`], fallible allocation and fault injection;
//! - `distribution`: pure distribution maths (layouts, block patterns, shared runs);
//! - `planning`: pure plans, messages, schedules and in-place rounds, simulated for
//!   every rank in one process by the tests;
//! - `memory`: memory spaces and the copies of boxes between strided storages;
//! - `mpi`: the private communicator, agreement, and the exchange engines;
//! - `api`: this crate's Rust API ([`Plan`], [`reshape`], [`reshape_array`]);
//! - `capi`: the C ABI (`include/distreshape.h` is generated from the crate);
//! - `fortran`: the entry points of the Fortran module.
//!
//! With the `testing` feature, `distreshape::testing` exposes the internals that the
//! simulation tests and the benchmarks drive.

#![warn(clippy::undocumented_unsafe_blocks)]

mod api;
mod capi;
mod core;
mod distribution;
mod fortran;
mod memory;
mod mpi;
mod planning;

#[cfg(feature = "testing")]
pub mod testing;

pub use crate::api::array::reshape_array;
pub use crate::api::options::PlanOptions;
pub use crate::api::plan::{Execution, Fused, FusedField, Plan, RawBatch, reshape};
/// The options of a plan by key (`dr_option`, from the one option table in the
/// crate): [`PlanOptions::set`] takes one with a value as C and Python pass it.
pub use crate::core::abi::dr_option as PlanOption;
/// The status codes of the C ABI (`dr_status`), from the one table in the crate:
/// [`Error::status`] of every error, `Status::ALL`, each one's `name()` and
/// `message()`, so that other languages' bindings and the tests need no copy.
pub use crate::core::abi::dr_status as Status;
pub use crate::core::element::Element;
pub use crate::core::error::{Error, Result};
pub use crate::distribution::grid::GridBox;
pub use crate::distribution::layout::{Slab, balanced_slab};
pub use crate::mpi::comm::RawComm;
pub use crate::planning::args::{MAX_DIMS, ReshapeArgs, Target};
pub use crate::planning::layouts::{Layout, LayoutArgs};
pub use crate::planning::planner::{PlanStats, Route};
