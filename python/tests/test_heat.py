"""distreshape.heat.reshape equals heat.reshape: values, metadata, signature, exceptions
(skipped without Heat)."""

import numpy as np
import pytest

ht = pytest.importorskip("heat")
torch = pytest.importorskip("torch")

import distreshape as dr  # noqa: E402
from distreshape.heat import _default_split, _heat_version, install, uninstall  # noqa: E402
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


def assert_global_index(ours, dtype):
    """Every element of every rank's block of `ours` is its global C-order flat index."""
    rows = None
    if ours.split is not None:
        lens = ours.lshape_map[:, ours.split].tolist()
        rows = offset(lens, WORLD.rank)
    want = block(ours.gshape, ours.split, rows, dtype)
    assert ours.larray.shape == want.shape
    assert np.array_equal(ours.larray.numpy(), want)


@pytest.mark.parametrize("seed", range(30))
def test_equals_ht_reshape(seed):
    rng = np.random.default_rng(1000 + seed)
    total = int(rng.choice([6, 24, 60, 210, 360]))
    gshape = factorization(total, int(rng.integers(1, 4)), rng)
    new_shape = factorization(total, int(rng.integers(1, 4)), rng)
    split = int(rng.integers(len(gshape))) if rng.random() < 0.9 else None
    new_split = [None, int(rng.integers(len(new_shape))), -1 - int(rng.integers(len(new_shape)))][seed % 3]
    lens = partition(gshape[split], WORLD.size, rng) if split is not None else None
    dtype = HEAT_DTYPES[seed % len(HEAT_DTYPES)]
    ours = dr_reshape(heat_array(gshape, split, lens, dtype), new_shape, new_split=new_split)
    assert_same(ours, ht.reshape(heat_array(gshape, split, lens, dtype), new_shape, new_split=new_split))
    assert_global_index(ours, dtype)


def test_same_number_of_axes_keeps_the_split():
    x = heat_array((4 * WORLD.size, 6), 0, [4] * WORLD.size, np.float64)
    ours = dr_reshape(x, (-1, 3))
    assert ours.split == 0
    assert_same(ours, ht.reshape(x, (-1, 3)))
    assert_global_index(ours, np.float64)


@pytest.mark.parametrize("new_split, axis", [(-1, 1), (-2, 0)])
def test_negative_new_split_is_normalised(new_split, axis):
    """The issue's case: (4, 5, 6) split along 0 -> (4, 30), new_split=-1."""
    x = heat_array((4, 5, 6), 0, [4] + [0] * (WORLD.size - 1), np.float64)
    ours = dr_reshape(x, (4, 30), new_split=new_split)
    assert ours.split == axis
    assert_same(ours, ht.reshape(heat_array((4, 5, 6), 0, [4] + [0] * (WORLD.size - 1), np.float64),
                                 (4, 30), new_split=new_split))
    assert_global_index(ours, np.float64)
    assert np.array_equal(ours.numpy(), np.arange(120.0).reshape(4, 30))  # Heat's own gather


@pytest.mark.parametrize("gshape, new_shape", [((3, 2 * WORLD.size, 5), (-1,)), ((3, 2 * WORLD.size, 5), (3, 2, -1, 5)),
                                               ((6, 2 * WORLD.size), (2, 3, -1))])
def test_new_split_none_gives_split_0_when_the_axes_change(gshape, new_shape):
    """Heat 1.5 and later: split 0 when the number of axes changes (the input split along 1)."""
    lens = [2] * WORLD.size
    ours = dr_reshape(heat_array(gshape, 1, lens, np.int64), new_shape)
    assert ours.split == 0
    assert_same(ours, ht.reshape(heat_array(gshape, 1, lens, np.int64), new_shape))
    assert_global_index(ours, np.int64)


@pytest.mark.parametrize("version, want", [((1, 3), 1), ((1, 4), 1), ((1, 5), 0), ((1, 8), 0), ((2, 0), 0)])
def test_default_split_follows_the_heat_version(version, want):
    """Heat 1.3 and 1.4 keep the input's split when the number of axes changes."""
    assert _default_split(1, 3, 2, version) == want
    assert _default_split(1, 3, 3, version) == 1
    assert _default_split(None, 3, 2, version) is None


def test_installed_version_rule():
    x = heat_array((3, 2 * WORLD.size, 5), 1, [2] * WORLD.size, np.int64)
    want = 0 if _heat_version() >= (1, 5) else 1
    assert dr_reshape(x, (3, -1)).split == want


def shape_forms():
    """(name, arguments) of every form Heat's reshape takes the shape in."""
    return [
        ("ints", (2 * WORLD.size, 3, 4)),
        ("tuple", ((2 * WORLD.size, 3, 4),)),
        ("list", ([2 * WORLD.size, 3, 4],)),
        ("torch.Size", (torch.Size([2 * WORLD.size, 3, 4]),)),
        ("tensor", (torch.tensor([2 * WORLD.size, 3, 4]),)),
        ("DNDarray", (ht.array([2 * WORLD.size, 3, 4]),)),
        ("numpy", (np.array([2 * WORLD.size, 3, 4]),)),
    ]


@pytest.mark.parametrize("form", range(7))
def test_shape_forms(form):
    name, shape = shape_forms()[form]
    lens = [6] * WORLD.size
    ours = dr_reshape(heat_array((6 * WORLD.size, 4), 0, lens, np.float32), *shape, new_split=1)
    theirs = ht.reshape(heat_array((6 * WORLD.size, 4), 0, lens, np.float32), *shape, new_split=1)
    assert ours.gshape == (2 * WORLD.size, 3, 4), name
    assert_same(ours, theirs)
    assert_global_index(ours, np.float32)


def test_other_keywords_are_ignored_as_heat_ignores_them():
    x = heat_array((2 * WORLD.size, 6), 0, [2] * WORLD.size, np.int32)
    ours = dr_reshape(x, -1, dtype=ht.float64, new_split=0)
    assert_same(ours, ht.reshape(heat_array((2 * WORLD.size, 6), 0, [2] * WORLD.size, np.int32), -1,
                                 dtype=ht.float64, new_split=0))
    assert_global_index(ours, np.int32)


BAD_ARGUMENTS = [
    ("size", ((5, 7),), {"new_split": 0}, ValueError),
    ("two -1", ((-1, -1),), {}, ValueError),
    ("shape type", ("ab",), {}, TypeError),
    ("float extent", ((2.5, 4),), {}, TypeError),
    ("split range", ((-1, 3),), {"new_split": 2}, ValueError),
    ("negative split range", ((-1, 3),), {"new_split": -3}, ValueError),
    ("split type", ((-1, 3),), {"new_split": 1.0}, TypeError),
]


@pytest.mark.parametrize("case", range(len(BAD_ARGUMENTS)))
def test_heat_exception_types(case):
    name, shape, kwargs, kind = BAD_ARGUMENTS[case]
    x = heat_array((4 * WORLD.size, 6), 0, [4] * WORLD.size, np.float64)
    with pytest.raises(kind) as ours:
        dr_reshape(x, *shape, **kwargs)
    with pytest.raises(kind) as theirs:
        ht.reshape(x, *shape, **kwargs)
    assert str(ours.value) == str(theirs.value), name


def test_not_a_dndarray_is_a_type_error():
    with pytest.raises(TypeError, match="must be a DNDarray"):
        dr_reshape(np.zeros((2, 3)), (3, 2))


def test_one_rank_bad_shape_raises_on_every_rank():
    """Only the last rank passes a shape that does not fit: every rank raises its
    ValueError, and no rank is left waiting."""
    x = heat_array((4 * WORLD.size, 6), 0, [4] * WORLD.size, np.float64)
    shape = (5, 7) if WORLD.rank == WORLD.size - 1 else (-1, 3)
    with pytest.raises(ValueError, match="cannot reshape array"):
        dr_reshape(x, shape)


def test_ranks_disagreeing_on_valid_shapes_raise_on_every_rank():
    if WORLD.size == 1:
        pytest.skip("needs two ranks")
    x = heat_array((4 * WORLD.size, 6), 0, [4] * WORLD.size, np.float64)
    shape = (-1, 3) if WORLD.rank == 0 else (-1, 2)
    with pytest.raises(dr.Error) as caught:
        dr_reshape(x, shape)
    assert caught.value.status_name == "DR_ERROR_INCONSISTENT_ARGUMENTS"


def test_float16_is_handed_to_heat():
    x = ht.array(torch.arange(4.0 * WORLD.size, dtype=torch.float16).reshape(-1, 2), split=0)
    ours = dr_reshape(x, (2, -1), new_split=-1)
    assert ours.split == 1 and ours.dtype == ht.float16
    assert np.array_equal(ours.numpy(), np.arange(4.0 * WORLD.size, dtype=np.float16).reshape(2, -1))


def test_install_routes_every_binding_and_uninstall_restores_them():
    from heat.core import manipulations

    own, method = manipulations.reshape, ht.DNDarray.reshape
    install()
    install()  # idempotent
    try:
        assert ht.reshape is dr_reshape and manipulations.reshape is dr_reshape
        x = heat_array((4, 6 * WORLD.size), 1, [6] * WORLD.size, np.float64)
        ours = x.reshape(2, -1, new_split=-1)
        assert ours.split == 1 and x.split == 1  # Heat's own would resplit x to 0
        assert_global_index(ours, np.float64)
    finally:
        uninstall()
    uninstall()  # idempotent
    assert ht.reshape is own and manipulations.reshape is own and ht.DNDarray.reshape is method


@pytest.mark.parametrize("split", [0, None])
def test_nothing_moves_gives_a_view_as_heat_does(split):
    lens = [3] * WORLD.size if split is not None else None
    x = heat_array((3 * WORLD.size, 8), split, lens, np.float64)
    ours = dr_reshape(x, (-1, 2, 4), new_split=split)
    assert_same(ours, ht.reshape(x, (-1, 2, 4), new_split=split))
    assert ours.larray.data_ptr() == x.larray.data_ptr()
    assert_global_index(ours, np.float64)


@pytest.mark.parametrize("seed", range(12))
def test_non_contiguous_local_tensors_are_read_where_they_lie(seed):
    """A DNDarray whose local tensor is a transposed or sliced torch view (on
    some or all ranks) reshapes as ht.reshape does, and the view is not copied."""
    rng = np.random.default_rng(2000 + seed)
    rows = [int(x) for x in partition(12, WORLD.size, rng)]
    gshape, new_shape = (12, 5, 4), [int(x) for x in factorization(240, int(rng.integers(1, 4)), rng)]
    first = offset(rows, WORLD.rank)
    dense = torch.from_numpy(block(gshape, 0, first, np.float64))
    strided_here = seed % 3 != 1 or WORLD.rank % 2 == 0
    if strided_here:
        base = torch.full((rows[WORLD.rank], 4, 5 + 2), -1.0, dtype=torch.float64)
        view = base[:, :, 1:6].transpose(1, 2)  # (rows, 5, 4), neither contiguous nor dense
        view.copy_(dense)
    else:
        view = dense
    a = ht.array(view, is_split=0)
    assert a.larray.data_ptr() == view.data_ptr(), "Heat kept the local tensor"
    new_split = int(rng.integers(len(new_shape)))
    ours = dr_reshape(a, new_shape, new_split=new_split)
    theirs = ht.reshape(ht.array(dense.clone(), is_split=0), new_shape, new_split=new_split)
    assert_same(ours, theirs)
    if strided_here:
        assert torch.equal(base[:, :, 0], torch.full_like(base[:, :, 0], -1.0)), "the padding was touched"
