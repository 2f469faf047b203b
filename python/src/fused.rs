//! `NativeFused`: several library plans of one communicator executed together,
//! in one round (the library's `Fused`), made from `NativePlan`s whose plans it
//! shares, so that a plan the caller lets go of lives on in it.

use std::borrow::Borrow;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use distreshape::{Error, Fused, Plan, RawBatch, Result};
use pyo3::prelude::*;

use crate::arrays::Memory;
use crate::errors::to_py_err;
use crate::plan::{NativePlan, Problem, memory_or_error, problem_error};

/// One plan of a fused object: the plan's lock, shared with its `NativePlan`,
/// and the plan's address inside it, through which the fused object borrows it.
struct Member {
    owner: Arc<Mutex<Plan>>,
    plan: *const Plan,
}

impl Member {
    fn of(owner: Arc<Mutex<Plan>>) -> Member {
        let plan: *const Plan = {
            let guard = lock(&owner);
            &*guard
        };
        Member { owner, plan }
    }
}

impl Borrow<Plan> for Member {
    fn borrow(&self) -> &Plan {
        // SAFETY: the plan lives inside `owner`'s allocation, which this member
        // keeps alive and which never moves. The fused object borrows it while
        // `NativeFused` holds the plan's lock (`Locked`), so that no other
        // thread uses the plan meanwhile, and, unlocked, only when it is
        // dropped, to read the plan's thread level, which never changes.
        unsafe { &*self.plan }
    }
}

// SAFETY: the pointer is into `owner`, which is `Send`; it is dereferenced only
// under the plan's lock (see `Borrow`).
unsafe impl Send for Member {}

/// The locks of a fused object's distinct plans, taken in address order (so that
/// two fused objects sharing plans, or a plan's own calls, never deadlock).
struct Locked<'a> {
    _guards: Vec<MutexGuard<'a, Plan>>,
}

impl<'a> Locked<'a> {
    fn all(owners: impl Iterator<Item = &'a Arc<Mutex<Plan>>>) -> Locked<'a> {
        let mut owners: Vec<&Arc<Mutex<Plan>>> = owners.collect();
        owners.sort_by_key(|o| Arc::as_ptr(o) as usize);
        owners.dedup_by_key(|o| Arc::as_ptr(o) as usize);
        Locked {
            _guards: owners.into_iter().map(|o| lock(o)).collect(),
        }
    }
}

/// `owner`'s plan, locked (the library contains its panics).
fn lock(owner: &Mutex<Plan>) -> MutexGuard<'_, Plan> {
    owner.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Several plans of one communicator, executed together in one round. Its
/// methods that run MPI release the GIL and agree on every error with all
/// ranks, the ones found here in the arrays with the library's own.
#[pyclass(frozen, module = "distreshape._native")]
pub struct NativeFused {
    /// The library's fused object; a lock since Python threads may share it.
    fused: Mutex<Fused<Member>>,
    /// The plans, in order, for the checks of the arrays.
    plans: Vec<Py<NativePlan>>,
    /// This process's rank in the plans' communicator.
    rank: usize,
}

#[pymethods]
impl NativeFused {
    /// Fuses `plans` (collective over their communicator), agreeing `problem`,
    /// an error the Python layer found (an item that is not a plan, left out of
    /// `plans`), with the fusion's checks. No plans fails at once (there is no
    /// communicator to agree on).
    #[new]
    #[pyo3(signature = (plans, problem))]
    fn new(py: Python<'_>, plans: Vec<Py<NativePlan>>, problem: Problem) -> PyResult<NativeFused> {
        let owners: Vec<Arc<Mutex<Plan>>> = plans.iter().map(|p| p.get().shared()).collect();
        let rank = plans.first().map_or(0, |p| p.get().rank());
        let local = problem_error(problem);
        let made = py.detach(|| {
            // Each member takes its plan's address under the plan's lock, then
            // the fusion runs with every plan locked.
            let members: Vec<Member> = owners.iter().map(|o| Member::of(Arc::clone(o))).collect();
            let _locked = Locked::all(owners.iter());
            Fused::new_agreeing(members, local)
        });
        let fused = made.map_err(|e| to_py_err(py, e))?;
        Ok(NativeFused {
            fused: Mutex::new(fused),
            plans,
            rank,
        })
    }

    /// How many pairs of ranks (peer and direction) this rank's traffic with
    /// travels framed, one message for every plan.
    #[getter]
    fn framed_pairs(&self, py: Python<'_>) -> usize {
        py.detach(|| self.lock().framed_pairs())
    }

    /// Bytes of the frames' buffer on this rank.
    #[getter]
    fn framed_bytes(&self, py: Python<'_>) -> usize {
        py.detach(|| self.lock().framed_bytes())
    }

    /// Executes the fused plans (collective): field `i` from `inputs[i]` into
    /// `outputs[i]` with plan `i`, each pair checked as `NativePlan.execute`
    /// checks one, or as `execute_in_place` checks its buffer where
    /// `in_place[i]` (the input and the output one array). The first failure
    /// (naming its field), a count that is not the plans' and `problem` are
    /// agreed with the library's checks in the execution's one collective.
    #[pyo3(signature = (inputs, outputs, in_place, problem))]
    fn execute(
        &self,
        py: Python<'_>,
        inputs: Vec<Option<Bound<'_, PyAny>>>,
        outputs: Vec<Option<Bound<'_, PyAny>>>,
        in_place: Vec<bool>,
        problem: Problem,
    ) -> PyResult<()> {
        let checked = self.check_fields(&inputs, &outputs, &in_place, problem);
        let (fields, local) = memory_or_error(checked, (Vec::new(), Vec::new()));
        py.detach(|| {
            let fused = self.lock();
            let _locked = Locked::all(fused.plans().iter().map(|m| &m.owner));
            let (inputs, outputs) = &fields;
            let ins: Vec<*const u8> = inputs.iter().map(|m| m.address as *const u8).collect();
            let outs: Vec<*mut u8> = outputs.iter().map(|m| m.address as *mut u8).collect();
            let input_lens: Vec<usize> = inputs.iter().map(|m| m.bytes).collect();
            let capacities: Vec<usize> = outputs.iter().map(|m| m.bytes).collect();
            let batch = RawBatch {
                inputs: &ins,
                input_lens: &input_lens,
                outputs: &outs,
                capacities: &capacities,
            };
            // SAFETY: `check_fields` checked every field's arrays as an
            // execution checks its own (none after a local error, which the
            // library agrees on without touching anything); they stay alive
            // (borrowed by this call) until the execution has completed; every
            // plan is locked for the fused object's borrows.
            unsafe { fused.execute_raw_agreeing(&batch, local) }
        })
        .map_err(|e| to_py_err(py, e))
    }
}

impl NativeFused {
    /// The library's fused object, locked.
    fn lock(&self) -> MutexGuard<'_, Fused<Member>> {
        self.fused.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks every field's arrays against its plan; the first failure names
    /// its field. Returns the fields' memory, inputs and outputs, one per plan.
    fn check_fields(
        &self,
        inputs: &[Option<Bound<'_, PyAny>>],
        outputs: &[Option<Bound<'_, PyAny>>],
        in_place: &[bool],
        problem: Problem,
    ) -> Result<(Vec<Memory>, Vec<Memory>)> {
        if let Some(error) = problem_error(problem) {
            return Err(error);
        }
        let count = inputs.len();
        if count != self.plans.len() || outputs.len() != count || in_place.len() != count {
            return Err(Error::InvalidShape(format!(
                "{count} inputs and {} outputs for {} fused plans (rank {}): one field per plan",
                outputs.len(),
                self.plans.len(),
                self.rank
            )));
        }
        let mut memory = (Vec::with_capacity(count), Vec::with_capacity(count));
        for (i, plan) in self.plans.iter().enumerate() {
            let plan = plan.get();
            let checked = match (in_place[i], &inputs[i]) {
                (true, Some(buffer)) => plan.check_in_place(buffer).map(|m| (m, m)),
                (true, None) => Err(Error::OutOfMemory(format!(
                    "no memory for the in-place buffer (rank {})",
                    self.rank
                ))),
                (false, _) => plan.check_pair(inputs[i].as_ref(), outputs[i].as_ref(), None),
            };
            let (input, output) = checked.map_err(|e| {
                Error::from_status(e.status(), format!("field {i}: {}", e.detail()))
            })?;
            memory.0.push(input);
            memory.1.push(output);
        }
        Ok(memory)
    }
}
