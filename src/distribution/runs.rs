//! Runs: what every shared stretch of two ranks' elements is cut into.

/// A maximal run of consecutive global indices shared by two ranks' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Global flat index of the first element.
    pub global: u64,
    /// Number of elements.
    pub len: u64,
}
