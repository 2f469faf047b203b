//! The error type shared by every layer, generated with its `dr_status` codes (the
//! C ABI's, from [`crate::core::abi`]) from one table.

use crate::core::abi::dr_status;

/// The error table: every variant of [`Error`] with its status. Generates the enum
/// (its message is the status text followed by the detail), both directions of the
/// mapping and the detail accessor; the matches are exhaustive, so a status or a
/// variant missing here does not compile.
macro_rules! error_table {
    ($($(#[doc = $doc:literal])* $variant:ident => $status:ident,)*) => {
        /// Everything that can go wrong in DistReshape.
        ///
        /// Every collective call returns the same variant on every rank (the one
        /// found by the lowest failing rank). The message names the argument, its
        /// value and the rank that saw it.
        #[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
        pub enum Error {
            $(
                $(#[doc = $doc])*
                #[error("{prefix}: {0}", prefix = dr_status::$status.message())]
                $variant(String),
            )*
        }

        impl Error {
            /// The `dr_status` of this error (its stable code in the C ABI).
            pub fn status(&self) -> dr_status {
                match self {
                    $(Error::$variant(_) => dr_status::$status,)*
                }
            }

            /// Rebuilds an error from its status and detail message (used to share
            /// one rank's error with every other rank); `DR_SUCCESS` becomes
            /// [`Error::Internal`].
            pub fn from_status(status: dr_status, detail: String) -> Error {
                match status {
                    $(dr_status::$status => Error::$variant(detail),)*
                    dr_status::DR_SUCCESS => Error::Internal(detail),
                }
            }

            /// The detail message without the category prefix.
            pub fn detail(&self) -> &str {
                match self {
                    $(Error::$variant(detail) => detail,)*
                }
            }
        }
    };
}

error_table!(
    /// A required pointer was NULL.
    NullPointer => DR_ERROR_NULL_POINTER,
    /// The element type code is not one of the known types.
    InvalidDtype => DR_ERROR_INVALID_DTYPE,
    /// A shape is malformed, does not match the element count, or overflows.
    InvalidShape => DR_ERROR_INVALID_SHAPE,
    /// A split axis is out of range.
    InvalidSplit => DR_ERROR_INVALID_SPLIT,
    /// Slab lengths are negative or do not add up to the split extent.
    InvalidDistribution => DR_ERROR_INVALID_DISTRIBUTION,
    /// Ranks passed different global arguments.
    InconsistentArguments => DR_ERROR_INCONSISTENT_ARGUMENTS,
    /// An input or output buffer is smaller than the plan needs.
    BufferTooSmall => DR_ERROR_BUFFER_TOO_SMALL,
    /// Buffers that must be distinct share memory.
    Aliasing => DR_ERROR_ALIASING,
    /// A memory allocation inside the library failed.
    OutOfMemory => DR_ERROR_OUT_OF_MEMORY,
    /// An MPI call failed.
    Mpi => DR_ERROR_MPI,
    /// MPI is not initialized (or already finalized).
    MpiNotInitialized => DR_ERROR_MPI_NOT_INITIALIZED,
    /// The communicator is MPI_COMM_NULL or an intercommunicator.
    InvalidCommunicator => DR_ERROR_INVALID_COMMUNICATOR,
    /// A bug inside the library (for example a caught panic).
    Internal => DR_ERROR_INTERNAL,
    /// The plan already has an execution in flight.
    ExecutionInProgress => DR_ERROR_EXECUTION_IN_PROGRESS,
    /// A plan option is out of its range.
    InvalidOption => DR_ERROR_INVALID_OPTION,
    /// A side's strides do not fit its box, or in place on a strided plan.
    InvalidStrides => DR_ERROR_INVALID_STRIDES,
);

impl Error {
    /// The stable numeric code of this error (`dr_status` in C; 0 is success).
    pub fn code(&self) -> i32 {
        self.status() as i32
    }

    /// The name of this error's status, e.g. `"DR_ERROR_INVALID_SHAPE"`.
    pub fn status_name(&self) -> &'static str {
        self.status().name()
    }

    /// Rebuilds an error from its code and detail message. Unknown codes become
    /// [`Error::Internal`].
    pub fn from_code(code: i32, detail: String) -> Error {
        let status = dr_status::from_code(code).unwrap_or(dr_status::DR_ERROR_INTERNAL);
        Error::from_status(status, detail)
    }

    /// The same error with the detail naming `rank` (unless it already names that
    /// rank as a whole word: "rank 1" is not found in "rank 12"), for errors found
    /// where the rank was not known (arguments decoded by the C ABI).
    pub fn on_rank(self, rank: usize) -> Error {
        if names_rank(self.detail(), rank) {
            return self;
        }
        let detail = format!("{} (rank {rank})", self.detail());
        Error::from_status(self.status(), detail)
    }
}

/// True when `detail` says "rank N" with N exactly `rank` (not a longer number).
fn names_rank(detail: &str, rank: usize) -> bool {
    let wanted = rank.to_string();
    detail.match_indices("rank ").any(|(at, found)| {
        let digits: String = detail[at + found.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits == wanted
    })
}

/// Result type of DistReshape.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_status_round_trips() {
        for &status in &dr_status::ALL[1..] {
            let error = Error::from_status(status, String::new());
            assert_eq!(error.status(), status);
            assert_eq!(Error::from_code(status as i32, String::new()), error);
        }
        let unknown = Error::from_code(99, String::new());
        assert_eq!(unknown.status(), dr_status::DR_ERROR_INTERNAL);
    }

    #[test]
    fn the_message_is_the_status_text_and_the_detail() {
        let error = Error::InvalidShape("gshape[1] = -3 (rank 2)".into());
        assert_eq!(error.to_string(), "invalid shape: gshape[1] = -3 (rank 2)");
        assert_eq!(error.status_name(), "DR_ERROR_INVALID_SHAPE");
    }

    #[test]
    fn on_rank_matches_the_whole_rank_number() {
        let on_12 = Error::InvalidShape("bad extent on rank 12".into());
        assert_eq!(
            on_12.clone().on_rank(1).detail(),
            "bad extent on rank 12 (rank 1)"
        );
        assert_eq!(on_12.clone().on_rank(12), on_12);
        let twice = Error::Mpi("rank 3 and rank 1 failed".into());
        assert_eq!(twice.clone().on_rank(1), twice);
        assert_eq!(
            Error::Mpi("ranks failed".into()).on_rank(0).detail(),
            "ranks failed (rank 0)"
        );
    }
}
