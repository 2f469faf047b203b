//! Plans: collective creation (validation agreed by all ranks, one allgather of the
//! slab lengths, pure planning) and repeated collective execution.

use std::fmt;

use mpi::raw::AsRaw;

use crate::agree::agree;
use crate::args::{
    Checked, FINGERPRINT_LEN, ReshapeArgs, check_local, check_rows_add_up, mismatch,
};
use crate::comm::{Comm, RawComm};
use crate::error::{Error, Result};
use crate::exchange;
use crate::planner::{Path, PlanStats, RankPlan};
use crate::runs::MessageLimits;

/// Tuning knobs of a plan. The defaults suit production; tests lower the limits to
/// exercise the chunked paths with small arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Most bytes in one MPI message (MPI counts are 32-bit; default `i32::MAX`).
    pub max_message_bytes: usize,
    /// Most runs described by the datatypes of one round, over all peers: bounds the
    /// memory used to describe messages (16 bytes per run, plus MPI's copy).
    pub run_budget: usize,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_message_bytes: i32::MAX as usize,
            run_budget: 1 << 18,
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
/// assert_eq!(plan.stats().bytes_sent, 0); // balanced input: nothing moves
/// ```
#[derive(Debug)]
pub struct Plan {
    comm: Comm,
    plan: RankPlan,
    limits: MessageLimits,
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
        let comm = Comm::duplicate(comm, "")?;
        let checked = args
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|a| check_local(a, comm.rank()));
        let fingerprint = args
            .as_ref()
            .map_or_else(|_| vec![0; FINGERPRINT_LEN], ReshapeArgs::fingerprint);
        let mut piggyback: Vec<i64> = fingerprint
            .iter()
            .copied()
            .chain(fingerprint.iter().map(|x| !x))
            .collect();
        agree(&comm, checked.as_ref().err(), &mut piggyback)?;
        let (checked, args) = (checked?, args?);
        let min: Vec<i64> = piggyback[FINGERPRINT_LEN..].iter().map(|x| !x).collect();
        if let Some(e) = mismatch(&args, &min, &piggyback[..FINGERPRINT_LEN], comm.rank()) {
            return Err(e);
        }
        let plan = plan_from_gathered(&comm, &checked)?;
        let mut peers = vec![plan.sends.len().max(plan.recvs.len()).max(1) as i64];
        comm.allreduce_max(&mut peers)?;
        let limits = MessageLimits {
            max_bytes: options.max_message_bytes.max(1),
            max_runs: (options.run_budget / peers[0] as usize).max(1),
        };
        Ok(Plan { comm, plan, limits })
    }

    /// The statistics of what this rank will do.
    pub fn stats(&self) -> PlanStats {
        self.plan.stats()
    }

    /// The path taken (the same on every rank).
    pub fn path(&self) -> Path {
        self.plan.path
    }

    /// The resolved output global shape.
    pub fn new_shape(&self) -> &[u64] {
        &self.plan.new_shape
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

    /// The per-rank plan (peers, volumes, layouts).
    pub fn rank_plan(&self) -> &RankPlan {
        &self.plan
    }

    /// Executes the plan from `input` into `output` (collective). `T` must have the
    /// plan's element size.
    pub fn execute<T: crate::Element>(&self, input: &[T], output: &mut [T]) -> Result<()> {
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

    /// Executes the plan in place: `buffer` holds this rank's input on entry and its
    /// output on return, so it must be large enough for both (collective). When the
    /// output equals the input on this rank, nothing is touched.
    pub fn execute_in_place<T: crate::Element>(&self, buffer: &mut [T]) -> Result<()> {
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

    fn check_type<T>(&self) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if size == self.plan.elem_size {
            return Ok(());
        }
        Err(Error::InvalidDtype(format!(
            "the element type has {size} bytes but the plan was made for {} (rank {})",
            self.plan.elem_size,
            self.comm.rank()
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
        let buffers = Buffers::new(
            &self.plan,
            input,
            input_len,
            output,
            output_capacity,
            self.comm.rank(),
        );
        let local = pre
            .map_or(buffers, Err)
            .and_then(|b| b.snapshot_if_needed(&self.plan));
        agree(&self.comm, local.as_ref().err(), &mut Vec::new())?;
        let buffers = local?;
        if buffers.in_place && self.plan.is_identity() {
            return Ok(());
        }
        let source = buffers.snapshot.as_ref().map_or(input, |s| s.as_ptr());
        // SAFETY: Buffers checked sizes and overlap; a snapshot separates in-place buffers.
        unsafe { exchange::execute(&self.plan, &self.comm, self.limits, source, output) }
    }
}

/// The buffers of one execution, checked against the plan.
struct Buffers {
    in_place: bool,
    snapshot: Option<Vec<u8>>,
    input: *const u8,
    in_bytes: usize,
}

impl Buffers {
    fn new(
        plan: &RankPlan,
        input: *const u8,
        input_len: usize,
        output: *mut u8,
        capacity: usize,
        rank: usize,
    ) -> Result<Buffers> {
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
        if capacity < out_bytes {
            return Err(Error::BufferTooSmall(format!(
                "out_capacity = {} elements but rank {rank} receives {} output elements",
                capacity / size,
                plan.output_elems()
            )));
        }
        let in_place = std::ptr::eq(input, output) && in_bytes.max(out_bytes) > 0;
        let (a, b) = (input as usize, output as usize);
        if !in_place && in_bytes > 0 && out_bytes > 0 && a < b + out_bytes && b < a + in_bytes {
            return Err(Error::Aliasing(format!(
                "the input buffer [{a:#x}, +{in_bytes} B) and the output buffer [{b:#x}, +{out_bytes} B) partially overlap on rank {rank}; pass the same pointer for in place"
            )));
        }
        Ok(Buffers {
            in_place,
            snapshot: None,
            input,
            in_bytes,
        })
    }

    /// In place with data to move: keeps a copy of the input to read from while the
    /// buffer is overwritten.
    fn snapshot_if_needed(mut self, plan: &RankPlan) -> Result<Buffers> {
        if !self.in_place || plan.is_identity() {
            return Ok(self);
        }
        let mut copy = Vec::new();
        copy.try_reserve_exact(self.in_bytes).map_err(|_| {
            Error::OutOfMemory(format!(
                "cannot allocate {} bytes for the in-place copy of the input on rank {}",
                self.in_bytes, plan.rank
            ))
        })?;
        // SAFETY: input is readable for in_bytes (checked by the caller's contract).
        copy.extend_from_slice(unsafe { std::slice::from_raw_parts(self.input, self.in_bytes) });
        self.snapshot = Some(copy);
        Ok(self)
    }
}

/// Allgathers the slab lengths (and explicit targets), checks they add up, and plans.
fn plan_from_gathered(comm: &Comm, checked: &Checked) -> Result<RankPlan> {
    let mine = [
        checked.local_len as i64,
        checked.target_len.map_or(0, |t| t as i64),
    ];
    let all = comm.allgather(&mine)?;
    let lens: Vec<u64> = all.iter().step_by(2).map(|&l| l as u64).collect();
    let targets: Vec<u64> = all.iter().skip(1).step_by(2).map(|&l| l as u64).collect();
    if let Some(axis) = checked.split {
        check_rows_add_up("local_len", &lens, checked.gshape[axis])?;
    }
    let explicit = checked.new_split.filter(|_| checked.target_len.is_some());
    if let Some(axis) = explicit {
        check_rows_add_up("new_local_len", &targets, checked.new_shape[axis])?;
    }
    Ok(RankPlan::new(
        checked,
        &lens,
        explicit.map(|_| targets.as_slice()),
        comm.rank(),
    ))
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.plan.fmt(f)
    }
}

/// Plans and executes in one call (collective): reshapes this rank's `input` into a
/// new vector holding this rank's output.
pub fn reshape<T: crate::Element, C: AsRaw<Raw = RawComm>>(
    comm: &C,
    args: &ReshapeArgs,
    input: &[T],
) -> Result<Vec<T>> {
    reshape_with(&Plan::new(comm, args)?, input)
}

/// Executes `plan` from `input` into a newly allocated output (collective); a failed
/// allocation is agreed like any other error.
pub(crate) fn reshape_with<T: crate::Element>(plan: &Plan, input: &[T]) -> Result<Vec<T>> {
    let mut output: Vec<T> = Vec::new();
    let pre = output
        .try_reserve_exact(plan.output_elems())
        .err()
        .map(|_| {
            Error::OutOfMemory(format!(
                "cannot allocate the output of {} elements on rank {}",
                plan.output_elems(),
                plan.comm.rank()
            ))
        });
    let pre = pre.or_else(|| plan.check_type::<T>().err());
    let bytes = plan.output_elems() * size_of::<T>();
    let (src, src_len) = (input.as_ptr().cast(), size_of_val(input));
    // SAFETY: the capacity is reserved (or an error is agreed before anything is
    // written); a successful execution writes every output element exactly once.
    unsafe {
        plan.execute_checked(src, src_len, output.as_mut_ptr().cast(), bytes, pre)?;
        output.set_len(plan.output_elems());
    }
    Ok(output)
}
