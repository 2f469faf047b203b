//! The local side of an execution: the elements a rank keeps (listed once when the
//! plan is created, copied at every execution), the slots (the streams'
//! slots for packed messages), and the one buffer and the pack buffer of an
//! execution in place with everything sent packed.

use crate::core::error::Result;
use crate::core::fallible::{try_push, try_vec};
use crate::distribution::region::RegionRuns;
use crate::planning::planner::{KeptCopy, RankPlan};

use super::stream::Stream;

/// The slots of `streams`, `bytes` in all. When every stream's messages are kept,
/// each slot is exactly as large as its largest scattered message, so the slots are
/// touched now and executions take no page faults; otherwise only their capacity
/// is reserved, and pages no message needs are never touched.
pub(super) fn slots(streams: &[Stream], bytes: usize, rank: usize) -> Result<Vec<u8>> {
    let mut slots = try_vec(bytes, "the message slots", rank)?;
    if streams.iter().all(|s| s.cut.is_some()) {
        slots.resize(bytes, 0);
    }
    Ok(slots)
}

/// [`RankPlan::packed_send_starts`], listed (in the order of `plan.sends`).
pub(super) fn packed_starts(plan: &RankPlan) -> Result<Vec<usize>> {
    let mut starts = try_vec(plan.sends.len(), "the packed send offsets", plan.rank)?;
    starts.extend(plan.packed_send_starts());
    Ok(starts)
}

/// Copies everything this rank sends into the pack buffer `packed` and moves the
/// kept elements within `buffer`; returns where the sends are read from.
///
/// # Safety
/// `buffer` must hold the larger of the plan's input and output sizes.
pub(super) unsafe fn pack_in_place(
    plan: &RankPlan,
    packed: &mut Vec<u8>,
    buffer: *mut u8,
) -> *const u8 {
    let in_bytes = plan.input_elems() as usize * plan.elem_size;
    // SAFETY: as documented.
    let buffer = unsafe { in_place_buffer(plan, buffer) };
    plan.pack_sends(&buffer[..in_bytes], packed);
    plan.move_kept_in_place(buffer);
    packed.as_ptr()
}

/// The one buffer of an in-place execution, as long as the larger of input and output.
///
/// # Safety
/// `buffer` must hold the larger of the plan's input and output sizes, unaliased.
pub(super) unsafe fn in_place_buffer<'a>(plan: &RankPlan, buffer: *mut u8) -> &'a mut [u8] {
    let len = plan.input_elems().max(plan.output_elems()) as usize * plan.elem_size;
    // SAFETY: as documented.
    unsafe { slice_or_empty_mut(buffer, len) }
}

/// The copies of the elements a rank keeps, as every execution makes them.
#[derive(Debug)]
pub(super) enum LocalCopies {
    /// Listed once when the plan was created (within its budget).
    Listed(Vec<KeptCopy>),
    /// Too many to list: read from the rank's local runs, rewound by every
    /// execution (so it allocates nothing either).
    Cut(Box<RegionRuns>),
}

impl LocalCopies {
    /// The local copies of `plan`, listed unless there are more than `budget`.
    pub(super) fn new(plan: &RankPlan, budget: usize) -> Result<LocalCopies> {
        let mut runs = plan.local_runs();
        let mut kept = Vec::new();
        for copy in plan.kept_copies(&mut runs) {
            if kept.len() == budget {
                runs.rewind();
                return Ok(LocalCopies::Cut(Box::new(runs)));
            }
            try_push(&mut kept, copy, "the local copies", plan.rank)?;
        }
        Ok(LocalCopies::Listed(kept))
    }

    /// The number of copies listed (`None` when they are cut at every execution).
    pub(super) fn listed(&self) -> Option<usize> {
        match self {
            LocalCopies::Listed(kept) => Some(kept.len()),
            LocalCopies::Cut(_) => None,
        }
    }

    /// Copies the elements `plan` keeps from `input` to `output`. Through raw
    /// pointers: receives in flight write other parts of `output`, so no reference
    /// may cover it.
    ///
    /// # Safety
    /// As [`Exchange::run`](super::Exchange::run), out of place.
    pub(super) unsafe fn copy(&mut self, plan: &RankPlan, input: *const u8, output: *mut u8) {
        let copy = |c: &KeptCopy| {
            // SAFETY: every kept copy lies inside both buffers (planner invariant),
            // which do not overlap, and no message touches the bytes it writes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    input.add(c.from.start),
                    output.add(c.to),
                    c.from.len(),
                )
            }
        };
        match self {
            LocalCopies::Listed(kept) => kept.iter().for_each(copy),
            LocalCopies::Cut(runs) => {
                runs.rewind();
                plan.kept_copies(runs).for_each(|c| copy(&c));
            }
        }
    }
}

/// The mutable slice at `ptr` of `len` bytes; `ptr` may be null when `len` is 0.
///
/// # Safety
/// `ptr` must be writable for `len` bytes and not aliased.
pub(super) unsafe fn slice_or_empty_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        &mut []
    } else {
        // SAFETY: as documented, ptr is writable for len bytes and not aliased.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}
