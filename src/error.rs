//! The error type shared by every layer, with the stable status codes the C ABI exposes.

use crate::ffi::dr_status;

/// Everything that can go wrong in DistReshape.
///
/// Every collective call returns the same variant on every rank (the one found by the
/// lowest failing rank). The message names the argument, its value and the rank that saw it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A required pointer was NULL.
    #[error("null pointer: {0}")]
    NullPointer(String),
    /// The element type code is not one of the known types.
    #[error("invalid dtype: {0}")]
    InvalidDtype(String),
    /// A shape is malformed, does not match the element count, or overflows.
    #[error("invalid shape: {0}")]
    InvalidShape(String),
    /// A split axis is out of range.
    #[error("invalid split: {0}")]
    InvalidSplit(String),
    /// Slab lengths are negative or do not add up to the split extent.
    #[error("invalid distribution: {0}")]
    InvalidDistribution(String),
    /// Ranks passed different global arguments.
    #[error("inconsistent arguments: {0}")]
    InconsistentArguments(String),
    /// An input or output buffer is smaller than the plan needs.
    #[error("buffer too small: {0}")]
    BufferTooSmall(String),
    /// Input and output buffers partially overlap.
    #[error("aliasing: {0}")]
    Aliasing(String),
    /// A memory allocation inside the library failed.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// An MPI call failed.
    #[error("MPI error: {0}")]
    Mpi(String),
    /// MPI is not initialized (or already finalized).
    #[error("MPI not initialized: {0}")]
    MpiNotInitialized(String),
    /// The communicator is MPI_COMM_NULL or an intercommunicator.
    #[error("invalid communicator: {0}")]
    InvalidCommunicator(String),
    /// A bug inside the library (for example a caught panic).
    #[error("internal error: {0}")]
    Internal(String),
    /// The plan already has an execution in flight.
    #[error("execution in progress: {0}")]
    ExecutionInProgress(String),
}

/// The one table of the error variants and their `dr_status` (the C ABI's codes);
/// both directions of the mapping are generated from it.
macro_rules! status_table {
    ($($variant:ident => $status:ident),* $(,)?) => {
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
        }
    };
}

status_table!(
    NullPointer => DR_ERROR_NULL_POINTER,
    InvalidDtype => DR_ERROR_INVALID_DTYPE,
    InvalidShape => DR_ERROR_INVALID_SHAPE,
    InvalidSplit => DR_ERROR_INVALID_SPLIT,
    InvalidDistribution => DR_ERROR_INVALID_DISTRIBUTION,
    InconsistentArguments => DR_ERROR_INCONSISTENT_ARGUMENTS,
    BufferTooSmall => DR_ERROR_BUFFER_TOO_SMALL,
    Aliasing => DR_ERROR_ALIASING,
    OutOfMemory => DR_ERROR_OUT_OF_MEMORY,
    Mpi => DR_ERROR_MPI,
    MpiNotInitialized => DR_ERROR_MPI_NOT_INITIALIZED,
    InvalidCommunicator => DR_ERROR_INVALID_COMMUNICATOR,
    Internal => DR_ERROR_INTERNAL,
    ExecutionInProgress => DR_ERROR_EXECUTION_IN_PROGRESS,
);

impl Error {
    /// The stable numeric code of this error (`dr_status` in C; 0 is success).
    pub fn code(&self) -> i32 {
        self.status() as i32
    }

    /// Rebuilds an error from its code and detail message. Unknown codes become
    /// [`Error::Internal`].
    pub fn from_code(code: i32, detail: String) -> Error {
        let status = dr_status::from_code(code).unwrap_or(dr_status::DR_ERROR_INTERNAL);
        Error::from_status(status, detail)
    }

    /// The same error with the detail naming `rank` (unless it already does), for
    /// errors found where the rank was not known (arguments decoded by the C ABI).
    pub fn on_rank(self, rank: usize) -> Error {
        if self.detail().contains(&format!("rank {rank}")) {
            return self;
        }
        let detail = format!("{} (rank {rank})", self.detail());
        Error::from_status(self.status(), detail)
    }

    /// The detail message without the category prefix.
    pub fn detail(&self) -> &str {
        match self {
            Error::NullPointer(d)
            | Error::InvalidDtype(d)
            | Error::InvalidShape(d)
            | Error::InvalidSplit(d)
            | Error::InvalidDistribution(d)
            | Error::InconsistentArguments(d)
            | Error::BufferTooSmall(d)
            | Error::Aliasing(d)
            | Error::OutOfMemory(d)
            | Error::Mpi(d)
            | Error::MpiNotInitialized(d)
            | Error::InvalidCommunicator(d)
            | Error::Internal(d)
            | Error::ExecutionInProgress(d) => d,
        }
    }
}

/// Result type of DistReshape.
pub type Result<T> = std::result::Result<T, Error>;
