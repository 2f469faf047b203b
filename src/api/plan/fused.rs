//! Fused plans: several plans of one communicator executed together, in one
//! round ([`Fused`]). Each plan keeps its own runs, local copy and exchange;
//! the traffic a pair of ranks exchanges over all the plans travels in one
//! message where it is latency-bound (see [`FusedExchange`]). A plan fused
//! several times moves its fields as one batch.

use std::borrow::Borrow;
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use super::batch::{BatchBuffers, BufferRange, Listed, check_apart, in_field};
use super::execution::{Expected, check_buffers, in_progress, output_address};
use super::launch::Launch;
use super::{Engines, Plan, RawBatch};
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::core::fallible::{contain_panic, try_vec};
use crate::mpi::agree::{agree, agree_on_difference};
use crate::mpi::comm::Comm;
use crate::mpi::exchange::{
    FieldBuffers, FusedExchange, FusedPlan, FusedRun, FusedRuns, Mode, Participant,
};
use crate::mpi::running;
use crate::mpi::status::require_mpi;

/// Several plans on one communicator, executed together in one round: every
/// rank fuses the same plans in the same order (the same plan may come several
/// times), each with its own layouts, element type and storages.
///
/// ```no_run
/// use distreshape::{Fused, FusedField, Layout, Plan};
/// let universe = mpi::initialize().unwrap();
/// let world = mpi::topology::SimpleCommunicator::world();
/// let x = Layout::new(&[32, 32, 32], &[2, 2], &[None, Some(0), Some(1)]);
/// let y = Layout::new(&[32, 32, 32], &[2, 2], &[Some(0), None, Some(1)]);
/// let velocity = Plan::from_layouts::<f64, _>(&world, &x, &y).unwrap();
/// let scalar = Plan::from_layouts::<f32, _>(&world, &y, &x).unwrap();
/// // The three velocity components and the scalar in one round.
/// let fused = Fused::new(vec![&velocity, &velocity, &velocity, &scalar]).unwrap();
/// let (u, v, w) = (vec![0.0f64; velocity.input_elems()], vec![0.0; velocity.input_elems()], vec![0.0; velocity.input_elems()]);
/// let mut out = vec![vec![0.0f64; velocity.output_elems()]; 3];
/// let t = vec![0.0f32; scalar.input_elems()];
/// let mut t_out = vec![0.0f32; scalar.output_elems()];
/// let [a, b, c] = &mut out[..] else { unreachable!() };
/// fused
///     .execute(&mut [
///         FusedField::new(&u, a),
///         FusedField::new(&v, b),
///         FusedField::new(&w, c),
///         FusedField::new(&t, &mut t_out),
///     ])
///     .unwrap();
/// ```
pub struct Fused<P: Borrow<Plan>> {
    /// What executions reuse; declared (so dropped) before `comm`.
    state: Mutex<FusedState>,
    /// The plans' communicator, with tags of the fused object's own; released
    /// only on a thread that may call MPI (see [`Plan`]'s threads).
    comm: ManuallyDrop<Comm>,
    /// The plans, in the order given.
    plans: Vec<P>,
    /// The distinct plans and their entries.
    groups: Groups,
    /// Makes the object `!Sync`, as plans are.
    not_shared: PhantomData<Cell<()>>,
}

// SAFETY: as a plan, a fused object moves to another thread but is not shared
// (it is `!Sync`). What it holds beyond its plans is the framing, the frames'
// buffer and requests (null between executions) and, in its state, the
// pointers of the last execution's engines and buffers, set and used only
// while an execution holds the state's lock and every plan's, never read
// between executions; the sibling communicator is `Send`.
unsafe impl<P: Borrow<Plan> + Send> Send for Fused<P> {}

impl<P: Borrow<Plan>> std::fmt::Debug for Fused<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fused")
            .field("plans", &self.plans.len())
            .field("distinct_plans", &self.groups.first.len())
            .finish_non_exhaustive()
    }
}

/// The distinct plans of a fused object (each one group), in the order they
/// first come, and which entries each takes.
#[derive(Debug)]
struct Groups {
    /// Each group's first entry.
    first: Vec<usize>,
    /// The entries, group after group, each group's in the order given.
    entries: Vec<usize>,
    /// Where each group's entries start in `entries`, and one past the last.
    starts: Vec<usize>,
}

impl Groups {
    /// The groups of `plans`: entries are of one group when they are one plan.
    fn of<P: Borrow<Plan>>(plans: &[P]) -> Groups {
        let mut first: Vec<usize> = Vec::new();
        let mut group_of = Vec::with_capacity(plans.len());
        for (i, plan) in plans.iter().enumerate() {
            let same = |&j: &usize| std::ptr::eq(plans[j].borrow(), plan.borrow());
            match first.iter().position(same) {
                Some(g) => group_of.push(g),
                None => {
                    group_of.push(first.len());
                    first.push(i);
                }
            }
        }
        let mut entries = Vec::with_capacity(plans.len());
        let mut starts = vec![0];
        for g in 0..first.len() {
            entries.extend((0..plans.len()).filter(|&i| group_of[i] == g));
            starts.push(entries.len());
        }
        Groups {
            first,
            entries,
            starts,
        }
    }

    /// Group `g`'s entries' positions in `entries`.
    fn range(&self, g: usize) -> Range<usize> {
        self.starts[g]..self.starts[g + 1]
    }
}

/// What every execution of a fused object reuses: the framing, and room for
/// the locked plans' engines and the fields' buffers in group order.
struct FusedState {
    exchange: FusedExchange<Comm>,
    /// Each group's plan's engines, while an execution holds their locks.
    engines: Vec<*mut Engines>,
    /// The fields' inputs, group after group.
    inputs: Vec<*const u8>,
    /// The fields' outputs, group after group.
    outputs: Vec<*mut u8>,
    /// The byte ranges of the fields' buffers, sorted by the check that they
    /// lie apart.
    ranges: Vec<BufferRange>,
}

/// One field of a fused execution: its plan's input and output, of the plan's
/// element type.
pub struct FusedField<'a> {
    input: *const u8,
    input_bytes: usize,
    output: *mut u8,
    output_bytes: usize,
    /// Checks the element type against the field's plan.
    check_type: fn(&Plan) -> Result<()>,
    borrows: PhantomData<(&'a [u8], &'a mut [u8])>,
}

impl<'a> FusedField<'a> {
    /// The field that reads `input` and writes `output`.
    pub fn new<T: Element>(input: &'a [T], output: &'a mut [T]) -> FusedField<'a> {
        FusedField {
            input: input.as_ptr().cast(),
            input_bytes: size_of_val(input),
            output: output_address(output.as_mut_ptr().cast(), size_of_val(output)),
            output_bytes: size_of_val(output),
            check_type: Plan::check_type::<T>,
            borrows: PhantomData,
        }
    }
}

impl<P: Borrow<Plan>> Fused<P> {
    /// Fuses `plans` (collective over their communicator): every rank passes
    /// the same plans in the same order, all made on one communicator. Plans
    /// from another communicator fail on every rank with
    /// [`Error::InvalidCommunicator`], other plans or another order than some
    /// rank's with [`Error::InconsistentArguments`]. No plans fails at once,
    /// on the ranks that passed none (there is no communicator to agree on).
    /// Allocates the frames (the latency-bound traffic of the pairs of ranks
    /// two plans at least use), grows the message slots of a plan fused
    /// several times for its batch, and fails on every rank when that fails.
    pub fn new(plans: Vec<P>) -> Result<Fused<P>> {
        Fused::new_agreeing(plans, None)
    }

    /// Fuses `plans` as [`Fused::new`] does, first agreeing with every rank
    /// on `local`, an error the caller found on this rank before calling (a
    /// binding's own checks: a null plan it left out of `plans`, a null output
    /// pointer): every rank then fails with the lowest failing rank's error,
    /// agreed over the first plan's communicator in the one collective that
    /// agrees on the plans. No plans still fails at once, on the ranks that
    /// passed none.
    pub fn new_agreeing(plans: Vec<P>, local: Option<Error>) -> Result<Fused<P>> {
        let Some(first) = plans.first().map(Borrow::borrow) else {
            return Err(Error::InvalidShape(
                "nplans = 0: a fused execution holds one plan at least".into(),
            ));
        };
        require_mpi()?;
        let rank = first.rank();
        first.check_thread()?;
        let local = local
            .map(|e| e.on_rank(rank))
            .or_else(|| check_communicators(&plans, rank).err());
        let fingerprint = fingerprint(&plans);
        let mut agreed = [fingerprint, !fingerprint];
        agree(&first.executor.comm, local.as_ref(), &mut agreed)?;
        if agreed[0] != !agreed[1] {
            return Err(disagreeing_plans(&plans, fingerprint != agreed[0], rank));
        }
        let comm = first.executor.comm.sibling();
        let groups = Groups::of(&plans);
        let state = contain_panic(|| FusedState::new(&plans, &groups, rank));
        agree(&comm, state.as_ref().err(), &mut [])?;
        let state = state?;
        running::make_room();
        Ok(Fused {
            state: Mutex::new(state),
            comm: ManuallyDrop::new(comm),
            plans,
            groups,
            not_shared: PhantomData,
        })
    }

    /// The fused plans, in the order given.
    pub fn plans(&self) -> &[P] {
        &self.plans
    }

    /// How many pairs of ranks (peer and direction) this rank's traffic with
    /// travels framed, one message for every plan.
    pub fn framed_pairs(&self) -> usize {
        self.lock_state().exchange.frames()
    }

    /// Bytes of the frames' buffer on this rank: the framed traffic it sends
    /// and receives, the extra memory the fused object holds.
    pub fn framed_bytes(&self) -> usize {
        self.lock_state().exchange.framed_bytes()
    }

    /// Executes the fused plans (collective): field `i` is plan `i`'s, read
    /// and written as [`Plan::execute`] would. Out of place on every rank the
    /// plans run in one round; with a field in place on any rank they run one
    /// after another, each as [`Plan::execute`] runs it. Every check (the
    /// count, each field's element type and buffers, fields sharing memory, a
    /// plan with an execution in flight) is agreed in one collective, so every
    /// rank returns the same status. Allocates nothing.
    pub fn execute(&self, fields: &mut [FusedField<'_>]) -> Result<()> {
        let rank = self.plan(0).rank();
        let pre = self.count_error(fields.len(), rank).or_else(|| {
            (fields.iter().zip(&self.plans))
                .enumerate()
                .find_map(|(i, (f, p))| (f.check_type)(p.borrow()).err().map(|e| in_field(e, i)))
        });
        let count = fields.len().min(self.plans.len());
        let fields = &fields[..count];
        let inputs = Listed::new(fields.iter().map(|f| f.input));
        let outputs = Listed::new(fields.iter().map(|f| f.output));
        let lens = |i: usize| (fields[i].input_bytes, fields[i].output_bytes);
        let batch = BatchBuffers {
            inputs: inputs.as_slice(),
            outputs: outputs.as_slice(),
            lens: &lens,
        };
        // SAFETY: the fields' slices are valid for their lengths; distinct
        // borrows cannot overlap.
        unsafe { self.launch(&batch, pre) }
    }

    /// Executes the fused plans on raw buffers as [`Fused::execute`] does,
    /// first agreeing with every rank on `local`, an error the caller found on
    /// this rank before calling (its buffers are then not touched and may be
    /// null). Field `i` reads `input_lens[i]` bytes at `inputs[i]` and writes
    /// at most `capacities[i]` bytes at `outputs[i]`.
    ///
    /// # Safety
    /// Each `inputs[i]` readable for `input_lens[i]` bytes and `outputs[i]`
    /// writable for `capacities[i]` bytes; the four slices equally long.
    pub unsafe fn execute_raw_agreeing(
        &self,
        fields: &RawBatch<'_>,
        local: Option<Error>,
    ) -> Result<()> {
        let lens = |i: usize| (fields.input_lens[i], fields.capacities[i]);
        let batch = BatchBuffers {
            inputs: fields.inputs,
            outputs: fields.outputs,
            lens: &lens,
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.execute_listed(&batch, local) }
    }

    /// Executes the fused plans on buffers as a binding lists them, as
    /// [`Fused::execute_raw_agreeing`] does, the fields' lengths given by
    /// `fields.lens` (so that nothing is listed per execution). With a
    /// `local` error the buffers are not touched and the lists may be empty.
    ///
    /// # Safety
    /// As [`Fused::execute_raw_agreeing`], field `i` with the lengths
    /// `fields.lens(i)`.
    pub(crate) unsafe fn execute_listed(
        &self,
        fields: &BatchBuffers<'_>,
        local: Option<Error>,
    ) -> Result<()> {
        let rank = self.plan(0).rank();
        let count = fields.inputs.len().min(fields.outputs.len());
        let pre = local.or_else(|| self.count_error(count, rank));
        // SAFETY: forwarded from the caller.
        unsafe { self.launch(fields, pre) }
    }

    /// The error of `count` fields for this object's plans.
    fn count_error(&self, count: usize, rank: usize) -> Option<Error> {
        (count != self.plans.len()).then(|| {
            Error::InvalidShape(format!(
                "{count} fields for {} fused plans (rank {rank}): one field per plan",
                self.plans.len()
            ))
        })
    }

    /// Plan `i` (entry `i`).
    fn plan(&self, i: usize) -> &Plan {
        self.plans[i].borrow()
    }

    /// The state, whatever a panic left.
    fn lock_state(&self) -> std::sync::MutexGuard<'_, FusedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks the fields, agrees on the checks and `pre` with every rank, and
    /// runs them: in one round when every rank is out of place, else one
    /// after another.
    ///
    /// # Safety
    /// Every field's input readable and output writable for its lengths (not
    /// touched with a `pre` error).
    unsafe fn launch(&self, fields: &BatchBuffers<'_>, pre: Option<Error>) -> Result<()> {
        require_mpi()?;
        self.plan(0).check_thread()?;
        // Counted as running: its waits carry the executions in flight on.
        let _running = running::hold(self.plan(0).executor.comm.waits().process);
        let mut state = self.lock_state();
        let mut pre = pre;
        // SAFETY: forwarded from the caller.
        let in_place = self.with_engines(&mut state, 0, &mut |state| unsafe {
            self.agree_and_run(state, fields, pre.take())
        })?;
        drop(state);
        if !in_place {
            return Ok(());
        }
        for i in 0..self.plans.len() {
            // SAFETY: forwarded from the caller; checked and agreed.
            unsafe {
                self.plan(i)
                    .launch(&fields.field(i), None, Launch::AGREED_BLOCKING)
            }?;
        }
        Ok(())
    }

    /// Locks the engines of group `g` and of every later group, noting them
    /// in `state`, and runs `body` while they are locked.
    fn with_engines<R>(
        &self,
        state: &mut FusedState,
        g: usize,
        body: &mut dyn FnMut(&mut FusedState) -> R,
    ) -> R {
        if g == self.groups.first.len() {
            return body(state);
        }
        let mut engines = self.plan(self.groups.first[g]).lock();
        state.engines[g] = &mut *engines;
        self.with_engines(state, g + 1, body)
    }

    /// With every group's engines locked (noted in `state`): checks, agrees,
    /// and runs the fields in one round unless some rank is in place; returns
    /// whether some rank is.
    ///
    /// # Safety
    /// As [`Fused::launch`], the engines of `state` locked.
    unsafe fn agree_and_run(
        &self,
        state: &mut FusedState,
        fields: &BatchBuffers<'_>,
        pre: Option<Error>,
    ) -> Result<bool> {
        let rank = self.plan(0).rank();
        let checked = pre.map_or_else(
            // SAFETY: the engines are locked (caller's contract).
            || unsafe { self.check(state, fields, rank) },
            |e| Err(e.on_rank(rank)),
        );
        let mut agreed = [i64::from(matches!(checked, Ok(true)))];
        agree(&self.comm, checked.as_ref().err(), &mut agreed)?;
        if agreed[0] != 0 {
            return Ok(true);
        }
        for (at, &i) in self.groups.entries.iter().enumerate() {
            state.inputs[at] = fields.inputs[i];
            state.outputs[at] = fields.outputs[i];
        }
        let FusedState {
            exchange,
            engines,
            inputs,
            outputs,
            ..
        } = state;
        let mut runs = LockedRuns {
            fused: self,
            engines,
            inputs,
            outputs,
        };
        // SAFETY: the buffers are checked and agreed, every rank out of place;
        // forwarded from the caller.
        unsafe { exchange.run(&self.comm, Mode::AllOutOfPlace, &mut runs) }?;
        Ok(false)
    }

    /// Checks that no plan has an execution in flight, every field's buffers
    /// against its plan, and that no two fields share memory; returns whether
    /// some field is in place.
    ///
    /// # Safety
    /// The engines of `state` locked.
    unsafe fn check(
        &self,
        state: &mut FusedState,
        fields: &BatchBuffers<'_>,
        rank: usize,
    ) -> Result<bool> {
        for (g, &first) in self.groups.first.iter().enumerate() {
            // SAFETY: locked (caller's contract); only read.
            let engines = unsafe { &*state.engines[g] };
            if engines.lent || engines.exchange.is_active() {
                return Err(in_field(in_progress().on_rank(rank), first));
            }
        }
        let mut in_place = false;
        for i in 0..self.plans.len() {
            let plan = self.plan(i);
            let expected = Expected {
                plan: &plan.executor.plan,
                storages: &plan.storages,
                strided: plan.strided,
            };
            let field = check_buffers(&expected, &fields.field(i), rank);
            in_place |= field.map_err(|e| in_field(e, i))?;
        }
        check_apart(fields, &|i| self.plan(i), &mut state.ranges, rank)?;
        Ok(in_place)
    }
}

impl<P: Borrow<Plan>> Drop for Fused<P> {
    /// Releases the fused object's use of the communicator, unless this thread
    /// may not call MPI (the reference is then leaked, as a plan's is); then
    /// the plans, when the object held the last reference to some.
    fn drop(&mut self) {
        running::give_back_room();
        if self.plan(0).executor.threads.allows_this_thread() {
            // SAFETY: dropped once, here, and not used afterwards.
            unsafe { ManuallyDrop::drop(&mut self.comm) };
        }
    }
}

/// The plans of an execution whose engines are locked, as the fused exchange
/// runs them.
struct LockedRuns<'a, P: Borrow<Plan>> {
    fused: &'a Fused<P>,
    engines: &'a [*mut Engines],
    inputs: &'a [*const u8],
    outputs: &'a [*mut u8],
}

impl<P: Borrow<Plan>> FusedRuns<Comm> for LockedRuns<'_, P> {
    fn run(&mut self, g: usize) -> FusedRun<'_, Comm> {
        let plan = self.fused.plan(self.fused.groups.first[g]);
        let entries = self.fused.groups.range(g);
        // SAFETY: the group's plan's engines, locked for the whole execution;
        // each group's are distinct and lent out one at a time.
        let engines = unsafe { &mut *self.engines[g] };
        FusedRun {
            exchange: &mut engines.exchange,
            on: Participant {
                plan: &plan.executor.plan,
                transport: &*plan.executor.comm,
            },
            buffers: FieldBuffers {
                inputs: &self.inputs[entries.clone()],
                outputs: &self.outputs[entries],
            },
        }
    }

    fn plans(&self) -> usize {
        self.fused.groups.first.len()
    }
}

impl FusedState {
    /// The state of fusing `plans` in `groups`: each group's plan's slots
    /// placed for its fields, the framing decided and allocated.
    fn new<P: Borrow<Plan>>(plans: &[P], groups: &Groups, rank: usize) -> Result<FusedState> {
        let mut locked = Vec::with_capacity(groups.first.len());
        for (g, &first) in groups.first.iter().enumerate() {
            let mut engines = plans[first].borrow().lock();
            if engines.lent || engines.exchange.is_active() {
                return Err(in_field(in_progress().on_rank(rank), first));
            }
            let fields = groups.range(g).len();
            engines.exchange.prepare_fields(fields, rank)?;
            locked.push(engines);
        }
        let fused: Vec<FusedPlan<'_, Comm>> = (groups.first.iter().zip(&locked))
            .enumerate()
            .map(|(g, (&first, engines))| FusedPlan {
                exchange: &engines.exchange,
                plan: &plans[first].borrow().executor.plan,
                fields: groups.range(g).len(),
            })
            .collect();
        let exchange = FusedExchange::new(&fused, rank)?;
        let mut engines = try_vec(groups.first.len(), "the fused plans' engines", rank)?;
        engines.resize(groups.first.len(), std::ptr::null_mut());
        let mut inputs = try_vec(plans.len(), "the fused fields", rank)?;
        inputs.resize(plans.len(), std::ptr::null());
        let mut outputs = try_vec(plans.len(), "the fused fields", rank)?;
        outputs.resize(plans.len(), std::ptr::null_mut());
        let ranges = try_vec(2 * plans.len(), "the fused fields' byte ranges", rank)?;
        Ok(FusedState {
            exchange,
            engines,
            inputs,
            outputs,
            ranges,
        })
    }
}

/// Fails when some plan is not on the first plan's communicator.
fn check_communicators<P: Borrow<Plan>>(plans: &[P], rank: usize) -> Result<()> {
    let first: &Comm = &plans[0].borrow().executor.comm;
    match plans
        .iter()
        .position(|p| !p.borrow().executor.comm.shares_communicator(first))
    {
        Some(i) => Err(Error::InvalidCommunicator(format!(
            "plans[{i}] was made on another communicator than plans[0] (rank {rank}): fused plans share one"
        ))),
        None => Ok(()),
    }
}

/// The error every rank returns when the ranks fuse different plans: the
/// message of the lowest rank whose plans are not those of the highest
/// fingerprint (`differs` on this rank), naming the lowest rank whose are,
/// agreed over the first plan's communicator, so that every rank names the
/// same two.
fn disagreeing_plans<P: Borrow<Plan>>(plans: &[P], differs: bool, rank: usize) -> Error {
    let numbers: Vec<u64> = plans
        .iter()
        .map(|p| p.borrow().executor.comm.plan_number())
        .collect();
    agree_on_difference(&plans[0].borrow().executor.comm, differs, |other| {
        Error::InconsistentArguments(format!(
            "the ranks fuse different plans, or in another order: rank {rank} fuses {} plans, numbered {numbers:?} on their communicator, unlike rank {other}",
            plans.len()
        ))
    })
}

/// A fingerprint of the plans' numbers on their communicator, in order: the
/// same on every rank that fuses the same plans in the same order.
fn fingerprint<P: Borrow<Plan>>(plans: &[P]) -> i64 {
    let numbers = plans.iter().map(|p| p.borrow().executor.comm.plan_number());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for n in std::iter::once(plans.len() as u64).chain(numbers) {
        for byte in n.to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    (hash >> 2) as i64
}
