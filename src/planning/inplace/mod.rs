//! Schedules of in-place execution on the exchange path under a memory budget.
//! Pure: every rank computes the same global schedule from the layouts, keeps its
//! own part, and the all-ranks simulations in the tests run it on every rank's
//! real in-place engine over the in-memory network.
//!
//! In place, a rank's buffer holds its input and must end holding its output, so
//! an element may land only where the elements that were there have left. The data
//! is cut into pieces (runs of elements between two buffers that follow one another
//! at fixed strides, spanning at most `chunk` bytes on both sides) and moved in
//! rounds. A piece is *ready* when every piece whose source shares a byte with its
//! destination has departed: then it moves, in one message or local copy, in this
//! round. The pieces waiting for one another form chains and cycles (two
//! ranks swapping, or the long cycles of a transpose); copying a piece to its
//! source rank's staging, while the budget allows, vacates its source and breaks
//! them, and a staged piece moves from the staging once its own destination is
//! vacated. Breakers are spread along the chains (`Scheduler::break_chains`), so
//! that each round moves one piece of every segment between them. Each round every
//! rank posts its messages of the round and completes them, so the rounds match
//! across ranks one for one: nothing can wait for a message another rank posts
//! later.
//!
//! Invariants the simulations check on every rank (counting, per byte, the pieces
//! that read it and the writes): a byte is written only after every piece reading
//! it has departed, each piece arrives exactly once, and the staging never holds
//! more than the budget.
//!
//! By job: the pieces and the reshape cut into them ([`pieces`]), the staging's
//! slots ([`staging`]), what each piece waits for ([`dependencies`]), the rounds
//! ([`scheduler`]), one rank's part of them ([`rank_view`]) and the tuned
//! thresholds of all of it ([`thresholds`]).

mod dependencies;
mod pieces;
mod rank_view;
mod scheduler;
mod staging;
pub mod thresholds;

#[cfg(feature = "testing")]
pub use pieces::PieceShape;
pub use pieces::Problem;
pub use rank_view::{PieceMove, RankSchedule, round_messages};
pub use scheduler::Schedule;

use thresholds::PACK_ALL_BYTES;

/// Why executions in place pack everything each rank sends instead of following
/// a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unscheduled {
    /// Every rank sends so little (at most [`PACK_ALL_BYTES`] and its budget) that
    /// packing it all and moving it in one round is faster.
    Small,
    /// More pieces than the plan's run budget.
    TooManyPieces,
    /// More than [`MAX_ROUNDS`](thresholds::MAX_ROUNDS) rounds.
    TooManyRounds,
    /// More runs than [`MAX_RUNS_READ`](thresholds::MAX_RUNS_READ), or pieces whose sources and destinations
    /// interleave too finely to find what each waits for within
    /// [`MAX_OVERLAP_TESTS`](thresholds::MAX_OVERLAP_TESTS).
    TooIntricate,
    /// Every rank's staging is full of pieces that wait for one another.
    Stuck,
    /// A rank could not allocate its part.
    OutOfMemory,
}

impl std::fmt::Display for Unscheduled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unscheduled::Small => {
                let mib = PACK_ALL_BYTES >> 20;
                return write!(
                    f,
                    "every rank sends at most {mib} MiB: packed, in one round"
                );
            }
            Unscheduled::TooManyPieces => "no bounded schedule: more pieces than the run budget",
            Unscheduled::TooManyRounds => "no bounded schedule: too many rounds",
            Unscheduled::TooIntricate => {
                "no bounded schedule: too many runs, or too finely interleaved"
            }
            Unscheduled::Stuck => "no bounded schedule within the staging budget",
            Unscheduled::OutOfMemory => "no bounded schedule: a rank could not allocate it",
        })
    }
}
