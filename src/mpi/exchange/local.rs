//! The local side of an execution: the elements a rank keeps (listed once when the
//! plan is created, copied at every execution, byte for byte or, when either of
//! the rank's storages is strided, between them through the memory layer's
//! copier, its stores chosen for all the kept bytes), the slots (the streams' slots for packed messages), and the one
//! buffer and the pack buffer of an execution in place with everything sent
//! packed.

use crate::core::error::Result;
use crate::core::fallible::{try_push, try_vec};
use crate::distribution::region::RegionRuns;
use crate::distribution::storage::Storages;
use crate::memory::Host;
use crate::memory::strided::Copier;
use crate::planning::planner::{KeptCopy, RankPlan, move_kept_within};
use crate::planning::schedule::Side;

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

/// The indices of the send streams of `streams` in the order of `plan.sends`
/// (the layout of [`RankPlan::pack_sends`]), when every peer sent to has one and
/// every one kept its messages: an execution in place then packs the sends
/// through them, rather than walking the plan's runs again. `None` otherwise.
pub(super) fn kept_send_order(plan: &RankPlan, streams: &[Stream]) -> Result<Option<Vec<usize>>> {
    let sends = || {
        streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.spec.side == Side::Send)
    };
    if sends().count() != plan.sends.len() || sends().any(|(_, s)| s.cut.is_none()) {
        return Ok(None);
    }
    let mut order = try_vec(plan.sends.len(), "the order of the packed sends", plan.rank)?;
    order.extend(sends().map(|(i, _)| i));
    order.sort_unstable_by_key(|&i| streams[i].packed_at);
    Ok(Some(order))
}

/// Copies everything this rank sends into the pack buffer `packed`, through the
/// send streams' kept messages in `send_order` ([`kept_send_order`]) or else the
/// plan's runs, and moves the kept elements within `buffer`; returns where the
/// sends are read from.
///
/// # Safety
/// `buffer` must hold the larger of the plan's input and output sizes.
pub(super) unsafe fn pack_in_place(
    plan: &RankPlan,
    streams: &[Stream],
    send_order: Option<&[usize]>,
    kept: &LocalCopies,
    packed: &mut Vec<u8>,
    buffer: *mut u8,
) -> *const u8 {
    let in_bytes = plan.input_elems() as usize * plan.elem_size;
    // SAFETY: as documented.
    let buffer = unsafe { in_place_buffer(plan, buffer) };
    let input = &buffer[..in_bytes];
    match send_order {
        Some(order) => order
            .iter()
            .for_each(|&i| streams[i].pack_kept(input, packed)),
        None => plan.pack_sends(input, packed),
    }
    kept.move_in_place(plan, buffer);
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

/// Bytes of the bounce buffer through which kept runs go between two strided
/// storages that cut them differently (a reshape): small enough to stay in cache.
const BOUNCE_BYTES: usize = 64 << 10;

/// The copies of the elements a rank keeps, as every execution makes them, and
/// how: byte for byte, or between the rank's storages when either is strided.
#[derive(Debug)]
pub(super) struct LocalCopies {
    list: KeptList,
    strided: Option<StridedKept>,
}

/// The kept copies of a plan, listed or cut anew.
#[derive(Debug)]
enum KeptList {
    /// Listed once when the plan was created (within its budget).
    Listed(Vec<KeptCopy>),
    /// Too many to list: read from the rank's local runs, rewound by every
    /// execution (so it allocates nothing either).
    Cut(Box<RegionRuns>),
}

/// The storages kept copies go between, with the bounce buffer for runs the two
/// cut differently.
#[derive(Debug)]
struct StridedKept {
    storages: Storages,
    bounce: Vec<u8>,
}

impl LocalCopies {
    /// The local copies of `plan`, listed unless there are more than `budget`,
    /// made between `strided` storages when given.
    pub(super) fn new(
        plan: &RankPlan,
        budget: usize,
        strided: Option<Storages>,
    ) -> Result<LocalCopies> {
        let strided = match strided {
            Some(storages) => {
                let mut bounce = try_vec(
                    BOUNCE_BYTES.max(plan.elem_size),
                    "the bounce buffer",
                    plan.rank,
                )?;
                bounce.resize(bounce.capacity(), 0);
                Some(StridedKept { storages, bounce })
            }
            None => None,
        };
        let mut runs = plan.local_runs();
        let mut kept = Vec::new();
        for copy in plan.kept_copies(&mut runs) {
            if kept.len() == budget {
                runs.rewind();
                let list = KeptList::Cut(Box::new(runs));
                return Ok(LocalCopies { list, strided });
            }
            try_push(&mut kept, copy, "the local copies", plan.rank)?;
        }
        let list = KeptList::Listed(kept);
        Ok(LocalCopies { list, strided })
    }

    /// Moves the elements `plan` keeps to their output positions within `buffer`
    /// (in place, dense storage), through the listed copies when they are listed.
    pub(super) fn move_in_place(&self, plan: &RankPlan, buffer: &mut [u8]) {
        match &self.list {
            KeptList::Listed(kept) if self.strided.is_none() => {
                let (ascending, descending) = (kept.iter().cloned(), kept.iter().rev().cloned());
                move_kept_within(buffer, ascending, descending);
            }
            _ => plan.move_kept_in_place(buffer),
        }
    }

    /// The number of copies listed (`None` when they are cut at every execution).
    pub(super) fn listed(&self) -> Option<usize> {
        match &self.list {
            KeptList::Listed(kept) => Some(kept.len()),
            KeptList::Cut(_) => None,
        }
    }

    /// Copies the elements `plan` keeps from `input` to `output`. Through raw
    /// pointers: receives in flight write other parts of `output`, so no reference
    /// may cover it.
    ///
    /// # Safety
    /// As [`Exchange::run`](super::Exchange::run), out of place.
    pub(super) unsafe fn copy(&mut self, plan: &RankPlan, input: *const u8, output: *mut u8) {
        let size = plan.elem_size;
        let Some(StridedKept { storages, bounce }) = &mut self.strided else {
            return self.list.for_each(plan, |c| {
                // SAFETY: every kept copy lies inside both buffers (planner
                // invariant), which do not overlap, and no message touches the
                // bytes it writes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        input.add(c.from.start),
                        output.add(c.to),
                        c.from.len(),
                    )
                }
            });
        };
        let whole = plan.local_elems as usize * size;
        let mut copier = Copier::new(&Host, size, input, output).within(whole);
        self.list.for_each(plan, |c| {
            let from = (&storages.input, (c.from.start / size) as u64);
            let to = (&storages.output, (c.to / size) as u64);
            let len = (c.from.len() / size) as u64;
            // SAFETY: every kept run lies inside both boxes (planner invariant),
            // so inside both spans, which do not overlap; no message touches the
            // elements it writes.
            unsafe { copier.copy_run(from, to, len, bounce) }
        });
        // SAFETY: as above.
        unsafe { copier.finish() };
    }
}

impl KeptList {
    /// Hands every kept copy of `plan` to `copy`, in order, allocating nothing.
    fn for_each(&mut self, plan: &RankPlan, mut copy: impl FnMut(&KeptCopy)) {
        match self {
            KeptList::Listed(kept) => kept.iter().for_each(copy),
            KeptList::Cut(runs) => {
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
