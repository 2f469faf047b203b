//! Launching an execution: the typed and raw entry points, the checks of the
//! buffers and the element type, the agreement with every rank (with a caller's
//! own error), and the run on the plan's engines, blocking or not.

use std::sync::{Arc, PoisonError};

use super::execution::{Execution, Expected, check_buffers, in_progress, output_address};
use super::in_place::{InPlaceRoute, Run};
use super::{Engines, Executor, Plan};
use crate::core::abi::{dr_dtype, dtype_words};
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::mpi::agree::agree;
use crate::mpi::buffers::Buffers;
use crate::mpi::comm::Comm;
use crate::mpi::exchange::{Exchange, Mode, Participant};
use crate::mpi::running::{self, InFlight};
use crate::mpi::status::require_mpi;
use crate::mpi::transport::Channel;

impl Plan {
    /// Executes the plan from `input` into `output` (collective unless
    /// [`Plan::is_collective`] is false). `T` must have the plan's element size.
    /// Allocates nothing: creation allocated what it needs.
    pub fn execute<T: Element>(&self, input: &[T], output: &mut [T]) -> Result<()> {
        let pre = self.check_type::<T>().err();
        let bytes = std::mem::size_of_val(output);
        let out = output_address(output.as_mut_ptr().cast(), bytes);
        // SAFETY: the slices are valid for their lengths; distinct borrows cannot overlap.
        unsafe {
            self.execute_checked(
                input.as_ptr().cast(),
                std::mem::size_of_val(input),
                out,
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
        let out = output_address(output.as_mut_ptr().cast(), out_bytes);
        // SAFETY: the slices are valid for their lengths and stay borrowed until the
        // execution has completed (below, or in the guard's drop when unwinding).
        let done =
            unsafe { self.begin_checked(input.as_ptr().cast(), in_bytes, out, out_bytes, pre) }?;
        Execution::overlap(self, done, work)
    }

    /// Executes the plan in place: `buffer` holds this rank's input on entry and its
    /// output on return, so it must be large enough for both (collective unless
    /// [`Plan::is_collective`] is false). When the output equals the input on this
    /// rank, nothing is touched. On the local path this allocates nothing; on the
    /// exchange path the first execution in place (of any rank) allocates the
    /// plan's in-place schedule and its staging (at most
    /// [`PlanOptions::in_place_budget`](crate::PlanOptions::in_place_budget)), kept for the later ones, or, when no
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
        let in_bytes = self.storages.input.span() as usize * self.executor.plan.elem_size;
        // SAFETY: forwarded from the caller.
        unsafe { self.execute_checked(input, in_bytes, output, output_capacity, None) }
    }

    /// Checks that `T` is the type the plan was made for: its size, its `dr_dtype`
    /// when the plan has one, and a plan with a `dr_dtype` for `bool` (the ranks
    /// then all move `bool`, so no invalid byte can arrive).
    pub(crate) fn check_type<T: Element>(&self) -> Result<()> {
        let (size, rank) = (size_of::<T>(), self.executor.comm.rank());
        let problem = if size != self.executor.plan.elem_size {
            format!(
                "has {size} bytes but the plan was made for {}",
                self.executor.plan.elem_size
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

    /// Checks that elements of `dtype` (a `dr_dtype` value, as a binding that
    /// knows its arrays' types passes it) are the plan's: as
    /// [`Plan::check_type`] checks a Rust type.
    pub(crate) fn check_dtype(&self, dtype: i32) -> Result<()> {
        let rank = self.executor.comm.rank();
        let problem = match dr_dtype::from_code(dtype) {
            None => format!("dtype = {dtype} is not a dr_dtype value"),
            Some(d) if d.size() != self.executor.plan.elem_size => format!(
                "the arrays' elements are {} ({} bytes) but the plan was made for {}",
                d.name(),
                d.size(),
                self.planned_elements()
            ),
            Some(d) if self.dtype.is_some_and(|p| p != dtype) => format!(
                "the arrays' elements are {} but the plan was made for {}",
                d.name(),
                self.planned_elements()
            ),
            Some(_) => return Ok(()),
        };
        Err(Error::InvalidDtype(format!("{problem} (rank {rank})")))
    }

    /// The plan's elements in words: their dtype's name and size, or their size.
    fn planned_elements(&self) -> String {
        let size = self.executor.plan.elem_size;
        match self.dtype {
            Some(code) => format!("{} ({size} bytes)", dtype_words(code)),
            None => format!("elements of {size} bytes"),
        }
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
    pub(super) unsafe fn launch(
        &self,
        buffers: &Buffers,
        pre: Option<Error>,
        how: Launch,
    ) -> Result<bool> {
        // After MPI_Finalize every rank fails here alike, so no agreement is needed.
        require_mpi()?;
        self.check_thread()?;
        // SAFETY: forwarded from the caller.
        unsafe { self.running(|| self.start(buffers, pre, how)) }
    }

    /// [`Plan::launch`] once the calling thread may call MPI.
    ///
    /// # Safety
    /// As [`Plan::begin_checked`].
    unsafe fn start(&self, buffers: &Buffers, pre: Option<Error>, how: Launch) -> Result<bool> {
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
        let (plan, comm) = (&self.executor.plan, &*self.executor.comm);
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
                    scheduled.run(channel, buffers)?;
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
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Engines> {
        self.executor
            .engines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Carries the execution in flight on: until it completes when `blocking`, else
    /// as far as it goes without waiting. Returns whether it completed (true when
    /// none is in flight). A failure is this rank's alone (messages in flight are
    /// cancelled and completed first); other ranks may still complete. Once this
    /// reports the end (anything but `Ok(false)`), the execution is no longer lent
    /// out, and the plan may start another. Either way it also carries the
    /// process's other executions in flight on, so that ranks may complete them
    /// in any order, by waits or by test loops.
    ///
    /// The one error that is not the end: on a thread that may not call MPI for
    /// the plan ([`Plan::check_thread`]) the call is refused and does nothing,
    /// the execution still in flight, to be carried on from a thread that may.
    pub fn progress(&self, blocking: bool) -> Result<bool> {
        self.check_thread()?;
        let mut engines = self.lock();
        let outcome = match engines.failure.take() {
            Some(failure) => Err(failure),
            None => self.executor.advance(&mut engines.exchange, blocking),
        };
        if !matches!(outcome, Ok(false)) {
            engines.lent = false;
            // Under the lock: an execution begun on another thread once it is
            // released counts itself anew.
            running::stop(self.in_flight());
        } else {
            // A test loop is a wait too: it carries the other executions on.
            drop(engines);
            let process = self.executor.comm.waits().process;
            if running::others_running(process) {
                running::carry_others_on(process);
            }
        }
        outcome
    }

    /// Refuses, on this rank alone, a call from a thread that may not call MPI
    /// for the plan (see [`Plan`]): [`Error::Mpi`], naming the thread level and
    /// the rank. A refused call does nothing.
    pub fn check_thread(&self) -> Result<()> {
        self.executor.threads.check(self.rank())
    }

    /// This plan's execution, as the waits of others carry it on.
    pub(super) fn in_flight(&self) -> *const dyn InFlight {
        let executor: *const Executor = Arc::as_ptr(&self.executor);
        executor
    }

    /// Runs `launch` (an execution's start, or the whole of it) counted as
    /// running, so that its waits carry the other running executions on and
    /// theirs carry it on; it stays counted while the plan lends an execution
    /// out, until [`Plan::progress`] reports its end or the plan is dropped.
    pub(super) fn running(&self, launch: impl FnOnce() -> Result<bool>) -> Result<bool> {
        // SAFETY: stopped below unless the plan lends an execution out; then
        // stopped when its end is reported or when the plan drops, before the
        // executor it points at.
        unsafe { running::start(self.executor.comm.waits().process, self.in_flight()) };
        let outcome = launch();
        let engines = self.lock();
        if !engines.lent {
            running::stop(self.in_flight());
        }
        outcome
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
        let rank = self.executor.comm.rank();
        let expected = Expected {
            plan: &self.executor.plan,
            storages: &self.storages,
            strided: self.strided,
        };
        let checked = check_buffers(&expected, buffers, rank);
        let packed = matches!(route, InPlaceRoute::Packed(_));
        let prepared = pre
            .map_or(checked, |e| Err(e.on_rank(rank)))
            .and_then(|in_place| Ok((in_place, self.prepare(in_place, packed)?)));
        if !(self.communicates || always) {
            return prepared.map(|(_, run)| run);
        }
        let mut in_place_somewhere = [i64::from(matches!(prepared, Ok((true, _))))];
        agree(
            &self.executor.comm,
            prepared.as_ref().err(),
            &mut in_place_somewhere,
        )?;
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
    /// buffers must stay valid and untouched until the execution completes or
    /// fails.
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

impl Executor {
    /// Carries the execution in flight on `exchange`, if any (see
    /// [`Plan::progress`]), on a thread its callers checked may call MPI.
    fn advance(&self, exchange: &mut Exchange<Comm>, blocking: bool) -> Result<bool> {
        if !exchange.is_active() {
            return Ok(true);
        }
        require_mpi()?;
        let on = Participant {
            plan: &self.plan,
            transport: &*self.comm,
        };
        exchange.advance(on, blocking)
    }
}

impl InFlight for Executor {
    /// Carries the execution lent out on without waiting, unless another call
    /// holds the plan (its owner's wait moves it then) or this thread may not
    /// call MPI for it; a failure waits for the owner's next test or wait.
    fn carry_on(&self) {
        if !self.threads.allows_this_thread() {
            return;
        }
        let Ok(mut engines) = self.engines.try_lock() else {
            return;
        };
        if engines.failure.is_none()
            && let Err(failure) = self.advance(&mut engines.exchange, false)
        {
            engines.failure = Some(failure);
        }
    }
}

/// How an execution is launched.
#[derive(Clone, Copy, Debug)]
pub(super) struct Launch {
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
    pub(super) const AGREED_BLOCKING: Launch = Launch {
        blocking: true,
        always_agree: true,
    };
}
