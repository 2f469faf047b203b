//! Deciding that a redistribution moves nothing: every rank's output buffer is its
//! input buffer, element for element.

use crate::distribution::peers::Redistribution;
use crate::distribution::region::shared_elements;

/// True when, on every rank, the input box and the output box hold the same global
/// elements; both buffers then hold them in the same order (a box's C-order buffer is
/// in increasing global order), so nothing is sent and in place touches nothing.
///
/// Examples: unsplit trailing axes merged or split; a split axis of `n·k` rows split
/// into `(n, k)` with the split kept on `n` and every block boundary a multiple of
/// `k`. O(P · ndims) when the groups are 1↔1, splits or merges (see
/// [`shared_elements`]).
pub fn nothing_moves(plan: &Redistribution) -> bool {
    (0..plan.input().nranks()).all(|rank| {
        let (from, to) = (plan.input_region(rank), plan.output_region(rank));
        from.len() == to.len() && shared_elements(&from, &to) == from.len()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::grid::{BlockLengths, GridLayout};

    fn plan(input: GridLayout, output: GridLayout) -> Redistribution {
        Redistribution::new(input, output).unwrap()
    }

    #[test]
    fn merging_unsplit_trailing_axes_moves_nothing() {
        let input = GridLayout::balanced(&[10, 3, 4], &[4], &[Some(0), None, None], 4).unwrap();
        let output = GridLayout::balanced(&[10, 12], &[4], &[Some(0), None], 4).unwrap();
        assert!(nothing_moves(&plan(input.clone(), output.clone())));
        assert!(nothing_moves(&plan(output, input)));
    }

    #[test]
    fn splitting_a_split_axis_keeps_blocks_of_whole_rows() {
        let lengths = |l: &[i64]| vec![BlockLengths::Explicit(l.to_vec()), BlockLengths::Balanced];
        let input =
            GridLayout::new(&[12, 5], &[3], &[Some(0), None], &lengths(&[4, 0, 8]), 3).unwrap();
        let output = GridLayout::new(
            &[3, 4, 5],
            &[3],
            &[Some(0), None, None],
            &[
                BlockLengths::Explicit(vec![1, 0, 2]),
                BlockLengths::Balanced,
                BlockLengths::Balanced,
            ],
            3,
        )
        .unwrap();
        assert!(nothing_moves(&plan(input, output.clone())));
        let uneven =
            GridLayout::new(&[12, 5], &[3], &[Some(0), None], &lengths(&[5, 0, 7]), 3).unwrap();
        assert!(!nothing_moves(&plan(uneven, output)));
    }

    #[test]
    fn a_transpose_of_pencils_moves() {
        let x = GridLayout::balanced(&[4, 4, 4], &[2, 2], &[None, Some(0), Some(1)], 4).unwrap();
        let y = GridLayout::balanced(&[4, 4, 4], &[2, 2], &[Some(0), None, Some(1)], 4).unwrap();
        assert!(!nothing_moves(&plan(x.clone(), y)));
        assert!(nothing_moves(&plan(x.clone(), x)));
    }
}
