//! The MPI execution: one execution's buffers, MPI's return codes and counts checked, the library's
//! private communicator and its tags, its collectives, the strided datatypes a
//! plan keeps, the thread level's rules, agreement on every step's outcome, point-to-point messages behind
//! the [`transport::Transport`] trait, and the two exchange engines that move a
//! plan's messages (out of place or with everything sent packed, in pairwise
//! windows, and the scheduled rounds of executions in place), which the plan
//! chooses between, how a rank waits for its messages while it carries its other
//! running executions on, what the node it runs on
//! holds, how the ranks of a node read one another's memory directly, what
//! was measured of the MPI library that shapes them, and how its completion
//! errors are kept from `MPI_COMM_WORLD`'s handler.

pub mod agree;
pub mod buffers;
pub mod collective;
pub mod comm;
pub mod cross_memory;
pub mod datatypes;
pub mod exchange;
pub mod inplace_exchange;
pub mod inplace_messages;
pub mod library;
pub mod node;
pub mod p2p;
pub mod running;
pub mod status;
pub mod threads;
pub mod transport;
pub mod waiting;
pub mod world_handler;
