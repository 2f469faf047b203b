//! The common refinement of the two shapes of a reshape (NumPy's and DTensor's `view`
//! groups): consecutive input axes and consecutive output axes with the same product,
//! cut wherever the prefix products of both shapes are equal. The global flat index is
//! mixed-radix over the groups, whichever side's axes spell each group's digit.

use std::ops::Range;

use crate::args::{MAX_DIMS, checked_product};
use crate::error::{Error, Result};

/// One side of a reshape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The shape before the reshape.
    Input,
    /// The shape after the reshape.
    Output,
}

/// Consecutive input axes and consecutive output axes spanning the same digit of the
/// global flat index: 1↔1, a split (1↔many), a merge (many↔1) or many↔many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The input axes of the group.
    pub input_axes: Range<usize>,
    /// The output axes of the group.
    pub output_axes: Range<usize>,
    /// Product of the group's extents on either side (its digit's radix).
    pub size: u64,
}

impl Group {
    /// The group's axes on `side`.
    pub fn axes(&self, side: Side) -> Range<usize> {
        match side {
            Side::Input => self.input_axes.clone(),
            Side::Output => self.output_axes.clone(),
        }
    }
}

/// Two shapes with the same number of elements and their common refinement.
///
/// Axes of extent 1 join the group before them (or the first group). A zero-size
/// array has no groups: it holds nothing, so nothing is shared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Groups {
    input: Vec<u64>,
    output: Vec<u64>,
    total: u64,
    groups: Vec<Group>,
    /// `weights[k]`: product of the sizes of the groups after `k`.
    weights: Vec<u64>,
}

impl Groups {
    /// The groups of `input` reshaped to `output` (C order both).
    pub fn new(input: &[u64], output: &[u64]) -> Result<Groups> {
        let total = checked_total("input shape", input)?;
        if checked_total("output shape", output)? != total {
            return Err(Error::InvalidShape(format!(
                "input shape {input:?} and output shape {output:?} hold different numbers of elements"
            )));
        }
        let groups = if total == 0 {
            Vec::new()
        } else {
            refine(input, output)
        };
        let mut weights = vec![1; groups.len()];
        for k in (0..groups.len().saturating_sub(1)).rev() {
            weights[k] = weights[k + 1] * groups[k + 1].size;
        }
        Ok(Groups {
            input: input.to_vec(),
            output: output.to_vec(),
            total,
            groups,
            weights,
        })
    }

    /// The groups, in axis order.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Product of the sizes of the groups after group `k` (the weight of its digit).
    pub fn weight(&self, k: usize) -> u64 {
        self.weights[k]
    }

    /// The shape on `side`.
    pub fn shape(&self, side: Side) -> &[u64] {
        match side {
            Side::Input => &self.input,
            Side::Output => &self.output,
        }
    }

    /// Number of elements of the array.
    pub fn total(&self) -> u64 {
        self.total
    }
}

fn checked_total(name: &str, shape: &[u64]) -> Result<u64> {
    if shape.len() > MAX_DIMS {
        return Err(Error::InvalidShape(format!(
            "{name} has {} dimensions, more than the maximum {MAX_DIMS}",
            shape.len()
        )));
    }
    checked_product(shape).ok_or_else(|| {
        Error::InvalidShape(format!(
            "{name} {shape:?} holds more elements than fit in 64 bits"
        ))
    })
}

/// The common refinement of two shapes with the same nonzero product: each group
/// takes one axis from each side (when left), then the side with the smaller product
/// grows until both products agree, then absorbs the unit axes that follow.
fn refine(input: &[u64], output: &[u64]) -> Vec<Group> {
    let (mut i, mut j) = (0, 0);
    let mut groups = Vec::new();
    while i < input.len() || j < output.len() {
        let (i0, j0) = (i, j);
        let (mut pi, mut pj) = (1u64, 1u64);
        if i < input.len() {
            pi = input[i];
            i += 1;
        }
        if j < output.len() {
            pj = output[j];
            j += 1;
        }
        // Both prefix products divide the nonzero total, so the smaller side has an
        // axis left and every product fits in 64 bits.
        while pi != pj {
            if pi < pj {
                pi *= input[i];
                i += 1;
            } else {
                pj *= output[j];
                j += 1;
            }
        }
        i += input[i..].iter().take_while(|&&n| n == 1).count();
        j += output[j..].iter().take_while(|&&n| n == 1).count();
        groups.push(Group {
            input_axes: i0..i,
            output_axes: j0..j,
            size: pi,
        });
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(input: &[u64], output: &[u64]) -> Vec<(Range<usize>, Range<usize>, u64)> {
        let g = Groups::new(input, output).unwrap();
        g.groups()
            .iter()
            .map(|g| (g.input_axes.clone(), g.output_axes.clone(), g.size))
            .collect()
    }

    #[test]
    fn groups_cut_where_prefix_products_agree() {
        assert_eq!(
            spans(&[2, 3], &[2, 3]),
            vec![(0..1, 0..1, 2), (1..2, 1..2, 3)]
        );
        assert_eq!(spans(&[6], &[2, 3]), vec![(0..1, 0..2, 6)]);
        assert_eq!(
            spans(&[2, 3, 4], &[6, 4]),
            vec![(0..2, 0..1, 6), (2..3, 1..2, 4)]
        );
        assert_eq!(spans(&[6, 4], &[4, 6]), vec![(0..2, 0..2, 24)]);
        assert_eq!(
            spans(&[4, 6, 5], &[6, 4, 5]),
            vec![(0..2, 0..2, 24), (2..3, 2..3, 5)]
        );
    }

    #[test]
    fn unit_axes_join_a_neighbour() {
        assert_eq!(spans(&[1, 6], &[6]), vec![(0..2, 0..1, 6)]);
        assert_eq!(
            spans(&[2, 1, 3], &[2, 3, 1]),
            vec![(0..2, 0..1, 2), (2..3, 1..3, 3)]
        );
        assert_eq!(spans(&[1, 1], &[1]), vec![(0..2, 0..1, 1)]);
        assert_eq!(spans(&[], &[1, 1]), vec![(0..0, 0..2, 1)]);
        assert_eq!(spans(&[], &[]), vec![]);
    }

    #[test]
    fn zero_size_arrays_have_no_groups() {
        let g = Groups::new(&[0, 5], &[3, 0, 7]).unwrap();
        assert!(g.groups().is_empty());
        assert_eq!(g.total(), 0);
        let huge = Groups::new(&[0, u64::MAX, u64::MAX], &[0]).unwrap();
        assert_eq!(huge.total(), 0);
    }

    #[test]
    fn shapes_must_hold_the_same_elements() {
        assert!(matches!(
            Groups::new(&[2, 3], &[7]),
            Err(Error::InvalidShape(_))
        ));
        assert!(matches!(
            Groups::new(&[u64::MAX, 3], &[7]),
            Err(Error::InvalidShape(_))
        ));
    }

    #[test]
    fn weights_are_the_sizes_of_the_groups_after() {
        let g = Groups::new(&[2, 3, 4], &[2, 12]).unwrap();
        assert_eq!(g.groups().len(), 2);
        assert_eq!((g.weight(0), g.weight(1)), (12, 1));
    }
}
