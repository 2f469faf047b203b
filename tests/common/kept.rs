//! The elements a rank keeps, copied as its plan lists them.

use distreshape::testing::{KeptCopy, RankPlan};

/// Copies the elements `plan` keeps from `input` to `output` (byte buffers of its
/// rank's input and output), as an execution out of place does.
pub fn copy_kept(plan: &RankPlan, input: &[u8], output: &mut [u8]) {
    for KeptCopy { from, to } in plan.kept_copies(&mut plan.local_runs()) {
        output[to..to + from.len()].copy_from_slice(&input[from]);
    }
}
