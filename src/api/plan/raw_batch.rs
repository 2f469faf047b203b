//! Batches on raw buffers with a caller's error agreed: what a binding that
//! checks its own arrays (Python's) runs a batch through, as
//! [`Plan::execute_raw_agreeing`] runs one array.

use super::Plan;
use super::batch::BatchBuffers;
use crate::core::error::{Error, Result};

/// A batch's fields as raw buffers: field `i` reads `input_lens[i]` bytes at
/// `inputs[i]` and writes at most `capacities[i]` bytes at `outputs[i]`.
pub struct RawBatch<'a> {
    /// Each field's input.
    pub inputs: &'a [*const u8],
    /// Each field's input length, in bytes (as many as `inputs`).
    pub input_lens: &'a [usize],
    /// Each field's output (as many as `inputs`).
    pub outputs: &'a [*mut u8],
    /// Each field's output capacity, in bytes (as many as `inputs`).
    pub capacities: &'a [usize],
}

impl Plan {
    /// Executes the plan on a batch of raw buffers as
    /// [`Plan::execute_batch`] does, first agreeing with every rank on
    /// `local`, an error the caller found on this rank before calling, as
    /// [`Plan::execute_raw_agreeing`] does: every rank returns the same
    /// status, the caller's error and the batch's checks (every field's
    /// lengths, the count, overlaps) agreed in the batch's one collective.
    /// With a `local` error the buffers are not touched and may be null. The
    /// count is `batch.inputs.len()`, agreed with every rank.
    ///
    /// # Safety
    /// Each `inputs[i]` readable for `input_lens[i]` bytes and `outputs[i]`
    /// writable for `capacities[i]` bytes; the four slices equally long.
    pub unsafe fn execute_batch_raw_agreeing(
        &self,
        batch: &RawBatch<'_>,
        local: Option<Error>,
    ) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_raw_batch(batch, local, true) }.map(drop)
    }

    /// Starts a batch as [`Plan::execute_batch_raw_agreeing`] does, leaving
    /// its messages in flight; returns whether it already completed.
    /// [`Plan::progress`] carries it on.
    ///
    /// # Safety
    /// As [`Plan::execute_batch_raw_agreeing`]; the buffers must stay valid
    /// and untouched until the batch completes or fails.
    pub unsafe fn begin_batch_raw_agreeing(
        &self,
        batch: &RawBatch<'_>,
        local: Option<Error>,
    ) -> Result<bool> {
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_raw_batch(batch, local, false) }
    }

    /// Runs (`blocking`) or starts `batch`, agreeing `local` with its checks.
    ///
    /// # Safety
    /// As [`Plan::begin_batch_raw_agreeing`].
    unsafe fn launch_raw_batch(
        &self,
        batch: &RawBatch<'_>,
        local: Option<Error>,
        blocking: bool,
    ) -> Result<bool> {
        let count = batch.inputs.len();
        let lens = |i: usize| (batch.input_lens[i], batch.capacities[i]);
        let buffers = BatchBuffers {
            inputs: batch.inputs,
            outputs: batch.outputs,
            lens: &lens,
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_batch(count as i64, &buffers, local, blocking) }
    }
}
