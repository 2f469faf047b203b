//! Property tests over arbitrary, mostly invalid, arguments (the equivalent of a fuzz
//! run over the validator and planner): validation never panics or overflows (the
//! tests run with overflow checks), and every accepted reshape plans volumes that
//! account for every element exactly once. Run longer with
//! `PROPTEST_CASES=1000000 cargo test --release --test validation_props`.

use distreshape::testing::RankPlan;
use distreshape::testing::{MAX_DIMS, ReshapeArgs, check_local, check_rows_add_up};
use proptest::prelude::*;

/// Extents from tiny to near the int64 limits, and negative ones.
fn extent() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..6,
        1 => -3i64..0,
        1 => (1i64 << 20)..(1i64 << 33),
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => (1i64 << 62)..i64::MAX,
    ]
}

fn args() -> impl Strategy<Value = (ReshapeArgs, usize)> {
    (
        prop::collection::vec(extent(), 0..=MAX_DIMS + 2),
        prop::collection::vec(
            prop_oneof![4 => extent(), 1 => Just(-1i64)],
            0..=MAX_DIMS + 2,
        ),
        prop::option::of(0usize..36),
        prop::option::of(0usize..36),
        prop_oneof![1usize..17, Just(0usize), Just(usize::MAX / 2)],
        extent(),
        1usize..9,
    )
        .prop_map(
            |(gshape, new_shape, split, new_split, elem_size, local_len, p)| {
                let args = ReshapeArgs {
                    elem_size,
                    gshape,
                    split,
                    local_len,
                    new_shape,
                    new_split,
                    target: distreshape::Target::Balanced,
                    dtype: None,
                    notation: Default::default(),
                };
                (args, p)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10000))]

    #[test]
    fn validation_and_planning_never_panic_and_conserve_elements((args, p) in args()) {
        let Ok(first) = check_local(&args, 0) else { return Ok(()) };
        // Give rank 0 everything along the split (the other ranks hold 0 rows).
        let extent = first.split.map_or(0, |a| first.gshape[a]);
        let lens: Vec<u64> = (0..p).map(|r| if r == 0 { extent } else { 0 }).collect();
        if first.split.is_some() {
            prop_assert!(check_rows_add_up("local_len", &lens, extent).is_ok());
        }
        let total = first.total();
        let (mut sent, mut received, mut kept) = (0u128, 0u128, 0u128);
        for rank in 0..p {
            let mine = ReshapeArgs { local_len: lens[rank] as i64, ..args.clone() };
            let checked = check_local(&mine, rank).expect("accepted on rank 0, so on every rank");
            let plan = RankPlan::new(&checked, &lens, None, rank).expect("planning allocates O(p)");
            let stats = plan.stats();
            let size = args.elem_size as u128;
            sent += u128::from(stats.bytes_sent) / size;
            received += u128::from(stats.bytes_received) / size;
            kept += u128::from(stats.bytes_copied_locally) / size;
            prop_assert_eq!(
                u128::from(plan.output_elems()),
                (u128::from(stats.bytes_received) + u128::from(stats.bytes_copied_locally)) / size
            );
        }
        prop_assert_eq!(sent, received);
        let copies = if first.new_split.is_some() { 1 } else { p as u128 };
        if first.split.is_some() {
            prop_assert_eq!(sent + kept, u128::from(total) * copies);
        } else {
            prop_assert_eq!(kept, u128::from(total) * copies);
        }
    }
}

#[test]
fn extents_near_int64_limits() {
    let ok = |gshape: &[i64], size| {
        check_local(&ReshapeArgs::new(size, gshape, None, 0, &[-1], None), 0)
    };
    assert!(ok(&[1 << 31, 1 << 31], 1).is_ok());
    assert!(ok(&[i64::MAX], 1).is_ok());
    assert!(
        ok(&[i64::MAX], 2)
            .unwrap_err()
            .to_string()
            .contains("int64")
    );
    assert!(
        ok(&[1 << 32, 1 << 32], 1)
            .unwrap_err()
            .to_string()
            .contains("int64")
    );
    assert!(ok(&[i64::MAX, 2], 1).is_err());
    assert!(ok(&[i64::MAX, 0], 8).is_ok());
}
