//! Batches: one execution of the plan moving `k` arrays (fields) in separate
//! allocations, every field with the plan's layouts, element type and storages.
//! Out of place on every rank, the fields travel in one exchange: a message
//! whose part of one field is short carries every field's part of it, so a
//! latency-bound batch posts no more messages per peer than one array (more
//! only when the fields' parts of a message exceed the plan's message caps,
//! which then shrink by `k`); a message whose part of one field holds 32 KiB
//! or more travels as one message per field, straight from and into each
//! field's buffer (MPI moves those in one copy, a datatype spanning the
//! buffers in two); streams read directly within the node are read field by
//! field. The kept elements are copied field by field, and the extra memory is
//! the slots' growth to hold `k` fields' parts of a packed message, made by the
//! first batch that needs it and kept (never beyond a packed message per
//! stream, the plan's slot budget). With a field in
//! place on any rank, the fields run one after another, each as
//! [`Plan::execute`] runs it (in place within the plan's in-place bounds).
//!
//! A batch is collective: every rank passes the same `k`, agreed with the
//! checks of every field's buffers in the execution's one agreement.

use super::Plan;
use super::execution::{Execution, Expected, check_buffers, in_progress, output_address};
use super::launch::Launch;
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::distribution::overlap::{Placed, SEARCH_BUDGET, sharing};
use crate::mpi::agree::{agree, agree_on_difference};
use crate::mpi::buffers::Buffers;
use crate::mpi::exchange::{FieldBuffers, Mode, Participant};
use crate::mpi::status::require_mpi;

/// Fields whose buffers a batch from slices lists on the stack; more are listed
/// on the heap (one small allocation per execution).
const STACK_FIELDS: usize = 8;

/// A batch's buffers as raw pointers: field `i` reads `inputs[i]` and writes
/// `outputs[i]`, with the lengths `lens(i)` gives (bytes readable at the input,
/// writable at the output).
pub(crate) struct BatchBuffers<'a> {
    /// Each field's input.
    pub(crate) inputs: &'a [*const u8],
    /// Each field's output, as many.
    pub(crate) outputs: &'a [*mut u8],
    /// Field `i`'s input length and output capacity, in bytes.
    pub(crate) lens: &'a dyn Fn(usize) -> (usize, usize),
}

impl BatchBuffers<'_> {
    /// Field `i`'s buffers.
    pub(super) fn field(&self, i: usize) -> Buffers {
        let (input_len, capacity) = (self.lens)(i);
        Buffers::new(self.inputs[i], input_len, self.outputs[i], capacity)
    }
}

impl Plan {
    /// Executes the plan on a batch (collective, every rank with as many
    /// fields): field `i` from `inputs[i]` into `outputs[i]`, each as
    /// [`Plan::execute`] would, in one exchange whose short messages each
    /// carry every field's part (no more messages per peer than one array's
    /// while the fields' parts fit the plan's message caps) and whose long
    /// ones travel one per field (see the module docs). One field behaves as
    /// [`Plan::execute`]. A different count on some rank fails on every rank
    /// with [`Error::InconsistentArguments`]; no fields, or `inputs` and
    /// `outputs` of different lengths, with [`Error::InvalidShape`]. Out of
    /// place, allocates nothing once a batch of as many fields has run (the
    /// first grows the message slots, within the plan's slot budget) and lists
    /// more than 8 fields' pointers on the heap.
    pub fn execute_batch<T: Element>(
        &self,
        inputs: &[&[T]],
        outputs: &mut [&mut [T]],
    ) -> Result<()> {
        let (count, pre) = (
            inputs.len(),
            self.slice_batch_error::<T>(inputs.len(), outputs.len()),
        );
        // SAFETY: the slices are valid for their lengths; distinct borrows
        // cannot overlap.
        with_slices(inputs, outputs, |batch| unsafe {
            self.launch_batch(count as i64, batch, pre, true)
        })
        .map(drop)
    }

    /// Executes the plan in place on a batch (collective): each buffer holds its
    /// field's input on entry and its output on return, so it must be large
    /// enough for both. The fields run one after another, each as
    /// [`Plan::execute_in_place`] runs it (the in-place engines stage one
    /// field within the plan's in-place budget); the count is checked and
    /// agreed as in [`Plan::execute_batch`].
    pub fn execute_batch_in_place<T: Element>(&self, buffers: &mut [&mut [T]]) -> Result<()> {
        let count = buffers.len();
        let pre = self.slice_batch_error::<T>(count, count);
        let lens = Listed::new(buffers.iter().map(|b| size_of_val(&**b)));
        let outs = Listed::new(buffers.iter_mut().map(|b| b.as_mut_ptr().cast::<u8>()));
        let ins = Listed::new(outs.as_slice().iter().map(|&b| b.cast_const()));
        let lens = lens.as_slice();
        let batch = BatchBuffers {
            inputs: ins.as_slice(),
            outputs: outs.as_slice(),
            lens: &|i| (lens[i], lens[i]),
        };
        // SAFETY: each buffer is valid for its length of reading and writing;
        // distinct borrows cannot overlap.
        unsafe { self.launch_batch(count as i64, &batch, pre, true) }.map(drop)
    }

    /// Executes the plan on a batch while `work` runs, as
    /// [`Plan::execute_overlapped`] does for one array: the checks and the
    /// agreement come first (then `work` does not run on failure), the messages
    /// of every field are posted, `work` gets the [`Execution`] to test, and the
    /// batch completes when `work` returns or unwinds. The buffers stay
    /// borrowed until then.
    pub fn execute_batch_overlapped<T: Element, R>(
        &self,
        inputs: &[&[T]],
        outputs: &mut [&mut [T]],
        work: impl FnOnce(&mut Execution<'_>) -> R,
    ) -> Result<R> {
        let (count, pre) = (
            inputs.len(),
            self.slice_batch_error::<T>(inputs.len(), outputs.len()),
        );
        // SAFETY: the slices are valid for their lengths and stay borrowed until
        // the execution has completed (below, or in the guard's drop when
        // unwinding).
        let done = with_slices(inputs, outputs, |batch| unsafe {
            self.launch_batch(count as i64, batch, pre, false)
        })?;
        Execution::overlap(self, done, work)
    }

    /// The error of a batch of `inputs` and `outputs` fields of `T` found on this
    /// rank before the agreement: the element type, no fields, or counts that
    /// differ.
    fn slice_batch_error<T: Element>(&self, inputs: usize, outputs: usize) -> Option<Error> {
        let rank = self.rank();
        self.check_type::<T>()
            .err()
            .or_else(|| match (inputs, outputs) {
                (0, _) => Some(no_fields(0, rank)),
                (a, b) if a != b => Some(Error::InvalidShape(format!(
                    "inputs holds {a} fields but outputs {b} (rank {rank})"
                ))),
                _ => None,
            })
    }

    /// Checks a batch of `count` fields (as the caller gave it: every rank must
    /// give the same), agrees on the checks, the count and `pre` (an error the
    /// caller found first) with every rank, and runs it: out of place on every
    /// rank through the exchange, all fields at once, to completion
    /// (`blocking`) or started; otherwise field by field to completion. Returns
    /// whether it completed.
    ///
    /// # Safety
    /// Every field's input readable and output writable for its lengths; with a
    /// `pre` error the buffers are not touched. Not `blocking`, the buffers must
    /// stay valid and untouched until the execution completes or fails.
    pub(crate) unsafe fn launch_batch(
        &self,
        count: i64,
        batch: &BatchBuffers<'_>,
        pre: Option<Error>,
        blocking: bool,
    ) -> Result<bool> {
        require_mpi()?;
        self.check_thread()?;
        // SAFETY: forwarded from the caller.
        unsafe { self.running(|| self.start_batch(count, batch, pre, blocking)) }
    }

    /// [`Plan::launch_batch`] once the calling thread may call MPI.
    ///
    /// # Safety
    /// As [`Plan::launch_batch`].
    unsafe fn start_batch(
        &self,
        count: i64,
        batch: &BatchBuffers<'_>,
        pre: Option<Error>,
        blocking: bool,
    ) -> Result<bool> {
        let rank = self.rank();
        let mut engines = self.lock();
        let busy = engines.lent || engines.exchange.is_active();
        let fields = batch.outputs.len();
        let checked = match pre.or_else(|| busy.then(in_progress)) {
            Some(e) => Err(e.on_rank(rank)),
            None => self.check_batch(batch, &mut engines.ranges, rank),
        };
        let prepared = checked.and_then(|in_place| match in_place {
            true => Ok(true),
            false => engines
                .exchange
                .prepare_fields(fields, rank)
                .map(|()| false),
        });
        let mut agreed = [i64::from(matches!(prepared, Ok(true))), count, -count];
        agree(&self.executor.comm, prepared.as_ref().err(), &mut agreed)?;
        if agreed[1] != -agreed[2] {
            let wanted = agreed[1];
            return Err(agree_on_difference(
                &self.executor.comm,
                count != wanted,
                |other| {
                    Error::InconsistentArguments(format!(
                        "k = {count} fields on rank {rank} but {wanted} on rank {other}"
                    ))
                },
            ));
        }
        if agreed[0] != 0 {
            drop(engines);
            // SAFETY: forwarded from the caller.
            return unsafe { self.field_by_field(batch) }.map(|()| true);
        }
        let on = Participant {
            plan: &self.executor.plan,
            transport: &*self.executor.comm,
        };
        let buffers = FieldBuffers {
            inputs: batch.inputs,
            outputs: batch.outputs,
        };
        let exchange = &mut engines.exchange;
        // SAFETY: the buffers are checked (sizes, overlaps) and agreed, every
        // rank out of place with as many fields; forwarded from the caller.
        let started = unsafe {
            match blocking {
                true => exchange
                    .run_batch(on, Mode::AllOutOfPlace, buffers)
                    .map(|()| true),
                false => exchange.begin_batch(on, Mode::AllOutOfPlace, buffers),
            }
        };
        engines.lent = matches!(started, Ok(false));
        started
    }

    /// Runs the fields of `batch` one after another, each an execution agreed
    /// with every rank, in place where its buffers are one.
    ///
    /// # Safety
    /// As [`Plan::launch_batch`], with the batch checked and agreed.
    unsafe fn field_by_field(&self, batch: &BatchBuffers<'_>) -> Result<()> {
        for i in 0..batch.outputs.len() {
            // SAFETY: forwarded from the caller.
            unsafe { self.launch(&batch.field(i), None, Launch::AGREED_BLOCKING) }?;
        }
        Ok(())
    }

    /// Checks every field's buffers against the plan (as one execution's) and
    /// that no two fields' buffers overlap; returns whether some field is in
    /// place.
    fn check_batch(
        &self,
        batch: &BatchBuffers<'_>,
        ranges: &mut Vec<BufferRange>,
        rank: usize,
    ) -> Result<bool> {
        let fields = batch.outputs.len();
        if fields == 0 || batch.inputs.len() != fields {
            return Err(no_fields(fields as i64, rank));
        }
        let expected = Expected {
            plan: &self.executor.plan,
            storages: &self.storages,
            strided: self.strided,
        };
        let mut in_place = false;
        for i in 0..fields {
            let field = check_buffers(&expected, &batch.field(i), rank);
            in_place |= field.map_err(|e| in_field(e, i))?;
        }
        check_apart(batch, &|_| self, ranges, rank)?;
        Ok(in_place)
    }
}

/// One buffer of a batch's field as the check that fields lie apart sorts
/// them: its bytes `start..end`, its field, and which of the field's buffers
/// it is (0 the input, or the buffer of a field in place; 1 the output).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BufferRange {
    start: usize,
    end: usize,
    field: usize,
    which: usize,
}

/// A pair of buffers of two fields, `i < j`, as the check names the first it
/// finds sharing bytes: by `j`, then `i`, then which buffers (the order of a
/// check of each field against those before it).
type FieldPair = (usize, usize, usize, usize);

/// Checks that no two fields of `batch` share a byte of their buffers, field
/// `i` executed by `plan_of(i)`: its input and output boxes at the plan's
/// storages, or in place the byte range holding both. Buffers that
/// interleave without sharing a byte are apart. The buffers' ranges are
/// sorted in `ranges` (kept by the caller, so that repeated batches allocate
/// nothing), and only buffers whose ranges meet are searched: O(k log k) for
/// `k` fields apart.
pub(super) fn check_apart<'p>(
    batch: &BatchBuffers<'_>,
    plan_of: &dyn Fn(usize) -> &'p Plan,
    ranges: &mut Vec<BufferRange>,
    rank: usize,
) -> Result<()> {
    let held = |i: usize| {
        let plan = plan_of(i);
        let size = plan.executor.plan.elem_size;
        let (input, output) = (batch.inputs[i] as usize, batch.outputs[i] as usize);
        let (in_bytes, out_bytes) = (plan.input_span() * size, plan.output_span() * size);
        let boxed = |role, storage, address, bytes: usize| {
            (bytes > 0).then(|| (role, Placed::of_box(storage, address, size)))
        };
        match input == output {
            true => {
                let bytes = in_bytes.max(out_bytes);
                let range = (bytes > 0).then(|| ("buffer", Placed::of_range(output, bytes)));
                [range, None]
            }
            false => [
                boxed("input", &plan.storages.input, input, in_bytes),
                boxed("output", &plan.storages.output, output, out_bytes),
            ],
        }
    };
    sort_ranges(batch.outputs.len(), &held, ranges, rank)?;
    let mut first: Option<(FieldPair, &'static str)> = None;
    for (n, a) in ranges.iter().enumerate() {
        for b in ranges[n + 1..].iter().take_while(|b| b.start < a.end) {
            let (ours, theirs) = match a.field.cmp(&b.field) {
                std::cmp::Ordering::Equal => continue,
                std::cmp::Ordering::Less => (a, b),
                std::cmp::Ordering::Greater => (b, a),
            };
            let pair = (theirs.field, ours.field, ours.which, theirs.which);
            if first.is_some_and(|(found, _)| found <= pair) {
                continue;
            }
            let (Some((_, x)), Some((_, y))) = (
                held(ours.field)[ours.which],
                held(theirs.field)[theirs.which],
            ) else {
                continue;
            };
            if let Some(problem) = sharing(x, y, SEARCH_BUDGET).problem() {
                first = Some((pair, problem));
            }
        }
    }
    let Some(((j, i, ours, theirs), problem)) = first else {
        return Ok(());
    };
    let role = |field: usize, which: usize| held(field)[which].map_or("buffer", |(role, _)| role);
    Err(Error::Aliasing(format!(
        "the buffers of fields {i} and {j} {problem} on rank {rank} (field {i}'s {} and field {j}'s {}): each field needs its own",
        role(i, ours),
        role(j, theirs)
    )))
}

/// Fills `ranges` with the byte ranges of the buffers `held` gives for each of
/// `fields` fields, sorted by their first byte; fails when there is no memory
/// for them.
fn sort_ranges<'p>(
    fields: usize,
    held: &dyn Fn(usize) -> [Option<(&'static str, Placed<'p>)>; 2],
    ranges: &mut Vec<BufferRange>,
    rank: usize,
) -> Result<()> {
    ranges.clear();
    if ranges.try_reserve(2 * fields).is_err() {
        return Err(Error::OutOfMemory(format!(
            "cannot keep the byte ranges of {fields} fields' buffers on rank {rank}"
        )));
    }
    for field in 0..fields {
        for (which, buffer) in held(field).iter().enumerate() {
            if let Some((_, placed)) = buffer {
                ranges.push(BufferRange {
                    start: placed.address,
                    end: placed.end(),
                    field,
                    which,
                });
            }
        }
    }
    ranges.sort_unstable_by_key(|r| r.start);
    Ok(())
}

/// The error of a batch of `count` fields, fewer than one.
fn no_fields(count: i64, rank: usize) -> Error {
    Error::InvalidShape(format!(
        "k = {count}: a batch holds at least one field (rank {rank})"
    ))
}

/// `error`, found in field `i`'s buffers, saying so.
pub(super) fn in_field(error: Error, i: usize) -> Error {
    let detail = format!("field {i}: {}", error.detail());
    Error::from_status(error.status(), detail)
}

/// Calls `body` with the batch of `inputs` and `outputs` (the fields both
/// hold; a caller checks that they hold as many).
fn with_slices<T, R>(
    inputs: &[&[T]],
    outputs: &mut [&mut [T]],
    body: impl FnOnce(&BatchBuffers<'_>) -> R,
) -> R {
    let count = inputs.len().min(outputs.len());
    let in_lens = Listed::new(inputs[..count].iter().map(|b| size_of_val(*b)));
    let out_lens = Listed::new(outputs[..count].iter().map(|b| size_of_val(&**b)));
    let ins = Listed::new(inputs[..count].iter().map(|b| b.as_ptr().cast::<u8>()));
    let outs = outputs[..count].iter_mut();
    let outs = Listed::new(outs.map(|b| output_address(b.as_mut_ptr().cast(), size_of_val(&**b))));
    let (in_lens, out_lens) = (in_lens.as_slice(), out_lens.as_slice());
    body(&BatchBuffers {
        inputs: ins.as_slice(),
        outputs: outs.as_slice(),
        lens: &|i| (in_lens[i], out_lens[i]),
    })
}

/// Items listed on the stack up to [`STACK_FIELDS`], else on the heap.
pub(super) enum Listed<P> {
    Stack([P; STACK_FIELDS], usize),
    Heap(Vec<P>),
}

impl<P: Copy> Listed<P> {
    /// `items`, listed.
    pub(super) fn new(mut items: impl ExactSizeIterator<Item = P>) -> Listed<P> {
        let count = items.len();
        let first = match count > STACK_FIELDS {
            true => None,
            false => items.next(),
        };
        let Some(first) = first else {
            return Listed::Heap(items.collect());
        };
        let mut stack = [first; STACK_FIELDS];
        for (slot, item) in stack[1..].iter_mut().zip(items) {
            *slot = item;
        }
        Listed::Stack(stack, count)
    }

    pub(super) fn as_slice(&self) -> &[P] {
        match self {
            Listed::Stack(stack, count) => &stack[..*count],
            Listed::Heap(heap) => heap,
        }
    }
}
