//! `dr_plan_options`: the tuning knobs of a plan ([`PlanOptions`]) as C passes
//! them, with their defaults and their validation.

use crate::api::options::PlanOptions;
use crate::capi::boundary::guard;
use crate::core::abi::dr_status;
use crate::core::error::{Error, Result};

/// The tuning knobs of a plan, for `dr_plan_create_with_options`. Fill it with
/// `dr_plan_options_default`, then change the fields wanted: every field is a
/// count or a size in bytes, and -1 asks for the default. The layout is ABI and
/// never changes within an ABI version (as `dr_plan_stats`): new options come as
/// new functions.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct dr_plan_options {
    /// Most bytes in one MPI message, 1 to 2^31 - 1 (the default; MPI counts are
    /// 32-bit).
    pub max_message_bytes: i64,
    /// The message slots for packed messages (runs under 64 KiB, and long runs at
    /// a stride on a node with more than two ranks per core under MPICH), per
    /// direction, over all peers, at least 1 (default 16 MiB).
    pub slot_bytes: i64,
    /// Most runs cut into the messages of one round, and most segments a plan
    /// lists at creation (16-24 bytes each), at least 1 (default 262144).
    pub run_budget: i64,
    /// Peers per window on the exchange path, at least 1 (default 64): a window spans
    /// the pairwise distances that hold this many peers of a rank, agreed by the ranks.
    pub window: i64,
    /// Most extra bytes an execution in place on the exchange path takes on a rank
    /// (its staging and the schedule being made), 0 or more; -1 (the default) for
    /// the larger of 64 MiB and a tenth of the rank's buffer, less a 64th of that
    /// left to MPI's own buffers.
    pub in_place_budget: i64,
}

/// Fills `*options` with the defaults (local): those of `dr_plan_create`, with
/// `in_place_budget` -1 (the larger of 64 MiB and a tenth of the rank's buffer,
/// less a 64th of that left to MPI's own buffers).
///
/// # Safety
/// `options` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_plan_options_default(options: *mut dr_plan_options) -> dr_status {
    guard(|| {
        // SAFETY: options is NULL or writable (documented).
        let slot = unsafe { options.as_mut() }
            .ok_or_else(|| Error::NullPointer("options is NULL".into()))?;
        *slot = from_plan_options(&PlanOptions::default());
        Ok(())
    })
}

/// The C view of `options`, a `None` budget as -1.
fn from_plan_options(options: &PlanOptions) -> dr_plan_options {
    let size = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    dr_plan_options {
        max_message_bytes: size(options.max_message_bytes),
        slot_bytes: size(options.slot_bytes),
        run_budget: size(options.run_budget),
        window: size(options.window),
        in_place_budget: options.in_place_budget.map_or(-1, size),
    }
}

/// The options `options` points to (the defaults when NULL), or the error naming
/// the first field out of its range.
///
/// # Safety
/// `options` NULL or readable.
pub(crate) unsafe fn options_arg(options: *const dr_plan_options) -> Result<PlanOptions> {
    let defaults = PlanOptions::default();
    // SAFETY: options is NULL or readable (documented).
    let Some(given) = (unsafe { options.as_ref() }) else {
        return Ok(defaults);
    };
    let budget = match given.in_place_budget {
        -1 => None,
        n => Some(field("in_place_budget", n, (0, i64::MAX))?),
    };
    let sized = |name, value, max, default| match value {
        -1 => Ok(default),
        n => field(name, n, (1, max)),
    };
    Ok(PlanOptions {
        max_message_bytes: sized(
            "max_message_bytes",
            given.max_message_bytes,
            i32::MAX.into(),
            defaults.max_message_bytes,
        )?,
        slot_bytes: sized(
            "slot_bytes",
            given.slot_bytes,
            i64::MAX,
            defaults.slot_bytes,
        )?,
        run_budget: sized(
            "run_budget",
            given.run_budget,
            i64::MAX,
            defaults.run_budget,
        )?,
        window: sized("window", given.window, i64::MAX, defaults.window)?,
        in_place_budget: budget,
    })
}

/// `value` of the field `name` when it is in `[min, max]` (and fits a `usize`).
fn field(name: &str, value: i64, (min, max): (i64, i64)) -> Result<usize> {
    (min..=max)
        .contains(&value)
        .then(|| usize::try_from(value).ok())
        .flatten()
        .ok_or_else(|| {
            Error::InvalidOption(format!(
                "options.{name} = {value} is out of range: {min} to {max}, or -1 for the default"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_round_trip() {
        let c = from_plan_options(&PlanOptions::default());
        assert_eq!(c.in_place_budget, -1);
        assert_eq!(c.window, 64);
        // SAFETY: a valid struct.
        assert_eq!(unsafe { options_arg(&c) }, Ok(PlanOptions::default()));
        // SAFETY: NULL is allowed.
        let defaults = unsafe { options_arg(std::ptr::null()) };
        assert_eq!(defaults, Ok(PlanOptions::default()));
    }

    #[test]
    fn minus_one_is_the_default_and_other_values_are_checked() {
        let mut c = from_plan_options(&PlanOptions::default());
        c.window = -1;
        c.in_place_budget = 0;
        c.run_budget = 5;
        // SAFETY: a valid struct.
        let options = unsafe { options_arg(&c) }.unwrap();
        assert_eq!((options.window, options.in_place_budget), (64, Some(0)));
        assert_eq!(options.run_budget, 5);
        c.window = 0;
        // SAFETY: a valid struct.
        let error = unsafe { options_arg(&c) }.unwrap_err();
        assert_eq!(error.status(), dr_status::DR_ERROR_INVALID_OPTION);
        assert!(
            error
                .to_string()
                .contains("options.window = 0 is out of range")
        );
        c.window = 8;
        c.max_message_bytes = 1 << 31;
        // SAFETY: a valid struct.
        let error = unsafe { options_arg(&c) }.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("options.max_message_bytes = 2147483648")
        );
        c.max_message_bytes = -1;
        c.in_place_budget = -2;
        // SAFETY: a valid struct.
        let error = unsafe { options_arg(&c) }.unwrap_err();
        assert!(error.to_string().contains("options.in_place_budget = -2"));
    }
}
