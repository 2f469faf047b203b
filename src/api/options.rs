//! The tuning knobs of a plan, and the message limits they give.

use crate::planning::messages::MessageLimits;

/// Tuning knobs of a plan. The defaults suit production; tests lower the limits to
/// exercise the chunked paths with small arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Most bytes in one MPI message (MPI counts are 32-bit; default `i32::MAX`).
    pub max_message_bytes: usize,
    /// Staging for packed messages (small runs), per direction, over all peers
    /// (default 16 MiB): packed messages are capped at this divided by the largest
    /// peer count of any rank (but at least 64 KiB), so staging never exceeds it by
    /// more than that floor times the peer count, nor the bytes actually moved.
    pub slot_bytes: usize,
    /// Most runs cut into the messages of one round, over all peers: bounds the
    /// memory that lists them (16 bytes per run). Also the most segments and local
    /// copies (16-24 bytes each) a plan lists once at creation and keeps, so that
    /// executions replay them instead of cutting the runs again.
    pub run_budget: usize,
    /// Pairwise distances per window on the exchange path (default 64): a rank has
    /// streams with at most this many peers per direction in flight, like the
    /// throttled all-to-alls of MPI libraries (see `planning::schedule`).
    pub window: usize,
    /// Most bytes an execution in place on the exchange path stages on a rank
    /// (default `None`: the larger of 64 MiB and a tenth of the rank's buffer). The
    /// data then moves in rounds scheduled for that budget (`planning::inplace`),
    /// when the schedule has at most `run_budget` pieces and `run_budget` exceeds
    /// the square of the rank count; otherwise everything a rank sends is staged.
    pub in_place_budget: Option<usize>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_message_bytes: i32::MAX as usize,
            slot_bytes: 16 << 20,
            run_budget: 1 << 18,
            window: 64,
            in_place_budget: None,
        }
    }
}

impl PlanOptions {
    /// The message limits when the busiest rank talks to `peers` ranks per direction.
    pub(super) fn limits(&self, peers: usize) -> MessageLimits {
        let max_bytes = self.max_message_bytes.max(1);
        let packed_bytes = (self.slot_bytes / peers)
            .clamp(64 << 10, 1 << 30)
            .min(max_bytes);
        MessageLimits {
            max_bytes,
            direct_bytes: packed_bytes.min(64 << 10),
            packed_bytes,
            max_runs: (self.run_budget / peers).max(1),
        }
    }
}
