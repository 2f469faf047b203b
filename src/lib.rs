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
//! The layers (README, "Code layout"): `layout` and `runs` (distribution maths),
//! `messages` (runs cut into messages), `args` (validation), `planner` (pure
//! planning, simulated for all ranks in tests), `schedule` (the order of the
//! messages, pure, replayed for all ranks in tests), `inplace` (bounded in-place
//! rounds, pure, replayed for all ranks in tests), `exchange` and
//! `inplace_exchange` (the MPI traffic),
//! [`Plan`] (collective plans), [`reshape_array`] (typed `ndarray` API) and `ffi`
//! (the C ABI).

#![warn(clippy::undocumented_unsafe_blocks)]

// The modules marked doc(hidden) are public only for the simulation tests, the
// benchmarks and the C ABI (`ffi`, whose documentation is the generated header):
// they are not part of the Rust API, which is the re-exports below.
mod agree;
#[doc(hidden)]
pub mod args;
mod array;
mod comm;
#[doc(hidden)]
pub mod dist;
mod error;
mod exchange;
#[doc(hidden)]
pub mod faults;
#[doc(hidden)]
pub mod ffi;
mod fortran_abi;
#[doc(hidden)]
pub mod inplace;
mod inplace_exchange;
#[doc(hidden)]
pub mod layout;
#[doc(hidden)]
pub mod messages;
mod plan;
#[doc(hidden)]
pub mod planner;
#[doc(hidden)]
pub mod runs;
#[doc(hidden)]
pub mod schedule;

pub use args::{MAX_DIMS, ReshapeArgs, Target};
pub use array::{Element, reshape_array};
pub use comm::RawComm;
pub use error::{Error, Result};
pub use layout::balanced_slab;
pub use plan::{Execution, Plan, PlanOptions, reshape};
pub use planner::{PlanStats, Route};
