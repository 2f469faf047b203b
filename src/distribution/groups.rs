//! The common refinement of the two shapes of a reshape (NumPy's and DTensor's `view`
//! groups): consecutive input axes and consecutive output axes with the same product,
//! cut wherever the prefix products of both shapes are equal. The global flat index is
//! mixed-radix over the groups, whichever side's axes spell each group's digit.

use std::ops::Range;

use crate::core::error::{Error, Result};
use crate::distribution::layout::MAX_DIMS;
use crate::distribution::layout::checked_product;

/// One side of a reshape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReshapeSide {
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
    pub fn axes(&self, side: ReshapeSide) -> Range<usize> {
        match side {
            ReshapeSide::Input => self.input_axes.clone(),
            ReshapeSide::Output => self.output_axes.clone(),
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
    pub fn shape(&self, side: ReshapeSide) -> &[u64] {
        match side {
            ReshapeSide::Input => &self.input,
            ReshapeSide::Output => &self.output,
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
/// takes one non-unit axis from each side (when left), then the side with the
/// smaller product grows until both products agree, then absorbs the unit axes that
/// follow (the first group also those before it).
fn refine(input: &[u64], output: &[u64]) -> Vec<Group> {
    let (mut i, mut j) = (0, 0);
    let mut groups = Vec::new();
    while i < input.len() || j < output.len() {
        let (i0, j0) = (i, j);
        // Leading unit axes (only before the first group) join it.
        i += input[i..].iter().take_while(|&&n| n == 1).count();
        j += output[j..].iter().take_while(|&&n| n == 1).count();
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
pub(crate) mod tests {
    use super::*;
    use crate::distribution::subbox::tests::Lcg;

    /// A random shape pair with the same elements: small factors grouped into axes in
    /// two different orders, unit axes sprinkled in, sometimes a zero on both sides.
    pub fn shape_pair(rng: &mut Lcg) -> (Vec<u64>, Vec<u64>) {
        let primes = [1, 2, 2, 3, 5];
        let factors: Vec<u64> = (0..rng.below(5))
            .map(|_| primes[rng.below(5) as usize])
            .collect();
        let mut shuffled = factors.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let keep = rng.below(2) == 0;
        let mut input = group_into_axes(rng, &factors);
        let mut output = group_into_axes(rng, if keep { &factors } else { &shuffled });
        if rng.below(8) == 0 {
            let (i, o) = (
                rng.below(input.len() as u64 + 1),
                rng.below(output.len() as u64 + 1),
            );
            input.insert(i as usize, 0);
            output.insert(o as usize, 0);
        }
        (input, output)
    }

    fn group_into_axes(rng: &mut Lcg, factors: &[u64]) -> Vec<u64> {
        let mut axes = Vec::new();
        for &f in factors {
            match axes.last_mut() {
                Some(a) if rng.below(2) == 0 => *a *= f,
                _ => axes.push(f),
            }
        }
        axes
    }

    /// Every (input prefix, output prefix) of a group with equal products is the
    /// group's start or end: no finer cut exists, except one that would leave a group
    /// of unit axes only.
    fn check_finest(input: &[u64], output: &[u64], g: &Group) {
        let (a, b) = (&input[g.input_axes.clone()], &output[g.output_axes.clone()]);
        assert_eq!(a.iter().product::<u64>(), g.size);
        assert_eq!(b.iter().product::<u64>(), g.size);
        for i in 0..=a.len() {
            for j in 0..=b.len() {
                let p: u64 = a[..i].iter().product();
                if p == b[..j].iter().product::<u64>() {
                    assert!(
                        p == 1 || p == g.size,
                        "{input:?} {output:?} {g:?} cut at {i},{j}"
                    );
                }
            }
        }
    }

    #[test]
    fn random_groups_are_the_finest_common_refinement() {
        let mut rng = Lcg(5);
        for _ in 0..3000 {
            let (input, output) = shape_pair(&mut rng);
            let groups = Groups::new(&input, &output).unwrap();
            if input.contains(&0) {
                assert!(groups.groups().is_empty());
                continue;
            }
            let (mut i, mut j) = (0, 0);
            for g in groups.groups() {
                assert_eq!((g.input_axes.start, g.output_axes.start), (i, j));
                (i, j) = (g.input_axes.end, g.output_axes.end);
                check_finest(&input, &output, g);
                assert!(
                    g.size > 1 || groups.groups().len() == 1,
                    "{input:?} {output:?}"
                );
            }
            assert_eq!((i, j), (input.len(), output.len()), "{input:?} {output:?}");
        }
    }

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
