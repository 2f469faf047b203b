//! The safe Rust API: collective plans and their options, executions in flight,
//! one-shot reshapes of slices and of `ndarray` arrays.

pub mod array;
pub mod options;
pub mod plan;
