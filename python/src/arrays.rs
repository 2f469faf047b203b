//! NumPy arrays as the library's buffers: the element types the library moves,
//! and the checks that an array is the block a plan expects, C-contiguous or at
//! the plan's strides.

use distreshape::{Element, Error, Layout, LayoutArgs, ReshapeArgs, Result};
use num_complex::Complex;
use numpy::npyffi::flags::NPY_ARRAY_WRITEABLE;
use numpy::npyffi::objects::_PyArray_GET_ITEM_DATA;
use numpy::prelude::*;
use numpy::{PyArrayDescr, PyUntypedArray};
use pyo3::prelude::*;

/// An element type of the library: its size and its `dr_dtype` (compared across
/// ranks).
#[derive(Clone, Copy, Debug)]
pub struct ElementType {
    /// Bytes per element.
    pub size: usize,
    /// The `dr_dtype` value.
    pub dtype: i32,
}

impl ElementType {
    /// The element type of `T`.
    fn of<T: Element>() -> ElementType {
        ElementType {
            size: size_of::<T>(),
            dtype: T::DTYPE,
        }
    }

    /// The element type of NumPy dtype `dtype`; `InvalidDtype` for a dtype without a
    /// C counterpart.
    pub fn of_numpy(dtype: &Bound<'_, PyArrayDescr>) -> Result<ElementType> {
        let unsupported = |why: &str| {
            Err(Error::InvalidDtype(format!(
                "NumPy dtype {dtype} {why}; supported: bool, int8-int64, uint8-uint64, float32, float64, complex64, complex128"
            )))
        };
        if dtype.is_native_byteorder() == Some(false) {
            return unsupported("is not in the machine's byte order");
        }
        if dtype.has_fields() || dtype.has_subarray() {
            return unsupported("is structured");
        }
        Ok(match (dtype.kind(), dtype.itemsize()) {
            (b'b', 1) => ElementType::of::<bool>(),
            (b'i', 1) => ElementType::of::<i8>(),
            (b'i', 2) => ElementType::of::<i16>(),
            (b'i', 4) => ElementType::of::<i32>(),
            (b'i', 8) => ElementType::of::<i64>(),
            (b'u', 1) => ElementType::of::<u8>(),
            (b'u', 2) => ElementType::of::<u16>(),
            (b'u', 4) => ElementType::of::<u32>(),
            (b'u', 8) => ElementType::of::<u64>(),
            (b'f', 4) => ElementType::of::<f32>(),
            (b'f', 8) => ElementType::of::<f64>(),
            (b'c', 8) => ElementType::of::<Complex<f32>>(),
            (b'c', 16) => ElementType::of::<Complex<f64>>(),
            _ => return unsupported("has no C element type in DistReshape"),
        })
    }

    /// `args` for elements of this type.
    pub fn reshape_args(self, args: ReshapeArgs) -> ReshapeArgs {
        ReshapeArgs {
            elem_size: self.size,
            dtype: Some(self.dtype),
            ..args
        }
    }

    /// The arguments of a plan from `input` to `output` for elements of this type.
    pub fn layout_args(self, input: &Layout, output: &Layout) -> LayoutArgs {
        LayoutArgs {
            dtype: Some(self.dtype),
            ..LayoutArgs::new(self.size, input, output)
        }
    }
}

/// Where an array's elements are, for the library.
#[derive(Clone, Copy, Debug)]
pub struct Memory {
    /// The address of the first element (an address, so that it crosses into code
    /// running without the GIL).
    pub address: usize,
    /// Bytes the array holds.
    pub bytes: usize,
}

/// What a plan expects of one array.
pub struct Expected<'a, 'py> {
    /// What the array is, for messages ("the input array").
    pub role: &'a str,
    /// The plan's element type.
    pub dtype: &'a Bound<'py, PyArrayDescr>,
    /// The exact shape, or `None` for any shape holding `min_elems` elements.
    pub shape: Option<&'a [u64]>,
    /// The storage: `None` for C-contiguous, or the plan's strides in elements (one
    /// per axis of `shape`) and its span, the elements from the first to one past
    /// the last.
    pub storage: Option<(&'a [u64], u64)>,
    /// Fewest elements the array must hold.
    pub min_elems: u64,
    /// Whether the library writes into it.
    pub writable: bool,
    /// This process's rank, for messages.
    pub rank: usize,
}

/// Checks that `array` is a NumPy array as `expected` says (C-contiguous, or at
/// the expected strides); returns where its elements are, from its first element.
pub fn check(array: &Bound<'_, PyAny>, expected: &Expected<'_, '_>) -> Result<Memory> {
    let Expected { role, rank, .. } = *expected;
    let Ok(array) = array.cast::<PyUntypedArray>() else {
        return Err(Error::InvalidShape(format!(
            "{role} is a {}, not a NumPy array (rank {rank})",
            array.get_type()
        )));
    };
    let dtype = array.dtype();
    if !dtype.is_equiv_to(expected.dtype) {
        return Err(Error::InvalidDtype(format!(
            "{role} has dtype {dtype} but the plan was made for {} (rank {rank})",
            expected.dtype
        )));
    }
    let shape: Vec<u64> = array.shape().iter().map(|&n| n as u64).collect();
    if let Some(wanted) = expected.shape.filter(|wanted| *wanted != shape.as_slice()) {
        return Err(Error::InvalidShape(format!(
            "{role} has shape {} but rank {rank}'s block has shape {}",
            tuple(&shape),
            tuple(wanted)
        )));
    }
    let elems = array.len() as u64;
    if elems < expected.min_elems {
        return Err(Error::BufferTooSmall(format!(
            "{role} holds {elems} elements but rank {rank} needs {}",
            expected.min_elems
        )));
    }
    let span = match expected.storage {
        Some((strides, span)) => {
            check_strides(array, &shape, strides, expected)?;
            span
        }
        None if array.is_c_contiguous() => elems,
        None => {
            return Err(Error::InvalidShape(format!(
                "{role} is not C-contiguous (rank {rank}); pass numpy.ascontiguousarray(...) of it, or plan with its strides (Plan.from_layouts(..., input_strides=, output_strides=))"
            )));
        }
    };
    // SAFETY: `array` is a live NumPy array (checked above, and borrowed for this
    // call), so its object holds the array fields.
    let fields = unsafe { &*_PyArray_GET_ITEM_DATA(array.as_array_ptr()) };
    if expected.writable && fields.flags & NPY_ARRAY_WRITEABLE == 0 {
        return Err(Error::InvalidShape(format!(
            "{role} is read-only (rank {rank})"
        )));
    }
    Ok(Memory {
        address: fields.data as usize,
        bytes: span as usize * dtype.itemsize(),
    })
}

/// Checks that `array` (of `shape`, the expected one) lies at the plan's `strides`
/// (in elements): NumPy's strides in bytes, divided by the element size, equal
/// them on every axis longer than one (an empty array's strides place nothing).
fn check_strides(
    array: &Bound<'_, PyUntypedArray>,
    shape: &[u64],
    strides: &[u64],
    expected: &Expected<'_, '_>,
) -> Result<()> {
    let Expected { role, rank, .. } = *expected;
    if shape.contains(&0) {
        return Ok(());
    }
    let size = array.dtype().itemsize() as isize;
    let given = array.strides().iter().zip(strides).zip(shape);
    for (axis, ((&bytes, &want), &extent)) in given.enumerate() {
        if extent > 1 && bytes != want as isize * size {
            let elements = match bytes % size {
                0 => format!("{} elements", bytes / size),
                _ => "not a whole number of elements".to_owned(),
            };
            return Err(Error::InvalidStrides(format!(
                "{role} has stride {bytes} bytes ({elements}) on axis {axis} but the plan's is {want} elements (rank {rank}); the package never copies an array planned with strides"
            )));
        }
    }
    Ok(())
}

/// `shape` as Python shows a tuple: `(2, 3)`, `(5,)`, `()`.
pub fn tuple(shape: &[u64]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let shown: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", shown.join(", "))
        }
    }
}
