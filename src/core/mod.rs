//! The bottom layer: the C ABI's tables, the error type generated from them, the
//! element types, fallible allocation and panic containment, and the fault
//! injection of the test build. Every other layer builds on these; they import no
//! other layer.

pub mod abi;
pub mod element;
pub mod error;
pub mod fallible;
pub mod faults;
