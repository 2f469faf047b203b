//! Pure distribution maths: how an array's elements are spread over the ranks
//! (balanced slabs, the block patterns of global indices a rank holds) and what
//! two ranks share (volumes and runs, computed analytically). No MPI.
#![forbid(unsafe_code)]

pub mod layout;
pub mod runs;
