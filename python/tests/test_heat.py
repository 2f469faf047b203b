"""distreshape.heat.reshape equals heat.reshape (skipped without Heat)."""

import numpy as np
import pytest

ht = pytest.importorskip("heat")
torch = pytest.importorskip("torch")

import distreshape as dr  # noqa: E402
from distreshape.heat import reshape as dr_reshape  # noqa: E402
from helpers import WORLD, block, factorization, offset, partition  # noqa: E402

HEAT_DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_, np.complex64]


def heat_array(gshape, split, lens, dtype):
    """A Heat array of global-index values, with every rank's slab length `lens`."""
    rows = offset(lens, WORLD.rank) if split is not None else None
    local = torch.from_numpy(block(gshape, split, rows, dtype))
    if split is None:
        return ht.array(local, split=None)
    return ht.array(local, is_split=split)


def assert_same(ours, theirs):
    assert ours.gshape == theirs.gshape
    assert ours.split == theirs.split
    assert ours.dtype == theirs.dtype
    assert torch.equal(ours.lshape_map, theirs.lshape_map)
    assert ours.larray.dtype == theirs.larray.dtype
    assert torch.equal(ours.larray, theirs.larray)


@pytest.mark.parametrize("seed", range(30))
def test_equals_ht_reshape(seed):
    rng = np.random.default_rng(1000 + seed)
    total = int(rng.choice([6, 24, 60, 210, 360]))
    gshape = factorization(total, int(rng.integers(1, 4)), rng)
    new_shape = factorization(total, int(rng.integers(1, 4)), rng)
    split = int(rng.integers(len(gshape))) if rng.random() < 0.9 else None
    new_split = int(rng.integers(len(new_shape)))
    lens = partition(gshape[split], WORLD.size, rng) if split is not None else None
    dtype = HEAT_DTYPES[seed % len(HEAT_DTYPES)]
    x = heat_array(gshape, split, lens, dtype)
    assert_same(dr_reshape(x, new_shape, new_split=new_split), ht.reshape(x, new_shape, new_split=new_split))


def test_default_new_split_keeps_the_split():
    x = heat_array((4 * WORLD.size, 6), 0, [4] * WORLD.size, np.float64)
    assert_same(dr_reshape(x, (-1, 3)), ht.reshape(x, (-1, 3)))


def test_error_on_every_rank():
    x = heat_array((4 * WORLD.size, 6), 0, [4] * WORLD.size, np.float64)
    with pytest.raises(dr.Error) as caught:
        dr_reshape(x, (5, 7), new_split=0)
    assert caught.value.status_name == "DR_ERROR_INVALID_SHAPE"


@pytest.mark.parametrize("split", [0, None])
def test_nothing_moves_gives_a_view_as_heat_does(split):
    lens = [3] * WORLD.size if split is not None else None
    x = heat_array((3 * WORLD.size, 8), split, lens, np.float64)
    ours = dr_reshape(x, (-1, 2, 4), new_split=split)
    assert_same(ours, ht.reshape(x, (-1, 2, 4), new_split=split))
    assert ours.larray.data_ptr() == x.larray.data_ptr()
