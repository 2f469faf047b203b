//! The safe Rust API: collective plans and their options, executions in flight,
//! one-shot reshapes of slices and of `ndarray` arrays.

pub mod array;
// Not part of the C ABI: the annotation keeps cbindgen from copying the options'
// associated constants into the C header.
/// cbindgen:ignore
pub mod options;
pub mod plan;
