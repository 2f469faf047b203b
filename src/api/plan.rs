//! Plans: collective creation (validation agreed by all ranks, one allgather of the
//! slab lengths, pure planning) and repeated collective execution.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

use mpi::raw::AsRaw;

use crate::core::abi::dr_dtype;
use crate::core::error::{Error, Result};
use crate::core::fallible::{contain_panic, try_vec};
use crate::core::faults::injected_panic_point;
use crate::mpi::agree::agree;
use crate::mpi::comm::{Comm, RawComm, require_mpi};
use crate::mpi::exchange::{Exchange, InPlaceRoute, Mode, messages_per_round};
use crate::mpi::inplace_exchange::ScheduledExchange;
use crate::planning::args::{
    Checked, FINGERPRINT_LEN, ReshapeArgs, check_local, check_rows_add_up, mismatch,
};
use crate::planning::inplace::{Problem, Schedule, Unscheduled};
use crate::planning::messages::MessageLimits;
use crate::planning::planner::{PlanStats, RankPlan, Route};
use crate::planning::schedule::Progress;

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
    pub staging_bytes: usize,
    /// Most runs cut into the messages of one round, over all peers: bounds the
    /// memory that lists them (16 bytes per run). Also the most segments and local
    /// copies (16-24 bytes each) a plan lists once at creation and keeps, so that
    /// executions replay them instead of cutting the runs again.
    pub run_budget: usize,
    /// Pairwise distances per window on the exchange path (default 64): a rank has
    /// streams with at most this many peers per direction in flight, like the
    /// throttled all-to-alls of MPI libraries (see [`crate::schedule`]).
    pub window: usize,
    /// Most bytes an execution in place on the exchange path stages on a rank
    /// (default `None`: the larger of 64 MiB and a tenth of the rank's buffer). The
    /// data then moves in rounds scheduled for that budget ([`crate::inplace`]),
    /// when the schedule has at most `run_budget` pieces and `run_budget` exceeds
    /// the square of the rank count; otherwise everything a rank sends is staged.
    pub in_place_budget: Option<usize>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_message_bytes: i32::MAX as usize,
            staging_bytes: 16 << 20,
            run_budget: 1 << 18,
            window: 64,
            in_place_budget: None,
        }
    }
}

impl PlanOptions {
    /// The message limits when the busiest rank talks to `peers` ranks per direction.
    fn limits(&self, peers: usize) -> MessageLimits {
        let max_bytes = self.max_message_bytes.max(1);
        let packed_bytes = (self.staging_bytes / peers)
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

/// A reshape planned on every rank of a communicator, ready to be executed many times.
///
/// ```no_run
/// use distreshape::{Plan, ReshapeArgs};
/// let universe = mpi::initialize().unwrap();
/// let world = mpi::topology::SimpleCommunicator::world();
/// # use mpi::topology::Communicator;
/// let (rank, size) = (world.rank() as u64, world.size() as u64);
/// // (10, 10000, 10) split along axis 1 -> (10, 100000) split along axis 1.
/// let (len, _) = distreshape::balanced_slab(10_000, size, rank);
/// let args = ReshapeArgs::new(8, &[10, 10_000, 10], Some(1), len as i64, &[10, -1], Some(1));
/// let plan = Plan::new(&world, &args).unwrap();
/// let input = vec![0.0f64; plan.input_elems()];
/// let mut output = vec![0.0f64; plan.output_elems()];
/// plan.execute(&input, &mut output).unwrap();
/// assert_eq!(plan.stats().bytes_sent, 0); // p divides 10000: nothing moves
/// ```
///
/// A plan can move to another thread but not be shared between threads (it is not
/// `Sync`): two executions of one plan at once would use the same messages, and the
/// ranks could pair one thread's execution with the other's.
///
/// ```compile_fail
/// fn shared_between_threads<T: Sync>() {}
/// shared_between_threads::<distreshape::Plan>();
/// ```
#[derive(Debug)]
pub struct Plan {
    /// Streams, requests and staging, reused by every execution. The mutex keeps
    /// C callers who break the one-thread-per-plan rule from racing on them.
    /// Declared (so dropped) before `comm`: an execution still in flight is
    /// cancelled while the communicator exists.
    exchange: Mutex<Exchange>,
    comm: Comm,
    plan: RankPlan,
    /// False when no rank sends or receives anything: execution is then purely
    /// local on every rank and needs no collective.
    collective: bool,
    /// The `dr_dtype` every rank planned for, when the arguments named one.
    dtype: Option<i32>,
    /// This rank's input and output slabs' shapes (C order).
    local_shapes: [Vec<u64>; 2],
    /// The options the plan was made with.
    options: PlanOptions,
    /// Makes the plan `!Sync` (see above).
    not_shared: PhantomData<Cell<()>>,
}

impl Plan {
    /// Plans `args` over `comm` with the default options (collective).
    pub fn new<C: AsRaw<Raw = RawComm>>(comm: &C, args: &ReshapeArgs) -> Result<Plan> {
        Plan::create(comm.as_raw(), Ok(args.clone()), PlanOptions::default())
    }

    /// Plans over a raw communicator handle (collective). A local `Err` in `args` (an
    /// argument the caller could not even decode) is agreed with the other ranks like
    /// any validation failure, so every rank returns the same status.
    pub fn create(comm: RawComm, args: Result<ReshapeArgs>, options: PlanOptions) -> Result<Plan> {
        let dtype = args.as_ref().ok().and_then(|a| a.dtype);
        let comm = Comm::for_plan(comm)?;
        let (checked, mut gathered) = agree_on_arguments(&comm, args)?;
        gathered.exchange(&comm, &checked)?;
        let targets = gathered.check(&checked)?;
        let planned =
            contain_panic(|| RankPlan::new(&checked, &gathered.lens, targets, comm.rank()));
        let (plan, busiest, collective) = agree_on_plan(&comm, planned)?;
        let exchange = contain_panic(|| {
            Exchange::new(
                &plan,
                comm.size(),
                options.limits(busiest),
                messages_per_round(busiest),
                Progress::for_path(plan.path, options.window),
                options.run_budget,
            )
        });
        if collective {
            agree(&comm, exchange.as_ref().err(), &mut [])?;
        }
        let input_shape = slab_shape(&checked.gshape, checked.split, checked.local_len);
        let output_shape = slab_shape(
            &plan.new_shape,
            checked.new_split,
            plan.output_rows().unwrap_or(0),
        );
        Ok(Plan {
            exchange: Mutex::new(exchange?),
            comm,
            plan,
            collective,
            dtype,
            local_shapes: [input_shape, output_shape],
            options,
            not_shared: PhantomData,
        })
    }

    /// The same plan with every execution agreed by all ranks, even when nothing moves
    /// between them: one-shot reshapes already pay for collectives in planning, so
    /// they keep the same-status-everywhere rule without exception.
    pub(crate) fn agreeing_always(mut self) -> Plan {
        self.collective = true;
        self
    }

    /// The statistics of what this rank will do.
    pub fn stats(&self) -> PlanStats {
        self.plan.stats()
    }

    /// The path taken (the same on every rank).
    pub fn path(&self) -> Route {
        self.plan.path
    }

    /// The resolved output global shape.
    pub fn new_shape(&self) -> &[u64] {
        &self.plan.new_shape
    }

    /// The shape of this rank's input slab (C order): the global shape with this
    /// rank's rows along the split axis.
    pub fn local_input_shape(&self) -> &[u64] {
        &self.local_shapes[0]
    }

    /// The shape of this rank's output slab (C order): the new global shape with
    /// this rank's rows along the new split axis.
    pub fn local_output_shape(&self) -> &[u64] {
        &self.local_shapes[1]
    }

    /// This rank's input slab along the split axis: `(offset, rows)`, the first
    /// global row it holds and how many (`None` when the input is not split).
    pub fn input_slab(&self) -> Option<(u64, u64)> {
        self.plan.input.rows(self.plan.rank)
    }

    /// This rank's output slab along the new split axis: `(offset, rows)` (`None`
    /// when the output is not split). With explicit target lengths the offset is
    /// the sum of the lower ranks' lengths, which no local formula gives.
    pub fn output_slab(&self) -> Option<(u64, u64)> {
        self.plan.output.rows(self.plan.rank)
    }

    /// This rank's output rows along the new split axis (`None` when not split).
    pub fn output_rows(&self) -> Option<u64> {
        self.plan.output_rows()
    }

    /// Elements this rank's input buffer holds.
    pub fn input_elems(&self) -> usize {
        self.plan.input_elems() as usize
    }

    /// Elements this rank's output buffer must hold.
    pub fn output_elems(&self) -> usize {
        self.plan.output_elems() as usize
    }

    /// Bytes per element.
    pub fn elem_size(&self) -> usize {
        self.plan.elem_size
    }

    /// True when executing needs the other ranks: some rank sends or receives. A plan
    /// that moves nothing between ranks (for example the seed case with balanced
    /// input) executes locally: no collective, no synchronization, and a buffer error
    /// is reported only on the rank that made it.
    pub fn is_collective(&self) -> bool {
        self.collective
    }

    /// Bytes of staging the plan keeps for executions in place on the exchange path
    /// once one has run and found a bounded schedule (at most
    /// [`PlanOptions::in_place_budget`]); `None` before, and when every such
    /// execution stages everything the rank sends instead.
    pub fn in_place_staging_bytes(&self) -> Option<usize> {
        let exchange = self.exchange.lock().unwrap_or_else(PoisonError::into_inner);
        match &exchange.in_place {
            InPlaceRoute::Scheduled(s) => Some(s.staging_bytes()),
            _ => None,
        }
    }

    /// This process's rank in the plan's communicator.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The per-rank plan (peers, volumes, layouts), for the benchmarks and tests.
    #[doc(hidden)]
    pub fn rank_plan(&self) -> &RankPlan {
        &self.plan
    }

    /// Executes the plan from `input` into `output` (collective unless
    /// [`Plan::is_collective`] is false). `T` must have the plan's element size.
    pub fn execute<T: crate::core::element::Element>(
        &self,
        input: &[T],
        output: &mut [T],
    ) -> Result<()> {
        let pre = self.check_type::<T>().err();
        let bytes = std::mem::size_of_val(output);
        // SAFETY: the slices are valid for their lengths; distinct borrows cannot overlap.
        unsafe {
            self.execute_checked(
                input.as_ptr().cast(),
                std::mem::size_of_val(input),
                output.as_mut_ptr().cast(),
                bytes,
                pre,
            )
        }
    }

    /// Executes the plan while `work` runs: the messages are posted, `work` gets
    /// the [`Execution`] to call [`Execution::test`] on between pieces of its own
    /// computation (MPI moves messages mostly inside MPI calls), and the execution
    /// is completed when `work` returns, or unwinds. Errors of the checks and the
    /// agreement come before `work` runs (it then does not run), the same on every
    /// rank; a failure while messages flow is this rank's. The buffers stay
    /// borrowed until the end, so no safe code can release them while MPI uses them.
    ///
    /// ```no_run
    /// # fn f(plan: &distreshape::Plan, a: &[f64], b: &mut [f64]) -> distreshape::Result<()> {
    /// let sum = plan.execute_overlapped(a, b, |execution| {
    ///     let mut sum = 0.0;
    ///     for chunk in a.chunks(4096) {
    ///         sum += chunk.iter().sum::<f64>();        // computation ...
    ///         let _ = execution.test();                 // ... lets MPI progress
    ///     }
    ///     sum
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn execute_overlapped<T: crate::core::element::Element, R>(
        &self,
        input: &[T],
        output: &mut [T],
        work: impl FnOnce(&mut Execution<'_>) -> R,
    ) -> Result<R> {
        let pre = self.check_type::<T>().err();
        let (in_bytes, out_bytes) = (size_of_val(input), size_of_val(output));
        let out = output.as_mut_ptr().cast::<u8>();
        // SAFETY: the slices are valid for their lengths and stay borrowed until the
        // execution has completed (below, or in the guard's drop when unwinding).
        let done =
            unsafe { self.begin_checked(input.as_ptr().cast(), in_bytes, out, out_bytes, pre) }?;
        let mut execution = Execution {
            plan: self,
            done,
            failed: None,
        };
        let result = work(&mut execution);
        execution.finish().map(|()| result)
    }

    /// Executes the plan in place: `buffer` holds this rank's input on entry and its
    /// output on return, so it must be large enough for both (collective unless
    /// [`Plan::is_collective`] is false). When the output equals the input on this
    /// rank, nothing is touched.
    pub fn execute_in_place<T: crate::core::element::Element>(
        &self,
        buffer: &mut [T],
    ) -> Result<()> {
        let pre = self.check_type::<T>().err();
        let bytes = std::mem::size_of_val(buffer);
        let ptr = buffer.as_mut_ptr().cast::<u8>();
        // SAFETY: the buffer is valid for `bytes` bytes of reading and writing.
        unsafe { self.execute_checked(ptr, bytes, ptr, bytes, pre) }
    }

    /// Executes the plan on raw buffers (collective). `output` may equal `input`
    /// (in place; the buffer must then hold both); partial overlap is an error.
    /// Pointers to zero bytes may be null.
    ///
    /// # Safety
    /// `input` must be readable for this rank's input size and `output` writable for
    /// `output_capacity` bytes.
    pub unsafe fn execute_raw(
        &self,
        input: *const u8,
        output: *mut u8,
        output_capacity: usize,
    ) -> Result<()> {
        let in_bytes = self.plan.input_elems() as usize * self.plan.elem_size;
        // SAFETY: forwarded from the caller.
        unsafe { self.execute_checked(input, in_bytes, output, output_capacity, None) }
    }

    /// Checks that `T` is the type the plan was made for: its size, its `dr_dtype`
    /// when the plan has one, and a plan with a `dr_dtype` for `bool` (the ranks
    /// then all move `bool`, so no invalid byte can arrive).
    fn check_type<T: crate::core::element::Element>(&self) -> Result<()> {
        let (size, rank) = (size_of::<T>(), self.comm.rank());
        let problem = if size != self.plan.elem_size {
            format!(
                "has {size} bytes but the plan was made for {}",
                self.plan.elem_size
            )
        } else if self.dtype.is_some_and(|d| d != T::DTYPE) {
            format!(
                "is dtype {} but the plan was made for dtype {}",
                T::DTYPE,
                self.dtype.unwrap_or(-1)
            )
        } else if self.dtype.is_none() && T::DTYPE == dr_dtype::DR_DTYPE_BOOL as i32 {
            "is bool, which needs a plan made for bool (ReshapeArgs::with_element::<bool>)".into()
        } else {
            return Ok(());
        };
        Err(Error::InvalidDtype(format!(
            "the element type {problem} (rank {rank})"
        )))
    }

    /// Checks the buffers, agrees on the outcome with every rank, then moves the data.
    ///
    /// # Safety
    /// As [`Plan::execute_raw`], with `input` readable for `input_len` bytes.
    pub(crate) unsafe fn execute_checked(
        &self,
        input: *const u8,
        input_len: usize,
        output: *mut u8,
        output_capacity: usize,
        pre: Option<Error>,
    ) -> Result<()> {
        let buffers = ((input, input_len), (output, output_capacity));
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(buffers, pre, true) }.map(drop)
    }

    /// Starts an execution as [`Plan::execute_checked`] does (the same checks and
    /// agreement), leaving its messages in flight; returns whether it completed.
    /// [`Plan::progress`] carries it on.
    ///
    /// # Safety
    /// As [`Plan::execute_checked`], and the buffers must stay valid and untouched
    /// until the execution completes or fails.
    pub(crate) unsafe fn begin_checked(
        &self,
        input: *const u8,
        input_len: usize,
        output: *mut u8,
        output_capacity: usize,
        pre: Option<Error>,
    ) -> Result<bool> {
        let buffers = ((input, input_len), (output, output_capacity));
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(buffers, pre, false) }
    }

    /// Checks and agrees, then runs the execution to completion (`blocking`) or
    /// starts it; returns whether it completed.
    ///
    /// # Safety
    /// As [`Plan::begin_checked`].
    unsafe fn launch(
        &self,
        ((input, input_len), (output, capacity)): ((*const u8, usize), (*mut u8, usize)),
        pre: Option<Error>,
        blocking: bool,
    ) -> Result<bool> {
        let mut exchange = self.exchange.lock().unwrap_or_else(PoisonError::into_inner);
        let pre = pre.or_else(|| exchange.is_active().then(in_progress));
        // SAFETY: forwarded from the caller.
        let agreed =
            unsafe { self.agreed(&mut exchange, (input, input_len), (output, capacity), pre) };
        let Some((mode, packed)) = agreed? else {
            return Ok(true);
        };
        let (plan, comm) = (&self.plan, &self.comm);
        // SAFETY: check_buffers checked sizes and overlap; in place, the exchange
        // writes a byte only once what was there has left (all it sends staged
        // first, or the pieces there staged, sent or moved in an earlier round of
        // the in-place schedule); the caller keeps the buffers until the
        // execution completes.
        unsafe {
            match blocking {
                true => exchange
                    .run((plan, comm), mode, packed, input, output)
                    .map(|()| true),
                false => exchange.begin((plan, comm), mode, packed, input, output),
            }
        }
    }

    /// Carries the execution in flight on: until it completes when `blocking`, else
    /// as far as it goes without waiting. Returns whether it completed (true when
    /// none is in flight). A failure is this rank's alone (messages in flight are
    /// cancelled and completed first); other ranks may still complete.
    pub(crate) fn progress(&self, blocking: bool) -> Result<bool> {
        let mut exchange = self.exchange.lock().unwrap_or_else(PoisonError::into_inner);
        exchange.advance(&self.plan, &self.comm, blocking)
    }

    /// Checks one execution's buffers, agrees on the outcome with every rank (when
    /// the plan communicates) and returns what to run: `None` when there is
    /// nothing to do on this rank.
    ///
    /// # Safety
    /// As [`Plan::execute_raw`], with `input` readable for `input_len` bytes.
    unsafe fn agreed(
        &self,
        exchange: &mut Exchange,
        (input, input_len): (*const u8, usize),
        (output, output_capacity): (*mut u8, usize),
        pre: Option<Error>,
    ) -> Result<Option<(Mode, Vec<u8>)>> {
        // After MPI_Finalize every rank fails here alike, so no agreement is needed.
        require_mpi()?;
        let rank = self.comm.rank();
        let buffers = check_buffers(
            &self.plan,
            (input, input_len),
            (output, output_capacity),
            rank,
        );
        let staged = matches!(exchange.in_place, InPlaceRoute::Staged(_));
        let prepared = pre
            .map_or(buffers, |e| Err(e.on_rank(rank)))
            .and_then(|in_place| Ok((in_place, self.prepare(in_place, staged)?)));
        if !self.collective {
            return prepared.map(|(_, run)| run);
        }
        let mut in_place_somewhere = [i64::from(matches!(prepared, Ok((true, _))))];
        agree(&self.comm, prepared.as_ref().err(), &mut in_place_somewhere)?;
        let (in_place, run) = prepared?;
        match in_place_somewhere[0] != 0 && self.schedulable() {
            true => self.in_place_somewhere(exchange, in_place, run),
            false => Ok(run),
        }
    }

    /// True when executions in place can follow an in-place schedule: on the
    /// exchange path with a split input, when ranks communicate.
    fn schedulable(&self) -> bool {
        self.collective && self.plan.path == Route::Exchange && !self.plan.input.is_replicated()
    }

    /// What this rank runs when some rank executes in place on the exchange path:
    /// the plan's in-place schedule, on every rank, when it has one (decided with
    /// every rank at the first such execution), else `run`, this rank's own mode.
    fn in_place_somewhere(
        &self,
        exchange: &mut Exchange,
        in_place: bool,
        run: Option<(Mode, Vec<u8>)>,
    ) -> Result<Option<(Mode, Vec<u8>)>> {
        if matches!(exchange.in_place, InPlaceRoute::Undecided) {
            exchange.in_place = self.decide_in_place()?;
            if matches!(exchange.in_place, InPlaceRoute::Staged(_)) {
                let restaged = match (in_place, run) {
                    (true, Some(_)) => self.prepare(true, true),
                    (_, run) => Ok(run),
                };
                agree(&self.comm, restaged.as_ref().err(), &mut [])?;
                return restaged;
            }
        }
        match exchange.in_place {
            InPlaceRoute::Scheduled(_) => Ok(Some((Mode::Scheduled, Vec::new()))),
            _ => Ok(run),
        }
    }

    /// Decides with every rank how executions in place on the exchange path run:
    /// the rounds of an in-place schedule when every rank made its part, else
    /// everything sent staged.
    fn decide_in_place(&self) -> Result<InPlaceRoute> {
        let rank = self.comm.rank();
        let small = STAGE_ALL_BYTES.min(self.in_place_budget(rank)) as u64;
        let mut large = [i64::from(self.plan.stats().bytes_sent > small)];
        agree(&self.comm, None, &mut large)?;
        if large[0] == 0 {
            return Ok(InPlaceRoute::Staged(Unscheduled::Small));
        }
        let made = contain_panic(|| self.in_place_schedule());
        let mut unscheduled = [i64::from(!matches!(made, Ok(Ok(_))))];
        agree(&self.comm, None, &mut unscheduled)?;
        Ok(match made {
            Ok(Ok(scheduled)) if unscheduled[0] == 0 => InPlaceRoute::Scheduled(scheduled),
            Ok(Err(why)) => InPlaceRoute::Staged(why),
            _ => InPlaceRoute::Staged(Unscheduled::OutOfMemory),
        })
    }

    /// Rank `r`'s staging budget for in place on the exchange path.
    fn in_place_budget(&self, r: usize) -> usize {
        let (input, output) = (&self.plan.input, &self.plan.output);
        let elems = input.pattern(r).len().max(output.pattern(r).len()) as usize;
        let buffer = elems * self.plan.elem_size;
        self.options
            .in_place_budget
            .unwrap_or((64 << 20).max(buffer / 10))
    }

    /// This rank's part of the in-place schedule, with every rank's budget.
    fn in_place_schedule(&self) -> Result<std::result::Result<ScheduledExchange, Unscheduled>> {
        let (input, output, size) = (&self.plan.input, &self.plan.output, self.plan.elem_size);
        let budgets: Vec<usize> = (0..self.comm.size())
            .map(|r| self.in_place_budget(r))
            .collect();
        let problem = Problem {
            input,
            output,
            elem_size: size,
            budgets: &budgets,
        };
        let rank = self.comm.rank();
        // The global schedule is dropped before the staging is allocated, so the
        // two never add up.
        let part = Schedule::new(&problem, self.options.run_budget).map(|s| s.for_rank(rank));
        match part {
            Ok(part) => Ok(Ok(ScheduledExchange::new(part, rank)?)),
            Err(why) => Ok(Err(why)),
        }
    }

    /// The mode of an execution, and with everything sent staged (in place on the
    /// exchange path, when `staged` or no schedule applies) the buffer for it;
    /// `None` when there is nothing to do (in place on a rank whose output equals
    /// its input).
    fn prepare(&self, in_place: bool, staged: bool) -> Result<Option<(Mode, Vec<u8>)>> {
        if in_place && self.plan.is_identity() {
            return Ok(None);
        }
        let mode = match (in_place, self.plan.path) {
            (false, _) => Mode::OutOfPlace,
            (true, Route::Local) => Mode::InPlaceOrdered,
            (true, Route::Exchange) if staged || !self.schedulable() => Mode::InPlaceStaged,
            (true, Route::Exchange) => Mode::Scheduled,
        };
        let packed = match mode {
            Mode::InPlaceStaged => {
                let bytes = self.plan.stats().bytes_sent as usize;
                try_vec(bytes, "the in-place packed sends", self.comm.rank())?
            }
            _ => Vec::new(),
        };
        Ok(Some((mode, packed)))
    }
}

/// Most bytes every rank may send for in place on the exchange path to stage them
/// all and move them in one round rather than follow a schedule: copying that
/// little costs less than the schedule's rounds (`small_latency`, 0.5 MiB per rank:
/// 0.33 ms in three rounds against 0.15 ms out of place).
const STAGE_ALL_BYTES: usize = 1 << 20;

/// The error of starting an execution while one is in flight.
fn in_progress() -> Error {
    Error::ExecutionInProgress(
        "the plan's previous execution has not completed: wait for it first".into(),
    )
}

/// Checks one execution's buffers against the plan; returns whether it is in place.
fn check_buffers(
    plan: &RankPlan,
    (input, input_len): (*const u8, usize),
    (output, capacity): (*mut u8, usize),
    rank: usize,
) -> Result<bool> {
    let size = plan.elem_size;
    let (in_bytes, out_bytes) = (
        plan.input_elems() as usize * size,
        plan.output_elems() as usize * size,
    );
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
        return Err(Error::BufferTooSmall(format!(
            "the input buffer holds {} elements but rank {rank} holds {} input elements",
            input_len / size,
            plan.input_elems()
        )));
    }
    let in_place = std::ptr::eq(input, output) && in_bytes.max(out_bytes) > 0;
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
        return Err(Error::Aliasing(format!(
            "the input buffer [{a:#x}, +{in_bytes} B) and the output buffer [{b:#x}, +{out_bytes} B) partially overlap on rank {rank}; pass the same pointer for in place"
        )));
    }
    Ok(in_place)
}

/// An execution in flight, lent to the closure of [`Plan::execute_overlapped`].
#[derive(Debug)]
pub struct Execution<'a> {
    plan: &'a Plan,
    done: bool,
    /// A failure seen by [`Execution::test`], reported when the execution ends.
    failed: Option<Error>,
}

impl Execution<'_> {
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
    fn finish(&mut self) -> Result<()> {
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

/// `shape` with `rows` along `split` (unchanged when not split).
fn slab_shape(shape: &[u64], split: Option<usize>, rows: u64) -> Vec<u64> {
    let mut slab = shape.to_vec();
    if let Some(axis) = split {
        slab[axis] = rows;
    }
    slab
}

/// Validates the arguments on every rank and agrees on the outcome in one
/// collective that also compares the global arguments across ranks exactly (their
/// element-wise maximum and the maximum of their complement, i.e. the minimum).
fn agree_on_arguments(comm: &Comm, args: Result<ReshapeArgs>) -> Result<(Checked, Gathered)> {
    let rank = comm.rank();
    let checked = contain_panic(|| {
        injected_panic_point();
        check_local(args.as_ref().map_err(|e| e.clone().on_rank(rank))?, rank)
    });
    let local = checked.and_then(|c| Ok((c, Gathered::allocate(comm.size(), rank)?)));
    let fingerprint = args
        .as_ref()
        .map_or_else(|_| vec![0; FINGERPRINT_LEN], ReshapeArgs::fingerprint);
    let mut piggyback: Vec<i64> = fingerprint
        .iter()
        .copied()
        .chain(fingerprint.iter().map(|x| !x))
        .collect();
    agree(comm, local.as_ref().err(), &mut piggyback)?;
    let (local, args) = (local?, args?);
    let min: Vec<i64> = piggyback[FINGERPRINT_LEN..].iter().map(|x| !x).collect();
    match mismatch(&args, &min, &piggyback[..FINGERPRINT_LEN], rank) {
        Some(e) => Err(e),
        None => Ok(local),
    }
}

/// Agrees on the planning outcome; returns the plan, the largest peer count of any
/// rank (which sizes the messages) and whether any rank communicates at all.
fn agree_on_plan(comm: &Comm, planned: Result<RankPlan>) -> Result<(RankPlan, usize, bool)> {
    let (peers, talks) = planned.as_ref().map_or((1, false), |p| {
        (
            p.sends.len().max(p.recvs.len()).max(1),
            !(p.sends.is_empty() && p.recvs.is_empty()),
        )
    });
    let mut piggyback = [peers as i64, i64::from(talks)];
    agree(comm, planned.as_ref().err(), &mut piggyback)?;
    Ok((planned?, piggyback[0] as usize, piggyback[1] != 0))
}

/// Every rank's input slab length and requested output length, in buffers
/// allocated before the ranks agree, so that an allocation failure is agreed too.
struct Gathered {
    raw: Vec<i64>,
    lens: Vec<u64>,
    targets: Vec<u64>,
}

impl Gathered {
    fn allocate(nranks: usize, rank: usize) -> Result<Gathered> {
        Ok(Gathered {
            raw: try_vec(2 * nranks, "the gathered slab lengths", rank)?,
            lens: try_vec(nranks, "the slab lengths", rank)?,
            targets: try_vec(nranks, "the target lengths", rank)?,
        })
    }

    /// Allgathers this rank's `[local_len, target_len]`.
    fn exchange(&mut self, comm: &Comm, checked: &Checked) -> Result<()> {
        let mine = [
            checked.local_len as i64,
            checked.target_len.map_or(0, |t| t as i64),
        ];
        comm.allgather_into(&mine, &mut self.raw)?;
        self.lens
            .extend(self.raw.iter().step_by(2).map(|&l| l as u64));
        self.targets
            .extend(self.raw.iter().skip(1).step_by(2).map(|&l| l as u64));
        Ok(())
    }

    /// Checks that the lengths add up (the same outcome on every rank); returns the
    /// explicit targets, if any.
    fn check(&self, checked: &Checked) -> Result<Option<&[u64]>> {
        if let Some(axis) = checked.split {
            check_rows_add_up("local_len", &self.lens, checked.gshape[axis])?;
        }
        let explicit = checked.new_split.filter(|_| checked.target_len.is_some());
        if let Some(axis) = explicit {
            check_rows_add_up("new_local_len", &self.targets, checked.new_shape[axis])?;
        }
        Ok(explicit.map(|_| self.targets.as_slice()))
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.plan.fmt(f)?;
        let exchange = self.exchange.lock().unwrap_or_else(PoisonError::into_inner);
        match &exchange.in_place {
            InPlaceRoute::Undecided => Ok(()),
            InPlaceRoute::Scheduled(s) => write!(
                f,
                "; in place in {} rounds staging at most {} B",
                s.rounds(),
                s.staging_bytes()
            ),
            InPlaceRoute::Staged(why) => write!(f, "; in place stages all it sends ({why})"),
        }
    }
}

/// Plans and executes in one call (collective): reshapes this rank's `input` into a
/// new vector holding this rank's output.
pub fn reshape<T: crate::core::element::Element, C: AsRaw<Raw = RawComm>>(
    comm: &C,
    args: &ReshapeArgs,
    input: &[T],
) -> Result<Vec<T>> {
    let args = args.clone().with_element::<T>();
    reshape_with(&Plan::new(comm, &args)?.agreeing_always(), input)
}

/// Executes `plan` from `input` into a newly allocated output (collective); a failed
/// allocation is agreed like any other error.
pub(crate) fn reshape_with<T: crate::core::element::Element>(
    plan: &Plan,
    input: &[T],
) -> Result<Vec<T>> {
    let allocated = try_vec::<T>(plan.output_elems(), "the output", plan.comm.rank());
    let pre = allocated
        .as_ref()
        .err()
        .cloned()
        .or_else(|| plan.check_type::<T>().err());
    let mut output = allocated.unwrap_or_default();
    let bytes = plan.output_elems() * size_of::<T>();
    let (src, src_len) = (input.as_ptr().cast(), size_of_val(input));
    // SAFETY: the capacity is reserved (or an error is agreed before anything is
    // written); a successful execution writes every output element exactly once
    // (kept plus received elements fill the output: checked when the plan is built).
    unsafe {
        plan.execute_checked(src, src_len, output.as_mut_ptr().cast(), bytes, pre)?;
        output.set_len(plan.output_elems());
    }
    Ok(output)
}
