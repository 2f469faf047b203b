//! Plans: collective creation (validation agreed by all ranks, one allgather of the
//! slab lengths, pure planning) and repeated collective execution. The jobs, a
//! module each: [`creation`] (the collective steps of creation), [`queries`] (what
//! a plan tells of itself), [`launch`] (checking, agreeing on and running an
//! execution), [`batch`] (executions of several fields), [`raw_batch`]
//! (batches on raw buffers with a caller's error agreed), [`execution`]
//! (buffers and executions in flight) and [`in_place`] (the in-place policy).
//!
//! What allocates when: creation allocates everything an execution out of place,
//! or in place on the local path, needs (the exchange's streams, requests, message
//! slots and the listed messages), so those executions allocate nothing. In place
//! on the exchange path, the first such execution allocates the in-place schedule
//! and its staging, kept for the later ones; when no schedule applies, each such
//! execution allocates its pack buffer (exactly the bytes the rank sends), freed
//! when it completes. The one-shot [`reshape`] also allocates its output.

mod batch;
mod creation;
mod execution;
mod fused;
mod in_place;
mod launch;
mod queries;
mod raw_batch;

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, PoisonError};

use mpi::raw::AsRaw;

pub(crate) use self::batch::BatchBuffers;
use self::batch::BufferRange;
use self::creation::{
    Agreed, AgreedPlan, CheckedLayouts, agree_on_arguments, agree_on_layouts, agree_on_plan,
    gather_input_storages,
};
pub use self::execution::Execution;
pub(crate) use self::execution::output_address;
pub use self::fused::{Fused, FusedField};
use self::in_place::InPlaceRoute;
pub use self::raw_batch::RawBatch;
use crate::api::options::PlanOptions;
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::core::fallible::{contain_panic, try_vec};
use crate::distribution::storage::Storages;
use crate::mpi::agree::agree;
use crate::mpi::comm::{Comm, RawComm};
use crate::mpi::exchange::{Exchange, ReadPeers, messages_per_round};
use crate::mpi::running;
use crate::mpi::status::{mpi_is_usable, require_mpi};
use crate::mpi::threads::ThreadLevel;
use crate::planning::args::ReshapeArgs;
use crate::planning::layouts::{Layout, LayoutArgs};
use crate::planning::planner::RankPlan;
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
    /// How the execution lent out failed while the wait of another execution
    /// carried it on ([`crate::mpi::running`]): its own next test or wait
    /// reports it.
    failure: Option<Error>,
    /// The byte ranges of a batch's buffers, sorted by the check that its
    /// fields lie apart; grown by the first batch of more fields, and kept.
    ranges: Vec<BufferRange>,
}

/// What runs a plan's executions on this rank: the rank's plan, the private
/// communicator, the engines, and which threads may call MPI for them. It lives
/// on the heap, apart from the [`Plan`] value, so that the waits of other
/// executions ([`crate::mpi::running`]) reach an execution in flight at one
/// address wherever the plan is moved, and only ever share it: the plan's drop
/// stops counting it before anything takes it whole.
#[derive(Debug)]
struct Executor {
    /// The engines, reused by every execution. The mutex keeps C callers who
    /// break the one-thread-per-plan rule from racing on them. Declared (so
    /// dropped) before `comm`: an execution still in flight is cancelled while the
    /// communicator exists.
    engines: ManuallyDrop<Mutex<Engines>>,
    comm: ManuallyDrop<Comm>,
    /// Which threads may call MPI for the plan.
    threads: ThreadLevel,
    plan: RankPlan,
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
    /// What runs the plan's executions, where the waits of other executions
    /// reach it.
    executor: Arc<Executor>,
    /// Where this rank's boxes lie in its buffers.
    storages: Storages,
    /// True when some rank's storage is strided (agreed): every message is
    /// packed, and in place is refused.
    strided: bool,
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
        let storages = planned.as_ref().map_or_else(
            |_| Storages::dense(&[], &[]),
            |p| Storages::dense(&p.local_input_shape(), &p.local_output_shape()),
        );
        Plan::assemble(comm, threads, planned, dtype, options, storages)
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
        let CheckedLayouts {
            elem_size,
            layouts,
            storages,
        } = agree_on_layouts(&comm, args)?;
        let planned =
            contain_panic(|| RankPlan::for_layouts(Arc::new(layouts), elem_size, comm.rank()));
        Plan::assemble(comm, threads, planned, dtype, options, storages)
    }

    /// The plan from this rank's planning outcome: agrees on it, then allocates the
    /// exchange (agreeing on that too when the ranks communicate).
    fn assemble(
        comm: Comm,
        threads: ThreadLevel,
        planned: Result<RankPlan>,
        dtype: Option<i32>,
        options: PlanOptions,
        storages: Storages,
    ) -> Result<Plan> {
        let switches = options.switches();
        let AgreedPlan {
            plan,
            busiest_peers,
            window_width,
            communicates,
            strided_runs,
            direct_reads,
            strided,
            strided_input,
            options,
        } = agree_on_plan(&comm, planned, &options, &switches, &storages)?;
        let limits = match strided {
            true => options.limits(busiest_peers, strided_runs).all_packed(),
            false => options.limits(busiest_peers, strided_runs),
        };
        let reads = communicates && direct_reads;
        let node_reads = match reads {
            true => comm.establish_node_reads(!switches.refuses_direct_reads()),
            false => Ok(()),
        };
        let inputs = node_reads.and_then(|()| match reads && strided_input {
            true => gather_input_storages(&comm, &plan, &storages).map(Some),
            false => Ok(None),
        });
        let exchange = inputs.and_then(|inputs| {
            contain_panic(|| {
                let peers = ReadPeers {
                    // A plan that does not read directly reads from no peer,
                    // even where an earlier plan on the communicator decided them.
                    reads_from: |peer| direct_reads && comm.node_reads().reads_from(peer),
                    inputs: inputs.as_ref(),
                };
                Exchange::new(
                    &plan,
                    comm.size(),
                    limits,
                    messages_per_round(busiest_peers),
                    Progress::for_path(plan.path, window_width),
                    options.run_budget,
                    peers,
                    storages.clone(),
                )
            })
        });
        if communicates {
            agree(&comm, exchange.as_ref().err(), &mut [])?;
        }
        let exchange = exchange?;
        running::make_room();
        let engines = Engines {
            exchange,
            in_place: InPlaceRoute::Undecided,
            lent: false,
            failure: None,
            ranges: Vec::new(),
        };
        let executor = Executor {
            engines: ManuallyDrop::new(Mutex::new(engines)),
            comm: ManuallyDrop::new(comm),
            threads,
            plan,
        };
        Ok(Plan {
            executor: Arc::new(executor),
            storages,
            strided,
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
}

impl Drop for Plan {
    /// Stops counting the plan's execution as running, so that no other wait
    /// reaches it, before the executor drops.
    fn drop(&mut self) {
        running::stop(self.in_flight());
        running::give_back_room();
    }
}

impl Drop for Executor {
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
        self.executor.plan.fmt(f)?;
        if self.strided {
            let (input, output) = (&self.storages.input, &self.storages.output);
            write!(
                f,
                "; strided storage (input strides {:?}, output strides {:?}): every message packed through the slots",
                input.strides(),
                output.strides()
            )?;
        }
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
    let allocated = try_vec::<T>(plan.output_elems(), "the output", plan.rank());
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
