//! Pure distribution maths: how an array's elements are spread over the ranks and
//! what two ranks share, computed analytically, never per element. No MPI.
//! Process-grid layouts ([`grid`]: slabs are the one-axis case), the groups two
//! shapes of a reshape share ([`groups`]), the elements of a box seen from the
//! other side of a reshape ([`region`]) and its shared runs as stretches of both
//! buffers ([`joint_runs`]), who sends what to whom ([`peers`]) and
//! when nothing moves at all ([`identity`]), where a box lives in its buffer
//! ([`storage`]) and whether two boxes in memory share a byte ([`overlap`]);
//! balanced slabs and shape products
//! ([`layout`]).
#![forbid(unsafe_code)]

pub mod grid;
pub mod groups;
pub mod identity;
pub mod joint_runs;
pub mod layout;
pub mod overlap;
pub mod peers;
pub mod region;
pub mod runs;
pub mod storage;
mod subbox;
