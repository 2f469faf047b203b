//! Pure planning: arguments checked on one rank, one rank's plan from every rank's
//! slab lengths, the messages its runs are cut into, the order of its message
//! streams, and the bounded rounds of executions in place. No MPI: every rank's
//! part can be computed in one process, which is how the tests simulate them.
#![forbid(unsafe_code)]

pub mod args;
pub mod inplace;
pub mod layouts;
pub mod messages;
pub mod planner;
pub mod schedule;
