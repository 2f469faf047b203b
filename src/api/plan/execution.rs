//! The checks of one execution's buffers ([`Buffers`]) against the plan, and an
//! execution in flight lent to the closure of [`Plan::execute_overlapped`].

use super::Plan;
use crate::core::error::{Error, Result};
use crate::distribution::overlap::{Placed, SEARCH_BUDGET, sharing};
use crate::distribution::storage::Storages;
use crate::mpi::buffers::Buffers;
use crate::planning::planner::RankPlan;

/// The error of starting an execution while one is in flight.
pub(super) fn in_progress() -> Error {
    Error::ExecutionInProgress(
        "the plan's previous execution has not completed: wait for it first".into(),
    )
}

/// The address an execution is given for a borrowed output of `bytes` bytes
/// at `ptr`: `ptr`, or for an empty output an address no buffer has. An empty
/// slice may start where the borrowed input does (split off its front), and
/// an output at the input's address is taken for in place, which borrows
/// cannot be.
pub(crate) fn output_address(ptr: *mut u8, bytes: usize) -> *mut u8 {
    match bytes {
        0 => std::ptr::NonNull::dangling().as_ptr(),
        _ => ptr,
    }
}

/// What one execution's buffers are checked against: this rank's plan, its
/// storages, and whether any rank's storage is strided.
pub(super) struct Expected<'a> {
    pub(super) plan: &'a RankPlan,
    pub(super) storages: &'a Storages,
    pub(super) strided: bool,
}

/// Checks one execution's buffers against the plan; returns whether it is in place.
/// Each buffer must hold its box's span (its whole box when dense); in place is
/// refused on a plan any rank stores strided.
pub(super) fn check_buffers(
    expected: &Expected<'_>,
    buffers: &Buffers,
    rank: usize,
) -> Result<bool> {
    let Buffers {
        input,
        input_len,
        output,
        capacity,
    } = *buffers;
    let (plan, storages) = (expected.plan, expected.storages);
    let size = plan.elem_size;
    let (in_span, out_span) = (storages.input.span(), storages.output.span());
    let (in_bytes, out_bytes) = (in_span as usize * size, out_span as usize * size);
    let null = |name: &str, elems: u64| {
        Error::NullPointer(format!(
            "{name} is NULL but rank {rank} has {elems} elements there"
        ))
    };
    if input.is_null() && in_bytes > 0 {
        return Err(null("the input buffer", plan.input_elems()));
    }
    if output.is_null() && out_bytes > 0 {
        return Err(null("the output buffer", plan.output_elems()));
    }
    if input_len < in_bytes {
        // A dense input's span is its element count: the message says so, as
        // before strides (callers and tests match it).
        return Err(Error::BufferTooSmall(if storages.input.is_dense() {
            format!(
                "the input buffer holds {} elements but rank {rank} holds {in_span} input elements",
                input_len / size,
            )
        } else {
            format!(
                "the input buffer holds {} elements but rank {rank}'s input spans {in_span}",
                input_len / size,
            )
        }));
    }
    let in_place = std::ptr::eq(input, output) && in_bytes.max(out_bytes) > 0;
    if in_place && expected.strided {
        return Err(Error::InvalidStrides(format!(
            "in place on a plan with strided storage: pass separate input and output buffers (rank {rank})"
        )));
    }
    let needed = if in_place {
        in_bytes.max(out_bytes)
    } else {
        out_bytes
    };
    if capacity < needed {
        return Err(Error::BufferTooSmall(format!(
            "out_capacity = {} elements but rank {rank} needs {}{}",
            capacity / size,
            needed / size,
            if in_place {
                " (in place the buffer holds both input and output)"
            } else {
                ""
            }
        )));
    }
    let (a, b) = (input as usize, output as usize);
    if !in_place && in_bytes > 0 && out_bytes > 0 && a < b + out_bytes && b < a + in_bytes {
        check_apart(expected, (a, b), rank)?;
    }
    Ok(in_place)
}

/// Checks that the input box at address `a` and the output box at `b`, whose
/// spans meet, share no byte (they may interleave: the odd and the even rows
/// of one array).
fn check_apart(expected: &Expected<'_>, (a, b): (usize, usize), rank: usize) -> Result<()> {
    let (storages, size) = (expected.storages, expected.plan.elem_size);
    let found = sharing(
        Placed::of_box(&storages.input, a, size),
        Placed::of_box(&storages.output, b, size),
        SEARCH_BUDGET,
    );
    let Some(problem) = found.problem() else {
        return Ok(());
    };
    let (in_bytes, out_bytes) = (
        storages.input.span() as usize * size,
        storages.output.span() as usize * size,
    );
    let advice = match expected.strided {
        true => "pass buffers that share no byte",
        false => "pass buffers that share no byte, or the same pointer for in place",
    };
    Err(Error::Aliasing(format!(
        "the input buffer [{a:#x}, +{in_bytes} B) and the output buffer [{b:#x}, +{out_bytes} B) {problem} on rank {rank}; {advice}"
    )))
}

/// An execution in flight, lent to the closure of [`Plan::execute_overlapped`].
#[derive(Debug)]
pub struct Execution<'a> {
    pub(super) plan: &'a Plan,
    pub(super) done: bool,
    /// A failure seen by [`Execution::test`], reported when the execution ends.
    pub(super) failed: Option<Error>,
}

impl Execution<'_> {
    /// Lends the execution of `plan` begun (`done` when it already completed)
    /// to `work`, then completes it, as [`Plan::execute_overlapped`] does.
    pub(super) fn overlap<R>(
        plan: &Plan,
        done: bool,
        work: impl FnOnce(&mut Execution<'_>) -> R,
    ) -> Result<R> {
        let mut execution = Execution {
            plan,
            done,
            failed: None,
        };
        let result = work(&mut execution);
        execution.finish().map(|()| result)
    }

    /// Moves the execution on as far as it goes without waiting (posts the next
    /// round, unpacks what arrived); returns whether it has completed. Call it
    /// between pieces of computation, every few hundred microseconds: most MPI
    /// libraries move messages only inside MPI calls. A failure is returned here
    /// and again when the execution ends.
    pub fn test(&mut self) -> Result<bool> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if !self.done {
            let progressed = self.plan.progress(false);
            self.failed = progressed.as_ref().err().cloned();
            self.done = progressed?;
        }
        Ok(self.done)
    }

    /// Completes the execution.
    pub(super) fn finish(&mut self) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if !std::mem::replace(&mut self.done, true) {
            self.plan.progress(true)?;
        }
        Ok(())
    }
}

impl Drop for Execution<'_> {
    /// Completes the execution when the closure unwinds: the buffers are about to
    /// be released.
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
