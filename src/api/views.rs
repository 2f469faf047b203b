//! Plans on strided local storage from Rust: made with each side's strides,
//! executed on `ndarray` views (slices of padded arrays, transposes, any
//! positive strides) whose shapes and strides are checked against the plan's,
//! never copied.

use mpi::raw::AsRaw;
use ndarray::{ArrayBase, Data, DataMut, Dimension};

use crate::api::options::PlanOptions;
use crate::api::plan::{Plan, output_address};
use crate::core::element::Element;
use crate::core::error::{Error, Result};
use crate::distribution::groups::ReshapeSide;
use crate::mpi::comm::RawComm;
use crate::planning::layouts::{Layout, LayoutArgs};

impl Plan {
    /// Plans the redistribution of elements of type `T` from `input` to `output`
    /// (collective), with this rank's storage on each side: `None` for C order
    /// without gaps, or one stride per axis of that side's box, in elements (box
    /// element (i₀, …) lies at Σ iₖ·strideₖ from the box's first element).
    /// Strides are local: each rank passes its own. Refused strides (not
    /// positive, or two elements at one address) are
    /// [`Error::InvalidStrides`] on every rank.
    ///
    /// ```no_run
    /// use distreshape::{Layout, Plan};
    /// let universe = mpi::initialize().unwrap();
    /// let world = mpi::topology::SimpleCommunicator::world();
    /// // x-pencils in C order to y-pencils stored y-fastest, on a 2 x 2 grid.
    /// let x = Layout::new(&[64, 64, 64], &[2, 2], &[None, Some(0), Some(1)]);
    /// let y = Layout::new(&[64, 64, 64], &[2, 2], &[Some(0), None, Some(1)]);
    /// let b = y.rank_box(4, 0).unwrap().extents; // this rank's y-pencil
    /// let y_fastest = [(b[1] * b[2]) as i64, 1, b[1] as i64];
    /// let plan = Plan::from_layouts_strided::<f64, _>(&world, &x, None, &y, Some(&y_fastest)).unwrap();
    /// # let _ = plan;
    /// ```
    pub fn from_layouts_strided<T: Element, C: AsRaw<Raw = RawComm>>(
        comm: &C,
        input: &Layout,
        input_strides: Option<&[i64]>,
        output: &Layout,
        output_strides: Option<&[i64]>,
    ) -> Result<Plan> {
        let args =
            LayoutArgs::for_element::<T>(input, output).with_strides(input_strides, output_strides);
        Plan::create_from_layouts(comm.as_raw(), Ok(args), PlanOptions::default())
    }

    /// Executes the plan from the view `input` into the view `output`
    /// (collective unless [`Plan::is_collective`] is false): each view's shape
    /// must be this rank's box on its side and its strides the plan's
    /// ([`Plan::input_strides`], [`Plan::output_strides`]; any stride on an
    /// axis of extent 1), else the execution fails with
    /// [`Error::InvalidShape`] or [`Error::InvalidStrides`] on every rank (no
    /// copy is ever made). Only box elements are read and written.
    pub fn execute_views<T, A, B, D, E>(
        &self,
        input: &ArrayBase<A, D>,
        output: &mut ArrayBase<B, E>,
    ) -> Result<()>
    where
        T: Element,
        A: Data<Elem = T>,
        B: DataMut<Elem = T>,
        D: Dimension,
        E: Dimension,
    {
        // First: for an array that shares its data (`ArcArray`, `CowArray`),
        // taking the pointer makes it unique, by a copy at other strides, so
        // the strides are checked after it, on the memory written.
        let (src, dst) = (input.as_ptr().cast(), output.as_mut_ptr().cast());
        let dst = output_address(dst, output.len() * size_of::<T>());
        let rank = self.rank();
        let pre = self.check_type::<T>().err().or_else(|| {
            let given = (input.shape(), input.strides());
            let checked = self.check_view(ReshapeSide::Input, given, rank);
            let given = (output.shape(), output.strides());
            checked
                .and_then(|()| self.check_view(ReshapeSide::Output, given, rank))
                .err()
        });
        let size = size_of::<T>();
        let (in_len, capacity) = (self.input_span() * size, self.output_span() * size);
        // SAFETY: once the checks pass, each view holds its box at the plan's
        // strides, so its memory covers the span from its first element; the
        // borrows keep both alive and distinct until the execution completes.
        unsafe { self.execute_checked(src, in_len, dst, capacity, pre) }
    }

    /// Checks a view's shape and strides against this rank's box on `side`.
    fn check_view(
        &self,
        side: ReshapeSide,
        (shape, strides): (&[usize], &[isize]),
        rank: usize,
    ) -> Result<()> {
        let (name, extents, expected) = match side {
            ReshapeSide::Input => ("input", self.local_input_shape(), self.input_strides()),
            ReshapeSide::Output => ("output", self.local_output_shape(), self.output_strides()),
        };
        let shape_matches = shape.len() == extents.len()
            && shape.iter().zip(&extents).all(|(&a, &b)| a as u64 == b);
        if !shape_matches {
            return Err(Error::InvalidShape(format!(
                "the {name} view has shape {shape:?} but rank {rank}'s {name} box is {extents:?}"
            )));
        }
        let empty = extents.contains(&0);
        let axes = strides.iter().zip(expected).zip(&extents).enumerate();
        for (axis, ((&given, &want), &extent)) in axes {
            if !empty && extent > 1 && given != want as isize {
                return Err(Error::InvalidStrides(format!(
                    "the {name} view's stride {given} on axis {axis} differs from the plan's {name}_strides[{axis}] = {want} (rank {rank})"
                )));
            }
        }
        Ok(())
    }
}
