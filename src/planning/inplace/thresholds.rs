//! The tuned thresholds of in-place scheduling, in one place: the sizes measured
//! on MPICH (which pieces travel alone or grouped, when packing everything beats
//! a schedule, the scheduling state per piece) and the bounds that keep making a
//! schedule within bounded time and memory. They sit in planning, below the
//! options of `api::options` (which refer to them beside their own tuned
//! constants), so that planning imports nothing from above.

/// Most rounds a schedule may take: each round costs every rank a synchronization.
pub(super) const MAX_ROUNDS: usize = 1 << 12;

/// The staging keeps at least the smaller of its budget and this many bytes,
/// whatever the scheduling state takes: a budget too small for both still gets
/// rounds (at the default budgets, of 64 MiB or more, the state of the most
/// pieces a schedule may have takes 42 MB and the staging the rest).
pub(super) const MIN_STAGING_BYTES: usize = 1 << 20;

/// Bytes of scheduling state per piece, every rank holding the whole schedule
/// while it is made (measured: 147 bytes with the grid_bench pencil transpose's
/// 131 000 pieces).
pub const SCHEDULING_BYTES_PER_PIECE: usize = 160;

/// Pieces of at least this many bytes travel as messages of their own, straight
/// between the buffers; smaller ones to the same peer are grouped into one message
/// (an MPI datatype over them, no copy): on MPICH large grouped messages are slow
/// and small pieces alone are slower (docs/src/performance/analysis.md, "In
/// place with data to move").
pub(crate) const ALONE_BYTES: usize = 1 << 10;

/// Most bytes in one grouped message (MPICH's eager size on shared memory).
pub(crate) const GROUPED_BYTES: usize = 32 << 10;

/// Most bytes every rank may send for executions in place on the exchange path to
/// pack them all and move them in one round rather than follow a schedule
/// (`Unscheduled::Small`, when also within every rank's budget): copying that
/// little costs less than the schedule's rounds (docs/src/performance/analysis.md,
/// "In place with data to move").
pub(crate) const PACK_ALL_BYTES: usize = 1 << 20;

/// Most bytes in one piece of a schedule ([`Problem::chunk`](super::Problem::chunk)).
pub(super) const MAX_PIECE_BYTES: usize = 4 << 20;

/// Most runs read in cutting the pieces, over every granularity tried: beyond it a
/// reshape has too many runs to schedule in bounded time, and executions in place
/// pack what they send.
pub(super) const MAX_RUNS_READ: usize = 1 << 24;

/// Most overlap tests (pieces compared, weighted by the runs compared) in finding
/// what the pieces wait for: beyond it, pieces interleave too finely to schedule
/// in bounded time, and executions in place pack what they send.
pub(super) const MAX_OVERLAP_TESTS: usize = 1 << 24;
