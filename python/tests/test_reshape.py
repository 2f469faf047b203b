"""Random reshapes, every element checked against the global-index oracle."""

import numpy as np
import pytest

import distreshape as dr
from helpers import DTYPES, WORLD, balanced, block, offset, random_case

SEEDS = range(40)
#: Fewer cases for the dtype matrix: 13 dtypes times these, each at 1-4 ranks.
DTYPE_SEEDS = range(20)


def expected_output(new_shape, new_split, new_lens, dtype):
    if new_split is None:
        return block(new_shape, None, None, dtype)
    rows = offset(new_lens, WORLD.rank) if new_lens else balanced(new_shape[new_split])
    return block(new_shape, new_split, rows, dtype)


def input_block(gshape, split, lens, dtype):
    rows = offset(lens, WORLD.rank) if split is not None else None
    return block(gshape, split, rows, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("seed", DTYPE_SEEDS)
def test_random_reshape_every_dtype(seed, dtype):
    gshape, split, lens, new_shape, new_split, new_lens = random_case(seed)
    local = input_block(gshape, split, lens, dtype)
    new_len = new_lens[WORLD.rank] if new_lens else None
    out = dr.reshape(local, gshape, split, new_shape, new_split, new_local_len=new_len)
    expected = expected_output(new_shape, new_split, new_lens, dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_plan_attributes_and_reuse(seed):
    gshape, split, lens, new_shape, new_split, new_lens = random_case(seed)
    local_len = lens[WORLD.rank] if lens else None
    new_len = new_lens[WORLD.rank] if new_lens else None
    plan = dr.Plan(gshape, split, new_shape, new_split, "float64",
                   local_len=local_len, new_local_len=new_len)
    expected = expected_output(new_shape, new_split, new_lens, np.float64)
    assert plan.output_shape == tuple(new_shape)
    assert plan.local_output_shape == expected.shape
    assert plan.local_input_shape == input_block(gshape, split, lens, np.float64).shape
    assert plan.input_slab == (offset(lens, WORLD.rank) if split is not None else None)
    if new_split is None:
        assert plan.output_slab is None
    else:
        rows = offset(new_lens, WORLD.rank) if new_lens else balanced(new_shape[new_split])
        assert plan.output_slab == rows
    assert plan.stats.path in ("local", "exchange")
    assert "new shape" in str(plan)
    local = input_block(gshape, split, lens, np.float64)
    out = np.full(plan.local_output_shape, -1.0)
    for _ in range(3):
        assert plan.execute(local, out) is out
        np.testing.assert_array_equal(out, expected)


def test_inferred_extent_and_negative_axes():
    n = 4 * WORLD.size + 1
    rows = balanced(n)
    local = block((3, n, 2), 1, rows, np.int64)
    out = dr.reshape(local, (3, n, 2), -2, (-1, 2), -2)
    np.testing.assert_array_equal(out, block((3 * n, 2), 0, balanced(3 * n), np.int64))


def test_balanced_default_local_len():
    plan = dr.Plan((7, 5), 0, (35,), 0, np.int32)
    assert plan.input_slab == balanced(7)
    assert dr.balanced_slab(7, WORLD.size, WORLD.rank) == balanced(7)


@pytest.mark.parametrize("new_split", [None, 0, 1])
def test_replicated_input(new_split):
    whole = block((6, 10), None, None, np.float32)
    out = dr.reshape(whole, (6, 10), None, (12, 5), new_split)
    expected = block((12, 5), new_split, balanced((12, 5)[new_split]) if new_split is not None else None, np.float32)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("split", [0, 1, None])
def test_replicated_output(split):
    gshape = (2 * WORLD.size + 3, 4)
    rows = balanced(gshape[split]) if split is not None else None
    local = block(gshape, split, rows, np.complex128)
    out = dr.reshape(local, gshape, split, (4, -1), None)
    np.testing.assert_array_equal(out, block((4, gshape[0]), None, None, np.complex128))


def test_non_contiguous_input_is_copied_once():
    n = 3 * WORLD.size
    rows = balanced(n)
    transposed = np.asfortranarray(block((n, 4), 0, rows, np.float64))
    assert not transposed.flags.c_contiguous
    out = dr.reshape(transposed, (n, 4), 0, (4, n), 1)
    np.testing.assert_array_equal(out, block((4, n), 1, balanced(n), np.float64))


def test_out_is_written_in_place():
    plan = dr.Plan((WORLD.size * 2, 3), 0, (3, -1), 1, np.int16)
    local = block((WORLD.size * 2, 3), 0, plan.input_slab, np.int16)
    out = np.zeros(plan.local_output_shape, np.int16)
    result = dr.reshape(local, (WORLD.size * 2, 3), 0, (3, -1), 1, out=out)
    assert result is out
    np.testing.assert_array_equal(out, block((3, WORLD.size * 2), 1, plan.output_slab, np.int16))
