//! The safe Rust API: collective plans and their options, executions in flight,
//! one-shot reshapes of slices and of `ndarray` arrays, plans on strided storage
//! executed on `ndarray` views.

pub mod array;
// Not part of the C ABI: the annotation keeps cbindgen from copying the options'
// associated constants into the C header.
/// cbindgen:ignore
pub mod options;
pub mod plan;
pub mod views;
