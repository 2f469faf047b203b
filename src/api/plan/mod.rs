//! Plans: collective creation (validation agreed by all ranks, one allgather of the
//! slab lengths, pure planning) and repeated collective execution. The jobs, a
//! module each: [`creation`] (the collective steps of creation), [`execution`]
//! (buffers and executions in flight) and [`in_place`] (the in-place policy).
//!
//! What allocates when: creation allocates everything an execution out of place,
//! or in place on the local path, needs (the exchange's streams, requests, message
//! slots and the listed messages), so those executions allocate nothing. In place
//! on the exchange path, the first such execution allocates the in-place schedule
//! and its staging, kept for the later ones; when no schedule applies, each such
//! execution allocates its pack buffer (exactly the bytes the rank sends), freed
//! when it completes. The one-shot [`reshape`] also allocates its output.

mod creation;
mod execution;
mod in_place;

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, PoisonError};

use mpi::raw::AsRaw;

use self::creation::{Agreed, AgreedPlan, agree_on_arguments, agree_on_layouts, agree_on_plan};
pub use self::execution::Execution;
use self::execution::{Buffers, check_buffers, in_progress};
use self::in_place::{InPlaceRoute, Run};
use crate::api::options::PlanOptions;
use crate::core::abi::dr_dtype;
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::core::fallible::{contain_panic, try_vec};
use crate::distribution::grid::GridBox;
use crate::distribution::layout::Slab;
use crate::mpi::agree::agree;
use crate::mpi::comm::{Comm, RawComm};
use crate::mpi::exchange::{Exchange, Mode, Participant, messages_per_round};
use crate::mpi::status::{mpi_is_usable, require_mpi};
use crate::mpi::threads::ThreadLevel;
use crate::mpi::transport::Channel;
use crate::planning::args::ReshapeArgs;
use crate::planning::layouts::{Layout, LayoutArgs};
use crate::planning::planner::{PlanStats, RankPlan, Route};
use crate::planning::schedule::Progress;

/// The engines an execution runs on, behind the plan's one lock: the exchange,
/// and the in-place route the plan decided for executions in place on the
/// exchange path (with the schedule's engine when it has one).
#[derive(Debug)]
struct Engines {
    /// Streams, requests and message slots, reused by every execution.
    exchange: Exchange<Comm>,
    /// How executions in place on the exchange path run.
    in_place: InPlaceRoute,
    /// Whether an execution begun without completing is lent out (to a C
    /// request, or an [`Execution`]) until [`Plan::progress`] reports its end:
    /// set and cleared under the plan's lock with the execution's start and end,
    /// so that threads racing on one plan see one execution at a time. A panic
    /// that cuts `progress` short leaves it set: the holder's next call reports
    /// the end.
    lent: bool,
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
/// let len = distreshape::balanced_slab(10_000, size, rank).len;
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
/// Where it may be used depends on the thread level MPI was initialized with,
/// which the plan checks, without calling MPI but `MPI_Query_thread` and
/// `MPI_Is_thread_main` at creation, at creation, at every execution, at
/// [`Execution::test`] and when it is dropped:
/// - `MPI_THREAD_SINGLE`, `MPI_THREAD_FUNNELED`: only on the main thread (the one
///   that initialized MPI). On any other thread the call makes no MPI call and
///   returns [`Error::Mpi`] ("MPI was initialized with MPI_THREAD_FUNNELED and this
///   thread is not the main thread (rank 3)") on that rank alone: like a null plan
///   in C, a programming error that no other rank hears of, so the other ranks
///   wait in the collective until this rank makes the call again from the main
///   thread (the refused call did nothing, so that call pairs with theirs). A plan
///   dropped on another thread makes no MPI call either: it leaks its reference to
///   the private communicator (and, with an execution in flight, that execution's
///   memory) instead.
/// - `MPI_THREAD_SERIALIZED`: on any thread, one at a time. The plan's lock
///   serializes the calls on one plan; calls on several plans, or other MPI calls
///   of the program, from several threads at once must be serialized by the
///   caller.
/// - `MPI_THREAD_MULTIPLE`: on any thread; plans may execute concurrently, each
///   from one thread at a time.
///
/// ```compile_fail
/// fn shared_between_threads<T: Sync>() {}
/// shared_between_threads::<distreshape::Plan>();
/// ```
#[derive(Debug)]
pub struct Plan {
    /// The engines, reused by every execution. The mutex keeps C callers who
    /// break the one-thread-per-plan rule from racing on them. Declared (so
    /// dropped) before `comm`: an execution still in flight is cancelled while the
    /// communicator exists.
    engines: ManuallyDrop<Mutex<Engines>>,
    comm: ManuallyDrop<Comm>,
    /// Which threads may call MPI for the plan.
    threads: ThreadLevel,
    plan: RankPlan,
    /// True when some rank sends or receives anything; otherwise execution is
    /// purely local on every rank and needs no collective.
    communicates: bool,
    /// True when every execution is agreed by all ranks even when none
    /// communicates (one-shot reshapes, [`Plan::agreeing_always`]).
    always_agree: bool,
    /// The `dr_dtype` every rank planned for, when the arguments named one.
    dtype: Option<i32>,
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
        require_mpi()?;
        let threads = ThreadLevel::of_this_thread()?;
        let comm = Comm::for_plan(comm, options.switches().sleeping_waits())?;
        let Agreed {
            checked,
            mut gathered,
        } = agree_on_arguments(&comm, args)?;
        gathered.exchange(&comm, &checked)?;
        let targets = gathered.check(&checked)?;
        let planned =
            contain_panic(|| RankPlan::new(&checked, &gathered.lens, targets, comm.rank()));
        Plan::assemble(comm, threads, planned, dtype, options)
    }

    /// Plans the redistribution of elements of type `T` from the layout `input` to
    /// the layout `output` over `comm` (collective), with the default options. The
    /// two grids may differ (any two layouts of the communicator's ranks), and so may
    /// the shapes, by NumPy's reshape rules (one `-1` in the output's).
    ///
    /// ```no_run
    /// use distreshape::{Layout, Plan};
    /// let universe = mpi::initialize().unwrap();
    /// let world = mpi::topology::SimpleCommunicator::world();
    /// // x-pencils to y-pencils on a 2 x 2 grid, in one step.
    /// let x = Layout::new(&[64, 64, 64], &[2, 2], &[None, Some(0), Some(1)]);
    /// let y = Layout::new(&[64, 64, 64], &[2, 2], &[Some(0), None, Some(1)]);
    /// let plan = Plan::from_layouts::<f64, _>(&world, &x, &y).unwrap();
    /// let input = vec![0.0f64; plan.input_elems()];
    /// let mut output = vec![0.0f64; plan.output_elems()];
    /// plan.execute(&input, &mut output).unwrap();
    /// ```
    pub fn from_layouts<T: Element, C: AsRaw<Raw = RawComm>>(
        comm: &C,
        input: &Layout,
        output: &Layout,
    ) -> Result<Plan> {
        let args = LayoutArgs::for_element::<T>(input, output);
        Plan::create_from_layouts(comm.as_raw(), Ok(args), PlanOptions::default())
    }

    /// Plans between two layouts over a raw communicator handle (collective); a
    /// local `Err` in `args` is agreed like any validation failure. On a Cartesian
    /// communicator, a layout whose grid has as many axes as the communicator's must
    /// have its dimensions (ranks would otherwise sit at other coordinates than the
    /// communicator's).
    pub fn create_from_layouts(
        comm: RawComm,
        args: Result<LayoutArgs>,
        options: PlanOptions,
    ) -> Result<Plan> {
        let dtype = args.as_ref().ok().and_then(|a| a.dtype);
        require_mpi()?;
        let threads = ThreadLevel::of_this_thread()?;
        let comm = Comm::for_plan(comm, options.switches().sleeping_waits())?;
        let layouts = agree_on_layouts(&comm, args)?;
        let planned = contain_panic(|| {
            let elem_size = layouts.elem_size;
            RankPlan::for_layouts(Arc::new(layouts.layouts), elem_size, comm.rank())
        });
        Plan::assemble(comm, threads, planned, dtype, options)
    }

    /// The plan from this rank's planning outcome: agrees on it, then allocates the
    /// exchange (agreeing on that too when the ranks communicate).
    fn assemble(
        comm: Comm,
        threads: ThreadLevel,
        planned: Result<RankPlan>,
        dtype: Option<i32>,
        options: PlanOptions,
    ) -> Result<Plan> {
        let switches = options.switches();
        let AgreedPlan {
            plan,
            busiest_peers,
            window_width,
            communicates,
            strided_runs,
            direct_reads,
        } = agree_on_plan(&comm, planned, options.window, &switches)?;
        let node_reads = match communicates && direct_reads {
            true => comm.establish_node_reads(switches.proposed_direct_reads()),
            false => Ok(()),
        };
        let exchange = node_reads.and_then(|()| {
            contain_panic(|| {
                Exchange::new(
                    &plan,
                    comm.size(),
                    options.limits(busiest_peers, strided_runs),
                    messages_per_round(busiest_peers),
                    Progress::for_path(plan.path, window_width),
                    options.run_budget,
                    // A plan no rank proposed them for reads nothing directly,
                    // even where an earlier plan on the communicator decided them.
                    |peer| direct_reads && comm.node_reads().reads_from(peer),
                )
            })
        });
        if communicates {
            agree(&comm, exchange.as_ref().err(), &mut [])?;
        }
        Ok(Plan {
            engines: ManuallyDrop::new(Mutex::new(Engines {
                exchange: exchange?,
                in_place: InPlaceRoute::Undecided,
                lent: false,
            })),
            comm: ManuallyDrop::new(comm),
            threads,
            plan,
            communicates,
            always_agree: false,
            dtype,
            options,
            not_shared: PhantomData,
        })
    }

    /// The same plan with every execution agreed by all ranks, even when nothing moves
    /// between them: one-shot reshapes already pay for collectives in planning, so
    /// they keep the same-status-everywhere rule without exception.
    pub(crate) fn agreeing_always(mut self) -> Plan {
        self.always_agree = true;
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
        self.plan.new_shape()
    }

    /// The shape of this rank's input slab (C order): the global shape with this
    /// rank's rows along the split axis.
    pub fn local_input_shape(&self) -> Vec<u64> {
        self.plan.local_input_shape()
    }

    /// The shape of this rank's output slab (C order): the new global shape with
    /// this rank's rows along the new split axis.
    pub fn local_output_shape(&self) -> Vec<u64> {
        self.plan.local_output_shape()
    }

    /// This rank's input box: the global index of its first element along each
    /// axis, and its extent along each (its buffer holds the box in C order).
    pub fn input_box(&self) -> GridBox {
        self.plan.input_layout().rank_box(self.plan.rank)
    }

    /// This rank's output box, in the resolved output shape.
    pub fn output_box(&self) -> GridBox {
        self.plan.output_layout().rank_box(self.plan.rank)
    }

    /// This rank's input slab along the split axis: the first global row it holds
    /// and how many (`None` when the input is not a slab layout: not split, or on a
    /// grid of several axes).
    pub fn input_slab(&self) -> Option<Slab> {
        self.plan.input_layout().slab_of(self.plan.rank)
    }

    /// This rank's output slab along the new split axis (`None` when the output is
    /// not a slab layout). With explicit target lengths the offset is the sum of the
    /// lower ranks' lengths, which no local formula gives.
    pub fn output_slab(&self) -> Option<Slab> {
        self.plan.output_layout().slab_of(self.plan.rank)
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
        self.communicates
    }

    /// Bytes of staging the plan keeps for executions in place on the exchange path
    /// once one has run and found a bounded schedule (at most
    /// [`PlanOptions::in_place_budget`]); `None` before, and when every such
    /// execution packs everything the rank sends instead.
    pub fn in_place_staging_bytes(&self) -> Option<usize> {
        match &self.lock().in_place {
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
    /// Allocates nothing: creation allocated what it needs.
    pub fn execute<T: Element>(&self, input: &[T], output: &mut [T]) -> Result<()> {
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
    pub fn execute_overlapped<T: Element, R>(
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
    /// rank, nothing is touched. On the local path this allocates nothing; on the
    /// exchange path the first execution in place (of any rank) allocates the
    /// plan's in-place schedule and its staging (at most
    /// [`PlanOptions::in_place_budget`]), kept for the later ones, or, when no
    /// schedule applies, every execution in place allocates the bytes this rank
    /// sends (the pack buffer) until it completes.
    pub fn execute_in_place<T: Element>(&self, buffer: &mut [T]) -> Result<()> {
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
    fn check_type<T: Element>(&self) -> Result<()> {
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

    /// Executes the plan on raw buffers as [`Plan::execute_raw`] does, first agreeing
    /// with every rank on `local`, an error the caller found on this rank before
    /// calling (its own checks of the buffers, a conversion that failed): collective
    /// on every plan, even one that moves nothing between ranks, so that every rank
    /// returns the same status, with the message of the lowest failing rank (naming
    /// that rank). The caller's error and the library's checks of the buffers are
    /// agreed in the one collective the execution pays anyway; with a `local` error
    /// the buffers are not touched and may be null. `input` holds `input_len` bytes
    /// (a shorter input than this rank's is [`Error::BufferTooSmall`], agreed).
    ///
    /// # Safety
    /// `input` must be readable for `input_len` bytes and `output` writable for
    /// `output_capacity` bytes.
    pub unsafe fn execute_raw_agreeing(
        &self,
        input: *const u8,
        input_len: usize,
        output: *mut u8,
        output_capacity: usize,
        local: Option<Error>,
    ) -> Result<()> {
        let buffers = Buffers::new(input, input_len, output, output_capacity);
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(&buffers, local, Launch::AGREED_BLOCKING) }.map(drop)
    }

    /// Starts an execution as [`Plan::execute_raw_agreeing`] does (the caller's
    /// `local` error agreed with the library's checks on every plan), leaving its
    /// messages in flight; returns whether it already completed.
    /// [`Plan::progress`] carries it on.
    ///
    /// # Safety
    /// As [`Plan::execute_raw_agreeing`]; the buffers must stay valid and untouched
    /// until the execution completes or fails.
    pub unsafe fn begin_raw_agreeing(
        &self,
        input: *const u8,
        input_len: usize,
        output: *mut u8,
        output_capacity: usize,
        local: Option<Error>,
    ) -> Result<bool> {
        let buffers = Buffers::new(input, input_len, output, output_capacity);
        let how = Launch {
            blocking: false,
            ..Launch::AGREED_BLOCKING
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(&buffers, local, how) }
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
        let buffers = Buffers::new(input, input_len, output, output_capacity);
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(&buffers, pre, Launch::BLOCKING) }.map(drop)
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
        let buffers = Buffers::new(input, input_len, output, output_capacity);
        let how = Launch {
            blocking: false,
            ..Launch::BLOCKING
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(&buffers, pre, how) }
    }

    /// Checks and agrees, then runs the execution to completion (`how.blocking`)
    /// or starts it; returns whether it completed.
    ///
    /// # Safety
    /// As [`Plan::begin_checked`].
    unsafe fn launch(&self, buffers: &Buffers, pre: Option<Error>, how: Launch) -> Result<bool> {
        // After MPI_Finalize every rank fails here alike, so no agreement is needed.
        require_mpi()?;
        self.threads.check(self.comm.rank())?;
        let mut engines = self.lock();
        let busy = engines.lent || engines.exchange.is_active();
        let pre = pre.or_else(|| busy.then(in_progress));
        let agreeing = how.always_agree || self.always_agree;
        // SAFETY: forwarded from the caller.
        let Some(run) = (unsafe { self.agreed(&mut engines.in_place, buffers, pre, agreeing) })?
        else {
            return Ok(true);
        };
        // SAFETY: forwarded from the caller.
        let started = unsafe { self.run(&mut engines, run, buffers, how.blocking) };
        engines.lent = matches!(started, Ok(false));
        started
    }

    /// Runs `run` on `engines` to completion (`blocking`) or starts it; returns
    /// whether it completed.
    ///
    /// # Safety
    /// As [`Plan::begin_checked`], with `buffers` checked and agreed.
    unsafe fn run(
        &self,
        engines: &mut Engines,
        run: Run,
        buffers: &Buffers,
        blocking: bool,
    ) -> Result<bool> {
        let (plan, comm) = (&self.plan, &*self.comm);
        let on = Participant {
            plan,
            transport: comm,
        };
        let Buffers { input, output, .. } = *buffers;
        let Engines {
            exchange, in_place, ..
        } = engines;
        // SAFETY: check_buffers checked sizes and overlap; in place, the engines
        // write a byte only once what was there has left (all it sends packed
        // first, or the pieces there staged, sent or moved in an earlier round of
        // the in-place schedule); the caller keeps the buffers until the
        // execution completes.
        unsafe {
            match (run, in_place) {
                (Run::Scheduled, InPlaceRoute::Scheduled(scheduled)) => {
                    let channel = Channel {
                        transport: comm,
                        tag: exchange.take_tag(comm),
                    };
                    scheduled.run(channel, input, output)?;
                    if !buffers.in_place() {
                        exchange.copy_kept(plan, input, output);
                    }
                    Ok(true)
                }
                (Run::Scheduled, _) => Err(Error::Internal("no in-place schedule to run".into())),
                (Run::Exchange { mode, packed }, _) if blocking => {
                    exchange.run(on, mode, packed, input, output).map(|()| true)
                }
                (Run::Exchange { mode, packed }, _) => {
                    exchange.begin(on, mode, packed, input, output)
                }
            }
        }
    }

    /// The engines, locked (a panic while they were locked left nothing half
    /// done that a later execution could trip on: every execution starts afresh).
    fn lock(&self) -> std::sync::MutexGuard<'_, Engines> {
        self.engines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Carries the execution in flight on: until it completes when `blocking`, else
    /// as far as it goes without waiting. Returns whether it completed (true when
    /// none is in flight). A failure is this rank's alone (messages in flight are
    /// cancelled and completed first); other ranks may still complete. Once this
    /// reports the end (anything but `Ok(false)`), the execution is no longer lent
    /// out, and the plan may start another.
    pub fn progress(&self, blocking: bool) -> Result<bool> {
        let mut engines = self.lock();
        let outcome = self.advance(&mut engines.exchange, blocking);
        if !matches!(outcome, Ok(false)) {
            engines.lent = false;
        }
        outcome
    }

    /// Carries the execution in flight on `exchange`, if any (see
    /// [`Plan::progress`]).
    fn advance(&self, exchange: &mut Exchange<Comm>, blocking: bool) -> Result<bool> {
        if !exchange.is_active() {
            return Ok(true);
        }
        require_mpi()?;
        self.threads.check(self.comm.rank())?;
        let on = Participant {
            plan: &self.plan,
            transport: &*self.comm,
        };
        exchange.advance(on, blocking)
    }

    /// Whether an execution begun without completing is lent out until
    /// [`Plan::progress`] reports its end.
    pub(crate) fn execution_lent(&self) -> bool {
        self.lock().lent
    }

    /// Checks one execution's buffers, agrees on the outcome with every rank (when
    /// the plan communicates, or `always`) and returns what to run: `None` when
    /// there is nothing to do on this rank.
    ///
    /// # Safety
    /// As [`Plan::execute_raw`], with `input` readable for `input_len` bytes.
    unsafe fn agreed(
        &self,
        route: &mut InPlaceRoute,
        buffers: &Buffers,
        pre: Option<Error>,
        always: bool,
    ) -> Result<Option<Run>> {
        let rank = self.comm.rank();
        let checked = check_buffers(&self.plan, buffers, rank);
        let packed = matches!(route, InPlaceRoute::Packed(_));
        let prepared = pre
            .map_or(checked, |e| Err(e.on_rank(rank)))
            .and_then(|in_place| Ok((in_place, self.prepare(in_place, packed)?)));
        if !(self.communicates || always) {
            return prepared.map(|(_, run)| run);
        }
        let mut in_place_somewhere = [i64::from(matches!(prepared, Ok((true, _))))];
        agree(&self.comm, prepared.as_ref().err(), &mut in_place_somewhere)?;
        let (in_place, run) = prepared?;
        match (in_place_somewhere[0] != 0, run) {
            (true, run) if self.schedulable() => self.in_place_somewhere(route, in_place, run),
            (
                false,
                Some(Run::Exchange {
                    mode: Mode::OutOfPlace,
                    packed,
                }),
            ) => Ok(Some(Run::Exchange {
                mode: Mode::AllOutOfPlace,
                packed,
            })),
            (_, run) => Ok(run),
        }
    }

    /// Starts an execution on raw buffers without waiting (collective, the same
    /// checks and agreement as [`Plan::execute_raw`]); returns whether it already
    /// completed. [`Plan::progress`] carries it on.
    ///
    /// # Safety
    /// As [`Plan::execute_raw`], with `input` readable for `input_len` bytes; the
    /// buffers must stay valid and untouched until the execution completes or fails.
    pub unsafe fn begin_raw(
        &self,
        input: *const u8,
        input_len: usize,
        output: *mut u8,
        output_capacity: usize,
    ) -> Result<bool> {
        // SAFETY: forwarded from the caller.
        unsafe { self.begin_checked(input, input_len, output, output_capacity, None) }
    }
}

/// How an execution is launched.
#[derive(Clone, Copy, Debug)]
struct Launch {
    /// Runs it to completion; else starts it, leaving its messages in flight.
    blocking: bool,
    /// Agrees on the checks with every rank even when the plan moves nothing
    /// between ranks (a caller's own error is agreed too).
    always_agree: bool,
}

impl Launch {
    /// A blocking execution agreed when the plan communicates.
    const BLOCKING: Launch = Launch {
        blocking: true,
        always_agree: false,
    };

    /// A blocking execution agreed on every plan.
    const AGREED_BLOCKING: Launch = Launch {
        blocking: true,
        always_agree: true,
    };
}

impl Drop for Plan {
    /// Cancels an execution still in flight (the transport must not write the
    /// message slots, or the caller's buffers, after this), then releases the
    /// engines and the plan's use of the private communicator. On a thread that
    /// may not call MPI (see [`Plan`]), nothing calls MPI: the communicator
    /// reference is leaked, and with an execution in flight or an in-place
    /// schedule (whose MPI datatypes only MPI can free) the engines too.
    fn drop(&mut self) {
        let allowed = self.threads.allows_this_thread();
        let engines = self
            .engines
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        // After MPI_Finalize no message is in flight any more: nothing to cancel.
        let active = engines.exchange.is_active() && mpi_is_usable();
        let scheduled = matches!(engines.in_place, InPlaceRoute::Scheduled(_));
        if !allowed && (active || scheduled && mpi_is_usable()) {
            return;
        }
        if active {
            engines.exchange.abandon(&self.comm);
        }
        // SAFETY: each field is dropped once, here, and not used afterwards.
        unsafe { ManuallyDrop::drop(&mut self.engines) };
        if allowed {
            // SAFETY: as above.
            unsafe { ManuallyDrop::drop(&mut self.comm) };
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.plan.fmt(f)?;
        let engines = self.lock();
        let direct = engines.exchange.direct_streams();
        if direct.count > 0 {
            write!(
                f,
                "; {} streams move by direct reads within the node when every rank executes out of place ({} B read)",
                direct.count, direct.bytes_read
            )?;
        }
        match &engines.in_place {
            InPlaceRoute::Undecided => Ok(()),
            InPlaceRoute::Scheduled(s) => write!(
                f,
                "; in place in {} rounds staging at most {} B",
                s.rounds(),
                s.staging_bytes()
            ),
            InPlaceRoute::Packed(why) => write!(f, "; in place packs all it sends ({why})"),
        }
    }
}

/// Plans and executes in one call (collective): reshapes this rank's `input` into a
/// new vector holding this rank's output.
pub fn reshape<T: Element, C: AsRaw<Raw = RawComm>>(
    comm: &C,
    args: &ReshapeArgs,
    input: &[T],
) -> Result<Vec<T>> {
    let args = args.clone().with_element::<T>();
    reshape_with(&Plan::new(comm, &args)?.agreeing_always(), input)
}

/// Executes `plan` from `input` into a newly allocated output (collective); a failed
/// allocation is agreed like any other error.
pub(crate) fn reshape_with<T: Element>(plan: &Plan, input: &[T]) -> Result<Vec<T>> {
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
