//! The Fortran module's fused executions: `dr_fused_execute` takes a list of
//! fields (`type(dr_fused_field)`), each the descriptors of its input and
//! output arrays as the shim read them (`dr_fused_field`) with their element
//! type. Field `i` must be this rank's boxes of plan `i`, at its strides, of
//! its element type, checked as one array of a strided execution is; the
//! arrays are never copied.

use std::sync::Arc;

use super::strided::{ArrayDescriptor, check_array};
use crate::api::plan::{BatchBuffers, Fused, Plan};
use crate::capi::{dr_fused, fused_ref, guard};
use crate::core::abi::dr_status;
use crate::core::error::{Error, Result};

/// `dr_fused_execute` for the Fortran module: `count` fields, field `i` the
/// arrays `a[i]` (its input) and `b[i]` (its output) of element type
/// `dtypes[i]`. A count that is not the plans', an element type that is not
/// its plan's, or arrays that are not this rank's boxes of its plan at the
/// plan's strides are `DR_ERROR_INVALID_SHAPE`, `DR_ERROR_INVALID_DTYPE` or
/// `DR_ERROR_INVALID_STRIDES` on every rank (the message naming the field),
/// agreed with the execution's checks; nothing moves then.
///
/// # Safety
/// `fused` NULL or from `dr_fused_create`; `a`, `b` and `dtypes` holding
/// `count` values each (any when `count` is 0), each descriptor's array
/// holding what it says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_fortran_fused_execute(
    fused: *const dr_fused,
    count: i64,
    a: *const ArrayDescriptor,
    b: *const ArrayDescriptor,
    dtypes: *const i32,
) -> dr_status {
    guard(|| {
        // SAFETY: as documented.
        let fused = unsafe { fused_ref(fused) }?;
        let n = usize::try_from(count).unwrap_or(0);
        let read = |n: usize| n * usize::from(!(a.is_null() || b.is_null() || dtypes.is_null()));
        // SAFETY: the three arrays hold `count` values (documented).
        let (a, b, dtypes) = unsafe {
            let n = read(n);
            (
                slice_or_empty(a, n),
                slice_or_empty(b, n),
                slice_or_empty(dtypes, n),
            )
        };
        let fields = Fields::of(fused, (a, b), dtypes, count);
        let lens = |i: usize| fields.lens[i];
        let buffers = BatchBuffers {
            inputs: &fields.inputs,
            outputs: &fields.outputs,
            lens: &lens,
        };
        // SAFETY: once the checks pass, each field's arrays cover its plan's
        // spans; with an error nothing is touched.
        unsafe { fused.execute_listed(&buffers, fields.error) }
    })
}

/// The `len` values at `items`, none when `len` is 0.
///
/// # Safety
/// `items` readable for `len` values when `len` > 0.
unsafe fn slice_or_empty<'a, T>(items: *const T, len: usize) -> &'a [T] {
    match len {
        0 => &[],
        // SAFETY: as documented.
        _ => unsafe { std::slice::from_raw_parts(items, len) },
    }
}

/// The fields of a fused execution from Fortran: each one's first elements and
/// lengths, and the error to agree when they are not the plans' fields.
struct Fields {
    inputs: Vec<*const u8>,
    outputs: Vec<*mut u8>,
    /// Each field's input and output lengths in bytes (its plan's spans).
    lens: Vec<(usize, usize)>,
    error: Option<Error>,
}

impl Fields {
    /// The fields of the arrays `a` and `b` of element types `dtypes` for
    /// `fused` (`count` as the caller gave it).
    fn of(
        fused: &Fused<Arc<Plan>>,
        (a, b): (&[ArrayDescriptor], &[ArrayDescriptor]),
        dtypes: &[i32],
        count: i64,
    ) -> Fields {
        let plans = fused.plans();
        let rank = plans[0].rank();
        let mut fields = Fields {
            inputs: Vec::new(),
            outputs: Vec::new(),
            lens: Vec::new(),
            error: None,
        };
        if usize::try_from(count).ok() != Some(plans.len()) {
            fields.error = Some(Error::InvalidShape(format!(
                "{count} fields for {} fused plans (rank {rank}): one field per plan",
                plans.len()
            )));
            return fields;
        }
        if a.len() != plans.len() {
            fields.error = Some(Error::NullPointer(format!(
                "the arrays of the {count} fields are NULL (rank {rank})"
            )));
            return fields;
        }
        let checked = (plans.iter().enumerate()).try_for_each(|(i, plan)| {
            check_field(plan, &a[i], &b[i], dtypes[i])
                .map_err(|e| Error::from_status(e.status(), format!("field {i}: {}", e.detail())))
        });
        if let Err(error) = checked {
            fields.error = Some(error);
            return fields;
        }
        for (i, plan) in plans.iter().enumerate() {
            let size = plan.elem_size();
            fields.inputs.push(a[i].base.cast_const().cast());
            fields.outputs.push(b[i].base.cast());
            fields
                .lens
                .push((plan.input_span() * size, plan.output_span() * size));
        }
        fields
    }
}

/// Checks one field: its element type, `a` this rank's input box of `plan`
/// at its strides, `b` its output box.
fn check_field(plan: &Plan, a: &ArrayDescriptor, b: &ArrayDescriptor, dtype: i32) -> Result<()> {
    plan.check_dtype(dtype)?;
    let (elements, rank) = ((plan.elem_size(), plan.is_strided()), plan.rank());
    let (input, output) = (plan.local_input_shape(), plan.local_output_shape());
    check_array("a", a, (&input, plan.input_strides()), elements, rank)?;
    check_array("b", b, (&output, plan.output_strides()), elements, rank)
}
