//! The internals that the simulation tests (`tests/planner_sim.rs`,
//! `tests/grid_sim.rs`, `tests/validation_props.rs`) and the benchmarks drive,
//! compiled only with the `testing` feature: never part of the API users link
//! against, and free to change.

pub use crate::distribution::grid::{BlockLengths, GridBox, GridLayout};
pub use crate::distribution::groups::ReshapeSide;
pub use crate::distribution::identity::nothing_moves;
pub use crate::distribution::peers::PeerVolume;
pub use crate::distribution::peers::Redistribution;
pub use crate::distribution::region::{Region, RegionRuns, shared_elements};
pub use crate::distribution::runs::Run;
pub use crate::distribution::storage::{InputStorages, Storage, Storages};
pub use crate::memory::copy::copy_box;
pub use crate::memory::{BoxCopy, Host, MemorySpace};
pub use crate::mpi::buffers::Buffers;
pub use crate::mpi::comm::Comm;
pub use crate::mpi::exchange::{
    DirectStreams, Exchange, FRAMED_BYTES, FieldBuffers, FusedExchange, FusedPlan, FusedRun,
    FusedRuns, Mode, Participant, ReadPeers,
};
pub use crate::mpi::inplace_exchange::ScheduledExchange;
pub use crate::mpi::transport::{Bytes, Channel, Envelope, Transport};
pub use crate::planning::args::{MAX_DIMS, ReshapeArgs, check_local, check_rows_add_up};
pub use crate::planning::inplace::thresholds::SCHEDULING_BYTES_PER_PIECE;
pub use crate::planning::inplace::{
    PieceMove, PieceShape, Problem, RankSchedule, Schedule, Unscheduled,
};
pub use crate::planning::messages::{
    MessageCutter, MessageKind, MessageLimits, Messages, Placement, Segment, StridedRuns,
};
pub use crate::planning::planner::{KeptCopy, RankPlan, Route};
pub use crate::planning::schedule::{
    Progress, ScheduledStream, Side, proposed_window_width, schedule,
};
pub use network::{Endpoint, INJECTED_PANIC, Network, NetworkReport, PLAN_SLOTS};

mod network;
