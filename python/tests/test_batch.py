"""Batches: `Plan.execute_many` and `Plan.execute_many_begin` moving k fields
through one plan in one exchange. Field f holds the global C-order indices plus
f * FIELD_SHIFT; every element of every field is checked, a sentinel after each
output buffer, the inputs unchanged. Refusals (a k that differs between ranks, no
fields, counts that differ, an array of the wrong shape or strides on one rank,
fields sharing memory) raise the same error on every rank."""

import numpy as np
import pytest
from mpi4py import MPI

import distreshape as dr
from helpers import DTYPES, WORLD, as_values, balanced, grid_box
from test_errors import raises_everywhere

P = WORLD.size
LAST = P - 1
ROWS, COLS = 37, 5
FIELD_SHIFT = 1000
SENTINEL = -123


def field_values(shape, f, dtype):
    """The global array of `shape` of field f."""
    indices = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return as_values(indices + f * FIELD_SHIFT, dtype)


def slab_plan(dtype):
    """(37, 5) split along axis 0 -> (5, 37) split along axis 1."""
    return dr.Plan((ROWS, COLS), 0, (COLS, ROWS), 1, dtype)


def slab_input(f, dtype):
    return np.ascontiguousarray(field_values((ROWS, COLS), f, dtype)[balanced(ROWS)])


def slab_output(f, dtype):
    return field_values((COLS, ROWS), f, dtype)[:, balanced(ROWS)]


def with_sentinel(shape, dtype):
    """`(buffer, out)`: an output array of `shape` at the start of a buffer one
    element longer, that element a sentinel (every other element too)."""
    n = int(np.prod(shape))
    buffer = np.full(n + 1, SENTINEL).astype(dtype)
    return buffer, buffer[:n].reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 3])
def test_fields_into_given_outputs(dtype, k):
    plan = slab_plan(dtype)
    locals_ = [slab_input(f, dtype) for f in range(k)]
    before = [a.copy() for a in locals_]
    buffers, outs = zip(*(with_sentinel(plan.local_output_shape, dtype) for _ in range(k)))
    sentinel = buffers[0][-1]
    for _ in range(2):
        result = plan.execute_many(locals_, outs)
        assert len(result) == k and all(r is o for r, o in zip(result, outs))
        for f in range(k):
            np.testing.assert_array_equal(outs[f], slab_output(f, dtype))
            assert buffers[f][-1] == sentinel
            np.testing.assert_array_equal(locals_[f], before[f])


def test_new_outputs_and_one_array_of_fields():
    plan = slab_plan(np.float64)
    stacked = np.stack([slab_input(f, np.float64) for f in range(3)])
    result = plan.execute_many(stacked)
    assert isinstance(result, list) and len(result) == 3
    for f in range(3):
        np.testing.assert_array_equal(result[f], slab_output(f, np.float64))
    # Inputs that are not C-contiguous are copied once, as by execute.
    fortran = [np.asfortranarray(slab_input(f, np.float64)) for f in range(3)]
    for f, out in enumerate(plan.execute_many(fortran)):
        np.testing.assert_array_equal(out, slab_output(f, np.float64))


def test_begin_and_wait():
    plan = slab_plan(np.int64)
    locals_ = [slab_input(f, np.int64) for f in range(3)]
    buffers, outs = zip(*(with_sentinel(plan.local_output_shape, np.int64) for _ in range(3)))
    request = plan.execute_many_begin(locals_, list(outs))
    while not request.test():
        pass
    assert request.completed
    result = request.wait()
    assert len(result) == 3 and all(r is o for r, o in zip(result, outs))
    for f in range(3):
        np.testing.assert_array_equal(outs[f], slab_output(f, np.int64))
        assert buffers[f][-1] == SENTINEL
    # Default outputs, the request holding them until the wait.
    for f, out in enumerate(plan.execute_many_begin(locals_).wait()):
        np.testing.assert_array_equal(out, slab_output(f, np.int64))


SHAPE = (7, 10, 6)
HALO = 2


def haloed(block):
    """`block` inside a padded array of sentinels: `(padded, interior view)`."""
    padded = np.full(tuple(n + 2 * HALO for n in block.shape), SENTINEL, block.dtype)
    interior = padded[tuple(slice(HALO, HALO + n) for n in block.shape)]
    interior[...] = block
    return padded, interior


def check_halo(padded):
    mask = np.ones(padded.shape, bool)
    mask[tuple(slice(HALO, n - HALO) for n in padded.shape)] = False
    assert (padded[mask] == SENTINEL).all()


def element_strides(view):
    return tuple(s // view.itemsize for s in view.strides)


def pencils(axis_grid):
    grid = MPI.Compute_dims(P, 2)
    return dr.Layout(SHAPE, grid, axis_grid), grid_box(SHAPE, grid, axis_grid, {}, WORLD.rank)


def test_strided_plan():
    x, x_box = pencils((None, 0, 1))
    y, y_box = pencils((0, None, 1))
    sources = [haloed(field_values(SHAPE, f, np.int64)[x_box]) for f in range(3)]
    targets = [haloed(np.full(field_values(SHAPE, 0, np.int64)[y_box].shape, SENTINEL, np.int64))
               for _ in range(3)]
    before = [padded.copy() for padded, _ in sources]
    plan = dr.Plan.from_layouts(x, y, np.int64, input_strides=element_strides(sources[0][1]),
                                output_strides=element_strides(targets[0][1]))
    result = plan.execute_many([local for _, local in sources], [out for _, out in targets])
    for f, (padded, out) in enumerate(targets):
        assert result[f] is out
        np.testing.assert_array_equal(out, field_values(SHAPE, f, np.int64)[y_box])
        check_halo(padded)
        np.testing.assert_array_equal(sources[f][0], before[f])
    # A field at other strides on the last rank: refused everywhere, nothing written.
    given = [local for _, local in sources]
    if WORLD.rank == LAST:
        given[2] = np.ascontiguousarray(given[2])
    fresh = [haloed(np.zeros_like(out)) for _, out in targets]
    message = raises_everywhere("DR_ERROR_INVALID_STRIDES",
                                lambda: plan.execute_many(given, [out for _, out in fresh]))
    assert "field 2" in message and f"rank {LAST}" in message
    for padded, out in fresh:
        assert (out == 0).all()
        check_halo(padded)


@pytest.mark.skipif(P == 1, reason="a k differing between ranks needs two ranks")
def test_k_differing_between_ranks():
    plan = slab_plan(np.float64)
    k = 2 if WORLD.rank == 0 else 3
    raises_everywhere("DR_ERROR_INCONSISTENT_ARGUMENTS",
                      lambda: plan.execute_many([slab_input(f, np.float64) for f in range(k)]))


def test_refusals_agreed():
    plan = slab_plan(np.float64)
    locals_ = [slab_input(f, np.float64) for f in range(3)]
    outs = [np.zeros(plan.local_output_shape) for _ in range(3)]
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute_many([], []))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute_many(locals_, outs[:2]))
    raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute_many(5))
    # A field of the wrong shape on the last rank: the message names the field and the rank.
    wrong = list(locals_)
    if WORLD.rank == LAST:
        wrong[2] = wrong[2][:-1]
    message = raises_everywhere("DR_ERROR_INVALID_SHAPE", lambda: plan.execute_many(wrong, outs))
    assert "field 2" in message and f"rank {LAST}" in message
    shared = [outs[0], outs[0], outs[2]]
    raises_everywhere("DR_ERROR_ALIASING", lambda: plan.execute_many(locals_, shared))
    for out in outs:
        assert (out == 0).all()
    # The plan still works after every refusal.
    for f, out in enumerate(plan.execute_many(locals_, outs)):
        np.testing.assert_array_equal(out, slab_output(f, np.float64))
