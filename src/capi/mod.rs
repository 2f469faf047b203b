//! The C ABI: argument conversion, the panic boundary and status codes over the
//! Rust API. No logic of its own. The header `include/distreshape.h` is generated
//! by cbindgen from the crate: these functions and the tables of
//! [`crate::core::abi`] (see `tests/header.rs`). By job: [`handles`] (the opaque plan and
//! request, storing and borrowing them, their NULL checks), [`boundary`] (the panic
//! boundary, the last error, a caller's status as an error, the shared argument
//! decoding), [`slab_args`] (a slab
//! reshape's arguments in C or Fortran notation), [`plans`] (one-shots,
//! creating, querying, executing and destroying plans), [`fused`] (plans
//! executed together in one round), [`requests`] (executions
//! in flight), [`options`] (`dr_plan_options`, `dr_options`), [`layouts`] (grid layouts and
//! the plans between them), [`strided`] (plans on strided local storage), [`library`] (version, balanced
//! slabs, test hooks).
#![allow(non_camel_case_types)]

mod boundary;
mod fused;
mod handles;
mod layouts;
mod library;
mod options;
mod plans;
mod requests;
mod slab_args;
mod strided;

pub(crate) use boundary::{c_buffers, guard, shape_arg};
pub(crate) use fused::{dr_fused, fused_ref};
pub(crate) use handles::{c_plan_ref, dr_plan, dr_request, plan_ref};
pub(crate) use layouts::{create_layouts_plan, dr_layout, layout_args};
pub(crate) use options::{configured, dr_options};
pub(crate) use plans::{CBatch, MPI_Comm, create_plan, execute_c_batch};
pub(crate) use requests::{begin_batch, begin_request};
pub(crate) use slab_args::{SlabArgs, SlabSide};
