//! The arguments of a reshape and their validation: the local checks each rank can
//! make alone, the fingerprint that lets ranks compare their global arguments, and
//! the checks on the gathered slab lengths. Pure, no MPI.

use crate::core::abi::dtype_words;
use crate::core::error::{Error, Result};
pub use crate::distribution::layout::MAX_DIMS;
use crate::distribution::layout::checked_product;

/// The slab length this rank wants along the new split axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The balanced distribution (Heat's formula).
    Balanced,
    /// This rank's own row count; the counts of all ranks must add up to the extent.
    Len(i64),
}

/// How messages show shapes and axes: as the caller wrote them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Notation {
    /// C order, 0-based axes, `DR_SPLIT_NONE` for not split: `[2, 3]`, `gshape[1]`.
    #[default]
    C,
    /// The Fortran module's view: extents in column-major order, 1-based dimensions,
    /// 0 for not split: `(3, 2)`, `gshape(1)`.
    Fortran,
}

impl Notation {
    /// A shape given in C order, shown in this notation.
    pub fn shape<T: std::fmt::Display>(self, shape: &[T]) -> String {
        let shown: Vec<String> = shape.iter().map(T::to_string).collect();
        match self {
            Notation::C => format!("[{}]", shown.join(", ")),
            Notation::Fortran => {
                let reversed: Vec<&str> = shown.iter().rev().map(String::as_str).collect();
                format!("({})", reversed.join(", "))
            }
        }
    }

    /// Extent `i` (C order) of the `ndims`-dimensional shape `name`.
    pub fn extent(self, name: &str, i: usize, ndims: usize) -> String {
        match self {
            Notation::C => format!("{name}[{i}]"),
            Notation::Fortran => format!("{name}({})", ndims - i),
        }
    }

    /// A split axis (C numbering) of an `ndims`-dimensional shape.
    pub fn axis(self, axis: Option<usize>, ndims: usize) -> String {
        match (self, axis) {
            (Notation::C, Some(a)) => a.to_string(),
            (Notation::C, None) => "DR_SPLIT_NONE".into(),
            (Notation::Fortran, Some(a)) => ndims.saturating_sub(a).to_string(),
            (Notation::Fortran, None) => "0 (not split)".into(),
        }
    }
}

/// What a caller asks for on one rank. Everything except `local_len` and a
/// [`Target::Len`] value must be the same on every rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReshapeArgs {
    /// Bytes per element (> 0).
    pub elem_size: usize,
    /// Global shape of the input, C order.
    pub gshape: Vec<i64>,
    /// Axis the input is split along, or `None` when every rank holds all of it.
    pub split: Option<usize>,
    /// This rank's slab length along `split` (ignored when not split).
    pub local_len: i64,
    /// Global shape of the output; may hold one `-1`, inferred as in NumPy.
    pub new_shape: Vec<i64>,
    /// Axis the output is split along, or `None` for every rank to get all of it.
    pub new_split: Option<usize>,
    /// How the output rows are distributed (ignored when the output is not split).
    pub target: Target,
    /// The element type beyond its size, when the caller knows it (the C ABI passes
    /// its `dr_dtype`): ranks passing different types of the same size are then
    /// inconsistent too.
    pub dtype: Option<i32>,
    /// How messages show shapes and axes (not compared across ranks).
    pub notation: Notation,
}

impl ReshapeArgs {
    /// Arguments for a reshape to the balanced distribution.
    pub fn new(
        elem_size: usize,
        gshape: &[i64],
        split: Option<usize>,
        local_len: i64,
        new_shape: &[i64],
        new_split: Option<usize>,
    ) -> ReshapeArgs {
        ReshapeArgs {
            elem_size,
            gshape: gshape.to_vec(),
            split,
            local_len,
            new_shape: new_shape.to_vec(),
            new_split,
            target: Target::Balanced,
            dtype: None,
            notation: Notation::C,
        }
    }

    /// The same arguments for elements of type `T`: its size, and its `dr_dtype`
    /// (compared across ranks) when it has one.
    pub fn with_element<T: crate::core::element::Element>(mut self) -> ReshapeArgs {
        self.elem_size = size_of::<T>();
        self.dtype = (T::DTYPE >= 0).then_some(T::DTYPE);
        self
    }

    /// The same arguments asking for `len` output rows on this rank.
    pub fn with_target_len(mut self, len: i64) -> ReshapeArgs {
        self.target = Target::Len(len);
        self
    }

    /// The global arguments as a fixed-length vector, for collective comparison:
    /// each `Field` in order, `Field::width` entries each.
    pub fn fingerprint(&self) -> Vec<i64> {
        let mut fp = Vec::with_capacity(FINGERPRINT_LEN);
        for field in FIELDS {
            field.push(self, &mut fp);
        }
        fp
    }
}

/// The global arguments, which every rank must pass alike, in fingerprint order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// Bytes per element.
    ElementSize,
    /// The input global shape (its length, then `MAX_DIMS` extents).
    Gshape,
    /// The input split axis (-1 for none).
    Split,
    /// The output global shape (its length, then `MAX_DIMS` extents).
    NewShape,
    /// The output split axis (-1 for none).
    NewSplit,
    /// Whether the output rows are explicit (only when the output is split).
    Target,
    /// The `dr_dtype` (-1 for a size only).
    Dtype,
}

/// Every field, in fingerprint order.
const FIELDS: [Field; 7] = [
    Field::ElementSize,
    Field::Gshape,
    Field::Split,
    Field::NewShape,
    Field::NewSplit,
    Field::Target,
    Field::Dtype,
];

impl Field {
    /// The entries the field takes in the fingerprint.
    const fn width(self) -> usize {
        match self {
            Field::Gshape | Field::NewShape => 1 + MAX_DIMS,
            _ => 1,
        }
    }

    /// Appends the field's entries for `args` to `fp`.
    fn push(self, args: &ReshapeArgs, fp: &mut Vec<i64>) {
        match self {
            Field::ElementSize => fp.push(args.elem_size as i64),
            Field::Gshape => push_shape(fp, &args.gshape),
            Field::Split => fp.push(axis_code(args.split)),
            Field::NewShape => push_shape(fp, &args.new_shape),
            Field::NewSplit => fp.push(axis_code(args.new_split)),
            // The target matters only when the output is split; otherwise it is ignored.
            Field::Target => fp.push(i64::from(
                args.new_split.is_some() && matches!(args.target, Target::Len(_)),
            )),
            Field::Dtype => fp.push(args.dtype.map_or(-1, i64::from)),
        }
    }

    /// The field's name in messages.
    fn name(self) -> &'static str {
        match self {
            Field::ElementSize => "element size",
            Field::Gshape => "gshape",
            Field::Split => "split",
            Field::NewShape => "new_shape",
            Field::NewSplit => "new_split",
            Field::Target => "target (balanced or explicit new_local_len)",
            Field::Dtype => "dtype",
        }
    }

    /// The value `args` passed for the field, as the caller wrote it.
    fn passed(self, args: &ReshapeArgs) -> String {
        let n = args.notation;
        match self {
            Field::ElementSize => args.elem_size.to_string(),
            Field::Gshape => n.shape(&args.gshape),
            Field::Split => n.axis(args.split, args.gshape.len()),
            Field::NewShape => n.shape(&args.new_shape),
            Field::NewSplit => n.axis(args.new_split, args.new_shape.len()),
            Field::Target => format!("{:?}", args.target),
            Field::Dtype => args.dtype.map_or("none (a size only)".into(), dtype_words),
        }
    }

    /// The field whose entries hold fingerprint entry `entry`.
    fn at(entry: usize) -> Option<Field> {
        let mut end = 0;
        FIELDS.into_iter().find(|f| {
            end += f.width();
            entry < end
        })
    }
}

/// Length of [`ReshapeArgs::fingerprint`]: the widths of every [`Field`].
pub(crate) const FINGERPRINT_LEN: usize = {
    let (mut len, mut i) = (0, 0);
    while i < FIELDS.len() {
        len += FIELDS[i].width();
        i += 1;
    }
    len
};

fn push_shape(fp: &mut Vec<i64>, shape: &[i64]) {
    fp.push(shape.len() as i64);
    fp.extend((0..MAX_DIMS).map(|i| shape.get(i).copied().unwrap_or(0)));
}

fn axis_code(axis: Option<usize>) -> i64 {
    axis.map_or(-1, |a| a as i64)
}

/// Names the first global argument whose fingerprint entries differ between ranks,
/// given the element-wise minimum and maximum over ranks.
pub fn mismatch(args: &ReshapeArgs, min: &[i64], max: &[i64], rank: usize) -> Option<Error> {
    let entry = (0..FINGERPRINT_LEN).find(|&i| min[i] != max[i])?;
    let field = Field::at(entry)?;
    Some(Error::InconsistentArguments(format!(
        "ranks passed different {}; rank {rank} passed {}",
        field.name(),
        field.passed(args)
    )))
}

/// The arguments after local validation, with the new shape resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Bytes per element.
    pub elem_size: usize,
    /// Input global shape.
    pub gshape: Vec<u64>,
    /// Input split axis.
    pub split: Option<usize>,
    /// This rank's input slab length (0 when not split).
    pub local_len: u64,
    /// Output global shape, `-1` resolved.
    pub new_shape: Vec<u64>,
    /// Output split axis.
    pub new_split: Option<usize>,
    /// This rank's requested output rows, when not balanced and the output is split.
    pub target_len: Option<u64>,
}

impl Checked {
    /// Number of elements in the array.
    pub fn total(&self) -> u64 {
        // Validated: the product fits (it is 0 whenever an extent is 0).
        checked_product(&self.gshape).unwrap_or(0)
    }
}

/// Everything one rank can check alone.
pub fn check_local(args: &ReshapeArgs, rank: usize) -> Result<Checked> {
    let at = |what: String| format!("{what} (rank {rank})");
    if args.elem_size == 0 {
        return Err(Error::InvalidDtype(at("element size is 0 bytes".into())));
    }
    let n = args.notation;
    let gshape = check_extents("gshape", &args.gshape, n, rank)?;
    let total = checked_product(&gshape)
        .filter(|n| {
            n.checked_mul(args.elem_size as u64)
                .is_some_and(|b| b <= i64::MAX as u64)
        })
        .ok_or_else(|| {
            Error::InvalidShape(at(format!(
                "gshape {} holds more elements of {} bytes than fit in int64",
                n.shape(&args.gshape),
                args.elem_size
            )))
        })?;
    let new_shape = resolve_new_shape(&args.new_shape, total, &args.gshape, n)
        .map_err(|e| Error::InvalidShape(at(e)))?;
    check_axis("split", args.split, gshape.len(), rank)?;
    check_axis("new_split", args.new_split, new_shape.len(), rank)?;
    let local_len = match args.split {
        None => 0,
        Some(axis) => check_rows("local_len", args.local_len, gshape[axis], rank)?,
    };
    let target_len = match (args.new_split, args.target) {
        (Some(axis), Target::Len(len)) => {
            Some(check_rows("new_local_len", len, new_shape[axis], rank)?)
        }
        _ => None,
    };
    Ok(Checked {
        elem_size: args.elem_size,
        gshape,
        split: args.split,
        local_len,
        new_shape,
        new_split: args.new_split,
        target_len,
    })
}

fn check_extents(name: &str, shape: &[i64], notation: Notation, rank: usize) -> Result<Vec<u64>> {
    if shape.len() > MAX_DIMS {
        return Err(Error::InvalidShape(format!(
            "{name} has {} dimensions, more than the maximum {MAX_DIMS} (rank {rank})",
            shape.len()
        )));
    }
    shape
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            u64::try_from(n).map_err(|_| {
                let extent = notation.extent(name, i, shape.len());
                Error::InvalidShape(format!("{extent} = {n} is negative (rank {rank})"))
            })
        })
        .collect()
}

/// Resolves a NumPy-style new shape (at most one `-1`) for `total` elements;
/// messages show shapes in `notation`.
pub fn resolve_new_shape(
    new_shape: &[i64],
    total: u64,
    gshape: &[i64],
    notation: Notation,
) -> std::result::Result<Vec<u64>, String> {
    let shown = notation.shape(new_shape);
    if new_shape.len() > MAX_DIMS {
        return Err(format!(
            "new_shape has {} dimensions, more than the maximum {MAX_DIMS}",
            new_shape.len()
        ));
    }
    if let Some(i) = new_shape.iter().position(|&n| n < -1) {
        let extent = notation.extent("new_shape", i, new_shape.len());
        return Err(format!("{extent} = {} is negative", new_shape[i]));
    }
    let inferred: Vec<usize> = (0..new_shape.len())
        .filter(|&i| new_shape[i] == -1)
        .collect();
    if inferred.len() > 1 {
        return Err(format!("new_shape {shown} has more than one -1"));
    }
    let known = checked_product(
        &new_shape
            .iter()
            .filter(|&&n| n >= 0)
            .map(|&n| n as u64)
            .collect::<Vec<_>>(),
    )
    .ok_or_else(|| format!("the extents of new_shape {shown} overflow int64"))?;
    let mut resolved: Vec<u64> = new_shape.iter().map(|&n| n.max(0) as u64).collect();
    match inferred.first() {
        Some(_) if known == 0 => {
            return Err(format!(
                "cannot infer the -1 in new_shape {shown}: the other extents multiply to 0"
            ));
        }
        Some(&i) if total.is_multiple_of(known) => resolved[i] = total / known,
        None if known == total => {}
        _ => {
            return Err(format!(
                "cannot reshape gshape {} ({total} elements) into new_shape {shown}",
                notation.shape(gshape)
            ));
        }
    }
    Ok(resolved)
}

/// Fails when `axis` is out of range (only C callers can pass one: the Fortran
/// module's dimensions are converted, and checked, by `split_arg` in
/// `src/capi/slab_args.rs`).
fn check_axis(name: &str, axis: Option<usize>, ndims: usize, rank: usize) -> Result<()> {
    match axis {
        Some(a) if a >= ndims => Err(Error::InvalidSplit(format!(
            "{name} = {a} is out of range for {ndims} dimensions (rank {rank})"
        ))),
        _ => Ok(()),
    }
}

fn check_rows(name: &str, len: i64, extent: u64, rank: usize) -> Result<u64> {
    u64::try_from(len).ok().filter(|&l| l <= extent).ok_or_else(|| {
        Error::InvalidDistribution(format!(
            "{name} = {len} on rank {rank} is outside [0, {extent}], the extent of the split axis"
        ))
    })
}

/// Checks that the gathered per-rank row counts add up to the split extent.
pub fn check_rows_add_up(name: &str, lens: &[u64], extent: u64) -> Result<()> {
    let sum = lens.iter().try_fold(0u64, |acc, &l| acc.checked_add(l));
    if sum == Some(extent) {
        return Ok(());
    }
    let shown: Vec<String> = lens
        .iter()
        .enumerate()
        .take(8)
        .map(|(r, l)| format!("rank {r}: {l}"))
        .collect();
    let more = if lens.len() > 8 { ", ..." } else { "" };
    Err(Error::InvalidDistribution(format!(
        "the {name} values of all ranks add up to {}, but the split extent is {extent} ({}{more})",
        sum.map_or("more than 2^64".to_string(), |s| s.to_string()),
        shown.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_shape_follows_numpy() {
        let r = |s: &[i64], n| resolve_new_shape(s, n, &[], Notation::C);
        assert_eq!(r(&[4, -1], 64).unwrap(), vec![4, 16]);
        assert_eq!(r(&[-1, 2, 4, 2], 64).unwrap(), vec![4, 2, 4, 2]);
        assert_eq!(r(&[-1], 0).unwrap(), vec![0]);
        assert_eq!(r(&[-1, 2], 0).unwrap(), vec![0, 2]);
        assert_eq!(r(&[], 1).unwrap(), Vec::<u64>::new());
        assert!(r(&[-1, 0], 0).unwrap_err().contains("multiply to 0"));
        assert!(r(&[-1, -1], 4).unwrap_err().contains("more than one -1"));
        assert!(r(&[3, -1], 64).unwrap_err().contains("cannot reshape"));
        assert!(r(&[3, 5], 16).unwrap_err().contains("cannot reshape"));
        assert!(r(&[-2, 8], 16).unwrap_err().contains("new_shape[0] = -2"));
        assert!(r(&[i64::MAX, 4], 16).unwrap_err().contains("overflow"));
    }

    #[test]
    fn zero_element_shapes_are_accepted_wherever_the_zero_is() {
        let big = 1i64 << 62;
        for gshape in [[0, 5, big], [5, big, 0], [big, 0, 5]] {
            for split in 0..3 {
                let args = ReshapeArgs::new(8, &gshape, Some(split), 0, &[big, 5, 0], Some(1));
                let checked = check_local(&args, 0).unwrap_or_else(|e| panic!("{gshape:?}: {e}"));
                assert_eq!(checked.total(), 0);
                let lens = [gshape[split] as u64, 0];
                let plan = crate::planning::planner::RankPlan::new(&checked, &lens, None, 1)
                    .expect("plan");
                assert_eq!((plan.input_elems(), plan.output_elems()), (0, 0));
                assert!(plan.sends.is_empty() && plan.recvs.is_empty());
            }
        }
        let inferred = ReshapeArgs::new(8, &[5, big, 0], None, 0, &[0, -1], None);
        assert!(
            check_local(&inferred, 0)
                .unwrap_err()
                .to_string()
                .contains("multiply to 0")
        );
    }

    #[test]
    fn local_checks_name_argument_value_and_rank() {
        let ok = ReshapeArgs::new(8, &[4, 4], Some(0), 2, &[16], Some(0));
        assert!(check_local(&ok, 0).is_ok());
        let cases = [
            (
                ReshapeArgs {
                    gshape: vec![4, -4],
                    ..ok.clone()
                },
                "gshape[1] = -4",
            ),
            (
                ReshapeArgs {
                    split: Some(2),
                    ..ok.clone()
                },
                "split = 2",
            ),
            (
                ReshapeArgs {
                    new_split: Some(1),
                    ..ok.clone()
                },
                "new_split = 1",
            ),
            (
                ReshapeArgs {
                    local_len: -1,
                    ..ok.clone()
                },
                "local_len = -1",
            ),
            (ok.clone().with_target_len(17), "new_local_len = 17"),
            (
                ReshapeArgs {
                    gshape: vec![i64::MAX, 4],
                    ..ok.clone()
                },
                "int64",
            ),
            (
                ReshapeArgs {
                    elem_size: 0,
                    ..ok.clone()
                },
                "element size",
            ),
        ];
        for (args, needle) in cases {
            let msg = check_local(&args, 3).unwrap_err().to_string();
            assert!(msg.contains(needle) && msg.contains("rank 3"), "{msg}");
        }
    }

    #[test]
    fn rows_must_add_up() {
        assert!(check_rows_add_up("local_len", &[1, 2, 3], 6).is_ok());
        let msg = check_rows_add_up("local_len", &[1, 2], 6)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("add up to 3") && msg.contains("rank 1: 2"),
            "{msg}"
        );
    }

    #[test]
    fn every_fingerprint_entry_belongs_to_one_field() {
        let a = ReshapeArgs::new(8, &[4, 4], Some(0), 2, &[16], Some(0));
        assert_eq!(a.fingerprint().len(), FINGERPRINT_LEN);
        let mut start = 0;
        for field in FIELDS {
            for entry in start..start + field.width() {
                assert_eq!(Field::at(entry), Some(field), "entry {entry}");
            }
            start += field.width();
        }
        assert_eq!(Field::at(FINGERPRINT_LEN), None);
    }

    #[test]
    fn fingerprint_mismatch_names_the_argument() {
        let a = ReshapeArgs::new(8, &[4, 4], Some(0), 2, &[16], Some(0));
        let b = ReshapeArgs {
            new_split: None,
            ..a.clone()
        };
        let (fa, fb) = (a.fingerprint(), b.fingerprint());
        let min: Vec<i64> = fa.iter().zip(&fb).map(|(x, y)| *x.min(y)).collect();
        let max: Vec<i64> = fa.iter().zip(&fb).map(|(x, y)| *x.max(y)).collect();
        let msg = mismatch(&a, &min, &max, 1).unwrap().to_string();
        assert!(msg.contains("new_split") && msg.contains("rank 1"), "{msg}");
        assert!(mismatch(&a, &fa, &fa, 0).is_none());
        let c = ReshapeArgs {
            dtype: Some(9),
            ..a.clone()
        };
        let d = ReshapeArgs {
            dtype: Some(3),
            ..a.clone()
        };
        let (fc, fd) = (c.fingerprint(), d.fingerprint());
        let min: Vec<i64> = fc.iter().zip(&fd).map(|(x, y)| *x.min(y)).collect();
        let max: Vec<i64> = fc.iter().zip(&fd).map(|(x, y)| *x.max(y)).collect();
        assert!(
            mismatch(&c, &min, &max, 0)
                .unwrap()
                .to_string()
                .contains("dtype")
        );
    }
}
