"""Plans between process-grid layouts: every element checked against its global
index, the boxes against an independent computation, and the guarantees (each
output element arrives once; nothing is sent when nothing moves)."""

import pickle
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

import distreshape as dr
from helpers import DTYPES, WORLD, factorization, global_values, grid_box, random_layout
from test_errors import raises_everywhere

P = WORLD.size


def dims(ndims):
    """A balanced grid of `ndims` axes over every rank (MPI's choice)."""
    return tuple(MPI.Compute_dims(P, ndims))


def check_redistribution(in_layout, out_layout, expected_in_box, expected_out_box, dtype=np.int64, comm=None):
    """Plans `in_layout` -> `out_layout`, checks the boxes, executes and checks every
    element against the global index and that each output element arrived once."""
    comm = WORLD if comm is None else comm
    plan = dr.Plan.from_layouts(in_layout, out_layout, dtype, comm)
    assert plan.input_box == expected_in_box == in_layout.box(comm)
    assert plan.output_box == expected_out_box
    values = global_values(in_layout.shape, dtype)
    out = plan.execute(values[plan.input_box])
    np.testing.assert_array_equal(out, values.reshape(plan.output_shape)[expected_out_box])
    stats = plan.stats
    assert stats.bytes_received + stats.bytes_copied_locally == out.nbytes
    return plan, out


def layout_and_box(shape, grid_dims, axis_grid, lengths=None, rank=WORLD.rank):
    lengths = lengths or {}
    return dr.Layout(shape, grid_dims, axis_grid, lengths), grid_box(shape, grid_dims, axis_grid, lengths, rank)


@pytest.mark.parametrize("seed", range(60))
def test_random_layout_pairs(seed):
    rng = np.random.default_rng(1000 + seed)
    total = int(rng.choice([0, 1, 12, 60, 120, 360]))
    shape = factorization(total, int(rng.integers(1, 5)), rng)
    new_shape = factorization(total, int(rng.integers(1, 5)), rng)
    in_layout, in_box = layout_and_box(shape, *random_layout(shape, rng))
    out_grid, out_axes, out_lengths = random_layout(new_shape, rng)
    out_box = grid_box(new_shape, out_grid, out_axes, out_lengths, WORLD.rank)
    given = list(new_shape)
    inferred = int(rng.integers(len(new_shape)))
    if int(np.prod(given[:inferred] + given[inferred + 1:])) > 0 and rng.random() < 0.5:
        given[inferred] = -1
    out_layout = dr.Layout(given, out_grid, out_axes, out_lengths)
    plan, _ = check_redistribution(in_layout, out_layout, in_box, out_box)
    assert plan.output_shape == tuple(new_shape)


def test_bricks_to_x_pencils_and_back():
    shape = (9, 8, 7)
    bricks, brick_box = layout_and_box(shape, dims(3), (0, 1, 2))
    pencils, pencil_box = layout_and_box(shape, dims(2), (None, 0, 1))
    check_redistribution(bricks, pencils, brick_box, pencil_box)
    check_redistribution(pencils, bricks, pencil_box, brick_box)


def test_pencil_transposes_on_a_cartesian_communicator():
    cart = WORLD.Create_cart(dims(2), reorder=True)
    try:
        shape = (6, 10, 7)
        rank = cart.Get_rank()
        x, x_box = dr.Layout.for_cart(shape, cart, (None, 0, 1)), grid_box(shape, cart.dims, (None, 0, 1), {}, rank)
        y, y_box = dr.Layout.for_cart(shape, cart, (0, None, 1)), grid_box(shape, cart.dims, (0, None, 1), {}, rank)
        z, z_box = dr.Layout.for_cart(shape, cart, (0, 1, None)), grid_box(shape, cart.dims, (0, 1, None), {}, rank)
        assert x.grid_dims == tuple(cart.dims)
        check_redistribution(x, y, x_box, y_box, comm=cart)
        check_redistribution(y, z, y_box, z_box, comm=cart)
        check_redistribution(z, x, z_box, x_box, comm=cart)
    finally:
        cart.Free()


def test_two_dimensional_blocks_to_row_slabs():
    shape = (2 * P + 1, 3 * P + 2)
    blocks, block_box = layout_and_box(shape, dims(2), (0, 1))
    rows, row_box = layout_and_box(shape, (P,), (0, None))
    check_redistribution(blocks, rows, block_box, row_box, dtype=np.complex128)


def test_replicated_grid_axes():
    grid = dims(2)
    shape = (5, 2 * P)
    # Axis 1 splits over grid axis 1; grid axis 0 splits nothing: it replicates.
    replicated, replicated_box = layout_and_box(shape, grid, (None, 1))
    slabs, slab_box = layout_and_box(shape, (P,), (None, 0))
    check_redistribution(replicated, slabs, replicated_box, slab_box)
    # Every rank receives the whole array.
    whole, whole_box = layout_and_box(shape, (P,), (None, None))
    plan, _ = check_redistribution(slabs, whole, slab_box, whole_box)
    assert plan.output_box == (slice(0, 5), slice(0, 2 * P))


def test_uneven_and_empty_blocks_with_explicit_lengths():
    grid = dims(2)
    shape = (7, 3 * P + 1)
    # Everything of axis 0 in the last block of its grid axis, the rest empty.
    rows_first = {0: [0] * (grid[0] - 1) + [7], -1: [shape[1]] + [0] * (grid[1] - 1)}
    uneven, uneven_box = layout_and_box(shape, grid, (0, 1), {0: rows_first[0], 1: rows_first[-1]})
    assert dr.Layout(shape, grid, (0, 1), rows_first) == uneven
    assert dr.Layout(shape, grid, (0, 1), [rows_first[0], rows_first[-1]]) == uneven
    columns = [(shape[1] + r) % 3 for r in range(P)]
    columns[-1] += shape[1] - sum(columns)
    slabs, slab_box = layout_and_box(shape, (P,), (None, 0), {1: columns})
    check_redistribution(uneven, slabs, uneven_box, slab_box, dtype=np.float32)


def test_shape_change_with_minus_one_on_pencils():
    grid = dims(2)
    shape = (4, 3 * grid[0], 2 * grid[1])
    pencils, pencil_box = layout_and_box(shape, grid, (None, 0, 1))
    new_shape = (4 * 3 * grid[0], 2 * grid[1])
    out_layout = dr.Layout((-1, new_shape[1]), grid, (0, 1))
    out_box = grid_box(new_shape, grid, (0, 1), {}, WORLD.rank)
    plan, _ = check_redistribution(pencils, out_layout, pencil_box, out_box)
    assert plan.output_shape == new_shape


def test_nothing_moves_nothing_is_sent():
    # Merging unsplit trailing axes of a pencil keeps every element where it is.
    grid = dims(2)
    shape = (2 * grid[0] + 1, 3 * grid[1], 4, 5)
    pencils, box = layout_and_box(shape, grid, (0, 1, None, None))
    merged = dr.Layout((shape[0], shape[1], -1), grid, (0, 1, None))
    merged_box = grid_box((shape[0], shape[1], 20), grid, (0, 1, None), {}, WORLD.rank)
    plan, out = check_redistribution(pencils, merged, box, merged_box)
    assert not plan.is_collective
    assert (plan.stats.bytes_sent, plan.stats.bytes_received) == (0, 0)
    buf = global_values(shape)[box].copy()
    view = plan.execute_in_place(buf)
    np.testing.assert_array_equal(view, out)


@pytest.mark.parametrize("seed", range(12))
def test_in_place(seed):
    rng = np.random.default_rng(2000 + seed)
    shape = factorization(120, int(rng.integers(2, 4)), rng)
    new_shape = factorization(120, int(rng.integers(1, 4)), rng)
    in_layout, in_box = layout_and_box(shape, *random_layout(shape, rng))
    out_args = random_layout(new_shape, rng)
    out_box = grid_box(new_shape, *out_args, WORLD.rank)
    plan = dr.Plan.from_layouts(in_layout, dr.Layout(new_shape, *out_args), np.float64)
    values = global_values(shape, np.float64)
    local = values[in_box]
    buf = np.full(max(local.size, int(np.prod(plan.local_output_shape))), -1.0)
    buf[: local.size] = local.ravel()
    view = plan.execute_in_place(buf)
    assert np.shares_memory(view, buf) or view.size == 0
    np.testing.assert_array_equal(view, values.reshape(new_shape)[out_box])


def test_non_blocking():
    shape = (64, 32 * P, 16)
    x, x_box = layout_and_box(shape, dims(2), (None, 0, 1))
    y, y_box = layout_and_box(shape, dims(2), (0, None, 1))
    plan = dr.Plan.from_layouts(x, y, np.float64)
    values = global_values(shape, np.float64)
    out = np.empty(plan.local_output_shape)
    request = plan.execute_begin(values[x_box], out)
    while not request.test():
        pass
    assert request.wait() is out and request.completed
    np.testing.assert_array_equal(out, values[y_box])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype(dtype):
    shape = (3, 2 * P + 1, 5)
    x, x_box = layout_and_box(shape, dims(2), (None, 0, 1))
    out = dr.Layout((5, -1), (P,), (None, 0))
    out_box = grid_box((5, 3 * (2 * P + 1)), (P,), (None, 0), {}, WORLD.rank)
    values = global_values(shape, dtype)
    result = dr.redistribute(values[x_box], x, out)
    assert result.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(result, values.reshape(5, -1)[out_box])


def test_boxes_of_every_rank_tile_the_array():
    grid = dims(3)
    shape = (5, 4, 3)
    layout = dr.Layout(shape, grid, (2, None, 0), {2: [0] * (grid[0] - 1) + [3]})
    covered = np.zeros(shape, np.int64)
    for rank in range(P):
        box = layout.box(rank=rank)
        assert box == grid_box(shape, grid, (2, None, 0), layout.lengths, rank)
        assert layout.local_shape(rank=rank) == covered[box].shape
        covered[box] += 1
    # Each element is held by the ranks of its replica group: grid axis 1 replicates.
    np.testing.assert_array_equal(covered, np.full(shape, grid[1]))


def test_layout_is_a_value():
    layout = dr.Layout([4, 6], np.array([P]), (None, np.int64(0)), {-1: [6] + [0] * (P - 1)})
    assert layout.shape == (4, 6) and layout.grid_dims == (P,) and layout.axis_grid == (None, 0)
    assert layout.lengths == {1: (6,) + (0,) * (P - 1)}
    assert eval(repr(layout), {"Layout": dr.Layout}) == layout
    assert pickle.loads(pickle.dumps(layout)) == layout
    assert WORLD.bcast(layout) == layout
    assert hash(layout) == hash(dr.Layout((4, 6), (P,), [None, 0], [None, [6] + [0] * (P - 1)]))
    assert layout != dr.Layout((4, 6), (P,), (None, 0))
    with pytest.raises(AttributeError):
        layout.shape = (24,)
    layout.lengths[1] = (1,)
    assert layout.lengths == {1: (6,) + (0,) * (P - 1)}


def test_slab_plans_have_boxes():
    plan = dr.Plan((2 * P, 3), 0, (3, -1), 1, np.int8)
    assert plan.input_box == (plan.input_slab, slice(0, 3))
    assert plan.output_box == (slice(0, 3), plan.output_slab)


LAST = P - 1


def pencils(shape=(4, 6, 8)):
    return dr.Layout(shape, dims(2), (None, 0, 1))


def test_grid_product_is_not_the_size():
    wrong = dr.Layout((4, 6, 8), (P + 1,), (0, None, None))
    message = raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(wrong, pencils(), "f8"))
    assert f"grid_dims = [{P + 1}]" in message and "input layout" in message and "rank " in message
    with pytest.raises(dr.Error, match=f"rank {WORLD.rank}"):
        wrong.box()


def test_grid_product_wrong_on_one_rank():
    grid = (P + 1,) if WORLD.rank == LAST else (P,)
    out = dr.Layout((4, 6, 8), grid, (None, 0, None))
    message = raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(pencils(), out, "f8"))
    assert f"rank {LAST}" in message and "output layout" in message


def test_grid_axis_used_twice():
    twice = dr.Layout((4, 6, 8), (P, 1), (0, None, 0))
    message = raises_everywhere("DR_ERROR_INVALID_SPLIT", lambda: dr.Plan.from_layouts(pencils(), twice, "f8"))
    assert "axis_grid[2] = 0" in message and "already used by axis 0" in message


def test_lengths_that_do_not_add_up():
    bad = dr.Layout((4, 6, 8), (P,), (0, None, None), {0: [5] + [0] * (P - 1)})
    message = raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(bad, pencils(), "f8"))
    assert "add up to 5, not the extent 4" in message


def test_wrong_number_of_lengths():
    bad = dr.Layout((4, 6, 8), (P,), (0, None, None), {0: [4] * (P + 1)})
    message = raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(pencils(), bad, "f8"))
    assert f"has {P + 1} entries but grid axis 0 has {P} coordinates" in message


def test_lengths_of_an_unsplit_axis_or_too_many_axes():
    unsplit = dr.Layout((4, 6, 8), (P,), (0, None, None), {1: [6]})
    raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(unsplit, pencils(), "f8"), match="axis 1, which is not split")
    per_axis = dr.Layout((4, 6, 8), (P,), (0, None, None), [[4]])
    raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(per_axis, pencils(), "f8"), match="has 1 entries")


def test_two_minus_ones_and_minus_one_in_the_input():
    two = dr.Layout((-1, -1), (P,), (0, None))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.Plan.from_layouts(pencils(), two, "f8"), match="more than one -1")
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.Plan.from_layouts(two, pencils(), "f8"), match="shape[0] = -1")
    with pytest.raises(dr.Error, match="layout: shape"):
        two.box()


def test_element_counts_differ():
    other = dr.Layout((4, 6, 9), (P,), (0, None, None))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.Plan.from_layouts(pencils(), other, "f8"))


def test_layouts_differ_between_ranks():
    if P == 1:
        pytest.skip("needs two ranks")
    out = dr.Layout((4, 6, 8), (P,), (0, None, None) if WORLD.rank else (None, 0, None))
    raises_everywhere("DR_ERROR_INCONSISTENT_ARGUMENTS", lambda: dr.Plan.from_layouts(pencils(), out, "f8"), match="layouts differ")


@pytest.mark.parametrize(
    "arguments, status, text",
    [
        (("abc", (P,), (0,)), "DR_ERROR_INVALID_SHAPE", "shape = 'abc'"),
        (((4, 6), (P, "x"), (0, None)), "DR_ERROR_INVALID_DISTRIBUTION", "grid_dims[1] = 'x'"),
        (((4, 6), (P,), (-1, None)), "DR_ERROR_INVALID_SPLIT", "axis_grid[0] = -1"),
        (((4, 6), (P,), 0), "DR_ERROR_INVALID_SPLIT", "axis_grid = 0"),
        (((4, 6), (P,), (0, None), {5: [4]}), "DR_ERROR_INVALID_DISTRIBUTION", "lengths given for axis 5"),
        (((4, 6), (P,), (0, None), {0: [4], -2: [4]}), "DR_ERROR_INVALID_DISTRIBUTION", "axis 0 twice"),
        (((4, 6), (P,), (0, None), [4, 6]), "DR_ERROR_INVALID_DISTRIBUTION", "lengths[0] = 4"),
        (((4, 1 << 64), (P,), (0, None)), "DR_ERROR_INVALID_SHAPE", "does not fit in 64 bits"),
    ],
)
def test_unreadable_layout_on_one_rank(arguments, status, text):
    bad = dr.Layout(*arguments)
    layout = bad if WORLD.rank == LAST else dr.Layout((4, 6), (P,), (0, None))
    message = raises_everywhere(status, lambda: dr.Plan.from_layouts(layout, dr.Layout((24,), (P,), (0,)), "f8"))
    assert text in message
    if WORLD.rank == LAST:
        assert f"rank {LAST}" in message
    with pytest.raises(dr.Error, match="layout"):
        bad.box()


def test_not_a_layout_or_not_cartesian():
    raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts((4, 6), pencils(), "f8"), match="in_layout = (4, 6)")
    not_cart = dr.Layout.for_cart((4, 6, 8), WORLD, (None, 0, None))
    raises_everywhere("DR_ERROR_INVALID_COMMUNICATOR", lambda: dr.Plan.from_layouts(pencils(), not_cart, "f8"), match="not a Cartesian")


def test_grid_differs_from_the_cartesian_dims():
    if P < 2:
        pytest.skip("a 1 x 1 grid has one arrangement only")
    cart = WORLD.Create_cart((P, 1))
    try:
        swapped = dr.Layout((4, 6, 8), (1, P), (None, 0, 1))
        raises_everywhere("DR_ERROR_INVALID_DISTRIBUTION", lambda: dr.Plan.from_layouts(swapped, swapped, "f8", cart), match="Cartesian")
        with pytest.raises(dr.Error, match="Cartesian"):
            swapped.box(cart)
    finally:
        cart.Free()


def test_wrong_local_block_on_one_rank():
    layout = pencils()
    values = global_values(layout.shape, np.float64)
    local = values[layout.box()]
    if WORLD.rank == LAST:
        local = np.zeros(local.shape + (1,))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: dr.redistribute(local, layout, dr.Layout((-1,), (P,), (0,))), match="input array")


def test_unsupported_dtype():
    raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: dr.Plan.from_layouts(pencils(), pencils(), np.float16))
    raises_everywhere("DR_ERROR_INVALID_DTYPE", lambda: dr.Plan.from_layouts(pencils(), pencils(), "no dtype"))


def test_box_of_a_rank_that_does_not_exist():
    for rank in (-1, P, "0"):
        with pytest.raises(dr.Error, match="is not one of"):
            pencils().box(rank=rank)


def test_readme_example():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    example = readme.split("```python\n")[1].split("```")[0]
    exec(compile(example, "README.md", "exec"), {"__name__": "readme_example"})
