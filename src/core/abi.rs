//! The C ABI's tables, in one place: the constants and enumerators with their
//! explicit values (the contract, which cbindgen copies into the header), and what
//! each enumerator stands for in the library: the text of every status, the Rust
//! type and size of every element type. The bottom of the crate: every layer
//! reads these tables, and they import nothing of the crate but [`Element`], the
//! trait the element table implements.
#![allow(non_camel_case_types)]

use std::ffi::CStr;

use num_complex::Complex;

use crate::core::element::Element;

/// `split` / `new_split` value meaning "not split": every rank holds the whole array.
/// Beware when porting Heat or NumPy code: there an axis of -1 means the last axis;
/// here it means not split (pass `ndims - 1` for the last axis).
/// (Written into the header by cbindgen.toml as `(-1)`, parenthesized for macro safety.)
pub const DR_SPLIT_NONE: i32 = -1;
/// The library's major version: it and the SONAME (`libdistreshape.so.MAJOR`)
/// change whenever the ABI breaks (docs/src/abi.md). Before 1.0 the minor
/// version plays that role (SONAME `libdistreshape.so.0.MINOR`).
pub const DR_VERSION_MAJOR: i32 = 0;
/// The library's minor version: new functions or enumerators, nothing removed.
pub const DR_VERSION_MINOR: i32 = 3;
/// The library's patch version: fixes only.
pub const DR_VERSION_PATCH: i32 = 0;
/// Most dimensions of a global shape.
pub const DR_MAX_DIMS: i32 = 32;

// The version macros are Cargo.toml's version, checked when the crate compiles.
const _: () = assert!(
    DR_VERSION_MAJOR == decimal(env!("CARGO_PKG_VERSION_MAJOR"))
        && DR_VERSION_MINOR == decimal(env!("CARGO_PKG_VERSION_MINOR"))
        && DR_VERSION_PATCH == decimal(env!("CARGO_PKG_VERSION_PATCH")),
    "DR_VERSION_* differ from the version in Cargo.toml"
);

/// The value of a string of decimal digits (a version component), at compile time.
const fn decimal(digits: &str) -> i32 {
    let bytes = digits.as_bytes();
    let (mut value, mut i) = (0, 0);
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as i32;
        i += 1;
    }
    value
}

/// Element types.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dr_dtype {
    /// `int8_t`
    DR_DTYPE_INT8 = 0,
    /// `int16_t`
    DR_DTYPE_INT16 = 1,
    /// `int32_t`
    DR_DTYPE_INT32 = 2,
    /// `int64_t`
    DR_DTYPE_INT64 = 3,
    /// `uint8_t`
    DR_DTYPE_UINT8 = 4,
    /// `uint16_t`
    DR_DTYPE_UINT16 = 5,
    /// `uint32_t`
    DR_DTYPE_UINT32 = 6,
    /// `uint64_t`
    DR_DTYPE_UINT64 = 7,
    /// `float`
    DR_DTYPE_FLOAT32 = 8,
    /// `double`
    DR_DTYPE_FLOAT64 = 9,
    /// `float _Complex` (two floats)
    DR_DTYPE_COMPLEX64 = 10,
    /// `double _Complex` (two doubles)
    DR_DTYPE_COMPLEX128 = 11,
    /// `bool` (one byte)
    DR_DTYPE_BOOL = 12,
}

/// Status of every call. Collective calls return the same status on every rank.
/// Errors are agreed step by step, in the order the steps run: argument errors
/// (validation, cross-rank consistency, distributions) first, then planning and
/// allocation errors, then buffer errors of the execution; within a step, where
/// ranks found different errors, the lowest failing rank's wins.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dr_status {
    /// The call succeeded.
    DR_SUCCESS = 0,
    /// A required pointer was NULL.
    DR_ERROR_NULL_POINTER = 1,
    /// `dtype` is not a `dr_dtype` value.
    DR_ERROR_INVALID_DTYPE = 2,
    /// A shape is malformed, does not match the element count, or overflows int64.
    DR_ERROR_INVALID_SHAPE = 3,
    /// A split axis is out of range.
    DR_ERROR_INVALID_SPLIT = 4,
    /// Slab lengths are negative or do not add up to the extent of the split axis.
    DR_ERROR_INVALID_DISTRIBUTION = 5,
    /// Ranks passed different global arguments (shapes, splits, dtype).
    DR_ERROR_INCONSISTENT_ARGUMENTS = 6,
    /// `out_capacity` (or the input) is smaller than this rank needs.
    DR_ERROR_BUFFER_TOO_SMALL = 7,
    /// Buffers that must be distinct share memory: an input and its output
    /// (identical pointers are in place, on a plan without strides), or two
    /// fields of a batch.
    DR_ERROR_ALIASING = 8,
    /// An allocation inside the library failed.
    DR_ERROR_OUT_OF_MEMORY = 9,
    /// An MPI call failed.
    DR_ERROR_MPI = 10,
    /// MPI is not initialized, or already finalized.
    DR_ERROR_MPI_NOT_INITIALIZED = 11,
    /// The communicator is MPI_COMM_NULL or an intercommunicator.
    DR_ERROR_INVALID_COMMUNICATOR = 12,
    /// A bug inside the library (a caught panic); please report it.
    DR_ERROR_INTERNAL = 13,
    /// The plan already has an execution in flight (`dr_plan_execute_begin`
    /// without its `dr_request_wait`): a plan runs one execution at a time.
    DR_ERROR_EXECUTION_IN_PROGRESS = 14,
    /// A field of `dr_plan_options` is out of its range (the message names the
    /// field, its value and the rank).
    DR_ERROR_INVALID_OPTION = 15,
    /// A side's strides do not fit its box: not one per axis, not positive, or
    /// two elements at one address (the message names the side, the axis, the
    /// value and the rank); or an execution in place on a strided plan.
    DR_ERROR_INVALID_STRIDES = 16,
}

/// How a plan moves data.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dr_path {
    /// Split-preserving local reshape + balance: only rows that change owner move.
    DR_PATH_LOCAL = 0,
    /// General exchange: every element moves at most once, straight to its owner.
    DR_PATH_EXCHANGE = 1,
}

/// The options of a plan, for `dr_options_set` (the keys of a `dr_options`). Sizes
/// and counts take -1 for the default; switches take 1 (on), 0 (off) or -1 (the
/// default: the `DISTRESHAPE_*` environment variable of the switch when it is set
/// to 1 or 0, else the choice measured for the MPI library and the node). New
/// options are new enumerators, never new functions (docs/src/abi.md).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum dr_option {
    /// Most bytes in one MPI message, 1 to 2^31 - 1 (the default).
    DR_OPTION_MAX_MESSAGE_BYTES = 0,
    /// The message slots for packed messages, per direction, over all peers, at
    /// least 1 (default 16 MiB).
    DR_OPTION_SLOT_BYTES = 1,
    /// Most runs cut into the messages of one round, and most segments a plan
    /// lists at creation, at least 1 (default 262144).
    DR_OPTION_RUN_BUDGET = 2,
    /// Peers per window on the exchange path, at least 1 (default 64).
    DR_OPTION_WINDOW = 3,
    /// Most extra bytes an execution in place on the exchange path takes on a
    /// rank, 0 or more (default: the larger of 64 MiB and a tenth of the rank's
    /// buffer, less a 64th of that left to MPI's own buffers).
    DR_OPTION_IN_PLACE_BUDGET = 4,
    /// Switch: long runs at a stride may travel as strided sends (both sides
    /// through datatypes); `DISTRESHAPE_STRIDED_SENDS`, else on under Open MPI.
    DR_OPTION_STRIDED_SENDS = 5,
    /// Switch: long runs at a stride travel through the message slots (above the
    /// other two ways); `DISTRESHAPE_STRIDED_SLOTS`, else on unless the library is
    /// Open MPI, on a node with more than two ranks per processor.
    DR_OPTION_STRIDED_SLOTS = 6,
    /// Switch: every long run at a stride is a message of its own (below slots,
    /// above strided sends); `DISTRESHAPE_RUN_MESSAGES`, else on under MPICH.
    DR_OPTION_RUN_MESSAGES = 7,
    /// Switch: this rank proposes that the ranks of its node read one another's
    /// long runs directly, where the kernel allows it; `DISTRESHAPE_DIRECT_READS`,
    /// else on a node with more than two ranks per processor, and, unless some
    /// rank turns them off, for plans with strided storage.
    DR_OPTION_DIRECT_READS = 8,
    /// Switch: the plan's waits on a node with more ranks than processors sleep
    /// between polls once they have yielded a while; `DISTRESHAPE_SLEEPING_WAITS`,
    /// else on under MPICH.
    DR_OPTION_SLEEPING_WAITS = 9,
}

/// The option table: every `dr_option` with the name of its [`PlanOptions`]
/// field (`crate::api::options`), its environment variable if it is a switch.
/// Generates the list of all options and the lookups; the matches are
/// exhaustive, so an option missing here does not compile.
///
/// [`PlanOptions`]: crate::PlanOptions
macro_rules! option_table {
    ($($option:ident => $name:literal $(, $variable:literal)?;)*) => {
        impl dr_option {
            /// Every option, in the order of their values (0, 1, 2, ...).
            pub const ALL: [dr_option; [$(dr_option::$option),*].len()] = [$(dr_option::$option),*];

            /// The option of value `code`, if there is one.
            pub fn from_code(code: OptionCode) -> Option<dr_option> {
                dr_option::ALL.into_iter().find(|o| *o as OptionCode == code)
            }

            /// The option whose name is `name`, if there is one.
            pub fn from_name(name: &str) -> Option<dr_option> {
                dr_option::ALL.into_iter().find(|o| o.name() == name)
            }

            /// The name of the option: its field in `PlanOptions`, its key in
            /// Python, e.g. `"slot_bytes"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(dr_option::$option => $name,)*
                }
            }

            /// The environment variable that sets the option's default, for a
            /// switch (`"DISTRESHAPE_STRIDED_SENDS"`); `None` for the others.
            pub const fn variable(self) -> Option<&'static str> {
                match self {
                    $(dr_option::$option => option_table!(@variable $($variable)?),)*
                }
            }
        }
    };
    (@variable $variable:literal) => { Some($variable) };
    (@variable) => { None };
}

option_table!(
    DR_OPTION_MAX_MESSAGE_BYTES => "max_message_bytes";
    DR_OPTION_SLOT_BYTES => "slot_bytes";
    DR_OPTION_RUN_BUDGET => "run_budget";
    DR_OPTION_WINDOW => "window";
    DR_OPTION_IN_PLACE_BUDGET => "in_place_budget";
    DR_OPTION_STRIDED_SENDS => "strided_sends", "DISTRESHAPE_STRIDED_SENDS";
    DR_OPTION_STRIDED_SLOTS => "strided_slots", "DISTRESHAPE_STRIDED_SLOTS";
    DR_OPTION_RUN_MESSAGES => "run_messages", "DISTRESHAPE_RUN_MESSAGES";
    DR_OPTION_DIRECT_READS => "direct_reads", "DISTRESHAPE_DIRECT_READS";
    DR_OPTION_SLEEPING_WAITS => "sleeping_waits", "DISTRESHAPE_SLEEPING_WAITS";
);

/// A dtype as passed by C: read as an integer so that invalid values are caught.
pub type DtypeCode = i32;
/// A status as passed by C to `dr_status_string`: read as an integer.
pub type StatusCode = i32;
/// An option as passed by C to `dr_options_set`: read as an integer.
pub type OptionCode = i32;

/// A static C string of `text` (a literal without a NUL of its own), checked when
/// the crate compiles.
const fn c_text(with_nul: &'static [u8]) -> &'static CStr {
    match CStr::from_bytes_with_nul(with_nul) {
        Ok(text) => text,
        Err(_) => panic!("an ABI text holds a NUL byte"),
    }
}

/// The status table: every `dr_status` with its text. Generates the list of all
/// statuses, the code lookup, the texts and the enumerator names; the matches are
/// exhaustive, so a status missing here does not compile.
macro_rules! status_table {
    ($($status:ident => $text:literal),* $(,)?) => {
        impl dr_status {
            /// Every status, in the order of their values (0, 1, 2, ...).
            pub const ALL: [dr_status; [$(dr_status::$status),*].len()] = [$(dr_status::$status),*];

            /// The status of value `code`, if there is one.
            pub fn from_code(code: StatusCode) -> Option<dr_status> {
                dr_status::ALL.into_iter().find(|s| *s as StatusCode == code)
            }

            /// What the status means, as `dr_status_string` returns it.
            pub const fn text(self) -> &'static CStr {
                match self {
                    $(dr_status::$status => const { c_text(concat!($text, "\0").as_bytes()) },)*
                }
            }

            /// What the status means, as a Rust string (the same text).
            pub const fn message(self) -> &'static str {
                match self {
                    $(dr_status::$status => $text,)*
                }
            }

            /// The enumerator's name, e.g. `"DR_ERROR_INVALID_SHAPE"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(dr_status::$status => stringify!($status),)*
                }
            }
        }
    };
}

status_table!(
    DR_SUCCESS => "success",
    DR_ERROR_NULL_POINTER => "null pointer",
    DR_ERROR_INVALID_DTYPE => "invalid dtype",
    DR_ERROR_INVALID_SHAPE => "invalid shape",
    DR_ERROR_INVALID_SPLIT => "invalid split",
    DR_ERROR_INVALID_DISTRIBUTION => "invalid distribution",
    DR_ERROR_INCONSISTENT_ARGUMENTS => "inconsistent arguments across ranks",
    DR_ERROR_BUFFER_TOO_SMALL => "buffer too small",
    DR_ERROR_ALIASING => "buffers that must be distinct share memory",
    DR_ERROR_OUT_OF_MEMORY => "out of memory",
    DR_ERROR_MPI => "MPI error",
    DR_ERROR_MPI_NOT_INITIALIZED => "MPI not initialized",
    DR_ERROR_INVALID_COMMUNICATOR => "invalid communicator",
    DR_ERROR_INTERNAL => "internal error",
    DR_ERROR_EXECUTION_IN_PROGRESS => "an execution of the plan is in progress",
    DR_ERROR_INVALID_OPTION => "invalid plan option",
    DR_ERROR_INVALID_STRIDES => "invalid strides",
);

/// The element table: every `dr_dtype` with its Rust type. Generates the list of
/// all dtypes, the code lookup, the element sizes and the [`Element`]
/// implementations that name their dtype; the matches are exhaustive, so a dtype
/// missing here does not compile.
macro_rules! dtype_table {
    ($($dtype:ident => $t:ty),* $(,)?) => {
        impl dr_dtype {
            /// Every dtype, in the order of their values (0, 1, 2, ...).
            pub const ALL: [dr_dtype; [$(dr_dtype::$dtype),*].len()] = [$(dr_dtype::$dtype),*];

            /// The dtype of value `code`, if there is one.
            pub fn from_code(code: DtypeCode) -> Option<dr_dtype> {
                dr_dtype::ALL.into_iter().find(|d| *d as DtypeCode == code)
            }

            /// Bytes per element.
            pub const fn size(self) -> usize {
                match self {
                    $(dr_dtype::$dtype => size_of::<$t>(),)*
                }
            }

            /// The enumerator's name, e.g. `"DR_DTYPE_FLOAT64"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(dr_dtype::$dtype => stringify!($dtype),)*
                }
            }
        }

        /// The dtype of value `code` in words: its name, or the value when it
        /// is none.
        pub fn dtype_words(code: DtypeCode) -> String {
            dr_dtype::from_code(code).map_or_else(|| format!("dtype {code}"), |d| d.name().to_string())
        }

        $(
            // SAFETY: a primitive plain-data type (or a pair of them) without
            // padding; every bit pattern is valid except for bool, whose DTYPE is
            // compared across ranks so that only bools arrive.
            unsafe impl Element for $t {
                const DTYPE: i32 = dr_dtype::$dtype as i32;
            }
        )*
    };
}

dtype_table!(
    DR_DTYPE_INT8 => i8,
    DR_DTYPE_INT16 => i16,
    DR_DTYPE_INT32 => i32,
    DR_DTYPE_INT64 => i64,
    DR_DTYPE_UINT8 => u8,
    DR_DTYPE_UINT16 => u16,
    DR_DTYPE_UINT32 => u32,
    DR_DTYPE_UINT64 => u64,
    DR_DTYPE_FLOAT32 => f32,
    DR_DTYPE_FLOAT64 => f64,
    DR_DTYPE_COMPLEX64 => Complex<f32>,
    DR_DTYPE_COMPLEX128 => Complex<f64>,
    DR_DTYPE_BOOL => bool,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_list_every_value_in_order() {
        for (value, status) in dr_status::ALL.iter().enumerate() {
            assert_eq!(*status as usize, value);
            assert_eq!(dr_status::from_code(value as i32), Some(*status));
        }
        for (value, dtype) in dr_dtype::ALL.iter().enumerate() {
            assert_eq!(*dtype as usize, value);
            assert_eq!(dr_dtype::from_code(value as i32), Some(*dtype));
        }
        assert_eq!(dr_status::ALL.len(), 17);
        assert_eq!(dr_dtype::ALL.len(), 13);
        assert_eq!(dr_status::from_code(17), None);
        for (value, option) in dr_option::ALL.iter().enumerate() {
            assert_eq!(*option as usize, value);
            assert_eq!(dr_option::from_code(value as i32), Some(*option));
            assert_eq!(dr_option::from_name(option.name()), Some(*option));
        }
        assert_eq!(dr_option::ALL.len(), 10);
        assert_eq!(dr_option::from_code(10), None);
        assert_eq!(dr_dtype::from_code(-1), None);
    }

    #[test]
    fn texts_and_sizes_come_from_the_tables() {
        let status = dr_status::DR_ERROR_INVALID_SHAPE;
        assert_eq!(status.text(), c"invalid shape");
        assert_eq!(status.message(), "invalid shape");
        assert_eq!(status.name(), "DR_ERROR_INVALID_SHAPE");
        assert_eq!(dr_dtype::DR_DTYPE_COMPLEX128.size(), 16);
        assert_eq!(dr_dtype::DR_DTYPE_BOOL.size(), 1);
        assert_eq!(<f64 as Element>::DTYPE, dr_dtype::DR_DTYPE_FLOAT64 as i32);
    }
}
