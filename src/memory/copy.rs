//! TEMPORARY naive kernel.
/// A box copy.
#[derive(Clone, Copy, Debug)]
pub struct BoxCopy<'a> {
    /// Extents.
    pub extents: &'a [usize],
    /// Source strides.
    pub src_strides: &'a [usize],
    /// Destination strides.
    pub dst_strides: &'a [usize],
}

/// Copies.
///
/// # Safety
/// Valid.
pub unsafe fn copy_box(elem_size: usize, copy: BoxCopy<'_>, src: *const u8, dst: *mut u8) {
    let n = copy.extents.len();
    let total: usize = copy.extents.iter().product();
    for i in 0..total {
        let (mut rest, mut s, mut d) = (i, 0, 0);
        for k in (0..n).rev() {
            let c = rest % copy.extents[k];
            rest /= copy.extents[k];
            s += c * copy.src_strides[k];
            d += c * copy.dst_strides[k];
        }
        // SAFETY: naive.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(s * elem_size), dst.add(d * elem_size), elem_size)
        };
    }
}
