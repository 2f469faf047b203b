//! The tuning knobs of a plan ([`PlanOptions`]) as C passes them: the fixed
//! struct `dr_plan_options` of the first five, and `dr_options`, the opaque
//! builder of every option, set one at a time by its `dr_option`.

use crate::api::options::PlanOptions;
use crate::capi::boundary::guard;
use crate::core::abi::{OptionCode, dr_option, dr_status};
use crate::core::error::{Error, Result};

/// The tuning knobs of a plan, for `dr_plan_create_with_options`. Fill it with
/// `dr_plan_options_default`, then change the fields wanted: every field is a
/// count or a size in bytes, and -1 asks for the default. The layout is ABI and
/// never changes (as `dr_plan_stats`): it holds the first five options only.
/// Every option, these and the later ones, is set on a `dr_options`
/// (`dr_options_set`), which grows by new `dr_option` enumerators.
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
    let mut plan_options = PlanOptions::default();
    // SAFETY: options is NULL or readable (documented).
    let Some(given) = (unsafe { options.as_ref() }) else {
        return Ok(plan_options);
    };
    let fields = [
        (
            dr_option::DR_OPTION_MAX_MESSAGE_BYTES,
            given.max_message_bytes,
        ),
        (dr_option::DR_OPTION_SLOT_BYTES, given.slot_bytes),
        (dr_option::DR_OPTION_RUN_BUDGET, given.run_budget),
        (dr_option::DR_OPTION_WINDOW, given.window),
        (dr_option::DR_OPTION_IN_PLACE_BUDGET, given.in_place_budget),
    ];
    for (option, value) in fields {
        plan_options.set(option, value)?;
    }
    Ok(plan_options)
}

/// The options of a plan, every one of them (opaque, extensible): made with the
/// defaults by `dr_options_create`, set one at a time by `dr_options_set`, given
/// to `dr_plan_create_configured` or `dr_plan_create_layouts_configured`, freed
/// by `dr_options_free`. New options are new `dr_option` enumerators.
pub struct dr_options {
    options: PlanOptions,
    /// The first value `dr_options_set` refused, agreed when a plan is made.
    refused: Option<Error>,
}

/// Makes options with every option at its default (local) and sets `*options`
/// to them; free them with `dr_options_free`.
///
/// # Safety
/// `options` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_options_create(options: *mut *mut dr_options) -> dr_status {
    guard(|| {
        // SAFETY: options is NULL or writable (documented).
        let slot = unsafe { options.as_mut() }
            .ok_or_else(|| Error::NullPointer("options is NULL".into()))?;
        let made = Box::new(dr_options {
            options: PlanOptions::default(),
            refused: None,
        });
        *slot = Box::into_raw(made);
        Ok(())
    })
}

/// Sets `option` (a `dr_option`) of `options` to `value` (local): a size or
/// count in its range, a switch 1 (on) or 0 (off), and -1 for the default (for a
/// switch: its `DISTRESHAPE_*` environment variable when set to 1 or 0, else the
/// choice measured for the MPI library and the node). A value out of range, or an
/// `option` that is not a `dr_option`, is `DR_ERROR_INVALID_OPTION` (the message
/// names the option, the value and the range) and changes nothing; the options
/// remember it, and a plan made with them fails with it on every rank, agreed
/// like any argument error (so a rank that ignored the status leaves no other
/// rank waiting).
///
/// # Safety
/// `options` NULL or from `dr_options_create` and not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_options_set(
    options: *mut dr_options,
    option: OptionCode,
    value: i64,
) -> dr_status {
    guard(|| {
        // SAFETY: options is NULL or valid (documented).
        let given = unsafe { options.as_mut() }
            .ok_or_else(|| Error::NullPointer("options is NULL".into()))?;
        let set = dr_option::from_code(option)
            .ok_or_else(|| Error::InvalidOption(format!("option = {option} is not a dr_option")))
            .and_then(|option| given.options.set(option, value));
        if let Err(refused) = &set {
            given.refused.get_or_insert_with(|| refused.clone());
        }
        set
    })
}

/// Frees options made by `dr_options_create` (local) and sets `*options` to
/// NULL; NULL and a NULL `*options` are no-ops. Plans made with them keep their
/// own copy.
///
/// # Safety
/// `options` NULL or writable; `*options` NULL or from `dr_options_create`, not
/// freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dr_options_free(options: *mut *mut dr_options) -> dr_status {
    guard(|| {
        // SAFETY: options is NULL or writable (documented).
        if let Some(slot) = unsafe { options.as_mut() } {
            let owned = std::mem::replace(slot, std::ptr::null_mut());
            if !owned.is_null() {
                // SAFETY: made by dr_options_create's Box and not freed (documented).
                drop(unsafe { Box::from_raw(owned) });
            }
        }
        Ok(())
    })
}

/// The options `options` points to (the defaults when NULL), or the first value
/// `dr_options_set` refused, to agree like any argument error.
///
/// # Safety
/// `options` NULL or from `dr_options_create` and not freed.
pub(crate) unsafe fn configured(options: *const dr_options) -> Result<PlanOptions> {
    // SAFETY: options is NULL or valid (documented).
    match unsafe { options.as_ref() } {
        None => Ok(PlanOptions::default()),
        Some(given) => given.refused.clone().map_or(Ok(given.options), Err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_sets_every_option_and_refuses_what_is_out_of_range() {
        let mut options = std::ptr::null_mut();
        // SAFETY: a writable pointer; the options are used until freed below.
        unsafe {
            assert_eq!(dr_options_create(&mut options), dr_status::DR_SUCCESS);
            let switch = dr_option::DR_OPTION_SLEEPING_WAITS as OptionCode;
            assert_eq!(dr_options_set(options, switch, 0), dr_status::DR_SUCCESS);
            let window = dr_option::DR_OPTION_WINDOW as OptionCode;
            assert_eq!(dr_options_set(options, window, 8), dr_status::DR_SUCCESS);
            let refused = dr_status::DR_ERROR_INVALID_OPTION;
            assert_eq!(dr_options_set(options, switch, 2), refused);
            assert_eq!(dr_options_set(options, window, 0), refused);
            assert_eq!(dr_options_set(options, 99, 1), refused);
            let kept = (*options).options;
            assert_eq!((kept.sleeping_waits, kept.window), (Some(false), 8));
            let agreed = configured(options).unwrap_err();
            assert!(agreed.to_string().contains("options.sleeping_waits = 2"));
            assert_eq!(dr_options_free(&mut options), dr_status::DR_SUCCESS);
            assert!(options.is_null());
            assert_eq!(configured(options), Ok(PlanOptions::default()));
        }
    }

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
