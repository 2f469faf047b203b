//! `NativePlan` (a library plan over an mpi4py communicator, between slabs or
//! between grid layouts, the latter with each side's local storage at any
//! strides) and `NativeRequest` (one non-blocking execution of it).

use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use distreshape::{
    Error, LayoutArgs, Plan, PlanOption, PlanOptions, RawBatch, RawComm, ReshapeArgs, Result, Route,
};
use mpi::ffi::{self, RSMPI_Fint};
use numpy::PyArrayDescr;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::arrays::{ElementType, Expected, Memory, check};
use crate::errors::to_py_err;
use crate::layouts::{layout_of, spans};

/// A library plan, planned on every rank of a communicator. Its methods that run
/// MPI release the GIL; the collective ones agree on every error with all ranks,
/// the ones found here in the arrays with the library's own, in the library's
/// execution (`Plan::execute_raw_agreeing`), even where nothing moves between
/// ranks.
#[pyclass(frozen, module = "distreshape._native")]
pub struct NativePlan {
    /// The plan; a lock since Python threads may share the object (the library runs
    /// one execution of a plan at a time), shared with the fused objects made
    /// from it (`NativeFused`), which keep it alive.
    plan: Arc<Mutex<Plan>>,
    /// This process's rank in the plan's communicator.
    rank: usize,
    /// The element type, as NumPy's dtype.
    dtype: Py<PyArrayDescr>,
    /// What the plan was made for, read without the lock.
    shapes: Shapes,
}

/// The plan's shapes and sizes, fixed at creation (see the getters).
struct Shapes {
    /// The resolved global output shape.
    output_shape: Vec<u64>,
    /// This rank's input block shape.
    local_input_shape: Vec<u64>,
    /// This rank's output block shape.
    local_output_shape: Vec<u64>,
    /// `(offset, length)` of this rank's input rows, when split.
    input_slab: Option<(u64, u64)>,
    /// `(offset, length)` of this rank's output rows, when split.
    output_slab: Option<(u64, u64)>,
    /// `(offset, length)` along each axis of this rank's input box.
    input_box: Vec<(u64, u64)>,
    /// `(offset, length)` along each axis of this rank's output box.
    output_box: Vec<(u64, u64)>,
    /// Elements of this rank's input block.
    input_elems: u64,
    /// Elements of this rank's output block.
    output_elems: u64,
    /// This rank's input strides, in elements (C order unless planned with strides).
    input_strides: Vec<u64>,
    /// This rank's output strides, in elements.
    output_strides: Vec<u64>,
    /// The input's storage when the plan was made with input strides (arrays are
    /// then checked against them), `None` for C-contiguous arrays.
    input_storage: Option<Storage>,
    /// The output's storage when the plan was made with output strides.
    output_storage: Option<Storage>,
    /// Whether some rank stores a side strided (in place is then refused).
    strided_anywhere: bool,
    /// `(path, bytes_sent, bytes_received, bytes_copied_locally, peers_sent, peers_received)`.
    stats: (&'static str, u64, u64, u64, usize, usize),
    /// Whether some rank sends or receives.
    collective: bool,
}

/// A side's strides in elements and its span (elements from the box's first to
/// one past its last), which an array planned with strides must match.
struct Storage {
    /// One stride per axis, in elements.
    strides: Vec<u64>,
    /// The span, in elements.
    span: u64,
}

impl Storage {
    /// The storage as [`Expected`] takes it.
    fn expected(&self) -> (&[u64], u64) {
        (&self.strides, self.span)
    }
}

/// Which sides of a plan were made with strides (input, output).
type Strided = (bool, bool);

impl Shapes {
    /// What `plan` was made for; `strided` tells which sides were given strides.
    fn of(plan: &Plan, (input_strided, output_strided): Strided) -> Shapes {
        let stats = plan.stats();
        let path = match stats.path {
            Route::Local => "local",
            Route::Exchange => "exchange",
        };
        Shapes {
            output_shape: plan.new_shape().to_vec(),
            local_input_shape: plan.local_input_shape(),
            local_output_shape: plan.local_output_shape(),
            input_slab: plan.input_slab().map(|slab| (slab.offset, slab.len)),
            output_slab: plan.output_slab().map(|slab| (slab.offset, slab.len)),
            input_box: spans(&plan.input_box()),
            output_box: spans(&plan.output_box()),
            input_elems: plan.input_elems() as u64,
            output_elems: plan.output_elems() as u64,
            input_strides: plan.input_strides().to_vec(),
            output_strides: plan.output_strides().to_vec(),
            input_storage: input_strided.then(|| Storage {
                strides: plan.input_strides().to_vec(),
                span: plan.input_span() as u64,
            }),
            output_storage: output_strided.then(|| Storage {
                strides: plan.output_strides().to_vec(),
                span: plan.output_span() as u64,
            }),
            strided_anywhere: plan.is_strided(),
            stats: (
                path,
                stats.bytes_sent,
                stats.bytes_received,
                stats.bytes_copied_locally,
                stats.peers_sent,
                stats.peers_received,
            ),
            collective: plan.is_collective(),
        }
    }
}

/// An error the Python layer found before calling here: `(status code, message)`.
pub(crate) type Problem = Option<(i32, String)>;

/// The error of a [`Problem`], if any.
pub(crate) fn problem_error(problem: Problem) -> Option<Error> {
    problem.map(|(code, message)| Error::from_code(code, message))
}

/// Options as the Python layer passes them: `(name, value)` pairs, a switch 1 or
/// 0, the default -1.
type Options = Vec<(String, i64)>;

/// The names of a plan's options, from the library's option table.
#[pyfunction]
pub fn option_names() -> Vec<&'static str> {
    PlanOption::ALL.into_iter().map(PlanOption::name).collect()
}

/// The plan options of `given`, or the error of the first unknown name or value
/// out of range (`DR_ERROR_INVALID_OPTION`, agreed by the plan's creation).
fn plan_options(given: &Options) -> Result<PlanOptions> {
    let mut options = PlanOptions::default();
    for (name, value) in given {
        let option = PlanOption::from_name(name).ok_or_else(|| {
            Error::InvalidOption(format!(
                "options[{name:?}] is not an option (the options: {})",
                option_names().join(", ")
            ))
        })?;
        options.set(option, *value)?;
    }
    Ok(options)
}

/// The arguments `args` and the options `given`, the first error of either
/// taking the arguments' place (to be agreed like any argument error).
fn with_options<A>(args: Result<A>, given: &Options) -> (Result<A>, PlanOptions) {
    match plan_options(given) {
        Ok(options) => (args, options),
        Err(error) => (args.and(Err(error)), PlanOptions::default()),
    }
}

#[pymethods]
impl NativePlan {
    /// Plans the reshape on every rank of the communicator whose Fortran handle is
    /// `comm` (collective). `problem` is an error the Python layer found in the
    /// arguments (the other values are then placeholders): it is agreed with the
    /// other ranks like any error the library finds; so is an error in `options`.
    #[new]
    #[pyo3(signature = (comm, gshape, split, local_len, new_shape, new_split, new_local_len, dtype, problem, options))]
    #[allow(clippy::too_many_arguments)] // the reshape's arguments, as Python passes them
    fn new(
        py: Python<'_>,
        comm: RSMPI_Fint,
        gshape: Vec<i64>,
        split: Option<usize>,
        local_len: i64,
        new_shape: Vec<i64>,
        new_split: Option<usize>,
        new_local_len: Option<i64>,
        dtype: Bound<'_, PyArrayDescr>,
        problem: Problem,
        options: Options,
    ) -> PyResult<NativePlan> {
        let args = match problem_error(problem) {
            Some(error) => Err(error),
            None => ElementType::of_numpy(&dtype).map(|element| {
                let args = ReshapeArgs::new(0, &gshape, split, local_len, &new_shape, new_split);
                let args = element.reshape_args(args);
                match new_local_len {
                    Some(len) => args.with_target_len(len),
                    None => args,
                }
            }),
        };
        let (args, options) = with_options(args, &options);
        NativePlan::planned(py, comm, dtype, (false, false), |raw| {
            Plan::create(raw, args, options)
        })
    }

    /// Plans the redistribution from the layout `input` to the layout `output` (the
    /// specs of `Layout._spec()`) on every rank of the communicator whose Fortran
    /// handle is `comm` (collective), with this rank's storage of each side:
    /// `None` for C order, or one stride per axis of that side's box, in elements
    /// (refused strides are `DR_ERROR_INVALID_STRIDES` on every rank); `problem`
    /// and `options` as for the constructor.
    #[staticmethod]
    #[pyo3(signature = (comm, input, output, dtype, input_strides, output_strides, problem, options))]
    #[allow(clippy::too_many_arguments)] // the plan's arguments, as Python passes them
    fn from_layouts(
        py: Python<'_>,
        comm: RSMPI_Fint,
        input: Bound<'_, PyAny>,
        output: Bound<'_, PyAny>,
        dtype: Bound<'_, PyArrayDescr>,
        input_strides: Option<Vec<i64>>,
        output_strides: Option<Vec<i64>>,
        problem: Problem,
        options: Options,
    ) -> PyResult<NativePlan> {
        let strided = (input_strides.is_some(), output_strides.is_some());
        let args = match problem_error(problem) {
            Some(error) => Err(error),
            None => layout_args(&input, &output, &dtype)
                .map(|args| args.with_strides(input_strides.as_deref(), output_strides.as_deref())),
        };
        let (args, options) = with_options(args, &options);
        NativePlan::planned(py, comm, dtype, strided, |raw| {
            Plan::create_from_layouts(raw, args, options)
        })
    }

    /// This rank's input strides, in elements (C order unless planned with input
    /// strides).
    #[getter]
    fn input_strides(&self) -> Vec<u64> {
        self.shapes.input_strides.clone()
    }

    /// This rank's output strides, in elements.
    #[getter]
    fn output_strides(&self) -> Vec<u64> {
        self.shapes.output_strides.clone()
    }

    /// `(input, output)`: whether each side was planned with strides (its arrays
    /// are then checked against them, never copied).
    #[getter]
    fn strided(&self) -> Strided {
        (
            self.shapes.input_storage.is_some(),
            self.shapes.output_storage.is_some(),
        )
    }

    /// The resolved global output shape.
    #[getter]
    fn output_shape(&self) -> Vec<u64> {
        self.shapes.output_shape.clone()
    }

    /// This rank's input block shape.
    #[getter]
    fn local_input_shape(&self) -> Vec<u64> {
        self.shapes.local_input_shape.clone()
    }

    /// This rank's output block shape.
    #[getter]
    fn local_output_shape(&self) -> Vec<u64> {
        self.shapes.local_output_shape.clone()
    }

    /// `(offset, length)` of this rank's input slab along the split axis (`None`
    /// when not split).
    #[getter]
    fn input_slab(&self) -> Option<(u64, u64)> {
        self.shapes.input_slab
    }

    /// `(offset, length)` of this rank's output slab along the new split axis
    /// (`None` when not split).
    #[getter]
    fn output_slab(&self) -> Option<(u64, u64)> {
        self.shapes.output_slab
    }

    /// `(offset, length)` along each input axis of this rank's input box (the slab,
    /// whole along the other axes, of a slab plan).
    #[getter]
    fn input_box(&self) -> Vec<(u64, u64)> {
        self.shapes.input_box.clone()
    }

    /// `(offset, length)` along each output axis of this rank's output box.
    #[getter]
    fn output_box(&self) -> Vec<(u64, u64)> {
        self.shapes.output_box.clone()
    }

    /// Elements of this rank's output block.
    #[getter]
    fn output_elems(&self) -> u64 {
        self.shapes.output_elems
    }

    /// `(path, bytes_sent, bytes_received, bytes_copied_locally, peers_sent,
    /// peers_received)` of this rank.
    #[getter]
    fn stats(&self) -> (&'static str, u64, u64, u64, usize, usize) {
        self.shapes.stats
    }

    /// Whether the library's executions involve other ranks (some rank sends or
    /// receives).
    #[getter]
    fn is_collective(&self) -> bool {
        self.shapes.collective
    }

    /// The library's description of the plan.
    fn describe(&self, py: Python<'_>) -> String {
        py.detach(|| self.lock().to_string())
    }

    /// Executes from `input` into `output` (collective). `None` for either, or a
    /// `problem`, is an error the Python layer found (it could not make the array).
    #[pyo3(signature = (input, output, problem))]
    fn execute(
        &self,
        py: Python<'_>,
        input: Option<Bound<'_, PyAny>>,
        output: Option<Bound<'_, PyAny>>,
        problem: Problem,
    ) -> PyResult<()> {
        let checked = self.check_pair(input.as_ref(), output.as_ref(), problem);
        let ((input, output), local) = memory_or_error(checked, (NO_MEMORY, NO_MEMORY));
        py.detach(|| {
            let plan = self.lock();
            // SAFETY: `check_pair` checked that the input holds `input.bytes` and the
            // output `output.bytes` writable bytes from their first elements (C-
            // contiguous, or at the plan's strides over its span; both null and empty
            // after a local error, which the library then agrees on without touching
            // them);
            // the arrays stay alive (borrowed by this call) until the execution has
            // completed.
            unsafe {
                plan.execute_raw_agreeing(
                    input.address as *const u8,
                    input.bytes,
                    output.address as *mut u8,
                    output.bytes,
                    local,
                )
            }
        })
        .map_err(|e| to_py_err(py, e))
    }

    /// Executes in place in `buffer` (collective): it holds the input on entry and
    /// the output on return, and at least as many elements as the larger of the two.
    /// Refused on a plan with strided storage on some rank (the same on every rank).
    fn execute_in_place(&self, py: Python<'_>, buffer: Bound<'_, PyAny>) -> PyResult<()> {
        let checked = self.check_in_place(&buffer);
        let (buffer, local) = memory_or_error(checked, NO_MEMORY);
        py.detach(|| {
            let plan = self.lock();
            let address = buffer.address as *mut u8;
            // SAFETY: `check` found the buffer writable for `buffer.bytes` bytes,
            // enough for the input and the output (null and empty after a local
            // error, agreed without touching it); it stays alive (borrowed by this
            // call) until the execution has completed.
            unsafe {
                plan.execute_raw_agreeing(address, buffer.bytes, address, buffer.bytes, local)
            }
        })
        .map_err(|e| to_py_err(py, e))
    }

    /// Starts an execution from `input` into `output` (collective, errors agreed as
    /// by `execute`); the request keeps the plan and both arrays alive until the
    /// execution has completed.
    #[pyo3(signature = (input, output, problem))]
    fn begin(
        slf: &Bound<'_, Self>,
        input: Bound<'_, PyAny>,
        output: Bound<'_, PyAny>,
        problem: Problem,
    ) -> PyResult<NativeRequest> {
        let py = slf.py();
        let this = slf.get();
        let checked = this.check_pair(Some(&input), Some(&output), problem);
        let ((in_memory, out_memory), local) = memory_or_error(checked, (NO_MEMORY, NO_MEMORY));
        let done = py
            .detach(|| {
                let plan = this.lock();
                // SAFETY: as in `execute`; the request made below holds both arrays
                // until the execution completes (`NativeRequest` waits for it before
                // releasing them, also when dropped).
                unsafe {
                    plan.begin_raw_agreeing(
                        in_memory.address as *const u8,
                        in_memory.bytes,
                        out_memory.address as *mut u8,
                        out_memory.bytes,
                        local,
                    )
                }
            })
            .map_err(|e| to_py_err(py, e))?;
        Ok(NativeRequest {
            plan: slf.clone().unbind(),
            arrays: ManuallyDrop::new((input.unbind(), output.unbind())),
            state: Mutex::new(if done {
                State::Completed
            } else {
                State::Pending
            }),
        })
    }

    /// Executes a batch from the arrays `inputs` into `outputs` (collective, every
    /// rank with as many): each pair checked as `execute` checks one, the first
    /// failure (naming its field) and `problem` agreed with the batch's checks in
    /// its one collective.
    #[pyo3(signature = (inputs, outputs, problem))]
    fn execute_many(
        &self,
        py: Python<'_>,
        inputs: Vec<Option<Bound<'_, PyAny>>>,
        outputs: Vec<Option<Bound<'_, PyAny>>>,
        problem: Problem,
    ) -> PyResult<()> {
        let checked = self.check_fields(&inputs, &outputs, problem);
        let (fields, local) = memory_or_error(checked, Fields::none(inputs.len()));
        py.detach(|| {
            let plan = self.lock();
            // SAFETY: `check_fields` checked every field's arrays as `execute`
            // checks one (their memory null and empty after a local error, agreed
            // without touching them); they stay alive (borrowed by this call)
            // until the batch has completed.
            fields.with_raw(|batch| unsafe { plan.execute_batch_raw_agreeing(batch, local) })
        })
        .map_err(|e| to_py_err(py, e))
    }

    /// Starts a batch from `inputs` into `outputs` (collective, errors agreed as
    /// by `execute_many`); the request keeps the plan and every array alive until
    /// the batch has completed, and its `wait` returns the outputs as a list.
    #[pyo3(signature = (inputs, outputs, problem))]
    fn begin_many(
        slf: &Bound<'_, Self>,
        inputs: Vec<Option<Bound<'_, PyAny>>>,
        outputs: Vec<Option<Bound<'_, PyAny>>>,
        problem: Problem,
    ) -> PyResult<NativeRequest> {
        let py = slf.py();
        let this = slf.get();
        let checked = this.check_fields(&inputs, &outputs, problem);
        let (fields, local) = memory_or_error(checked, Fields::none(inputs.len()));
        let done = py
            .detach(|| {
                let plan = this.lock();
                // SAFETY: as in `execute_many`; the request made below holds every
                // array until the batch completes (`NativeRequest` waits for it
                // before releasing them, also when dropped).
                fields.with_raw(|batch| unsafe { plan.begin_batch_raw_agreeing(batch, local) })
            })
            .map_err(|e| to_py_err(py, e))?;
        let (held, outputs) = (PyTuple::new(py, &inputs)?, PyList::new(py, &outputs)?);
        Ok(NativeRequest {
            plan: slf.clone().unbind(),
            arrays: ManuallyDrop::new((held.into_any().unbind(), outputs.into_any().unbind())),
            state: Mutex::new(if done {
                State::Completed
            } else {
                State::Pending
            }),
        })
    }
}

/// A batch's arrays as memory: field `i` reads `inputs[i]` and writes
/// `outputs[i]`.
struct Fields {
    /// Each field's input.
    inputs: Vec<Memory>,
    /// Each field's output, as many.
    outputs: Vec<Memory>,
}

impl Fields {
    /// `count` fields without memory (null and empty), for a batch refused here.
    fn none(count: usize) -> Fields {
        Fields {
            inputs: vec![NO_MEMORY; count],
            outputs: vec![NO_MEMORY; count],
        }
    }

    /// Calls `body` with the fields as the library's raw batch.
    fn with_raw<R>(&self, body: impl FnOnce(&RawBatch<'_>) -> R) -> R {
        let inputs: Vec<*const u8> = self.inputs.iter().map(|m| m.address as *const u8).collect();
        let outputs: Vec<*mut u8> = self.outputs.iter().map(|m| m.address as *mut u8).collect();
        let input_lens: Vec<usize> = self.inputs.iter().map(|m| m.bytes).collect();
        let capacities: Vec<usize> = self.outputs.iter().map(|m| m.bytes).collect();
        body(&RawBatch {
            inputs: &inputs,
            input_lens: &input_lens,
            outputs: &outputs,
            capacities: &capacities,
        })
    }
}

/// The arguments of a plan from the layout spec `input` to `output` for elements
/// of `dtype`.
fn layout_args(
    input: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyArrayDescr>,
) -> Result<LayoutArgs> {
    let input = layout_of(input, "the input layout")?;
    let output = layout_of(output, "the output layout")?;
    Ok(ElementType::of_numpy(dtype)?.layout_args(&input, &output))
}

/// No memory: null and empty.
pub(crate) const NO_MEMORY: Memory = Memory {
    address: 0,
    bytes: 0,
};

/// What an execution is given: the arrays' memory, or `none` (null and empty)
/// with the local error the library agrees on instead.
pub(crate) fn memory_or_error<M>(checked: Result<M>, none: M) -> (M, Option<Error>) {
    match checked {
        Ok(memory) => (memory, None),
        Err(error) => (none, Some(error)),
    }
}

/// The C handle of the communicator whose Fortran handle is `handle` (mpi4py's
/// `Comm.py2f()`).
fn from_fortran(handle: RSMPI_Fint) -> RawComm {
    // SAFETY: MPI_Comm_f2c (through rsmpi's wrapper of the macro) only converts a
    // handle (an invalid one gives an invalid handle, which the library reports).
    unsafe { ffi::RSMPI_Comm_f2c(handle) }
}

impl NativePlan {
    /// The plan `create` makes on the communicator whose Fortran handle is `comm`
    /// (collective, without the GIL), for elements of `dtype`, `strided` on the
    /// sides given strides.
    fn planned(
        py: Python<'_>,
        comm: RSMPI_Fint,
        dtype: Bound<'_, PyArrayDescr>,
        strided: Strided,
        create: impl FnOnce(RawComm) -> Result<Plan> + Send,
    ) -> PyResult<NativePlan> {
        let created = py.detach(|| create(from_fortran(comm)));
        let plan = created.map_err(|e: Error| to_py_err(py, e))?;
        let shapes = Shapes::of(&plan, strided);
        Ok(NativePlan {
            rank: plan.rank(),
            plan: Arc::new(Mutex::new(plan)),
            dtype: dtype.unbind(),
            shapes,
        })
    }

    /// The plan, locked (a panic elsewhere cannot have left it inconsistent: the
    /// library contains its panics).
    fn lock(&self) -> MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks a buffer for an execution in place: writable, C-contiguous, of the
    /// plan's dtype, holding the larger of the input and the output; refused on a
    /// plan with strided storage on some rank.
    pub(crate) fn check_in_place(&self, buffer: &Bound<'_, PyAny>) -> Result<Memory> {
        if self.shapes.strided_anywhere {
            return Err(Error::InvalidStrides(format!(
                "in place on a plan with strided storage: pass separate input and output arrays (rank {})",
                self.rank
            )));
        }
        let expected = Expected {
            role: "the in-place buffer",
            dtype: self.dtype.bind(buffer.py()),
            shape: None,
            storage: None,
            min_elems: self.shapes.input_elems.max(self.shapes.output_elems),
            writable: true,
            rank: self.rank,
        };
        check(buffer, &expected)
    }

    /// The plan's lock, to share with a fused object.
    pub(crate) fn shared(&self) -> Arc<Mutex<Plan>> {
        Arc::clone(&self.plan)
    }

    /// This process's rank in the plan's communicator.
    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    /// Checks an input and an output array against the plan (C-contiguous, or at
    /// the strides of a side planned with strides).
    pub(crate) fn check_pair(
        &self,
        input: Option<&Bound<'_, PyAny>>,
        output: Option<&Bound<'_, PyAny>>,
        problem: Problem,
    ) -> Result<(Memory, Memory)> {
        if let Some(error) = problem_error(problem) {
            return Err(error);
        }
        let (Some(input), Some(output)) = (input, output) else {
            return Err(Error::OutOfMemory(format!(
                "no memory for the input or output array (rank {})",
                self.rank
            )));
        };
        let dtype = self.dtype.bind(input.py());
        let block = |role, shape, storage, min_elems, writable| Expected {
            role,
            dtype,
            shape: Some(shape),
            storage,
            min_elems,
            writable,
            rank: self.rank,
        };
        let shapes = &self.shapes;
        let input = check(
            input,
            &block(
                "the input array",
                &shapes.local_input_shape,
                shapes.input_storage.as_ref().map(Storage::expected),
                shapes.input_elems,
                false,
            ),
        )?;
        let output = check(
            output,
            &block(
                "the output array",
                &shapes.local_output_shape,
                shapes.output_storage.as_ref().map(Storage::expected),
                shapes.output_elems,
                true,
            ),
        )?;
        Ok((input, output))
    }
}

impl NativePlan {
    /// Checks every field's arrays as [`NativePlan::check_pair`] checks one
    /// (`inputs` and `outputs` as many); the first failure names its field.
    fn check_fields(
        &self,
        inputs: &[Option<Bound<'_, PyAny>>],
        outputs: &[Option<Bound<'_, PyAny>>],
        problem: Problem,
    ) -> Result<Fields> {
        if let Some(error) = problem_error(problem) {
            return Err(error);
        }
        if inputs.len() != outputs.len() {
            return Err(Error::InvalidShape(format!(
                "locals holds {} arrays but outs {} (rank {})",
                inputs.len(),
                outputs.len(),
                self.rank
            )));
        }
        let mut fields = Fields {
            inputs: Vec::with_capacity(inputs.len()),
            outputs: Vec::with_capacity(inputs.len()),
        };
        for (i, (input, output)) in inputs.iter().zip(outputs).enumerate() {
            let (input, output) = self
                .check_pair(input.as_ref(), output.as_ref(), None)
                .map_err(|e| {
                    Error::from_status(e.status(), format!("field {i}: {}", e.detail()))
                })?;
            fields.inputs.push(input);
            fields.outputs.push(output);
        }
        Ok(fields)
    }
}

/// Where a non-blocking execution is.
enum State {
    /// Messages are in flight.
    Pending,
    /// It has completed on this rank.
    Completed,
    /// It failed on this rank (reported by every later `test` and `wait`).
    Failed(Error),
}

/// One non-blocking execution (of one array or a batch): holds its plan and
/// every array until it completes.
#[pyclass(frozen, module = "distreshape._native")]
pub struct NativeRequest {
    plan: Py<NativePlan>,
    /// What MPI reads and writes until completion, then what `wait` returns: the
    /// input and the output array, or a batch's inputs (a tuple) and its outputs
    /// (a list, none of the caller's). Leaked when the request is dropped on
    /// a thread that may not complete the execution.
    arrays: ManuallyDrop<(Py<PyAny>, Py<PyAny>)>,
    state: Mutex<State>,
}

#[pymethods]
impl NativeRequest {
    /// Moves the execution on without waiting; returns whether it has completed.
    fn test(&self, py: Python<'_>) -> PyResult<bool> {
        self.advance(py, false)
    }

    /// Waits until the execution has completed on this rank; returns the output
    /// array (a batch's: the list of its outputs).
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.advance(py, true)?;
        Ok(self.arrays.1.clone_ref(py))
    }

    /// Whether the execution has completed on this rank, as far as the last call
    /// found (does not move it on).
    #[getter]
    fn completed(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        matches!(*state, State::Completed)
    }
}

impl NativeRequest {
    /// Carries the execution on (until it completes when `blocking`), without the GIL.
    fn advance(&self, py: Python<'_>, blocking: bool) -> PyResult<bool> {
        py.detach(|| self.progress(blocking))
            .map_err(|e| to_py_err(py, e))
    }

    /// Carries the execution on; returns whether it has completed.
    fn progress(&self, blocking: bool) -> Result<bool> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match &*state {
            State::Completed => Ok(true),
            State::Failed(error) => Err(error.clone()),
            State::Pending => {
                let plan = self.plan.get().lock();
                // Refused on this thread, the call does nothing: still pending.
                plan.check_thread()?;
                let progressed = plan.progress(blocking);
                match &progressed {
                    Ok(true) => *state = State::Completed,
                    Ok(false) => {}
                    Err(error) => *state = State::Failed(error.clone()),
                }
                progressed
            }
        }
    }
}

impl Drop for NativeRequest {
    /// Completes an execution still in flight before the arrays are released (a
    /// failure here has nowhere to go: it is this rank's, and the arrays are then
    /// no longer in use). On a thread that may not call MPI for the plan nothing
    /// completes it, and the arrays are leaked instead: MPI may still use them.
    fn drop(&mut self) {
        let _ = self.progress(true);
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if !matches!(state, State::Pending) {
            // SAFETY: dropped once, here; the execution no longer uses them.
            unsafe { ManuallyDrop::drop(&mut self.arrays) };
        }
    }
}
