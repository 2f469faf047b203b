//! The element types a reshape can move: plain data travelling as raw bytes. The
//! element table of [`crate::core::abi`] implements [`Element`] for every type
//! with a `dr_dtype`.

/// Element types a reshape can move: plain data whose every byte is initialized and
/// whose values survive a byte-wise copy between processes.
///
/// # Safety
/// Implementors must have no padding bytes and no pointers or references, and every
/// bit pattern of their size must be a valid value, unless [`Element::DTYPE`] names
/// their `dr_dtype`: ranks are then checked to move the same type (as for `bool`,
/// whose bytes other than 0 and 1 are invalid).
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The type's `dr_dtype` value, compared across ranks by `reshape`,
    /// `reshape_array` and plans made with `ReshapeArgs::with_element`; -1 (the
    /// default) for other plain data, compared by size only.
    const DTYPE: i32 = -1;
}

/// Plain data without a `dr_dtype`: compared by size only.
macro_rules! untyped_elements {
    ($($t:ty),*) => { $(
        // SAFETY: primitive integer without padding; every bit pattern is valid.
        unsafe impl Element for $t {}
    )* };
}
untyped_elements!(i128, u128, isize, usize);
