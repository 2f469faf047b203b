//! Distribution maths of process-grid layouts (issue 18), pure, no MPI: grid layouts
//! ([`grid`]), the groups two shapes of a reshape share ([`groups`]), the elements of
//! a box seen from the other side of a reshape ([`region`]), who sends what to whom
//! ([`peers`]) and when nothing moves at all ([`identity`]).

pub mod grid;
pub mod groups;
pub mod identity;
pub mod peers;
pub mod region;
mod subbox;
