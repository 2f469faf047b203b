//! The tuning knobs of a plan, their defaults, and the message limits they give.

use crate::planning::messages::{MessageLimits, StridedRuns};

/// Tuning knobs of a plan. The defaults suit production; tests lower the limits to
/// exercise the chunked paths with small arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Most bytes in one MPI message (MPI counts are 32-bit; default `i32::MAX`).
    pub max_message_bytes: usize,
    /// The message slots for packed messages (small runs, and long runs at a
    /// stride where they travel through the slots: `crate::mpi::library`), per
    /// direction, over all peers (default [`PlanOptions::DEFAULT_SLOT_BYTES`]):
    /// packed messages are capped at this divided by the largest peer count of
    /// any rank (but at least [`PlanOptions::MIN_PACKED_BYTES`]), so the slots
    /// never exceed it by more than that floor times the peer count, nor the
    /// bytes actually moved.
    pub slot_bytes: usize,
    /// Most runs cut into the messages of one round, over all peers (default
    /// [`PlanOptions::DEFAULT_RUN_BUDGET`]): bounds the memory that lists them (16
    /// bytes per run). Also the most segments and local copies (16-24 bytes each) a
    /// plan lists once at creation and keeps, so that executions replay them
    /// instead of cutting the runs again, and the most pieces of an in-place
    /// schedule. The runs of direct reads within a node (24 bytes each, at most
    /// one per 32 KiB read by default) are always listed.
    pub run_budget: usize,
    /// Peers per window on the exchange path (default
    /// [`PlanOptions::DEFAULT_WINDOW`]): a rank has streams with about this many
    /// peers per direction in flight, like the throttled all-to-alls of MPI
    /// libraries. A window spans a range of pairwise distances, agreed by the ranks:
    /// the narrowest that holds this many peers of a rank in its first window (see
    /// `planning::schedule`).
    pub window: usize,
    /// Most extra bytes an execution in place on the exchange path takes on a rank,
    /// its staging and the schedule being made (default `None`: the larger of
    /// [`PlanOptions::IN_PLACE_BUDGET_FLOOR`] and the rank's buffer divided by
    /// [`PlanOptions::IN_PLACE_BUDGET_DIVISOR`], less the 64th left to MPI's own
    /// buffers, [`PlanOptions::IN_PLACE_MPI_SHARE`]). The data then moves in rounds
    /// scheduled for that budget (`planning::inplace`), when the schedule has at
    /// most `run_budget` pieces and `run_budget` is at least the square of the rank
    /// count; otherwise everything a rank sends is packed into a buffer of exactly
    /// those bytes.
    pub in_place_budget: Option<usize>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_message_bytes: i32::MAX as usize,
            slot_bytes: PlanOptions::DEFAULT_SLOT_BYTES,
            run_budget: PlanOptions::DEFAULT_RUN_BUDGET,
            window: PlanOptions::DEFAULT_WINDOW,
            in_place_budget: None,
        }
    }
}

impl PlanOptions {
    /// The default [`PlanOptions::slot_bytes`]: 16 MiB.
    pub const DEFAULT_SLOT_BYTES: usize = 16 << 20;

    /// The default [`PlanOptions::run_budget`]: 2^18 runs.
    pub const DEFAULT_RUN_BUDGET: usize = 1 << 18;

    /// The default [`PlanOptions::window`]: 64 peers (MPICH's own throttle is
    /// 32).
    pub const DEFAULT_WINDOW: usize = 64;

    /// The default in-place staging budget of a rank is at least this: 64 MiB.
    pub const IN_PLACE_BUDGET_FLOOR: usize = 64 << 20;

    /// The default in-place staging budget of a rank is at least its buffer divided
    /// by this (a tenth), when that exceeds [`PlanOptions::IN_PLACE_BUDGET_FLOOR`].
    pub const IN_PLACE_BUDGET_DIVISOR: usize = 10;

    /// The default in-place budget leaves this share of the memory bound to MPI
    /// (one 64th: 1 MiB of 64): the buffers MPI grows itself during an execution
    /// count against the bound too. Measured at the first execution in place of a
    /// slab exchange at P = 2 with the whole bound as budget: beyond its staging
    /// it grew 0.24 MiB under MPICH 4.0 and 0.37 MiB under Open MPI 4.1, where the
    /// budget had left 0.29 MiB for the schedule being made, so the bound was
    /// exceeded by 76 KiB.
    pub const IN_PLACE_MPI_SHARE: usize = 64;

    /// Packed messages are capped at no less than this (64 KiB), however many
    /// peers share [`PlanOptions::slot_bytes`].
    pub const MIN_PACKED_BYTES: usize = 64 << 10;

    /// Packed messages are capped at no more than this (1 GiB).
    pub const MAX_PACKED_BYTES: usize = 1 << 30;

    /// Runs of at least this many bytes (64 KiB, or the packed cap when smaller)
    /// travel as messages of their own, straight between the buffers; smaller ones
    /// are packed.
    pub const DIRECT_BYTES: usize = 64 << 10;

    /// Shorter runs of at least this many bytes (1 KiB) that follow one another
    /// at one stride in the sender's buffer, back to back in the receiver's,
    /// travel together as one strided send where the MPI library's strided
    /// datatypes pay (Open MPI); other short runs are packed.
    pub const STRIDED_SHORT_BYTES: usize = 1 << 10;

    /// The message limits when the busiest rank talks to `peers` ranks per
    /// direction, with long strided runs travelling as `strided_runs` (agreed by
    /// the ranks).
    pub(super) fn limits(&self, peers: usize, strided_runs: StridedRuns) -> MessageLimits {
        let max_bytes = self.max_message_bytes.max(1);
        let packed_bytes = (self.slot_bytes / peers)
            .clamp(PlanOptions::MIN_PACKED_BYTES, PlanOptions::MAX_PACKED_BYTES)
            .min(max_bytes);
        MessageLimits {
            max_bytes,
            direct_bytes: packed_bytes.min(PlanOptions::DIRECT_BYTES),
            strided_short_bytes: PlanOptions::STRIDED_SHORT_BYTES,
            packed_bytes,
            max_runs: (self.run_budget / peers).max(1),
            strided_runs,
        }
    }

    /// A rank's default in-place staging budget when its buffer holds
    /// `buffer_bytes`: the memory bound, the larger of
    /// [`PlanOptions::IN_PLACE_BUDGET_FLOOR`] and the buffer over
    /// [`PlanOptions::IN_PLACE_BUDGET_DIVISOR`], less MPI's share of it
    /// ([`PlanOptions::IN_PLACE_MPI_SHARE`]).
    pub(crate) fn default_in_place_budget(buffer_bytes: usize) -> usize {
        let bound = PlanOptions::IN_PLACE_BUDGET_FLOOR
            .max(buffer_bytes / PlanOptions::IN_PLACE_BUDGET_DIVISOR);
        bound - bound / PlanOptions::IN_PLACE_MPI_SHARE
    }
}
