//! The MPI execution: the library's private communicator and its tags, agreement
//! on every step's outcome, and the exchange engines that move a plan's messages
//! (out of place in pairwise windows, in place in scheduled rounds).

pub mod agree;
pub mod comm;
pub mod exchange;
pub mod inplace_exchange;
