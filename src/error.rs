//! The error type shared by every layer, with the stable status codes the C ABI exposes.

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
}

impl Error {
    /// The stable numeric code of this error (`dr_status` in C; 0 is success).
    pub fn code(&self) -> i32 {
        match self {
            Error::NullPointer(_) => 1,
            Error::InvalidDtype(_) => 2,
            Error::InvalidShape(_) => 3,
            Error::InvalidSplit(_) => 4,
            Error::InvalidDistribution(_) => 5,
            Error::InconsistentArguments(_) => 6,
            Error::BufferTooSmall(_) => 7,
            Error::Aliasing(_) => 8,
            Error::OutOfMemory(_) => 9,
            Error::Mpi(_) => 10,
            Error::MpiNotInitialized(_) => 11,
            Error::InvalidCommunicator(_) => 12,
            Error::Internal(_) => 13,
        }
    }

    /// Rebuilds an error from its code and detail message (used to share one rank's
    /// error with every other rank). Unknown codes become [`Error::Internal`].
    pub fn from_code(code: i32, detail: String) -> Error {
        match code {
            1 => Error::NullPointer(detail),
            2 => Error::InvalidDtype(detail),
            3 => Error::InvalidShape(detail),
            4 => Error::InvalidSplit(detail),
            5 => Error::InvalidDistribution(detail),
            6 => Error::InconsistentArguments(detail),
            7 => Error::BufferTooSmall(detail),
            8 => Error::Aliasing(detail),
            9 => Error::OutOfMemory(detail),
            10 => Error::Mpi(detail),
            11 => Error::MpiNotInitialized(detail),
            12 => Error::InvalidCommunicator(detail),
            _ => Error::Internal(detail),
        }
    }

    /// The same error with the detail naming `rank` (unless it already does), for
    /// errors found where the rank was not known (arguments decoded by the C ABI).
    pub fn on_rank(self, rank: usize) -> Error {
        if self.detail().contains(&format!("rank {rank}")) {
            return self;
        }
        let detail = format!("{} (rank {rank})", self.detail());
        Error::from_code(self.code(), detail)
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
            | Error::Internal(d) => d,
        }
    }
}

/// Result type of DistReshape.
pub type Result<T> = std::result::Result<T, Error>;
